"""Scores of held-out predictions, fold by fold, for searches that rank by a named metric.

Every criterion of a kernel search (exact refits, closed form, BIF) produces a held-out
decision value ``f_{-S(j)}(x_j)`` for every sample; scikit-learn's scorers of the same
name compute their value from the same quantities on each test fold (``decision_function``
for ROC AUC, ``predict`` for the others), so with exact held-out values the per-fold
scores here equal ``GridSearchCV``'s. Implemented in numpy (no scikit-learn import).

:class:`HeldoutScore` holds one metric name; :meth:`HeldoutScore.fold_losses` returns one
*loss* per fold, the negated score (greater-is-better scores become smaller-is-better
losses, so a search minimises every criterion the same way). Cost: O(n log n) for ROC AUC
(a sort per fold), O(n) otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..exceptions import KernelCVError

CLASSIFICATION_SCORES = ("accuracy", "balanced_accuracy", "roc_auc")
REGRESSION_SCORES = ("neg_mean_squared_error", "neg_root_mean_squared_error",
                     "neg_mean_absolute_error", "r2")
SCORES = CLASSIFICATION_SCORES + REGRESSION_SCORES


def _roc_auc(y, f) -> float:
    """Area under the ROC curve of scores ``f`` for labels ``y`` in {-1, +1}.

    The Mann-Whitney statistic with tied scores sharing their average rank, which equals
    the trapezoidal area scikit-learn's ``roc_auc_score`` computes.
    """
    positive = y > 0
    n_pos = int(positive.sum())
    n_neg = y.shape[0] - n_pos
    if n_pos == 0 or n_neg == 0:
        raise KernelCVError("roc_auc is undefined on a test fold with one class; use "
                            "stratified folds (an integer cv) or scoring='accuracy'")
    order = np.argsort(f, kind="mergesort")
    ranks = np.empty(f.shape[0])
    sorted_f = f[order]
    starts = np.flatnonzero(np.r_[True, sorted_f[1:] != sorted_f[:-1]])
    ends = np.r_[starts[1:], f.shape[0]]
    for start, end in zip(starts, ends, strict=True):
        ranks[order[start:end]] = (start + end + 1) / 2.0  # average 1-based rank
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _balanced_accuracy(y, predicted) -> float:
    """Mean recall over the classes present in ``y`` (scikit-learn's definition)."""
    classes = np.unique(y)
    return float(np.mean([np.mean(predicted[y == c] == c) for c in classes]))


@dataclass(frozen=True)
class HeldoutScore:
    """A named score computed from held-out values, one value per fold.

    Parameters
    ----------
    name : one of :data:`SCORES` (scikit-learn's scorer names).
    """

    name: str

    def __post_init__(self):
        if self.name not in SCORES:
            raise KernelCVError(
                f"scoring {self.name!r} cannot be computed from held-out decision values; "
                f"the fast criteria offer {', '.join(SCORES)} (any other scorer, or a "
                "callable, needs method='exact')")

    @property
    def for_classifiers(self) -> bool:
        """Whether the score is a classification score."""
        return self.name in CLASSIFICATION_SCORES

    def check(self, classifier: bool, n_classes: int | None = None):
        """Refuse a score that does not fit the task (before any work)."""
        if classifier != self.for_classifiers:
            task = "a classifier" if classifier else "a regressor"
            offered = CLASSIFICATION_SCORES if classifier else REGRESSION_SCORES
            raise KernelCVError(f"scoring {self.name!r} does not apply to {task}; use one "
                                f"of {', '.join(offered)}")
        if self.name == "roc_auc" and n_classes is not None and n_classes > 2:
            raise KernelCVError(f"scoring 'roc_auc' needs two classes, got {n_classes}; use "
                                "'accuracy' or 'balanced_accuracy' for more classes")

    def fold_losses(self, y, predictions, fold_ids) -> np.ndarray:
        """One loss (the negated score) per fold.

        Parameters
        ----------
        y : (n,) labels in {-1, +1}, class codes ``0..k-1`` or targets.
        predictions : (n,) held-out decision values (binary, regression) or held-out
            class codes (more than two classes).
        fold_ids : (n,) fold ids ``0..t-1``.
        """
        t = int(fold_ids.max()) + 1
        binary = self.for_classifiers and set(np.unique(y).tolist()) <= {-1.0, 1.0}
        if self.for_classifiers and self.name != "roc_auc":
            # A binary value of exactly 0 counts as the +1 class, as in the 0-1 error.
            predictions = np.where(predictions >= 0, 1.0, -1.0) if binary else predictions
        losses = np.empty(t)
        for k in range(t):
            at = fold_ids == k
            losses[k] = -self._score(y[at], predictions[at])
        return losses

    def _score(self, y, values) -> float:
        name = self.name
        if name == "accuracy":
            return float(np.mean(values == y))
        if name == "balanced_accuracy":
            return _balanced_accuracy(y, values)
        if name == "roc_auc":
            return _roc_auc(y, values)
        residual = y - values
        if name == "neg_mean_squared_error":
            return -float(np.mean(residual**2))
        if name == "neg_root_mean_squared_error":
            return -float(np.sqrt(np.mean(residual**2)))
        if name == "neg_mean_absolute_error":
            return -float(np.mean(np.abs(residual)))
        total = float(np.sum((y - y.mean()) ** 2))
        # r2: scikit-learn's convention for a constant fold (1 if perfect, else 0).
        if total == 0:
            return 1.0 if float(np.sum(residual**2)) == 0 else 0.0
        return 1.0 - float(np.sum(residual**2)) / total
