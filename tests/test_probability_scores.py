"""Probability scores (neg_log_loss, neg_brier_score, roc_auc_ovr/ovo[_weighted]) on the
fast path: each test fold's held-out values become class probabilities through a scale
fitted on the other folds' held-out values (cross-fitted), tested against the same
computation on refits of the estimator and scikit-learn's metric functions; the search's
score() is the scorer applied to its own predict_proba."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.metrics import brier_score_loss, get_scorer, log_loss, roc_auc_score
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from kernelcv import KernelSearchCV
from kernelcv.estimators import HuberSVMClassifier, LSSVMClassifier
from kernelcv.exceptions import KernelCVError
from kernelcv.machines.calibration import fit_scheme_scale, machine_probabilities


def problem(classes, seed=0, n=120):
    return make_classification(n, 5, n_informative=3, n_redundant=0, n_classes=classes,
                               n_clusters_per_class=1, flip_y=0.05, random_state=seed)


def sklearn_probability_loss(name, codes, p, k, weights):
    """scikit-learn's metric as its scorer applies it (two classes: the +1 column)."""
    if name == "neg_log_loss":
        return log_loss(codes, p, labels=np.arange(k), sample_weight=weights)
    if name == "neg_brier_score":
        return (brier_score_loss(codes, p[:, 1], sample_weight=weights) if k == 2 else
                brier_score_loss(codes, p, labels=np.arange(k), sample_weight=weights))
    if k == 2:
        return -roc_auc_score(codes, p[:, 1], sample_weight=weights)
    scheme = "ovo" if "ovo" in name else "ovr"
    average = "weighted" if name.endswith("weighted") else "macro"
    return -roc_auc_score(codes, p, multi_class=scheme, average=average,
                          labels=np.arange(k), sample_weight=weights)


def manual_log_losses(estimator, X, y, cv, weights=None, name="neg_log_loss"):
    """Per fold: held-out machine values from refits, the scale fitted on the other
    folds' values, scikit-learn's log_loss of the fold's probabilities."""
    classes = np.unique(y)
    codes = np.searchsorted(classes, y)
    k = classes.size
    values = None
    folds = np.empty(len(y), dtype=np.intp)
    for i, (train, test) in enumerate(cv.split(X, y)):
        folds[test] = i
        fitted = estimator.fit(X[train], y[train],
                               sample_weight=None if weights is None else weights[train])
        part = fitted.machine_values(X[test])
        if values is None:
            values = np.empty((len(y), *part.shape[1:]))
        values[test] = part
    losses = []
    for i in range(folds.max() + 1):
        at = folds == i
        scale = fit_scheme_scale(values[~at], codes[~at], k, estimator.multiclass,
                                 None if weights is None else weights[~at])
        p = machine_probabilities(scale, values[at], k, estimator.multiclass)
        losses.append(sklearn_probability_loss(
            name, codes[at], p, k, None if weights is None else weights[at]))
    return np.array(losses)


@pytest.mark.parametrize("classes, scheme", [(2, "ovo"), (3, "ovo"), (3, "ovr")])
@pytest.mark.parametrize("weighted", [False, True])
def test_exact_log_loss_equals_refits_and_cross_fitted_scales(classes, scheme, weighted):
    X, y = problem(classes, seed=classes)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    weights = np.random.default_rng(1).uniform(0.3, 3.0, len(y)) if weighted else None
    estimator = HuberSVMClassifier(gamma=0.3, lam=0.005, multiclass=scheme, tol=1e-12)
    search = KernelSearchCV(estimator, {"lam": [0.005]}, cv=cv, method="exact",
                            scoring="neg_log_loss").fit(X, y, sample_weight=weights)
    expected = manual_log_losses(estimator, X, y, cv, weights)
    got = np.array([search.cv_results_[f"split{i}_test_score"][0] for i in range(4)])
    assert np.allclose(-got, expected, atol=1e-7)


def test_order_inf_log_loss_of_the_lssvm_is_the_exact_one():
    X, y = problem(3, seed=4)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    grid = {"gamma": [0.1, 0.5], "lam": [1e-3, 1e-1]}
    exact = KernelSearchCV(LSSVMClassifier(), grid, cv=cv, method="exact",
                           scoring="neg_log_loss").fit(X, y)
    fast = KernelSearchCV(LSSVMClassifier(), grid, cv=cv, method="closed-form",
                          scoring="neg_log_loss").fit(X, y)
    assert np.allclose(exact.cv_results_["mean_test_score"],
                       fast.cv_results_["mean_test_score"], atol=1e-8)
    assert exact.best_index_ == fast.best_index_


def test_log_loss_search_runs_on_the_default_method_and_scores_its_probabilities():
    X, y = problem(2, seed=5, n=150)
    X_test, y_test = problem(2, seed=6, n=60)
    search = KernelSearchCV(SVC(probability=True), {"C": [0.5, 4.0, 32.0],
                                                   "gamma": [0.05, 0.3]},
                            cv=4, scoring="neg_log_loss").fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.score(X_test, y_test) == pytest.approx(
        -log_loss(y_test, search.predict_proba(X_test)))


# scikit-learn's one-vs-one ROC AUC of more than two classes takes no weights (its refusal
# is tested below), so those are run unweighted
CASES = [(name, classes, scheme, weighted and not (classes > 2 and "ovo" in name))
         for name in ("neg_brier_score", "roc_auc_ovr", "roc_auc_ovo", "roc_auc_ovr_weighted",
                      "roc_auc_ovo_weighted")
         for classes, scheme, weighted in ((2, "ovo", True), (3, "ovo", False),
                                           (3, "ovr", True))]


@pytest.mark.parametrize("name, classes, scheme, weighted", CASES)
def test_probability_scores_equal_refits_and_sklearn_metrics(name, classes, scheme, weighted):
    X, y = problem(classes, seed=classes + 7)
    cv = StratifiedKFold(4, shuffle=True, random_state=2)
    weights = np.random.default_rng(3).uniform(0.3, 3.0, len(y)) if weighted else None
    estimator = HuberSVMClassifier(gamma=0.3, lam=0.01, multiclass=scheme, tol=1e-12)
    search = KernelSearchCV(estimator, {"lam": [0.01]}, cv=cv, method="exact",
                            scoring=name).fit(X, y, sample_weight=weights)
    expected = manual_log_losses(estimator, X, y, cv, weights, name=name)
    got = np.array([search.cv_results_[f"split{i}_test_score"][0] for i in range(4)])
    assert np.allclose(-got, expected, atol=1e-7)


@pytest.mark.parametrize("name", ["neg_brier_score", "roc_auc_ovr_weighted"])
def test_probability_score_on_the_default_method_is_scorer_of_predict_proba(name):
    X, y = problem(3, seed=11, n=150)
    X_test, y_test = problem(3, seed=12, n=60)
    search = KernelSearchCV(SVC(), {"C": [0.5, 8.0], "gamma": [0.05, 0.3]}, cv=4,
                            scoring=name).fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.score(X_test, y_test) == pytest.approx(
        get_scorer(name)._score_func(y_test, search.predict_proba(X_test),
                                     **get_scorer(name)._kwargs)
        * (-1 if name.startswith("neg_") else 1))


def test_weighted_one_vs_one_roc_auc_is_refused_before_any_work():
    X, y = problem(3, seed=13)
    with pytest.raises(KernelCVError, match="roc_auc_ovr"):
        KernelSearchCV(SVC(), {"C": [1.0]}, cv=3, scoring="roc_auc_ovo").fit(
            X, y, sample_weight=np.ones(len(y)))
