"""The result of one cross-validation estimate, shared by every criterion."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Held-out kernel predictions below this fraction of the training fit (median over
# samples) mean every "full fit + correction" formula is dominated by rounding.
DEGENERATE_RATIO = 1e-6


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
    degenerate : held-out kernel predictions are negligible next to the training fit
        (median ratio below 1e-6, tiny kernel widths): approximate methods are then not
        trustworthy and ``method="exact"`` should be used.
    heldout_ratio : that median ratio.
    metric : ``"0-1"`` or ``"mse"``.
    params : machine, kernel and regularisation parameters.
    label_mapping : ``{-1: label, 1: label}`` for classifiers, else None.
    predictions : (n,) held-out decision values, each from the model without its fold.
    notes : human-readable remarks (label mapping, fallbacks).
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
        }


def fold_errors(y, predictions, fold_ids, metric: str) -> tuple[float, np.ndarray]:
    """Overall and per-fold held-out error (0-1 on ``sign(f)``, with f = 0 counted as +1)."""
    if metric == "0-1":
        losses = (np.where(predictions >= 0, 1.0, -1.0) != y).astype(np.float64)
    else:
        losses = (y - predictions) ** 2
    t = int(fold_ids.max()) + 1
    per_fold = np.bincount(fold_ids, weights=losses, minlength=t) / np.bincount(
        fold_ids, minlength=t)
    return float(losses.mean()), per_fold


def heldout_ratio(K, alpha, fold_ids) -> float:
    """Median over samples of ``|sum_{k not in fold(j)} K_jk alpha_k| / |(K alpha)_j|``.

    It measures how much of each training-fit value comes from outside the sample's own
    fold; ~0 means held-out predictions are numerically nothing (tiny kernel width).
    Cost: O(n^2).
    """
    full = K @ alpha
    own = np.empty_like(full)
    for i in range(int(fold_ids.max()) + 1):
        idx = np.flatnonzero(fold_ids == i)
        own[idx] = K[np.ix_(idx, idx)] @ alpha[idx]
    outside = np.abs(full - own)
    scale = np.abs(full)
    valid = scale > 0
    if not np.any(valid):
        return 0.0
    return float(np.median(outside[valid] / scale[valid]))
