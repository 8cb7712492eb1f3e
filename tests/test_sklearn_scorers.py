"""scikit-learn's scorer names outside kernelcv's own list (matthews_corrcoef, jaccard,
the clustering indices, explained_variance, max_error, d2_*, ...) on the fast path: the
scorer itself scores the held-out predictions in the original labels, so every value is
GridSearchCV's on the same folds (the estimator searched is kernelcv's own, whose refits
GridSearchCV runs), weighted or not; the probability ones against the cross-fitted
probabilities and scikit-learn's metric."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import d2_brier_score, d2_log_loss_score
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

from kernelcv import KernelSearchCV, grid_search
from kernelcv.criteria.scoring import SCORES, HeldoutScore, scorer_response
from kernelcv.estimators import HuberSVMClassifier, KernelRidgeRegressor, L2SVMClassifier
from kernelcv.exceptions import KernelCVError
from kernelcv.machines.calibration import fit_scheme_scale, machine_probabilities
from kernelcv.reading.files import make_synthetic

GRID = {"gamma": [0.05, 0.3], "lam": [1e-3, 3e-2]}


def labelled(classes, n=120, seed=0, labels=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    scores = X[:, :classes] + 0.5 * rng.normal(size=(n, classes))
    codes = np.argmax(scores, axis=1) if classes > 2 else (scores[:, 0] > scores[:, 1])
    return X, np.asarray(labels)[codes.astype(int)]


def assert_same_as_gridsearchcv(estimator, X, y, name, cv, weights=None):
    extra = {} if weights is None else {"sample_weight": weights}
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = KernelSearchCV(estimator, GRID, cv=cv, method="exact", scoring=name).fit(
            X, y, **extra)
    with warnings.catch_warnings(record=True) as reference_warned:
        warnings.simplefilter("always")
        reference = GridSearchCV(estimator, GRID, cv=cv, scoring=name).fit(X, y, **extra)
    # a metric without sample weights: both warn and score unweighted
    assert (any("sample_weight" in str(w.message) or "sample weights" in str(w.message)
                for w in ours_warned)
            == any("does not support sample_weight" in str(w.message)
                   for w in reference_warned))
    assert ours.search_ is not None  # the fast path, not fold by fold
    for k in range(cv.get_n_splits()):
        np.testing.assert_allclose(ours.cv_results_[f"split{k}_test_score"],
                                   reference.cv_results_[f"split{k}_test_score"],
                                   rtol=1e-9, atol=1e-9)
    assert ours.best_params_ == reference.best_params_


@pytest.mark.parametrize("name", ["matthews_corrcoef", "jaccard_macro", "adjusted_rand_score",
                                  "v_measure_score", "neg_max_error"])
def test_binary_string_labels_equal_gridsearchcv(name):
    X, y = labelled(2, seed=1, labels=["no", "yes"])
    if name == "neg_max_error":  # a regression metric of numeric labels only
        y = np.where(y == "yes", 7, 3)
    assert_same_as_gridsearchcv(HuberSVMClassifier(tol=1e-12), X, y, name,
                                StratifiedKFold(4, shuffle=True, random_state=0))


@pytest.mark.parametrize("name", ["matthews_corrcoef", "jaccard_weighted", "neg_max_error",
                                  "fowlkes_mallows_score"])
@pytest.mark.parametrize("weighted", [False, True])
def test_three_classes_in_their_own_labels_equal_gridsearchcv(name, weighted):
    if weighted and name in ("fowlkes_mallows_score",):
        name = "matthews_corrcoef"  # the clustering indices take no sample weights
    X, y = labelled(3, n=150, seed=2, labels=[1, 2, 5])  # max_error reads the label values
    weights = np.random.default_rng(4).uniform(0.3, 3.0, len(y)) if weighted else None
    assert_same_as_gridsearchcv(L2SVMClassifier(tol=1e-12), X, y, name,
                                StratifiedKFold(3, shuffle=True, random_state=1), weights)


@pytest.mark.parametrize("name", ["explained_variance", "neg_median_absolute_error",
                                  "neg_max_error", "d2_absolute_error_score",
                                  "neg_mean_absolute_percentage_error"])
def test_regression_scores_equal_gridsearchcv(name):
    X, y = make_synthetic(100, n_features=5, task="regression", random_state=5)
    assert_same_as_gridsearchcv(KernelRidgeRegressor(), X, y + 3.0, name,
                                KFold(4, shuffle=True, random_state=2))


@pytest.mark.parametrize("name, metric", [("d2_log_loss_score", d2_log_loss_score),
                                          ("d2_brier_score", d2_brier_score)])
@pytest.mark.parametrize("classes", [2, 3])
def test_probability_scorers_score_the_cross_fitted_probabilities(name, metric, classes):
    # two classes: scikit-learn's binary probability metrics want 0/1 (or a pos_label)
    X, y = labelled(classes, seed=6 + classes, labels=[0, 1] if classes == 2 else
                    ["p", "q", "r"])
    cv = StratifiedKFold(4, shuffle=True, random_state=3)
    estimator = HuberSVMClassifier(gamma=0.3, lam=0.01, tol=1e-12)
    search = KernelSearchCV(estimator, {"lam": [0.01]}, cv=cv, method="exact",
                            scoring=name).fit(X, y)
    classes_ = np.unique(y)
    codes = np.searchsorted(classes_, y)
    values, folds = None, np.empty(len(y), dtype=np.intp)
    for k, (train, test) in enumerate(cv.split(X, y)):
        folds[test] = k
        part = estimator.fit(X[train], y[train]).machine_values(X[test])
        values = np.empty((len(y), *part.shape[1:])) if values is None else values
        values[test] = part
    for k in range(4):
        at = folds == k
        scale = fit_scheme_scale(values[~at], codes[~at], classes, "ovo")
        p = machine_probabilities(scale, values[at], classes, "ovo")
        expected = metric(y[at], p[:, 1] if classes == 2 else p)
        assert search.cv_results_[f"split{k}_test_score"][0] == pytest.approx(expected,
                                                                             abs=1e-7)


def test_every_scikit_learn_scorer_name_is_computed_from_held_out_values():
    import sklearn.metrics

    for name in sklearn.metrics.get_scorer_names():
        assert name in SCORES or scorer_response(name) is not None, name
        HeldoutScore(name)
    X, y = labelled(3, seed=9, labels=["a", "b", "c"])
    with pytest.raises(KernelCVError, match="method='exact'"):
        KernelSearchCV(L2SVMClassifier(), GRID,
                       scoring=lambda estimator, X, y: 0.0).fit(X, y)


@pytest.mark.parametrize("scheme", ["ovo", "ovr"])
def test_top_k_accuracy_reads_the_per_class_scores_as_gridsearchcv(scheme):
    X, y = labelled(3, n=150, seed=12, labels=["a", "b", "c"])
    assert_same_as_gridsearchcv(L2SVMClassifier(multiclass=scheme, tol=1e-12), X, y,
                                "top_k_accuracy",
                                StratifiedKFold(3, shuffle=True, random_state=4))


def test_a_scorer_that_fails_on_a_fold_is_one_readable_error():
    X, y = labelled(2, seed=10, labels=["no", "yes"])  # jaccard: pos_label=1 not a label
    with pytest.raises(KernelCVError, match=r"scoring 'jaccard' on test fold 0: "):
        KernelSearchCV(L2SVMClassifier(), GRID, cv=3, scoring="jaccard").fit(X, y)


def test_probability_scorers_refuse_regressors_and_grid_search_takes_a_named_scorer():
    X, y = make_synthetic(80, n_features=5, task="regression", random_state=1)
    with pytest.raises(KernelCVError, match="does not apply to a regressor"):
        KernelSearchCV(KernelRidgeRegressor(), GRID, scoring="d2_log_loss_score").fit(X, y)
    from kernelcv.selection import BIF

    Xc, yc = labelled(2, seed=11, labels=[0, 1])
    result = grid_search(Xc, yc, "l2svm", gammas=[0.1, 0.5], lams=[1e-2, 1e-1], folds=3,
                         method=BIF(order="inf", scoring=HeldoutScore("matthews_corrcoef")))
    assert all(np.isfinite(c["score"]) for c in result.candidates)
