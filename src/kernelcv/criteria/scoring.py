"""Scores of held-out predictions, fold by fold, for searches that rank by a named metric.

Every criterion of a kernel search (exact refits, closed form, BIF) produces a held-out
decision value ``f_{-S(j)}(x_j)`` for every sample; scikit-learn's scorers of the same
name compute their value from the same quantities on each test fold (``decision_function``
for ROC AUC, ``predict`` for the others), so with exact held-out values the per-fold
scores here equal ``GridSearchCV``'s: each fold's value is scikit-learn's own metric
function (``sklearn.metrics``), applied to the held-out values.

:class:`HeldoutScore` holds one metric name; :meth:`HeldoutScore.fold_losses` returns one
*loss* per fold, the negated score (greater-is-better scores become smaller-is-better
losses, so a search minimises every criterion the same way). ROC AUC and average
precision use the decision values; the others the held-out labels (precision, recall
and F1 of the +1 class for two classes, or averaged: ``_macro``, ``_micro``,
``_weighted``). The scores of class probabilities (:data:`PROBABILITY_SCORES`: log-loss,
Brier score, one-vs-rest and one-vs-one ROC AUC) first turn each test fold's held-out
values into probabilities by a scale fitted on the other folds' values (cross-fitted).
Cost: O(n log n) for ROC AUC and average precision (a sort per fold), O(n k) otherwise.

scikit-learn's other scorer names that read ``predict`` or ``predict_proba``
(``matthews_corrcoef``, ``jaccard``, the clustering indices, ``explained_variance``,
``max_error``, ``d2_*``, ...) are scored by scikit-learn's scorer object itself, given a
stand-in estimator that returns the fold's held-out predictions in the original labels
(or its cross-fitted probabilities, or for ``top_k_accuracy`` its per-class scores
:func:`~kernelcv.machines.multiclass.class_scores`, those of the estimators'
``decision_function``): GridSearchCV's value on the same held-out values,
with scikit-learn's per-call checks paid once per fold.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ..exceptions import KernelCVError
from ..machines.calibration import fit_scheme_scale, machine_probabilities
from ..machines.multiclass import class_scores

_AVERAGED = tuple(f"{name}_{average}" for name in ("f1", "precision", "recall")
                  for average in ("macro", "micro", "weighted"))
#: Scores of two classes only (the positive class is +1, the larger label).
BINARY_SCORES = ("roc_auc", "average_precision", "f1", "precision", "recall")
#: Scores computed from the held-out decision values themselves, not the labels.
VALUE_SCORES = ("roc_auc", "average_precision")
#: Scores of class probabilities: each test fold's held-out values are scaled to
#: probabilities by a scale fitted on the other folds' held-out values (cross-fitted, as
#: :mod:`kernelcv.machines.calibration` fits the chosen model's on all of them).
PROBABILITY_SCORES = ("neg_log_loss", "neg_brier_score", "roc_auc_ovr", "roc_auc_ovo",
                      "roc_auc_ovr_weighted", "roc_auc_ovo_weighted")
CLASSIFICATION_SCORES = ("accuracy", "balanced_accuracy", "matthews_corrcoef",
                         *BINARY_SCORES, *_AVERAGED, *PROBABILITY_SCORES)
REGRESSION_SCORES = ("neg_mean_squared_error", "neg_root_mean_squared_error",
                     "neg_mean_absolute_error", "r2")
SCORES = CLASSIFICATION_SCORES + REGRESSION_SCORES


# scikit-learn's metric function of each score name and its keyword arguments, which the
# functions below compute (tests/test_scoring_metrics.py compares them).
METRICS = {"accuracy": ("accuracy_score", {}),
           "balanced_accuracy": ("balanced_accuracy_score", {}),
           "matthews_corrcoef": ("matthews_corrcoef", {}),
           "roc_auc": ("roc_auc_score", {}),
           "average_precision": ("average_precision_score", {}),
           **{name: (f"{name}_score", {}) for name in ("f1", "precision", "recall")},
           **{name: (f"{name.split('_')[0]}_score", {"average": name.split("_")[1]})
              for name in _AVERAGED},
           "neg_log_loss": ("log_loss", {}),
           "neg_brier_score": ("brier_score_loss", {}),
           **{f"roc_auc_{scheme}{suffix}": ("roc_auc_score", {"multi_class": scheme, **extra})
              for scheme in ("ovr", "ovo")
              for suffix, extra in (("", {}), ("_weighted", {"average": "weighted"}))},
           "neg_mean_squared_error": ("mean_squared_error", {}),
           "neg_root_mean_squared_error": ("root_mean_squared_error", {}),
           "neg_mean_absolute_error": ("mean_absolute_error", {}), "r2": ("r2_score", {})}


@dataclass(frozen=True)
class HeldoutScore:
    """A named score computed from held-out values, one value per fold.

    Parameters
    ----------
    name : one of :data:`SCORES`, or another of scikit-learn's scorer names that reads
        ``predict`` or ``predict_proba`` (:func:`scorer_response`): those are computed
        by scikit-learn's scorer itself on the held-out predictions (its per-call checks
        paid once per fold).
    classifier, labels : set by :meth:`bound` when a search knows its task: whether the
        machine classifies, and the original label of each class code (for the scores
        of scikit-learn's scorers, which see the labels GridSearchCV's would see).
    """

    name: str
    classifier: bool | None = None
    labels: tuple | None = None

    def __post_init__(self):
        if self.name not in SCORES and scorer_response(self.name) is None:
            raise KernelCVError(
                f"scoring {self.name!r} cannot be computed from held-out decision values; "
                f"the fast criteria offer {', '.join(SCORES)} and scikit-learn's other "
                "scorer names (a callable needs method='exact')")

    @property
    def for_classifiers(self) -> bool:
        """Whether the score is a classification score (scikit-learn's other scorers:
        those of probabilities; the rest apply to either task, as in GridSearchCV)."""
        return (self.name in CLASSIFICATION_SCORES
                or scorer_response(self.name) in ("predict_proba", "decision_function"))

    @property
    def reads_machines(self) -> bool:
        """Whether the score reads every machine's held-out values of a multiclass scheme
        (probabilities and per-class decision scores), not only the predicted class."""
        return self.of_probabilities or scorer_response(self.name) == "decision_function"

    @property
    def of_probabilities(self) -> bool:
        """Whether the score reads class probabilities (cross-fitted from the held-out
        values of every machine of a multiclass scheme)."""
        return (self.name in PROBABILITY_SCORES
                or scorer_response(self.name) == "predict_proba")

    def bound(self, classifier: bool, mapping: dict | None) -> HeldoutScore:
        """This score for a search of known task: ``mapping`` the label mapping of
        :func:`~kernelcv.validation.check_data` (class code -> original label)."""
        labels = None if not mapping else tuple(mapping[code] for code in sorted(mapping))
        return replace(self, classifier=bool(classifier), labels=labels)

    def check(self, classifier: bool, n_classes: int | None = None, weighted: bool = False):
        """Refuse a score that does not fit the task (before any work); ``weighted``: the
        rows have sample weights."""
        if weighted and self.name.startswith("roc_auc_ovo") and (n_classes or 2) > 2:
            raise KernelCVError(f"scoring {self.name!r} takes no sample weights (scikit-"
                                "learn's one-vs-one ROC AUC refuses them); use "
                                f"{self.name.replace('ovo', 'ovr')!r}")
        if weighted and self.name not in SCORES and not _takes_weights(self.name):
            warnings.warn(f"scoring {self.name!r} takes no sample weights: the test folds "
                          "are scored unweighted (as GridSearchCV does, with its warning)",
                          UserWarning, stacklevel=3)
        if self.name not in SCORES and not self.for_classifiers:
            return  # scikit-learn's scorer of predictions: GridSearchCV refuses no task
        if classifier != self.for_classifiers:
            task = "a classifier" if classifier else "a regressor"
            offered = CLASSIFICATION_SCORES if classifier else REGRESSION_SCORES
            raise KernelCVError(f"scoring {self.name!r} does not apply to {task}; use one "
                                f"of {', '.join(offered)}")
        if self.name in BINARY_SCORES and n_classes is not None and n_classes > 2:
            raise KernelCVError(f"scoring {self.name!r} needs two classes, got {n_classes}; "
                                "use 'accuracy', 'balanced_accuracy' or an averaged one "
                                f"('{self.name}_macro', 'f1_weighted', ...) for more classes"
                                if self.name not in VALUE_SCORES else
                                f"scoring {self.name!r} needs two classes, got {n_classes}; "
                                "use 'accuracy' or 'balanced_accuracy' for more classes")

    def fold_losses(self, y, predictions, fold_ids, weights=None, scheme=None) -> np.ndarray:
        """One loss (the negated score) per fold.

        Parameters
        ----------
        y : (n,) labels in {-1, +1}, class codes ``0..k-1`` or targets.
        predictions : (n,) held-out decision values (binary, regression) or held-out
            class codes (more than two classes).
        fold_ids : (n,) fold ids ``0..t-1``.
        weights : (n,) sample weights or None: each fold's score weighted by its rows'
            weights (scikit-learn's metric with ``sample_weight``, as GridSearchCV scores
            when ``fit`` is given ``sample_weight``).
        scheme : ``(n_classes, "ovo" | "ovr")`` of a multiclass machine, for the scores
            of :data:`PROBABILITY_SCORES`, whose ``predictions`` are then the (n, m)
            machines' held-out values (the (n,) values for two classes).
        """
        if self.name not in SCORES:
            return _scorer_losses(self, y, predictions, fold_ids, weights, scheme)
        if self.name in PROBABILITY_SCORES:
            return _probability_losses(self.name, y, predictions, fold_ids, weights,
                                       scheme)
        t = int(fold_ids.max()) + 1
        binary = self.for_classifiers and set(np.unique(y).tolist()) <= {-1.0, 1.0}
        if self.for_classifiers and self.name not in VALUE_SCORES:
            # A binary value of exactly 0 counts as the +1 class, as in the 0-1 error.
            predictions = np.where(predictions >= 0, 1.0, -1.0) if binary else predictions
        losses = np.empty(t)
        for k in range(t):
            at = fold_ids == k
            losses[k] = -(self._score(y[at], predictions[at]) if weights is None
                          else self._weighted_score(y[at], predictions[at], weights[at]))
        return losses

    def _weighted_score(self, y, values, weights) -> float:
        """scikit-learn's metric of this name with ``sample_weight`` (its own function:
        the weighted forms are rarer, so its per-call checks are paid here)."""
        import sklearn.metrics  # only weighted scores need it

        if self.name in VALUE_SCORES and np.unique(y).size < 2:
            raise KernelCVError(f"{self.name} is undefined on a test fold with one class; "
                                "use stratified folds (an integer cv) or "
                                "scoring='accuracy'")
        function, options = METRICS[self.name]
        value = getattr(sklearn.metrics, function)(np.asarray(y), np.asarray(values),
                                                   sample_weight=weights, **options)
        return -float(value) if self.name.startswith("neg_") else float(value)

    def _score(self, y, values) -> float:
        """scikit-learn's metric of this name, computed here with numpy: the same
        formulas (tested against ``sklearn.metrics``) without its per-call input checks,
        which doubled a search's time (335 calls on wine)."""
        if self.name in VALUE_SCORES and np.unique(y).size < 2:
            raise KernelCVError(f"{self.name} is undefined on a test fold with one class; "
                                "use stratified folds (an integer cv) or "
                                "scoring='accuracy'")
        value = _METRIC_FUNCTIONS[self.name](np.asarray(y), np.asarray(values))
        return -value if self.name.startswith("neg_") else value


