"""KernelSearchCV(SVC(), grid): GridSearchCV code with only the class name changed.

The oracle is scikit-learn itself: the stand-in's refitted model against SVC / SVR /
KernelRidge at the chosen parameters (same problem up to the Huber band of width 0.01),
and method="exact" against the refit CV of the stand-in on the same folds.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR, LinearSVC

from kernelcv import KernelSearchCV
from kernelcv.estimators import HuberSVMClassifier, HuberSVMRegressor, KernelRidgeRegressor
from kernelcv.exceptions import KernelCVError


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X[:200], y[:200]


def test_svc_in_a_pipeline_runs_as_gridsearchcv_code_and_picks_as_the_stand_in(cancer):
    X, y = cancer
    grid = {"svc__C": [0.5, 4.0, 32.0], "svc__gamma": [0.005, 0.05]}
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    search = KernelSearchCV(make_pipeline(StandardScaler(), SVC()), grid, cv=cv).fit(X, y)
    assert "HuberSVMClassifier" in search.stand_in_
    final = search.best_estimator_.steps[-1][1]
    assert isinstance(final, HuberSVMClassifier)
    assert set(search.best_params_) == set(grid)
    # the same search written for the stand-in directly gives the same scores
    direct = KernelSearchCV(make_pipeline(StandardScaler(), HuberSVMClassifier()),
                            {"hubersvmclassifier__C": grid["svc__C"],
                             "hubersvmclassifier__gamma": grid["svc__gamma"]},
                            cv=cv).fit(X, y)
    assert np.allclose(search.cv_results_["mean_test_score"],
                       direct.cv_results_["mean_test_score"])
    # the refitted stand-in is SVC's model at that C: the predictions agree
    C, gamma = search.best_params_["svc__C"], search.best_params_["svc__gamma"]
    svc = make_pipeline(StandardScaler(), SVC(C=C, gamma=gamma)).fit(X, y)
    assert np.mean(search.predict(X) == svc.predict(X)) >= 0.98


def test_exact_method_refits_the_stand_in_fold_by_fold_like_gridsearchcv(cancer):
    X, y = cancer
    grid = {"svc__C": [1.0, 8.0], "svc__gamma": [0.01, 0.1]}
    cv = StratifiedKFold(4, shuffle=True, random_state=1)
    ours = KernelSearchCV(make_pipeline(StandardScaler(), SVC()), grid, cv=cv,
                          method="exact").fit(X, y)
    # C maps to lam = 1 / (2 n C) with n the rows given to fit, kept in every fold
    lams = [1.0 / (2 * X.shape[0] * C) for C in grid["svc__C"]]
    theirs = GridSearchCV(make_pipeline(StandardScaler(), HuberSVMClassifier()),
                          {"hubersvmclassifier__lam": lams,
                           "hubersvmclassifier__gamma": grid["svc__gamma"]}, cv=cv).fit(X, y)
    n = X.shape[0]
    ours_by = {(1.0 / (2 * n * p["svc__C"]), p["svc__gamma"]): score for p, score in
               zip(ours.cv_results_["params"], ours.cv_results_["mean_test_score"],
                   strict=True)}
    theirs_by = {(p["hubersvmclassifier__lam"], p["hubersvmclassifier__gamma"]): score
                 for p, score in zip(theirs.cv_results_["params"],
                                     theirs.cv_results_["mean_test_score"], strict=True)}
    assert ours_by == pytest.approx(theirs_by)


def test_a_bare_svc_keeps_its_other_parameters_and_its_C_when_not_searched():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    search = KernelSearchCV(SVC(C=3.0, kernel="poly", degree=2, coef0=0.5),
                            {"gamma": [0.05, 0.2]}, cv=3).fit(X, y)
    final = search.best_estimator_
    assert (final.kernel, final.degree, final.coef0) == ("poly", 2, 0.5)
    assert final.lam == pytest.approx(1.0 / (2 * X.shape[0] * 3.0))
    assert final.multiclass == "ovo"


def test_svr_and_kernel_ridge_stand_ins_solve_scikit_learns_problems():
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:150], (y[:150] - y[:150].mean()) / y[:150].std()
    search = KernelSearchCV(SVR(epsilon=0.2), {"C": [1.0, 10.0], "gamma": [0.5, 2.0]},
                            cv=3).fit(X, y)
    final = search.best_estimator_
    assert isinstance(final, HuberSVMRegressor) and final.epsilon == 0.2
    svr = SVR(epsilon=0.2, **search.best_params_).fit(X, y)
    assert np.max(np.abs(final.predict(X) - svr.predict(X))) < 0.05
    ridge = KernelSearchCV(KernelRidge(kernel="rbf"), {"alpha": [0.01, 0.1, 1.0]},
                           cv=3).fit(X, y)
    assert isinstance(ridge.best_estimator_, KernelRidgeRegressor)
    reference = KernelRidge(kernel="rbf", **ridge.best_params_).fit(X, y)
    assert np.allclose(ridge.predict(X), reference.predict(X), atol=1e-8)


@pytest.mark.parametrize("estimator, words", [
    (SVC(class_weight={0: -1.0}), "class_weight"),
    (SVC(kernel="sigmoid"), "sigmoid"),
    (KernelRidge(kernel_params={"gamma": 1.0}), "kernel_params"),
    (LinearSVC(), "LinearSVC"),
])
def test_what_a_stand_in_cannot_honour_is_refused_with_the_reason(cancer, estimator, words):
    X, y = cancer
    with pytest.raises(KernelCVError, match=words):
        KernelSearchCV(estimator, {"C": [1.0]} if not isinstance(estimator, KernelRidge)
                       else {"alpha": [1.0]}, cv=3).fit(X, y)


def test_screening_in_the_drop_in_leaves_nan_rows_and_keeps_the_invariants(cancer):
    X, y = cancer
    X = StandardScaler().fit_transform(X)
    grid = {"C": [2.0**k for k in range(-2, 12, 2)], "gamma": [2.0**k for k in range(-12, 2, 2)]}
    screened = KernelSearchCV(SVC(), grid, cv=4, screen="coarse").fit(X, y)
    full = KernelSearchCV(SVC(), grid, cv=4).fit(X, y)
    results = screened.cv_results_
    skipped = results["status"] == "screened out"
    assert skipped.any() and not skipped.all()
    assert np.all(np.isnan(results["mean_test_score"][skipped]))
    assert results["rank_test_score"][screened.best_index_] == 1
    assert screened.best_score_ == results["mean_test_score"][screened.best_index_]
    # every candidate it evaluated has the full search's value
    evaluated = ~np.isnan(results["mean_test_score"])
    assert np.allclose(results["mean_test_score"][evaluated],
                       full.cv_results_["mean_test_score"][evaluated])
    # the chosen candidate's exact score is within the full grid's best
    assert screened.best_score_ >= full.best_score_ - 0.02
    # spectral evaluates every lam of a setting at once: "auto" does not screen it
    spectral = KernelSearchCV("l2svm", grid, cv=4, screen="auto", method="spectral").fit(X, y)
    assert not np.any(np.isnan(spectral.cv_results_["mean_test_score"]))


def test_refit_callable_picks_the_refitted_candidate_as_gridsearchcv(cancer):
    X, y = cancer
    X = StandardScaler().fit_transform(X)
    grid = {"C": [0.1, 1.0, 10.0], "gamma": [0.01, 0.1]}

    def simplest_within_a_point(results):  # the smallest C within 0.01 of the best
        scores = results["mean_test_score"]
        good = [i for i, s in enumerate(scores) if s >= np.nanmax(scores) - 0.01]
        return min(good, key=lambda i: results["params"][i]["C"])

    search = KernelSearchCV(SVC(), grid, cv=4, refit=simplest_within_a_point).fit(X, y)
    expected = simplest_within_a_point(search.cv_results_)
    assert search.best_index_ == expected
    assert search.best_params_ == search.cv_results_["params"][expected]
    assert search.best_estimator_.lam == pytest.approx(
        1.0 / (2 * X.shape[0] * search.best_params_["C"]))
    assert np.allclose(search.predict_proba(X).sum(axis=1), 1.0)
    with pytest.raises(KernelCVError, match="refit callable"):
        KernelSearchCV(SVC(), grid, cv=4, refit=lambda results: 99).fit(X, y)


def test_a_refit_callable_may_pick_a_candidate_screening_left_out(cancer):
    # it was a KeyError (the calibration looked the pick up among evaluated candidates)
    X, y = cancer
    X = StandardScaler().fit_transform(X)
    grid = {"C": [2.0**k for k in range(-2, 12, 2)], "gamma": [2.0**k for k in range(-12, 2, 2)]}

    def first_left_out(results):
        return int(np.flatnonzero(results["status"] == "screened out")[0])

    search = KernelSearchCV(SVC(), grid, cv=4, screen="coarse", refit=first_left_out)
    search.fit(X, y)
    assert search.cv_results_["status"][search.best_index_] == "screened out"
    p = search.predict_proba(X)
    assert np.array_equal(search.classes_[p.argmax(axis=1)], search.predict(X))


def test_scikit_learn_kernel_names_in_the_grid_and_numpy_numbers():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=50)
    search = KernelSearchCV(KernelRidge(kernel="rbf"),
                            {"kernel": ["laplacian", "polynomial"], "alpha": [0.1, 1.0],
                             "gamma": [0.5]}, cv=3).fit(X, y)
    assert search.best_params_["kernel"] in ("laplacian", "polynomial")  # as given
    assert search.best_estimator_.kernel in ("laplace", "poly")
    classes = np.where(y > 0, 1, 0)
    search = KernelSearchCV(SVC(C=np.int64(2)), {"gamma": [0.5]}, cv=3).fit(X, classes)
    assert search.best_estimator_.lam == pytest.approx(1.0 / (2 * 50 * 2))


def test_svc_with_probability_true_runs_and_the_search_gives_probabilities(cancer):
    # issue 40: GridSearchCV(SVC(probability=True)) code runs with the class name changed
    X, y = cancer
    search = KernelSearchCV(SVC(probability=True), {"C": [1.0, 8.0], "gamma": [0.01, 0.1]},
                            cv=3).fit(X, y)
    p = search.predict_proba(X)
    assert p.shape == (len(y), 2) and np.allclose(p.sum(axis=1), 1.0)
    assert np.array_equal(search.classes_[np.argmax(p, axis=1)], search.predict(X))
