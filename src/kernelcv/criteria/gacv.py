"""GACV: an O(n) leave-one-out proxy for the hinge-loss SVM (Wahba, Lin & Zhang, 2000).

Wahba, Lin and Zhang, "Generalized approximate cross-validation for support vector
machines" (in *Advances in Large Margin Classifiers*, MIT Press, 2000), estimate the
leave-one-out hinge risk of the SVM from the full-data fit alone. :func:`gacv` evaluates
that estimate for kernelcv's ``svm`` machine, with or without its intercept;
:func:`gacv_path` evaluates it along a grid of lam values that share one Gram matrix,
warm-starting each fit from the previous one.

Unlike the criteria of :mod:`kernelcv.criteria.exact` and :mod:`kernelcv.criteria.bif`,
GACV does not produce held-out predictions: it is a scalar model-selection score, to be
minimised over lam (and over kernel parameters, one Gram matrix per kernel).
"""

from __future__ import annotations

import numpy as np

from ..exceptions import KernelCVError
from ..machines import Machine, make_machine
from ..machines.solver import FitResult
from ..validation import check_positive

# Largest accepted |2 n lam alpha_j + g_j| of the fit handed to gacv (g_j = loss'(y_j, F_j)
# is in [-1, 1] for the hinge). A converged fit is at 1e-10 or below; a fit made with
# another lam (a lam off by 0.1 % moves it by 1e-3 on every bound support vector) or another
# Huber width, or an unconverged one, is far above.
_STATIONARITY_TOL = 1e-3