def scorer_response(name) -> str | None:
    """``"predict"``, ``"predict_proba"`` or ``"decision_function"`` (``top_k_accuracy``,
    which reads the per-class scores of
    :meth:`~kernelcv.estimators._base._KernelMachineClassifier.decision_function` where an
    estimator has them): what scikit-learn's scorer ``name`` reads, for the names outside
    :data:`SCORES`; None for unknown names and for :data:`SCORES` itself."""
    if not isinstance(name, str) or name in SCORES:
        return None
    return _scorer_responses().get(name)


@lru_cache(maxsize=1)
def _scorer_responses() -> dict:
    import sklearn.metrics  # only for scikit-learn's other scorer names

    out = {}
    for name in sklearn.metrics.get_scorer_names():
        response = getattr(sklearn.metrics.get_scorer(name), "_response_method", None)
        if isinstance(response, tuple | list) and response:
            response = response[0]  # the first the estimator has: every kernelcv classifier
        if response in ("predict", "predict_proba", "decision_function"):
            out[name] = response
    return out


def _takes_weights(name) -> bool:
    """Whether scikit-learn's scorer ``name`` passes ``sample_weight`` to its metric (the
    clustering indices and ``max_error`` take none)."""
    import sklearn.metrics  # only for scikit-learn's other scorer names

    function = getattr(sklearn.metrics.get_scorer(name), "_score_func", None)
    return function is None or "sample_weight" in inspect.signature(function).parameters


