"""The result of one cross-validation estimate, shared by every criterion."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from ..machines.gram_products import kernel_times

# A "full fit + correction" estimate is degenerate when more than this share of the
# samples have a held-out value below its rounding level (their signs are noise).
DEGENERATE_SHARE = 0.01
# ... or when the held-out kernel sums are negligible next to the training fit (median
# ratio): a truncated series then has not moved the predictions off the training fit.
NEGLIGIBLE_RATIO = 1e-6


class Criterion(str, Enum):
    """Which held-out predictions a criterion computes per lam (``evaluate_lam``'s
    ``method``): refits, the closed form of the square loss, the BIF series, or the
    spectral engine's batch. A ``str`` enum: it equals its name in reports and
    checkpoints (``Criterion.BIF`` equals the string ``"bif"``)."""

    EXACT = "exact"
    CLOSED_FORM = "closed-form"
    BIF = "bif"
    SPECTRAL = "spectral"

    def __str__(self) -> str:
        return self.value


@dataclass
class CVResult:
    """A cross-validation estimate and how it was obtained.

    Attributes
    ----------
    cv_error : mean held-out error over all samples (0-1 error or MSE).
    fold_errors : (t,) error of each fold.
    method : ``"exact"``, ``"closed-form"`` or ``"bif"``.
    order : the BIF order asked for (int, ``"inf"``, ``"auto"``), else None.
    order_used : the order actually used (``"auto"`` resolves to an int or ``"inf"``).
    n_folds, n_samples : fold count and sample count.
    seconds : wall time of the whole estimate, kernel included.
    fit_seconds : wall time of the one full-data fit (0 for methods that need none).
    degenerate : the held-out values were formed as "full fit + correction" (BIF of a
        finite order, GACV) and more than 1 % of them lie below the rounding level of
        that sum, or the median held-out ratio is below 1e-6 (narrow kernels, where a
        truncated series stays near the training fit; see :func:`heldout_rounding`): the
        estimate is then not
        trustworthy and ``method="exact"`` or ``order="inf"`` should be used. Exact,
        closed-form and order-inf values are formed directly and are never degenerate.
    heldout_ratio : median over samples of the held-out kernel sum relative to the
        training fit (informative; ~0 for narrow kernels).
    metric : ``"0-1"`` or ``"mse"``.
    params : machine, kernel and regularisation parameters.
    label_mapping : ``{-1: label, 1: label}`` for two classes, ``{code: label}`` for
        more (codes ``0..k-1``), None for regressors.
    predictions : (n,) held-out decision values, each from the model without its fold;
        (n, m) for more than two classes, one column per binary machine.
    labels : (n,) held-out predicted labels of a classifier (None for regressors; a
        binary value of exactly 0 counts as the +1 class, as in the error).
    notes : human-readable remarks (label mapping, fallbacks).
    truncation_error : BIF of a finite or automatic order: the estimate of how far
        ``cv_error`` may be from the series limit (order ``"inf"``), in its units, from
        the observed series terms (:mod:`kernelcv.criteria.truncation`); 0 for order
        ``"inf"``, None for the other methods.
    unconverged : ``truncation_error`` is above the stated tolerance
        (:data:`kernelcv.criteria.truncation.TOLERANCE`: 0.01 of 0-1 error, 1 % of the
        MSE): the value is not trustworthy; use ``order="inf"`` or ``method="exact"``.
    rounding_error : BIF (any order): the estimated change of ``cv_error`` from rounding
        at tiny ``n lam`` (:mod:`kernelcv.criteria.conditioning`), in its units; None for
        the other methods.
    ill_conditioned : ``rounding_error`` is above the same tolerance: the value is not
        trustworthy at any order; use ``method="exact"`` (accurate there) or a larger lam.
    certified_error : BIF of the l2svm, svm and svr (any order): a guaranteed bound on
        ``|cv_error - exact refit CV error|`` from the strong convexity of the fold-out
        problems (:mod:`kernelcv.criteria.certificate`); None for the other methods and
        the square loss.
    uncertified : ``certified_error`` is above the tolerance (0.01 of 0-1 error, 1 % of
        the MSE): points that change loss piece may have moved the value; use
        ``method="spectral"`` or ``"exact"``.
    """

    cv_error: float
    fold_errors: np.ndarray
    method: str
    order: object
    order_used: object
    n_folds: int
    n_samples: int
    seconds: float
    fit_seconds: float
    degenerate: bool
    heldout_ratio: float
    metric: str
    params: dict
    label_mapping: dict | None
    predictions: np.ndarray = field(repr=False)
    notes: list = field(default_factory=list)
    labels: np.ndarray | None = field(default=None, repr=False)
    truncation_error: float | None = None
    unconverged: bool = False
    rounding_error: float | None = None
    ill_conditioned: bool = False
    certified_error: float | None = None
    uncertified: bool = False

    def to_dict(self) -> dict:
        """JSON-serialisable summary (predictions left out)."""
        return {
            "cv_error": float(self.cv_error),
            "fold_errors": [float(e) for e in self.fold_errors],
            "method": self.method,
            "order": self.order,
            "order_used": self.order_used,
            "folds": int(self.n_folds),
            "n_samples": int(self.n_samples),
            "seconds": float(self.seconds),
            "fit_seconds": float(self.fit_seconds),
            "degenerate": bool(self.degenerate),
            "heldout_ratio": float(self.heldout_ratio),
            "metric": self.metric,
            "params": dict(self.params),
            "label_mapping": (None if self.label_mapping is None
                              else {str(k): v for k, v in self.label_mapping.items()}),
            "notes": list(self.notes),
            "truncation_error": (None if self.truncation_error is None
                                 else float(self.truncation_error)),
            "unconverged": bool(self.unconverged),
            "rounding_error": (None if self.rounding_error is None
                               else float(self.rounding_error)),
            "ill_conditioned": bool(self.ill_conditioned),
            "certified_error": (None if self.certified_error is None
                                else float(self.certified_error)),
            "uncertified": bool(self.uncertified),
        }


def confusion_summary(true_labels, predicted_labels, classes) -> dict:
    """Confusion matrix and per-class error of predicted labels, JSON-able.

    Returns ``{"classes": [...], "confusion": rows = true class, columns = predicted
    class (counts), "per_class_error": share of each class's samples predicted as another
    class (None for a class with no sample), "error": overall share}``. Cost O(n k).
    """
    classes = list(classes)
    position = {label: i for i, label in enumerate(classes)}
    k = len(classes)
    matrix = np.zeros((k, k), dtype=np.int64)
    for true, predicted in zip(np.asarray(true_labels).tolist(),
                               np.asarray(predicted_labels).tolist(), strict=True):
        matrix[position[true], position[predicted]] += 1
    totals = matrix.sum(axis=1)
    per_class = [None if total == 0 else float(1.0 - matrix[i, i] / total)
                 for i, total in enumerate(totals)]
    n = int(totals.sum())
    return {"classes": classes, "confusion": matrix.tolist(), "per_class_error": per_class,
            "error": float(1.0 - np.trace(matrix) / n) if n else None}


def heldout_losses(y, predictions, metric: str) -> np.ndarray:
    """Each held-out point's loss: 0-1 on ``sign(f)`` (f = 0 counted as +1) or squared."""
    if metric == "0-1":
        return (np.where(predictions >= 0, 1.0, -1.0) != y).astype(np.float64)
    with np.errstate(over="ignore"):  # inf is the answer; callers say why, in one line
        return (y - predictions) ** 2


