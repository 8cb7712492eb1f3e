"""One CV evaluation on a prepared problem: a Gram matrix, labels, fold ids and one lam.

Both :func:`kernelcv.cross_validate_path` and the grid-search driver go through
:func:`evaluate_lam`, so a candidate of a search and a direct call with the same inputs give
the same numbers. Inputs are trusted (validated by the public callers).

``extra=(K_extra, extra_fold_ids)`` also returns the fold-out models' values at m points
off the sample (one-vs-one multiclass CV predicts every other class's held-out points with
each pair's fold-out models): the point of id i gets the criterion's approximation of the
model fitted without fold i, exactly as that fold's own members do, and id -1 the full
fit, ``K_extra[e] alpha + b``. Extra cost: ``O(m n)`` for the exact refits, the closed
form's t folds and BIF order inf; ``O(m n + r m |A|)`` for BIF order r; ``O(n^2 |J|)`` for
the closed form's leave-one-out (J the folds holding extra points). The degeneracy check
stays about the sample.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..exceptions import KernelCVError
from ..machines.losses import SquareLoss
from .bif import bif_predictions
from .certificate import certified_error, uncertified_note
from .conditioning import ill_conditioned_note, relative_rounding
from .exact import refit_predictions
from .result import (
    DEGENERATE_SHARE,
    NEGLIGIBLE_RATIO,
    Criterion,
    fold_errors,
    heldout_rounding,
    newton_curvature,
)
from .truncation import truncation_error, unconverged_note, within_tolerance

METHODS = ("exact", "closed-form", "bif")


@dataclass
class Evaluation:
    """Held-out predictions of one (kernel, lam) candidate and what they say.

    ``fit`` is the full-data fit (``None`` for closed-form, which never forms one), kept
    for warm-starting the next lam. ``extra_predictions`` are the (m,) values at the extra
    points of :func:`evaluate_lam` (``None`` without them).
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
    extra_predictions: np.ndarray | None = None
    truncation_error: float | None = None
    unconverged: bool = False
    rounding_error: float | None = None
    ill_conditioned: bool = False
    certified_error: float | None = None
    uncertified: bool = False
    bounds: tuple | None = field(default=None, repr=False)