@lru_cache(maxsize=1)
def _held_out_estimators():
    """Two stand-in estimators whose ``predict`` / ``predict_proba`` return held-out
    values already computed (the row index is X's one column), so that scikit-learn's
    scorer objects score them exactly as they score a fitted estimator."""
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

    class HeldOutClassifier(ClassifierMixin, BaseEstimator):
        def __init__(self, classes=None, predicted=None, probabilities=None, decision=None):
            self.classes = classes
            self.predicted = predicted
            self.probabilities = probabilities
            self.decision = decision

        @property
        def classes_(self):
            return self.classes

        def predict(self, X):
            return self.predicted[np.asarray(X)[:, 0]]

        def predict_proba(self, X):
            return self.probabilities[np.asarray(X)[:, 0]]

        def decision_function(self, X):
            return self.decision[np.asarray(X)[:, 0]]

    class HeldOutRegressor(RegressorMixin, BaseEstimator):
        def __init__(self, predicted=None):
            self.predicted = predicted

        def predict(self, X):
            return self.predicted[np.asarray(X)[:, 0]]

    return HeldOutClassifier, HeldOutRegressor


def _scorer_losses(score: HeldoutScore, y, values, fold_ids, weights, scheme) -> np.ndarray:
    """Per fold the negated value of scikit-learn's scorer ``score.name`` (one outside
    :data:`SCORES`) on the fold's held-out predictions, in the original labels
    (``score.labels``), or its cross-fitted class probabilities (as
    :func:`_probability_losses`), weighted by ``weights`` when given. O(scikit-learn's
    metric) per fold plus its input checks."""
    import sklearn.metrics  # only for scikit-learn's other scorer names

    if score.classifier is None:
        raise KernelCVError(f"scoring {score.name!r} needs its search's task: use "
                            "HeldoutScore.bound (run_search does)")
    scorer = sklearn.metrics.get_scorer(score.name)
    weighted = _takes_weights(score.name)
    classifier_type, regressor_type = _held_out_estimators()
    y = np.asarray(y)
    values = np.asarray(values)
    t = int(fold_ids.max()) + 1
    if score.classifier:
        classes = np.asarray(score.labels)
        n_classes = classes.size
        codes = (y > 0).astype(np.intp) if n_classes == 2 else y.astype(np.intp)
        truth = classes[codes]
        if score.reads_machines:
            strategy = None if scheme is None else scheme[1]
        else:
            predicted = classes[(values >= 0).astype(np.intp) if n_classes == 2
                                else values.astype(np.intp)]
    losses = np.empty(t)
    for k in range(t):
        at = fold_ids == k
        rows = np.arange(int(at.sum())).reshape(-1, 1)
        if score.classifier and not score.of_probabilities and score.reads_machines:
            part = values[at].astype(np.float64)
            stand_in = classifier_type(classes, decision=part if n_classes == 2 else
                                       class_scores(part, n_classes, strategy))
        elif score.classifier and score.of_probabilities:
            stand_in = classifier_type(classes, probabilities=_cross_fitted(
                values, codes, at, n_classes, strategy, weights))
        elif score.classifier:
            stand_in = classifier_type(classes, predicted=predicted[at])
        else:
            stand_in = regressor_type(values[at].astype(np.float64))
        extra = {} if weights is None or not weighted else {"sample_weight": weights[at]}
        try:
            value = scorer(stand_in, rows, truth[at] if score.classifier else y[at], **extra)
        except (ValueError, TypeError) as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else "failed"
            raise KernelCVError(f"scoring {score.name!r} on test fold {k}: {reason}") from None
        losses[k] = -float(value)
    return losses


