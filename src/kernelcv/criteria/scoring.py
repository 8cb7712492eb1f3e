"""Scores of held-out predictions, fold by fold, for searches that rank by a named metric.

Every criterion of a kernel search (exact refits, closed form, BIF) produces a held-out
decision value ``f_{-S(j)}(x_j)`` for every sample; scikit-learn's scorers of the same
name compute their value from the same quantities on each test fold (``decision_function``
for ROC AUC, ``predict`` for the others), so with exact held-out values the per-fold
scores here equal ``GridSearchCV``'s: each fold's value is scikit-learn's own metric
function (``sklearn.metrics``), applied to the held-out values.

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


# scikit-learn's metric function for each score name (imported when a score is computed:
# only searches with ``scoring`` set need them, and those come through the estimators,
# which have imported scikit-learn already).
_METRICS = {"accuracy": "accuracy_score", "balanced_accuracy": "balanced_accuracy_score",
            "roc_auc": "roc_auc_score", "neg_mean_squared_error": "mean_squared_error",
            "neg_root_mean_squared_error": "root_mean_squared_error",
            "neg_mean_absolute_error": "mean_absolute_error", "r2": "r2_score"}


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
        from sklearn import metrics

        if self.name == "roc_auc" and np.unique(y).size < 2:
            raise KernelCVError("roc_auc is undefined on a test fold with one class; use "
                                "stratified folds (an integer cv) or scoring='accuracy'")
        value = float(getattr(metrics, _METRICS[self.name])(y, values))
        return -value if self.name.startswith("neg_") else value