def gacv(K, y, fit: FitResult, lam, *, machine) -> float:
    r"""GACV score of a fitted hinge-loss SVM (lower is better).

    Parameters
    ----------
    K : (n, n) array
        Training Gram matrix the machine was fitted on; only its diagonal is read.
    y : (n,) array
        Labels in {-1, +1}.
    fit : FitResult
        The full-data fit at ``lam`` (from ``machine.fit(K, y, lam)``); its ``alpha`` and
        ``decision`` are used.
    lam : float
        The regularisation the fit was made with (``lam > 0``).
    machine : Machine or str
        The fitted machine; only ``"svm"`` (Huber-smoothed hinge, with or without the
        intercept) is supported. A name builds the machine with its defaults (Huber width
        0.01, with intercept).

    Returns
    -------
    float
        ``GACV(lam)``, an estimate of the mean leave-one-out hinge loss.

    Raises
    ------
    KernelCVError
        For a machine other than ``svm``; for shapes that do not match; for labels other
        than +-1; for a non-positive lam; for a fit that does not satisfy the optimality
        condition of this machine at this lam (fitted with another lam or Huber width, or
        not converged).

    Notes
    -----
    **The quantity.** With margins ``m_i = y_i f_i`` of the full-data fit ``f = K alpha + b``
    (``b = 0`` for the bias-free machine),

    .. math::

        \mathrm{GACV}(\lambda) = \frac{1}{n} \Big[ \sum_i (1 - m_i)_+
            + 2 \sum_{m_i < -1} |\alpha_i| K_{ii}
            + \sum_{m_i \ge -1} |\alpha_i| K_{ii} \Big].

    Since ``alpha = -g / (2 n lam)`` with ``g_i = -y_i u_i`` and the dual weight
    ``u_i in [0, 1]``, ``|alpha_i| = u_i / (2 n lam)``; a point with ``alpha_i = 0`` (margin
    beyond the hinge) adds nothing, so the last sum runs in effect over the margin
    band ``-1 <= m_i <= 1`` of the paper.

    **Where it comes from.** The target is the leave-one-out hinge risk
    ``V(lam) = (1/n) sum_i (1 - y_i f_i^{[-i]})_+``, where ``f^{[-i]}`` minimises the same
    objective with the i-th loss term deleted (the other terms keep their weight ``1/n``; in
    the mean-loss convention of :func:`kernelcv.criteria.exact.refit_predictions` this is a
    refit at ``lam n / (n - 1)``). Split ``V`` into the training hinge loss plus the mean
    of the changes ``D_i = (1 - y_i f_i^{[-i]})_+ - (1 - m_i)_+``. Deleting a point never
    raises its own margin, so whenever ``m_i <= 1`` the hinge stays on its linear piece
    and ``D_i = y_i (f_i - f_i^{[-i]})``; points with ``alpha_i = 0`` do not move the fit,
    so ``D_i = 0``. The shift ``f_i - f_i^{[-i]}`` is then read as the response of ``f_i`` to
    replacing the label ``y_i`` by a pseudo-label ``y~_i`` that point i would not fight
    (the leave-one-out lemma), to first order ``(df_i / dy_i) (y_i - y~_i)``:

    * ``df_i / dy_i`` is taken as the self-influence with every dual weight frozen:
      ``f_i = sum_j K_ij y_j u_j / (2 n lam)`` gives ``u_i K_ii / (2 n lam) = |alpha_i| K_ii``;
    * ``y_i (y_i - y~_i)`` is 2 for a point misclassified beyond the margin (``m_i < -1``,
      whose left-out fit predicts the other class, ``y~_i = -y_i``) and 1 for a point in
      the band (``y~_i ~ 0``, the left-out fit is near the boundary).

    **With an intercept.** Wahba, Lin and Zhang's SVM has the free intercept, and the
    formula carries over unchanged: at the optimum ``2 n lam alpha = -g`` still holds (the
    intercept adds only ``sum_j alpha_j = 0``), so
    ``f_i = sum_j K_ij y_j u_j / (2 n lam) + b``, and with every other dual weight and ``b``
    frozen the self-influence is again
    ``df_i / dy_i = u_i K_ii / (2 n lam) = |alpha_i| K_ii``: the same diagonal, with the
    margins ``m_i`` now including ``b``. What does not carry over is the upper bound below:
    deleting a point can also move the unpenalised ``b``, which the RKHS argument does not
    control, so with an intercept GACV is the paper's approximation, not a bound.

    **Assumptions.** The fit is the exact minimiser at ``lam``. Freezing the other dual
    weights ignores how the remaining support vectors re-arrange to make up for the
    deleted one; that is why GACV is conservative. For the bias-free machine
    (``fit_intercept=False``) it is in fact an upper bound: for any convex loss, deleting
    point i moves ``f_i`` by at most ``|alpha_i| K_ii`` (monotonicity of the
    loss gradient and Cauchy-Schwarz in the RKHS), and the hinge is 1-Lipschitz, so
    ``D_i <= |alpha_i| K_ii`` and ``GACV(lam) >= V(lam)`` at every lam. The bound is an
    equality when every point stays on the linear piece of the hinge with and without
    point i (e.g. lam large enough that all margins lie in ``[-1, 1)``). The gap grows like
    ``(number of support vectors) max K_ii / (2 n^2 lam)`` as lam -> 0, so the minimiser of
    GACV tends to lie at a larger lam than that of the exact leave-one-out hinge risk.
    As lam -> infinity, ``0 <= GACV - training hinge <= max_i K_ii / (n lam) -> 0``.

    **Huber smoothing.** ``svm`` is the hinge with its kink smoothed over
    ``|1 - m| <= huber_width``; there ``u_i`` runs continuously from 1 to 0. Points in the
    smoothing band count as margin points (weight 1) on both sides of ``m = 1``: their
    ``|alpha_i| K_ii`` is small near ``m = 1 + width`` and vanishes beyond, and weight 1 keeps
    the upper bound above. The observed term uses the exact hinge ``(1 - m_i)_+`` (the target
    is the hinge risk), not the smoothed loss; the two differ by at most ``width / 4``.

    **Other machines.** Only ``svm`` is supported. The squared hinge of ``l2svm`` has no
    margin band of fixed dual weights: its leave-one-out shift involves the inverse of the
    kernel system on the support vectors (an O(|SV|^3) hat-matrix diagonal), which is what
    the ``bif`` and ``exact`` criteria already compute.

    **Cost.** O(n) given the fit: the diagonal of ``K``, the margins and ``|alpha|``
    (plus an O(n) check of the fit's optimality condition); no refit, no linear solve.
    """
    machine = _svm_machine(machine)
    K, y = _check_problem(K, y)
    lam = _check_lam(lam)
    alpha, decision = _check_fit(fit, y.shape[0])
    _check_stationarity(machine, y, alpha, decision, lam)
    return _gacv_value(np.diagonal(K), y, alpha, decision)


