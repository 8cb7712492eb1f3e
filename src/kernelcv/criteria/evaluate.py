"""One CV evaluation on a prepared problem: a Gram matrix, labels, fold ids and one lam.

Both :func:`kernelcv.cross_validate_path` and the grid-search driver go through
:func:`evaluate_lam`, so a candidate of a search and a direct call with the same inputs give
the same numbers. Inputs are trusted (validated by the public callers).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..exceptions import KernelCVError
from .bif import bif_predictions
from .exact import refit_predictions
from .result import (
    DEGENERATE_SHARE,
    NEGLIGIBLE_RATIO,
    fold_errors,
    heldout_rounding,
    newton_curvature,
)

METHODS = ("exact", "closed-form", "bif")


@dataclass
class Evaluation:
    """Held-out predictions of one (kernel, lam) candidate and what they say.

    ``fit`` is the full-data fit (``None`` for closed-form, which never forms one), kept
    for warm-starting the next lam.
    """

    cv_error: float
    fold_errors: np.ndarray
    predictions: np.ndarray
    order_used: int | str | None
    degenerate: bool
    heldout_ratio: float
    fit_seconds: float
    seconds: float
    fit: object = None
    notes: list[str] = field(default_factory=list)


def evaluate_lam(K, y, fold_ids, lam, machine, method, *, order=5, tol=1e-6, atol=None,
                 closed=None, warm=None) -> Evaluation:
    """Held-out predictions, CV error and degeneracy check for one lam.

    Parameters
    ----------
    K, y, fold_ids : Gram matrix, +-1 labels (or targets) and fold ids ``0..t-1``.
    lam : float > 0.
    machine : :class:`kernelcv.machines.Machine`.
    method : {"exact", "closed-form", "bif"}.
    order, tol, atol : BIF order and the stopping tolerances of ``order="auto"``
        (``tol`` relative to ``max|F|``; ``atol`` absolute on the estimated remainder).
    closed : :class:`ClosedFormCV` on ``(K, fold_ids)`` (required for ``closed-form``).
    warm : a previous :class:`FitResult` to warm-start the full fit from.

    Raises
    ------
    KernelCVError
        When the held-out predictions are not finite (lam too small for the kernel).
    """
    tic = time.perf_counter()
    fit = None
    fit_seconds = 0.0
    order_used = None
    notes = []
    if method == "closed-form":
        predictions = closed.predictions(y, lam)
        alpha, intercept = closed.full_fit(y, lam)
        curvature = 2.0 / (2.0 * lam * (y.shape[0] - int(np.bincount(fold_ids).max())))
    else:
        start = {} if warm is None else {"alpha0": warm.alpha, "intercept0": warm.intercept}
        fit_tic = time.perf_counter()
        fit = machine.fit(K, y, lam, **start)
        fit_seconds = time.perf_counter() - fit_tic
        alpha, intercept = fit.alpha, fit.intercept
        curvature = newton_curvature(machine.loss.derivatives(y, fit.decision)[1], lam,
                                     fold_ids)
        if method == "exact":
            predictions, _ = refit_predictions(K, y, fold_ids, lam, machine, full_fit=fit)
        else:
            predictions, order_used = bif_predictions(K, y, fold_ids, lam, machine, fit,
                                                      order=order, tol=tol, atol=atol)
            if order == "auto" and order_used == "inf":
                notes.append("series did not reach tol within 200 terms; "
                             "used the closed-form limit (order inf)")
    if not np.all(np.isfinite(predictions)):
        raise KernelCVError(
            f"method {method!r} produced non-finite held-out predictions at lam = {lam:g}: "
            "lam is too small for this kernel matrix; increase lam or use method='exact'")
    ratio, noise_share = heldout_rounding(K, alpha, intercept, fold_ids, curvature)
    # Exact refits, the closed form and order inf form held-out values directly (no
    # "full fit + correction" subtraction), so only finite BIF orders can be noise.
    direct = method in ("exact", "closed-form") or order_used == "inf"
    degenerate = not direct and (noise_share > DEGENERATE_SHARE
                                  or ratio < NEGLIGIBLE_RATIO)
    if degenerate:
        notes.append(
            f"degenerate: {100 * noise_share:.0f} % of the held-out values are below the "
            "rounding level of 'full fit + correction' (median held-out ratio "
            f"{ratio:.2g}): kernel width too small; this approximate CV value is "
            "unreliable here, use method='exact' or order='inf'")
    error, per_fold = fold_errors(y, predictions, fold_ids, machine.metric)
    return Evaluation(cv_error=error, fold_errors=per_fold, predictions=predictions,
                      order_used=order_used, degenerate=degenerate, heldout_ratio=ratio,
                      fit_seconds=fit_seconds, seconds=time.perf_counter() - tic, fit=fit,
                      notes=notes)
