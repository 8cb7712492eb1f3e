"""KernelSearchCV against scikit-learn's GridSearchCV on the same folds."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, PredefinedSplit
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kernelcv import BIF, KernelSearchCV
from kernelcv.estimators import (
    HuberSVMClassifier,
    KernelRidgeRegressor,
    L2SVMClassifier,
    LSSVMClassifier,
)
from kernelcv.exceptions import KernelCVError
from kernelcv.reading.files import make_synthetic

GRID = {"gamma": [2.0**k for k in (-6, -4, -2, 0)], "lam": [2.0**i / 120 for i in (-2, 1, 4, 7)]}


@pytest.fixture(scope="module")
def classification():
    X, y = make_synthetic(120, n_features=5, random_state=7)
    labels = np.where(y > 0, "yes", "no")  # string labels must work too
    folds = np.random.default_rng(0).permutation(np.arange(120) % 5)
    return X, labels, folds


@pytest.fixture(scope="module")
def regression():
    X, y = make_synthetic(120, n_features=5, task="regression", random_state=7)
    folds = np.random.default_rng(1).permutation(np.arange(120) % 4)
    return X, y, folds


# HuberSVMClassifier without intercept: with it, fits at large lam whose points all sit on
# the hinge's linear pieces stop at b = 0 (the solver bug marked xfail in
# tests/test_intercept.py), and the cold fits of GridSearchCV and the warm-started refits
# of KernelSearchCV stop at different wrong points (gamma 1, lam 2/120 here).
@pytest.mark.parametrize("estimator", [L2SVMClassifier(), HuberSVMClassifier(fit_intercept=False),
                                       LSSVMClassifier()])
def test_exact_search_picks_what_gridsearchcv_picks(classification, estimator):
    X, y, folds = classification
    reference = GridSearchCV(estimator, GRID, cv=PredefinedSplit(folds)).fit(X, y)
    search = KernelSearchCV(estimator, GRID, method="exact", cv=folds).fit(X, y)
    assert search.best_params_ == reference.best_params_
    assert search.best_index_ == reference.best_index_
    assert search.best_score_ == pytest.approx(reference.best_score_)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               reference.cv_results_["mean_test_score"], atol=1e-12)
    np.testing.assert_array_equal(search.cv_results_["rank_test_score"],
                                  reference.cv_results_["rank_test_score"])
    for k in range(5):
        np.testing.assert_allclose(search.cv_results_[f"split{k}_test_score"],
                                   reference.cv_results_[f"split{k}_test_score"], atol=1e-12)
    assert search.cv_results_["params"] == reference.cv_results_["params"]
    np.testing.assert_array_equal(search.predict(X), reference.predict(X))


def test_closed_form_regression_matches_gridsearchcv(regression):
    X, y, folds = regression
    reference = GridSearchCV(KernelRidgeRegressor(), GRID, cv=PredefinedSplit(folds),
                             scoring="neg_mean_squared_error").fit(X, y)
    for method in ("exact", "closed-form"):
        search = KernelSearchCV("krr", GRID, method=method, cv=folds).fit(X, y)
        assert search.best_params_ == reference.best_params_
        np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                                   reference.cv_results_["mean_test_score"], rtol=1e-8)
    assert search.score(X, y) == pytest.approx(reference.best_estimator_.score(X, y))


def test_bif_search_reports_method_order_and_confirmations(classification):
    X, y, folds = classification
    search = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds, method=BIF(order=3)).fit(X, y)
    results = search.cv_results_
    assert set(results["method"]) == {"bif"}
    assert set(results["order_used"]) == {3}
    confirmed = np.flatnonzero(results["status"] == "confirmed")
    assert 3 <= confirmed.size <= 15  # confirm=3, more while ties or better scores follow
    assert np.all(np.isfinite(results["exact_test_score"][confirmed]))
    assert np.all(np.isnan(np.delete(results["exact_test_score"], confirmed)))
    assert search.best_index_ in confirmed
    assert search.best_score_ == results["exact_test_score"][search.best_index_]
    exact = KernelSearchCV(L2SVMClassifier(), GRID, method="exact", cv=folds).fit(X, y)
    np.testing.assert_allclose(results["exact_test_score"][confirmed],
                               exact.cv_results_["mean_test_score"][confirmed])
    for key in ("mean_fit_time", "std_test_score", "n_folds", "degenerate"):
        assert len(results[key]) == len(results["params"])


def test_works_inside_a_pipeline(classification):
    X, y, folds = classification
    pipe = make_pipeline(StandardScaler(), KernelSearchCV("l2svm", GRID, cv=folds))
    pipe.fit(X * 10 + 3, y)
    assert pipe.score(X * 10 + 3, y) > 0.8
    assert set(pipe.predict(X[:5] * 10 + 3)) <= {"yes", "no"}


def test_default_grid_and_scale_gamma(classification):
    X, y, _ = classification
    search = KernelSearchCV("lssvm", cv=3).fit(X, y)
    gammas = search.gamma_grid_["values"]  # from the data: tests/test_gamma_range.py
    # 15 lam values per gamma, and the reserve values the widening toward large C
    # evaluated (tests/test_grid_widening.py)
    base = len(gammas) * 15
    widened = [n for n in search.search_.notes if n.startswith("grid widened")]
    assert len(search.cv_results_["params"]) == base + (
        int(widened[0].split(" reserve")[0].rsplit(" ", 1)[1]) if widened else 0)
    scale = KernelSearchCV("lssvm", {"gamma": ["scale"], "lam": [0.01]}, cv=3).fit(X, y)
    assert scale.best_params_ == {"gamma": "scale", "lam": 0.01}


def test_poly_kernel_grid(regression):
    X, y, folds = regression
    grid = {"kernel": ["poly"], "degree": [1, 2, 3], "gamma": [0.5], "lam": [0.01, 0.1]}
    reference = GridSearchCV(KernelRidgeRegressor(), grid, cv=PredefinedSplit(folds),
                             scoring="neg_mean_squared_error").fit(X, y)
    search = KernelSearchCV("krr", grid, cv=folds).fit(X, y)
    assert search.best_params_ == reference.best_params_


def test_bad_input(classification):
    X, y, folds = classification
    with pytest.raises(KernelCVError, match="cannot search"):
        KernelSearchCV("l2svm", {"tol": [1e-3]}).fit(X, y)
    with pytest.raises(KernelCVError, match="kernelcv estimator, SVC, SVR, KernelRidge"):
        from sklearn.svm import LinearSVC  # SVC itself is searched as its stand-in

        KernelSearchCV(LinearSVC(), GRID).fit(X, y)
    with pytest.raises(KernelCVError, match="unknown machine"):
        KernelSearchCV("forest", GRID).fit(X, y)
    with pytest.raises(KernelCVError, match="closed-form"):
        KernelSearchCV("svm", GRID, method="closed-form").fit(X, y)
    with pytest.raises(KernelCVError, match="> 0"):
        KernelSearchCV("svm", {"gamma": [0.1], "lam": [-1.0]}).fit(X, y)
    lonely = np.asarray(y).astype(str)
    lonely[3] = "only-one"
    with pytest.raises(ValueError, match="lacks 1 of the 3 classes"):
        KernelSearchCV("l2svm", GRID).fit(X, lonely)
    search = KernelSearchCV("l2svm", GRID, refit=False, cv=folds).fit(X, y)
    with pytest.raises(AttributeError, match="refit"):
        search.predict(X)