def _cross_fitted(values, codes, at, n_classes, strategy, weights) -> np.ndarray:
    """Class probabilities of the rows ``at`` (one test fold) by the scale fitted on the
    other rows' held-out values (:func:`kernelcv.machines.calibration.fit_scheme_scale`,
    weighted when ``weights`` are given)."""
    scale = fit_scheme_scale(values[~at], codes[~at], n_classes, strategy,
                             None if weights is None else weights[~at])
    return machine_probabilities(scale, values[at], n_classes, strategy)


def _probability_losses(name, y, values, fold_ids, weights, scheme) -> np.ndarray:
    """Per fold the negated score ``name`` (one of :data:`PROBABILITY_SCORES`) of its
    rows' class probabilities, the scale fitted on the other folds' held-out values
    (:func:`kernelcv.machines.calibration.fit_scheme_scale`), by scikit-learn's metric
    function, weighted by ``weights`` when given. As scikit-learn's scorers of two
    classes, the Brier score and ROC AUC read the +1 class's probability. O(n k) per fold
    plus the scale's fit (ROC AUC: O(n log n k^2) for ``ovo``)."""
    import sklearn.metrics  # scoring by probabilities only

    function, options = METRICS[name]
    metric = getattr(sklearn.metrics, function)
    n_classes, strategy = (2, None) if scheme is None else scheme
    y = np.asarray(y)
    codes = (y > 0).astype(np.intp) if n_classes == 2 else y.astype(np.intp)
    values = np.asarray(values, dtype=np.float64)
    labels = np.arange(n_classes)
    t = int(fold_ids.max()) + 1
    losses = np.empty(t)
    for k in range(t):
        at = fold_ids == k
        p = _cross_fitted(values, codes, at, n_classes, strategy, weights)
        weight = None if weights is None else weights[at]
        if name.startswith("roc_auc") and np.unique(codes[at]).size < n_classes:
            raise KernelCVError(f"{name} needs every class in each test fold; use "
                                "stratified folds (an integer cv) or scoring='neg_log_loss'")
        if name == "neg_log_loss":
            value = metric(codes[at], p, labels=labels, sample_weight=weight)
        elif n_classes == 2:
            value = metric(codes[at], p[:, 1], sample_weight=weight)
        elif name == "neg_brier_score":
            value = metric(codes[at], p, labels=labels, sample_weight=weight)
        else:
            value = metric(codes[at], p, labels=labels, sample_weight=weight, **options)
        losses[k] = value if name.startswith("neg_") else -value
    return losses


