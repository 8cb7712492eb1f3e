"""The trivial model's CV error, against which a search's choice is checked.

A grid can hold no useful model (every lam far too small or too large for the data, a
kernel width that makes K the identity): its best candidate is then no better than a
constant prediction, and reporting it as "the best model" without comment misleads. The
baseline is the CV error of the constant each training part suggests -- its majority
class for a classifier (ties: the smallest class code), its mean for a regressor -- on the
search's own folds. Cost O(n t).
"""

from __future__ import annotations

import numpy as np

__all__ = ["baseline_error", "baseline_note"]


def baseline_error(y, fold_ids, classifier: bool) -> float:
    """CV error (0-1 or MSE) of the training parts' majority class or mean."""
    y = np.asarray(y)
    fold_ids = np.asarray(fold_ids)
    losses = np.empty(y.shape[0], dtype=np.float64)
    for i in np.unique(fold_ids):
        held = fold_ids == i
        kept = y[~held]
        if classifier:
            values, counts = np.unique(kept, return_counts=True)
            constant = values[np.argmax(counts)]
            losses[held] = y[held] != constant
        else:
            losses[held] = (y[held].astype(np.float64) - float(np.mean(kept))) ** 2
    return float(np.mean(losses))


def baseline_note(best: dict, y, fold_ids, classifier: bool) -> list[str]:
    """A note when the chosen candidate's CV error is worse than the baseline's."""
    error = best.get("exact_error")
    if error is None:
        error = best.get("cv_error")
    if y is None or fold_ids is None or error is None or not np.isfinite(error):
        return []
    baseline = baseline_error(y, fold_ids, classifier)
    if error <= baseline * (1 + 1e-12):
        return []
    what = "predicting each training part's majority class" if classifier else \
        "predicting each training part's mean"
    return [f"the chosen candidate's CV error {error:.4g} is worse than {what} "
            f"({baseline:.4g}) on the same folds: the grid holds no useful model here "
            "(check the lam and kernel ranges and the data's scaling)"]
