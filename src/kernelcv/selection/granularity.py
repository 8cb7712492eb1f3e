"""Granularity selection: the number of folds t and the BIF order r from a tolerated error.

Liu & Liao ("Granularity selection for cross-validation of SVM") bound the gap between the
order-r BIF approximation of t-fold CV of the Huber-smoothed SVM (band width ``delta``)
and hinge-loss CV by::

    delta / 2 + kappa / (lam (r + 1) (t - 1)),

where ``kappa = sup_x k(x, x)`` and lam is the regulariser of
``(1/n) sum loss + lam ||f||^2``. Asking for a gap of at most ``epsilon`` and balancing
the two factors gives their eq. 6::

    t - 1 = r + 1 = m,   m = ceil( sqrt( kappa / (lam (epsilon - delta / 2)) ) ),

so a looser tolerance or a larger lam means fewer folds and fewer terms. We cap t at n
(leave-one-out); when the cap binds, r is raised until ``(r + 1)(n - 1)`` again meets the
bound. ``epsilon <= delta / 2`` is unreachable and rejected.

The measured convergence does not follow this bound (``../shared/NUMERICS.md``): the
series' rate is about the largest fold leverage, roughly ``1 / (1 + n lam)``, whatever t.
So :func:`adaptive_tolerance` gives the tolerance of the *adaptive* rule, which keeps the
bound's t but stops adding terms once the observed geometric tail of the series is below
``epsilon - delta / 2`` (see ``atol`` of :func:`kernelcv.criteria.bif_predictions`). The
search reports both choices.

Everything here is O(1) arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..exceptions import KernelCVError

RULES = ("adaptive", "bound")


@dataclass(frozen=True)
class GranularityRule:
    """Granularity selection: t and the BIF order per lam from a tolerated error.

    ``epsilon``: the tolerated gap between approximate and exact CV (> delta / 2);
    ``rule``: ``"adaptive"`` (stop the series once its observed tail is below the
    tolerance) or ``"bound"`` (the paper's order from eq. 6); both are reported.
    """

    epsilon: float
    rule: str = "adaptive"


@dataclass(frozen=True)
class Granularity:
    """The (t, r) choice of eq. 6 for one lam, and the bound it guarantees."""

    n_folds: int
    order: int
    bound: float
    capped: bool

    def to_dict(self) -> dict:
        return asdict(self)


def error_bound(n_folds: int, order: int, *, delta: float, lam: float, kappa: float) -> float:
    """``delta / 2 + kappa / (lam (r + 1) (t - 1))``: the paper's bound on the CV gap."""
    return delta / 2.0 + kappa / (lam * (order + 1) * (n_folds - 1))


def check_tolerance(epsilon, delta: float) -> float:
    """Validate the tolerated error: finite and larger than ``delta / 2``."""
    try:
        epsilon = float(epsilon)
    except (TypeError, ValueError):
        raise KernelCVError(f"epsilon must be a number, got {epsilon!r}") from None
    if not math.isfinite(epsilon) or epsilon <= delta / 2.0:
        raise KernelCVError(
            f"epsilon = {epsilon:g} is too small: the smoothing alone costs delta/2 = "
            f"{delta / 2:g} (Huber width {delta:g}); choose epsilon > {delta / 2:g} "
            "or a narrower huber_width")
    return epsilon


def bound_rule(epsilon: float, *, delta: float, lam: float, kappa: float = 1.0,
               n_samples: int | None = None) -> Granularity:
    """Eq. 6: ``t - 1 = r + 1 = ceil(sqrt(kappa / (lam (epsilon - delta/2))))``.

    Parameters
    ----------
    epsilon : tolerated gap between approximate and exact CV (> delta / 2).
    delta : Huber band width (0 for machines that need no smoothing).
    lam : regularisation (> 0).
    kappa : ``sup k(x, x)`` (1 for RBF and Laplace kernels).
    n_samples : if given, t is capped at n (leave-one-out) and r raised to compensate.

    Returns
    -------
    Granularity
        ``order`` is at least 1 (r = 0 would be no correction at all).
    """
    epsilon = check_tolerance(epsilon, delta)
    if not (lam > 0 and kappa > 0):
        raise KernelCVError("lam and kappa must be > 0")
    need = kappa / (lam * (epsilon - delta / 2.0))  # (r + 1)(t - 1) must reach this
    m = max(1, math.ceil(math.sqrt(need) - 1e-12))
    n_folds, order, capped = m + 1, max(m - 1, 1), False
    if n_samples is not None and n_folds > n_samples:
        n_folds, capped = n_samples, True
        order = max(math.ceil(need / (n_samples - 1) - 1e-12) - 1, 1)
    bound = error_bound(n_folds, order, delta=delta, lam=lam, kappa=kappa)
    return Granularity(n_folds=n_folds, order=order, bound=bound, capped=capped)


def adaptive_tolerance(epsilon: float, delta: float) -> float:
    """Absolute tolerance on the series' estimated remainder: ``epsilon - delta / 2``."""
    return check_tolerance(epsilon, delta) - delta / 2.0


def granularity_table(epsilons, lams, *, delta: float = 0.01, kappa: float = 1.0) -> list[dict]:
    """Eq. 6 over a grid of tolerances and lam values: one row per (epsilon, lam).

    Each row has ``epsilon``, ``lam``, ``n_folds`` (t), ``order`` (r) and ``bound``.
    """
    rows = []
    for epsilon in epsilons:
        for lam in lams:
            choice = bound_rule(epsilon, delta=delta, lam=lam, kappa=kappa)
            rows.append({"epsilon": float(epsilon), "lam": float(lam), **choice.to_dict()})
    return rows