def _accuracy(y, predicted) -> float:
    return float(np.mean(y == predicted))


def _balanced_accuracy(y, predicted) -> float:
    """The mean over the classes present in ``y`` of their recall."""
    classes = np.unique(y)
    return float(np.mean([np.mean(predicted[y == c] == c) for c in classes]))


def _roc_auc(y, scores) -> float:
    """Area under the ROC curve of two classes (the larger label positive): the
    Mann-Whitney statistic with tied scores at their average rank, which equals the
    trapezoidal area scikit-learn computes. O(n log n)."""
    positive = y == np.max(y)
    ranks = _average_ranks(scores)
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _average_ranks(values) -> np.ndarray:
    """1-based ranks, tied values sharing their average rank (scipy's ``rankdata``,
    without importing scipy.stats on the command line's path)."""
    order = np.argsort(values, kind="mergesort")
    _, first, counts = np.unique(values[order], return_index=True, return_counts=True)
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(first + (counts + 1) / 2.0, counts)
    return ranks


def _average_precision(y, scores) -> float:
    """Area under the precision-recall curve as scikit-learn sums it: over the distinct
    scores in decreasing order, ``sum (R_k - R_{k-1}) P_k`` (tied scores one step). O(n log n)."""
    positive = y == np.max(y)
    order = np.argsort(-scores, kind="mergesort")
    ordered, hits = scores[order], positive[order].astype(np.float64)
    last = np.r_[np.flatnonzero(np.diff(ordered) != 0), ordered.size - 1]  # each threshold
    true_pos = np.cumsum(hits)[last]
    precision = true_pos / (last + 1.0)
    recall = true_pos / true_pos[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def _class_counts(y, predicted):
    """Per class present in y or in the predictions: true positives, predicted and true
    counts (scikit-learn's labels for the averaged scores)."""
    classes = np.union1d(y, predicted)
    hits = np.array([np.sum((y == c) & (predicted == c)) for c in classes], dtype=float)
    chosen = np.array([np.sum(predicted == c) for c in classes], dtype=float)
    support = np.array([np.sum(y == c) for c in classes], dtype=float)
    return classes, hits, chosen, support


def _matthews(y, predicted) -> float:
    """Matthews' correlation of any number of classes: ``(c s - sum_k p_k t_k) /
    sqrt((s^2 - sum_k p_k^2)(s^2 - sum_k t_k^2))`` with c the hits, s the rows, p_k and
    t_k the predicted and true counts of class k; 0 where the root is 0 (scikit-learn's
    convention). O(n k)."""
    _, hits, chosen, support = _class_counts(y, predicted)
    rows = float(y.size)
    top = hits.sum() * rows - np.dot(chosen, support)
    bottom = (rows * rows - np.dot(chosen, chosen)) * (rows * rows - np.dot(support, support))
    return float(top / np.sqrt(bottom)) if bottom > 0 else 0.0


def _ratio(top, bottom):
    """``top / bottom`` with 0 where the bottom is 0 (scikit-learn's zero_division)."""
    return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), 0.0)