def evaluate_lam(K, y, fold_ids, lam, machine, method, *, order=5, tol=1e-6, atol=None,
                 closed=None, warm=None, extra=None, full_fit=True,
                 certify=True) -> Evaluation:
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
    extra : None or ``(K_extra, extra_fold_ids)``
        ``K_extra``: (m, n) kernel values ``k(x_e, x_j)`` between m extra points and the n
        samples; ``extra_fold_ids``: (m,) integers, a fold id i in ``0..t-1`` (the point is
        predicted by the model fitted without fold i, approximated as the criterion
        approximates fold i's own held-out values) or -1 (held out by no fold: the full
        fit, ``K_extra[e] alpha + b``). The values come back as
        ``Evaluation.extra_predictions``. Without it nothing changes (same numbers, no cost).
        A third element, the points' ``k(x, x)``, lets BIF of the SVM machines bound
        their values too (``Evaluation.bounds`` then holds four arrays: the sample's lower
        and upper bounds, then the extra points').
    certify : False skips the certificate of BIF for the SVM machines
        (:mod:`kernelcv.criteria.certificate`: no ``bounds``, ``certified_error`` None,
        ``uncertified`` False), for a caller that has its answer already.

    Raises
    ------
    KernelCVError
        When the held-out predictions are not finite (lam too small for the kernel), or
        ``extra`` is malformed (shapes other than (m, n) and (m,), ids outside ``-1..t-1``).
    """
    # Overflow on unscaled data (targets near 1e200) would print numpy's warnings before
    # the one-line message of the non-finite result below: the result is checked instead.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        extra = _check_extra(extra, y.shape[0], int(fold_ids.max()) + 1)
        extra_diag = None
        if extra is not None and len(extra) == 3:  # (K_extra, ids, diag), checked
            extra, extra_diag = extra[:2], extra[2]
        if method == Criterion.EXACT and not full_fit and not _needs_full_fit(y, fold_ids, machine,
                                                                      extra):
            return _refits_only(K, y, fold_ids, lam, machine, extra)
        return _evaluate(K, y, fold_ids, lam, machine, method, order, tol, atol, closed,
                         warm, extra, extra_diag, certify)


def _needs_full_fit(y, fold_ids, machine, extra) -> bool:
    """Whether exact refits use the full fit: as their warm start (not from LIBSVM) or to
    predict extra points of id -1."""
    largest = int(np.bincount(fold_ids).max())
    if not machine.starts_from_libsvm(int(y.shape[0] - largest)):
        return True
    return extra is not None and bool(np.any(extra[1] < 0))


def _refits_only(K, y, fold_ids, lam, machine, extra):
    """Method ``"exact"`` without the full-data fit (see ``full_fit`` of evaluate_lam)."""
    tic = time.perf_counter()
    predictions, _, *rest = refit_predictions(K, y, fold_ids, lam, machine, extra=extra)
    if not np.all(np.isfinite(predictions)):
        raise KernelCVError(_non_finite_message(K, y, lam, "exact"))
    error, per_fold = fold_errors(y, predictions, fold_ids, machine.metric)
    return Evaluation(cv_error=error, fold_errors=per_fold, predictions=predictions,
                      order_used=None, degenerate=False, heldout_ratio=float("nan"),
                      fit_seconds=0.0, seconds=time.perf_counter() - tic,
                      extra_predictions=rest[0] if rest else None)


def _evaluate(K, y, fold_ids, lam, machine, method, order, tol, atol, closed, warm, extra,
              extra_diag=None, certify=True):
    tic = time.perf_counter()
    extra_predictions = None
    fit = None
    fit_seconds = 0.0
    order_used = None
    fold_remainder = None
    bounds = None
    notes = []
    if method == Criterion.CLOSED_FORM:
        if extra is None:
            predictions = closed.predictions(y, lam)
        else:
            predictions, extra_predictions = closed.predictions(y, lam, extra=extra)
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
        if method == Criterion.EXACT:
            predictions, _, *rest = refit_predictions(K, y, fold_ids, lam, machine,
                                                      full_fit=fit, extra=extra)
        elif certify and certifiable(machine):
            predictions, order_used, *rest, fold_remainder, bounds = bif_predictions(
                K, y, fold_ids, lam, machine, fit, order=order, tol=tol, atol=atol,
                extra=extra if extra_diag is None else (*extra, extra_diag),
                remainder=True, enclosure=True)
        else:
            predictions, order_used, *rest, fold_remainder = bif_predictions(
                K, y, fold_ids, lam, machine, fit, order=order, tol=tol, atol=atol,
                extra=extra, remainder=True)
        if extra is not None:
            extra_predictions = rest[0]
            if order == "auto" and order_used == "inf":
                notes.append("series too slow to reach tol (estimated rate, or 200 "
                             "terms); used the closed-form limit (order inf)")
    if not np.all(np.isfinite(predictions)):
        raise KernelCVError(_non_finite_message(K, y, lam, method))
    # Exact refits, the closed form and order inf form held-out values directly (no
    # "full fit + correction" subtraction), so only finite BIF orders can be noise
    # (and only they need its share: the ratio alone is reported for the others).
    direct = method in (Criterion.EXACT, Criterion.CLOSED_FORM) or order_used == "inf"
    ratio, noise_share = heldout_rounding(K, alpha, intercept, fold_ids, curvature,
                                          noise=not direct)
    degenerate = not direct and (noise_share > DEGENERATE_SHARE
                                  or ratio < NEGLIGIBLE_RATIO)
    if degenerate:
        notes.append(
            f"degenerate: {100 * noise_share:.0f} % of the held-out values are below the "
            "rounding level of 'full fit + correction' (median held-out ratio "
            f"{ratio:.2g}): kernel width too small; this approximate CV value is "
            "unreliable here, use method='exact' or order='inf'")
    error, per_fold = fold_errors(y, predictions, fold_ids, machine.metric)
    truncation = unconverged = None
    if fold_remainder is not None:
        truncation = truncation_error(predictions, y, fold_ids, fold_remainder,
                                      machine.metric)
        unconverged = not within_tolerance(truncation, error, machine.metric)
        if unconverged:
            notes.append(unconverged_note(order_used, truncation, machine.metric))
    certified = uncertified = None
    if bounds is not None and np.isfinite(error):
        certified = certified_error(predictions, y, *bounds[:2], machine.metric)
        uncertified = not within_tolerance(certified, error, machine.metric)
        if uncertified:
            notes.append(uncertified_note(certified, machine.metric))
    rounding = ill = None
    if method == Criterion.BIF and np.isfinite(error):  # an infinite error has its own message
        rounding, ill = _rounding_check(K, y, fold_ids, lam, machine, fit, predictions,
                                        error, notes)
    return Evaluation(cv_error=error, fold_errors=per_fold, predictions=predictions,
                      order_used=order_used, degenerate=degenerate, heldout_ratio=ratio,
                      fit_seconds=fit_seconds, seconds=time.perf_counter() - tic, fit=fit,
                      notes=notes, extra_predictions=extra_predictions,
                      truncation_error=truncation, unconverged=bool(unconverged),
                      rounding_error=rounding, ill_conditioned=bool(ill),
                      certified_error=certified, uncertified=bool(uncertified),
                      bounds=bounds)


def certifiable(machine) -> bool:
    """Whether BIF values of this machine carry the enclosure of
    :mod:`kernelcv.criteria.certificate`: every loss but the square loss (whose series
    limit is exact and whose truncation has its own estimate)."""
    return not isinstance(machine.loss, SquareLoss)


def _rounding_check(K, y, fold_ids, lam, machine, fit, predictions, error, notes):
    """The BIF value's rounding error in CV units and whether it is above tolerance.

    The rounded numbers are the full fit's (``g = loss'(y, F)`` and the solves, of size
    ``max |F|``), reaching held-out point j through its kernel row on the retained
    points: it may move by ``e_j = rel * max|F| * (c_j + [intercept])`` with ``rel`` of
    :func:`kernelcv.criteria.conditioning.relative_rounding` and ``c_j = sum_{r not in
    S(j)} |K_jr| / (n_min max K_rr)`` in [0, 1] (about 0 for a narrow kernel, whose
    held-out values keep their relative precision: only the intercept's rounding reaches
    them). For the 0-1 error the share of samples with ``|f_j| <= e_j``, for the MSE the
    mean of ``2 |r_j| e_j + e_j^2`` (as :func:`kernelcv.criteria.truncation.truncation_error`
    converts a remainder). Cost: ``O(|Q|)`` where a bound of ``rel`` with every ``c_j = 1``
    is within tolerance (almost always above ``n lam ~ 1e-6``), else ``O(|Q|^2)``
    (``dpocon``) and, if still needed, ``O(n^2)`` (row sums of ``|K|``, fold blocks).
    """
    h = machine.loss.derivatives(y, fit.decision)[1]
    t = int(fold_ids.max()) + 1
    n_min = y.shape[0] - int(np.bincount(fold_ids, minlength=t).max())
    scale = float(np.max(np.abs(fit.decision))) * (2.0 if machine.fit_intercept else 1.0)
    for quick in (True, False):  # O(|Q|) bound, then dpocon: most values pass the first
        rel = relative_rounding(K, fit, h, lam, n_min, quick=quick)
        if rel == 0:
            return 0.0, False
        top = rel * scale / (2.0 if machine.fit_intercept else 1.0)
        rounding = _rounding_in_units(predictions, y, rel * scale, machine.metric)
        if within_tolerance(rounding, error, machine.metric):
            return rounding, False  # even with every share c_j at 1: no O(n^2) pass
    mass = np.concatenate([np.abs(K[a:a + 1024]).sum(axis=1)  # blocks: no n x n temporary
                           for a in range(0, K.shape[0], 1024)])
    for fold in range(t):
        members = np.flatnonzero(fold_ids == fold)
        mass[members] -= np.abs(K[np.ix_(members, members)]).sum(axis=1)
    share = np.clip(mass / (n_min * max(float(np.max(np.diag(K))), np.finfo(float).tiny)),
                    0.0, 1.0) + (1.0 if machine.fit_intercept else 0.0)
    with np.errstate(invalid="ignore"):
        rounding = _rounding_in_units(predictions, y, np.where(share > 0, top * share, 0.0),
                                      machine.metric)
    ill = not within_tolerance(rounding, error, machine.metric)
    if ill:
        notes.append(ill_conditioned_note(rel, rounding, machine.metric))
    return rounding, ill


def _rounding_in_units(predictions, y, size, metric):
    """Share of ``|f_j| <= size_j`` (0-1) or mean of ``2 |r_j| size_j + size_j^2`` (MSE)."""
    if metric == "0-1":
        return float(np.mean(np.abs(predictions) <= size))
    residual = np.abs(y - predictions)
    return float(np.mean(2.0 * residual * size + size * size))


def _non_finite_message(K, y, lam, method):
    """Why the held-out predictions overflowed, as far as it can be told, and the remedy."""
    head = f"method {method!r} produced non-finite held-out predictions at lam = {lam:g}: "
    scale = float(np.max(np.abs(y))) if y.size else 0.0
    if scale > 1e100:
        return head + (f"the targets reach {scale:.3g}, too large to square in float64; "
                       "scale y (e.g. standardize it)")
    largest = float(np.max(np.abs(K))) if K.size else 0.0
    if largest > 1e100:
        return head + (f"the kernel values reach {largest:.3g}: X is not on a reasonable "
                       "scale for this kernel; standardize X")
    advice = "increase lam" + ("" if method == Criterion.EXACT else " or use method='exact'")
    return head + f"lam is too small for this kernel matrix; {advice}"


def _check_extra(extra, n, t):
    """``extra`` as ``(float (m, n) array, intp (m,) ids in -1..t-1)``, or None; a third
    element, the points' ``k(x, x)``, is checked and returned as :func:`_extra_diag`."""
    if extra is None:
        return None
    try:
        with_diag = isinstance(extra, tuple) and len(extra) == 3
        K_extra, ids = extra[:2] if with_diag else extra
    except (TypeError, ValueError):
        raise KernelCVError("extra must be None or a tuple (K_extra, extra_fold_ids)") from None
    K_extra = np.asarray(K_extra, dtype=np.float64)
    ids = np.asarray(ids)
    if K_extra.ndim != 2 or K_extra.shape[1] != n:
        raise KernelCVError(f"extra: K_extra must have shape (m, {n}) (kernel values between "
                            f"m extra points and the {n} training points), got "
                            f"{K_extra.shape}")
    m = K_extra.shape[0]
    if ids.shape != (m,):
        raise KernelCVError(f"extra: extra_fold_ids must have shape ({m},) to match K_extra, "
                            f"got {ids.shape}")
    if m and not np.issubdtype(ids.dtype, np.integer):
        raise KernelCVError(f"extra: extra_fold_ids must be integers, got dtype {ids.dtype}")
    if m and (ids.min() < -1 or ids.max() >= t):
        raise KernelCVError(f"extra: extra_fold_ids must lie in -1..{t - 1} (a fold id, or -1 "
                            f"for no fold), got values in {ids.min()}..{ids.max()}")
    if with_diag:
        diag = np.asarray(extra[2], dtype=np.float64)
        if diag.shape != (m,):
            raise KernelCVError(f"extra: the diagonal must have shape ({m},), got "
                                f"{diag.shape}")
        return K_extra, ids.astype(np.intp), diag
    return K_extra, ids.astype(np.intp)