def fold_errors(y, predictions, fold_ids, metric: str) -> tuple[float, np.ndarray]:
    """Overall and per-fold held-out error (0-1 on ``sign(f)``, with f = 0 counted as +1).

    Every fold number ``0..max(fold_ids)`` must hold a point (a fold without one has no
    error); a caller whose fold ids skip numbers wants only the overall error:
    ``heldout_losses(...).mean()``.
    """
    losses = heldout_losses(y, predictions, metric)
    t = int(fold_ids.max()) + 1
    per_fold = np.bincount(fold_ids, weights=losses, minlength=t) / np.bincount(
        fold_ids, minlength=t)
    return float(losses.mean()), per_fold


def weigh_errors(ev, y, fold_ids, machine):
    """``ev`` with its CV error and per-fold errors weighted by the rows' sample weights
    of ``machine`` (unchanged without them): ``sum_j s_j e_j / sum_j s_j`` over all rows
    and over each fold (a fold whose rows all weigh 0 keeps its unweighted mean), as
    GridSearchCV weighs its scores by the ``sample_weight`` given to ``fit``. ``e_j`` is
    the 0-1 loss of the held-out class (codes for more than two classes) or the squared
    error. Recomputed from ``ev.predictions``; O(n)."""
    weights = machine.row_weights
    if weights is None:
        return ev
    if machine.is_multiclass:
        losses = (np.asarray(ev.predictions) != np.asarray(y)).astype(np.float64)
    else:
        losses = heldout_losses(y, ev.predictions, machine.metric)
    t = int(fold_ids.max()) + 1
    mass = np.bincount(fold_ids, weights=weights, minlength=t)
    weighted = np.bincount(fold_ids, weights=weights * losses, minlength=t)
    ev.fold_errors = np.where(mass > 0, weighted / np.where(mass > 0, mass, 1.0),
                              np.asarray(ev.fold_errors, dtype=np.float64))
    ev.cv_error = float(np.sum(weights * losses) / np.sum(weights))
    return ev