def _per_class(kind, hits, chosen, support):
    if kind == "precision":
        return _ratio(hits, chosen)
    if kind == "recall":
        return _ratio(hits, support)
    return _ratio(2.0 * hits, chosen + support)  # F1 = 2 tp / (2 tp + fp + fn)


def _class_score(kind, average):
    """Precision, recall or F1 of the positive class (+1) or averaged over the classes."""
    def score(y, predicted) -> float:
        classes, hits, chosen, support = _class_counts(y, predicted)
        if average == "micro":  # one label per sample: pooled counts
            return float(_per_class(kind, hits.sum(), chosen.sum(), support.sum()))
        values = _per_class(kind, hits, chosen, support)
        if average == "binary":
            return float(values[classes == 1.0][0]) if np.any(classes == 1.0) else 0.0
        if average == "weighted":
            return float(np.sum(values * support) / support.sum()) if support.sum() else 0.0
        return float(np.mean(values))
    return score


def _mse(y, predicted) -> float:
    return float(np.mean((y - predicted) ** 2))


def _r2(y, predicted) -> float:
    """1 - residual / total sum of squares (1.0 or 0.0 for a constant y, as scikit-learn
    with ``force_finite``; NaN for a single sample, as scikit-learn)."""
    if y.size < 2:  # undefined on one sample: scikit-learn's NaN (LeaveOneOut folds)
        return float("nan")
    total = float(np.sum((y - np.mean(y)) ** 2))
    residual = float(np.sum((y - predicted) ** 2))
    if total == 0.0:
        return 1.0 if residual == 0.0 else 0.0
    return 1.0 - residual / total


_METRIC_FUNCTIONS = {
    "accuracy": _accuracy, "balanced_accuracy": _balanced_accuracy, "roc_auc": _roc_auc,
    "matthews_corrcoef": _matthews,
    "average_precision": _average_precision,
    **{name: _class_score(name, "binary") for name in ("f1", "precision", "recall")},
    **{name: _class_score(*name.split("_")) for name in _AVERAGED},
    "neg_mean_squared_error": _mse,
    "neg_root_mean_squared_error": lambda y, p: float(np.sqrt(_mse(y, p))),
    "neg_mean_absolute_error": lambda y, p: float(np.mean(np.abs(y - p))),
    "r2": _r2,
}