def gacv_path(K, y, lams, machine="svm") -> np.ndarray:
    """GACV along a grid of lam values sharing one Gram matrix.

    Parameters
    ----------
    K : (n, n) array
        Training Gram matrix.
    y : (n,) array
        Labels in {-1, +1}.
    lams : sequence of float
        The lam values (any order; each > 0).
    machine : Machine or str, default ``"svm"``
        The machine to fit; only ``svm`` (with or without intercept) is supported (see
        :func:`gacv`).

    Returns
    -------
    (len(lams),) ndarray
        ``GACV(lam)`` for each lam, in the order given.

    Notes
    -----
    The fits run from the largest lam down, each warm-started from the previous solution
    rescaled by ``lam_prev / lam`` (``alpha = y u / (2 n lam)`` with dual weights ``u`` that
    change little between neighbouring lam) and from the previous intercept. Cost: one
    fit per lam (a few Newton steps each when warm-started) plus O(n) for each GACV value.
    """
    machine = _svm_machine(machine)
    K, y = _check_problem(K, y)
    lam_values = np.atleast_1d(np.asarray(lams, dtype=object))
    if lam_values.ndim != 1 or lam_values.size == 0:
        raise KernelCVError("lams must be a non-empty 1-d sequence of positive numbers")
    lam_values = np.array([_check_lam(value) for value in lam_values])
    diag = np.diagonal(K)
    out = np.empty(lam_values.size)
    previous = None
    for position in np.argsort(lam_values, kind="stable")[::-1]:
        lam = float(lam_values[position])
        warm = {}
        if previous is not None:
            prev_lam, prev_fit = previous
            warm = {"alpha0": prev_fit.alpha * (prev_lam / lam),
                    "intercept0": prev_fit.intercept}
        fit = machine.fit(K, y, lam, **warm)
        _check_stationarity(machine, y, fit.alpha, fit.decision, lam)
        out[position] = _gacv_value(diag, y, fit.alpha, fit.decision)
        previous = (lam, fit)
    return out


def _gacv_value(diag, y, alpha, decision) -> float:
    margin = y * decision
    weight = np.where(margin < -1.0, 2.0, 1.0)
    terms = np.maximum(0.0, 1.0 - margin) + weight * np.abs(alpha) * diag
    return float(np.mean(terms))


def _svm_machine(machine) -> Machine:
    if isinstance(machine, str):
        machine = make_machine(machine)
    if not isinstance(machine, Machine):
        raise KernelCVError(
            f"machine must be a kernelcv Machine or a machine name, got {type(machine).__name__}")
    if machine.name != "svm":
        raise KernelCVError(
            f"GACV is implemented for the hinge-loss SVM (machine 'svm') only, not "
            f"{machine.name!r}; use the 'exact' or 'bif' cross-validation criteria for it")
    return machine


def _check_problem(K, y) -> tuple[np.ndarray, np.ndarray]:
    K = np.asarray(K, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1 or y.size == 0:
        raise KernelCVError(f"y must be a non-empty 1-d array of +-1 labels, got shape {y.shape}")
    n = y.shape[0]
    if K.shape != (n, n):
        raise KernelCVError(
            f"K must be the ({n}, {n}) Gram matrix of the {n} labelled points, got shape "
            f"{K.shape}")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise KernelCVError("y must hold labels -1 and +1 only (map the two classes to +-1)")
    diag = np.diagonal(K)
    if not np.all(np.isfinite(diag)) or np.any(diag < 0):
        raise KernelCVError(
            "the diagonal of K must be finite and non-negative (K must be a Gram matrix)")
    return K, y


def _check_lam(lam) -> float:
    return check_positive("lam", lam)


def _check_fit(fit, n) -> tuple[np.ndarray, np.ndarray]:
    try:
        alpha = np.asarray(fit.alpha, dtype=np.float64)
        decision = np.asarray(fit.decision, dtype=np.float64)
    except AttributeError:
        raise KernelCVError(
            f"fit must be a FitResult (from Machine.fit), got {type(fit).__name__}") from None
    if alpha.shape != (n,) or decision.shape != (n,):
        raise KernelCVError(
            f"fit has alpha of shape {alpha.shape} and decision of shape {decision.shape}; "
            f"both must be ({n},), one entry per training point")
    if not (np.all(np.isfinite(alpha)) and np.all(np.isfinite(decision))):
        raise KernelCVError("fit has non-finite alpha or decision values")
    return alpha, decision


def _check_stationarity(machine, y, alpha, decision, lam) -> None:
    n = y.shape[0]
    g, _ = machine.loss.derivatives(y, decision)
    residual = float(np.max(np.abs(2.0 * n * lam * alpha + g)))
    if residual > _STATIONARITY_TOL:
        raise KernelCVError(
            f"the fit is not the minimiser of this machine at lam={lam!r} (optimality "
            f"residual {residual:.3g}): pass the fit made with this lam and this machine "
            "(same huber_width), and make sure it converged")