def heldout_rounding(K, alpha, intercept, fold_ids, curvature,
                     noise: bool = True) -> tuple[float, float]:
    """How much of each training-fit value a held-out prediction keeps, against rounding.

    For sample j in fold S the held-out kernel sum of the full fit is
    ``o_j = sum_{k not in S} K_jk alpha_k`` (formed directly); a formula that computes a
    held-out value as ``F_j + correction`` subtracts numbers of size
    ``s_j = sum_k |K_jk alpha_k| + |b|`` and carries an error of about the rounding level
    ``r_j = u kappa sqrt(n) s_j``, with u the unit roundoff and
    ``kappa = 1 + ||K||_inf * curvature`` a bound on the condition number of the Newton
    system (``curvature = max h / (2 lam n_min)``, n_min the smallest retained size; 0
    when no point is in a quadratic piece). Where ``|o_j + b| <= r_j`` that value is
    rounding noise.

    ``noise=False`` (a caller whose held-out values are formed directly, where rounding
    noise of that kind cannot arise) skips the share: ``noise_share`` is then NaN.

    Returns
    -------
    ratio : median of ``|o_j| / |F_j|`` over samples with ``F_j != 0`` (0 if none).
    noise_share : share of samples with ``|o_j + b| <= r_j``.

    Cost: O(n^2), one pass over the rows of K; with ``noise=False`` ``O(n |R| t)``, the
    rows R of K where ``alpha`` is non-zero (the support vectors,
    :func:`~kernelcv.machines.gram_products.kernel_times`).
    """
    n = alpha.shape[0]
    t = int(fold_ids.max()) + 1
    member = fold_ids[:, None] == np.arange(t)[None, :]
    # Column i holds alpha off fold i: one product gives every held-out kernel sum
    # directly (the own fold's terms are exact zeros, not subtracted).
    columns = [np.where(member, 0.0, alpha[:, None]), alpha]
    if not noise:
        products = kernel_times(K, np.column_stack(columns))
        return _median_ratio(products[np.arange(n), fold_ids], products[:, t]), float("nan")
    products = K @ np.column_stack([*columns, np.abs(alpha), np.ones(n)])
    outside = products[np.arange(n), fold_ids]
    full = products[:, t]
    if K.min() >= 0:  # e.g. RBF and Laplace kernels: |K| = K
        scale, row_sum = products[:, t + 1], float(products[:, t + 2].max())
    else:
        absolute = np.abs(K)
        scale, row_sum = absolute @ np.abs(alpha), float(absolute.sum(axis=1).max())
    b = float(intercept)
    kappa = 1.0 + row_sum * float(curvature)
    level = np.finfo(np.float64).eps * kappa * np.sqrt(n) * (scale + abs(b))
    noise_share = float(np.mean(np.abs(outside + b) <= level))
    return _median_ratio(outside, full), noise_share


def _median_ratio(outside, full) -> float:
    """Median of ``|outside_j| / |full_j|`` over ``full_j != 0`` (0 if none)."""
    valid = full != 0
    return float(np.median(np.abs(outside[valid]) / np.abs(full[valid]))) if valid.any() else 0.0


def newton_curvature(h, lam, fold_ids) -> float:
    """``max h / (2 lam n_min)`` for :func:`heldout_rounding` (0 when ``h`` is all 0)."""
    sizes = np.bincount(fold_ids)
    n_min = fold_ids.shape[0] - int(sizes.max())
    top = float(np.max(h)) if h.size else 0.0
    return top / (2.0 * lam * max(n_min, 1)) if top > 0 else 0.0
