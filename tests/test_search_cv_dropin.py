"""KernelSearchCV as a drop-in for GridSearchCV: cv=, scoring=, C/alpha grids, Pipelines,
the inferred estimator, GridSearchCV's attributes and cv_results_ invariants."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata
from sklearn.datasets import load_breast_cancer
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import f1_score, make_scorer
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    KFold,
    PredefinedSplit,
    ShuffleSplit,
    StratifiedKFold,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from kernelcv import BIF, KernelSearchCV, cross_validate
from kernelcv.estimators import (
    KernelRidgeRegressor,
    L2SVMClassifier,
    LSSVMClassifier,
)
from kernelcv.estimators._search_results import cv_results
from kernelcv.exceptions import KernelCVError
from kernelcv.reading.files import make_synthetic

N = 120
GRID = {"gamma": [2.0**k for k in (-6, -4, -2, 0)], "lam": [2.0**i / N for i in (-2, 1, 4, 7)]}


@pytest.fixture(scope="module")
def binary():
    X, y = make_synthetic(N, n_features=5, random_state=7)
    return X, np.where(y > 0, "yes", "no")


@pytest.fixture(scope="module")
def regression():
    return make_synthetic(N, n_features=5, task="regression", random_state=7)


@pytest.fixture(scope="module")
def three_classes():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 4))
    y = np.argmax(X[:, :3] + 0.4 * rng.normal(size=(150, 3)), axis=1)
    return X, np.array(["a", "b", "c"])[y]


def _check_invariants(search):
    """scikit-learn's cv_results_ invariants, with NaN ranked last."""
    results = search.cv_results_
    means = results["mean_test_score"]
    n = len(results["params"])
    assert all(len(v) == n for v in results.values())
    assert results["rank_test_score"][search.best_index_] == 1
    assert search.best_score_ == means[search.best_index_] == np.nanmax(means)
    filled = np.where(np.isnan(means), np.nanmin(means) - 1, means)
    np.testing.assert_array_equal(results["rank_test_score"],
                                  rankdata(-filled, method="min").astype(np.int32))
    splits = [k for k in results if k.startswith("split")]
    if splits:
        table = np.column_stack([results[k] for k in splits])
        finite = np.isfinite(means)
        np.testing.assert_allclose(table[finite].mean(axis=1), means[finite], rtol=1e-12)
    assert search.best_params_ == results["params"][search.best_index_]


def test_same_keys_as_gridsearchcv_and_consistent_ranks(binary):
    X, y = binary
    folds = StratifiedKFold(5, shuffle=True, random_state=1)
    reference = GridSearchCV(L2SVMClassifier(), GRID, cv=folds).fit(X, y)
    for method in ("exact", "bif"):
        search = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds, method=method).fit(X, y)
        assert set(reference.cv_results_) <= set(search.cv_results_)
        _check_invariants(search)
        assert search.n_splits_ == reference.n_splits_ == 5
        assert search.multimetric_ is reference.multimetric_ is False
        assert search.refit_time_ > 0
        assert search.scorer_(search.best_estimator_, X, y) == search.score(X, y)
    np.testing.assert_allclose(search.cv_results_["exact_test_score"][search.best_index_],
                               reference.cv_results_["mean_test_score"][search.best_index_])


def test_degenerate_kernels_never_rank_above_the_choice(binary):
    # gamma 1024 on 5 features: the kernel matrix is numerically the identity; a
    # finite-order BIF returns rounding noise there (the heart_scale case).
    X, y = binary
    grid = {"gamma": [0.01, 32.0, 1024.0], "lam": [2.0**i / N for i in (-3, 0, 3)]}
    search = KernelSearchCV(L2SVMClassifier(), grid, cv=5, method=BIF(order=3)).fit(X, y)
    _check_invariants(search)
    results = search.cv_results_
    exact = KernelSearchCV(L2SVMClassifier(), grid, method="exact", cv=5).fit(X, y)
    has_exact = np.isfinite(results["exact_test_score"])
    np.testing.assert_allclose(results["mean_test_score"][has_exact],
                               exact.cv_results_["mean_test_score"][has_exact])
    assert search.best_score_ == exact.cv_results_["mean_test_score"][search.best_index_]


def test_unverified_approximate_values_are_not_ranked():
    # Hand-made records: the choice (confirmed, exact 0.2) beats a never-confirmed
    # candidate whose approximate 0.1 is better; that one must not rank above it.
    def record(score, exact, status):
        return {"score": score, "exact_error": exact, "status": status,
                "fold_errors": [score, score], "fold_sizes": [10, 10], "seconds": 0.1,
                "method": "bif", "order_used": 3, "n_folds": 2, "degenerate": False,
                **({"exact_fold_errors": [exact, exact]} if exact is not None else {})}

    candidates = [record(0.1, None, "approximate"), record(0.15, 0.2, "confirmed"),
                  record(0.3, None, "approximate"), record(0.12, 0.4, "confirmed")]
    params = [{"lam": v} for v in (1, 2, 3, 4)]
    results, best = cv_results(params, candidates, 1, default_classifier=True,
                               score_is_error=True, lams=[1, 2, 3, 4])
    assert best == 1
    assert np.isnan(results["mean_test_score"][0])
    assert results["status"][0] == "unverified"
    np.testing.assert_allclose(results["mean_test_score"][1:], [0.8, 0.7, 0.6])
    np.testing.assert_array_equal(results["rank_test_score"], [4, 1, 2, 3])
    np.testing.assert_allclose(results["approx_test_score"], [0.9, 0.85, 0.7, 0.88])
    np.testing.assert_allclose(results["exact_test_score"][[1, 3]], [0.8, 0.6])


@pytest.mark.parametrize("splitter", [KFold(4), StratifiedKFold(5),
                                      StratifiedKFold(3, shuffle=True, random_state=0)])
def test_cv_splitters_match_gridsearchcv(binary, splitter):
    X, y = binary
    reference = GridSearchCV(LSSVMClassifier(), GRID, cv=splitter).fit(X, y)
    for method in ("exact", "closed-form"):
        search = KernelSearchCV(LSSVMClassifier(), GRID, cv=splitter, method=method).fit(X, y)
        np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                                   reference.cv_results_["mean_test_score"], atol=1e-12)
        assert search.best_index_ == reference.best_index_


def test_group_kfold_with_groups(regression):
    X, y = regression
    groups = np.arange(N) // 6
    reference = GridSearchCV(KernelRidgeRegressor(), GRID, cv=GroupKFold(4),
                             scoring="neg_mean_squared_error").fit(X, y, groups=groups)
    search = KernelSearchCV("krr", GRID, cv=GroupKFold(4)).fit(X, y, groups=groups)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               reference.cv_results_["mean_test_score"], rtol=1e-8)
    with pytest.raises(KernelCVError, match="GroupKFold failed"):
        KernelSearchCV("krr", GRID, cv=GroupKFold(4)).fit(X, y)


def test_int_cv_is_shuffled_stratified_folds_and_bad_cv_is_refused(binary):
    X, y = binary
    a = KernelSearchCV("lssvm", GRID, cv=5).fit(X, y)
    c = KernelSearchCV("lssvm", GRID, cv=StratifiedKFold(5, shuffle=True, random_state=0))
    np.testing.assert_allclose(a.cv_results_["mean_test_score"],
                               c.fit(X, y).cv_results_["mean_test_score"], atol=1e-12)
    with pytest.raises(KernelCVError, match="alias folds went in kernelcv 0.2; write cv="):
        KernelSearchCV("lssvm", GRID, folds=5)
    with pytest.raises(KernelCVError, match="partition"):
        KernelSearchCV("lssvm", GRID, cv=ShuffleSplit(3, random_state=0)).fit(X, y)
    with pytest.raises(KernelCVError, match="groups"):
        KernelSearchCV("lssvm", GRID, cv=5).fit(X, y, groups=np.arange(N))


@pytest.mark.parametrize("scoring", ["roc_auc", "balanced_accuracy", "accuracy"])
def test_binary_scoring_matches_gridsearchcv(binary, scoring):
    X, y = binary
    folds = PredefinedSplit(np.arange(N) % 5)
    reference = GridSearchCV(LSSVMClassifier(), GRID, cv=folds, scoring=scoring).fit(X, y)
    for method in ("exact", "closed-form"):
        search = KernelSearchCV(LSSVMClassifier(), GRID, cv=folds, scoring=scoring,
                                method=method).fit(X, y)
        np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                                   reference.cv_results_["mean_test_score"], atol=1e-10)
        assert search.best_index_ == reference.best_index_
        _check_invariants(search)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@pytest.mark.parametrize("scoring", ["f1", "precision", "recall", "average_precision",
                                     "f1_macro", "recall_weighted", "precision_micro"])
def test_label_scores_of_two_classes_match_gridsearchcv(binary, scoring):
    # issue 40: f1, precision, ... needed method="exact"; now every fast criterion has them
    X, labels = binary
    y = (labels == np.unique(labels)[-1]).astype(int)  # 0/1: scikit-learn's pos_label=1
    folds = PredefinedSplit(np.arange(N) % 5)
    reference = GridSearchCV(LSSVMClassifier(), GRID, cv=folds, scoring=scoring).fit(X, y)
    for method in ("exact", "closed-form"):
        search = KernelSearchCV(LSSVMClassifier(), GRID, cv=folds, scoring=scoring,
                                method=method).fit(X, y)
        np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                                   reference.cv_results_["mean_test_score"], atol=1e-10)
        assert search.best_index_ == reference.best_index_
        _check_invariants(search)
    _check_invariants(KernelSearchCV(L2SVMClassifier(), GRID, cv=folds,
                                     scoring=scoring).fit(X, y))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@pytest.mark.parametrize("scoring", ["f1_macro", "f1_weighted", "precision_macro"])
def test_averaged_label_scores_of_three_classes_match_gridsearchcv(three_classes, scoring):
    X, y = three_classes
    folds = StratifiedKFold(4)
    estimator = LSSVMClassifier(multiclass="ovr")
    reference = GridSearchCV(estimator, GRID, cv=folds, scoring=scoring).fit(X, y)
    search = KernelSearchCV(estimator, GRID, cv=folds, scoring=scoring).fit(X, y)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               reference.cv_results_["mean_test_score"], atol=1e-10)
    with pytest.raises(KernelCVError, match="f1_macro"):
        KernelSearchCV(estimator, GRID, cv=folds, scoring="f1").fit(X, y)


@pytest.mark.parametrize("scoring", ["r2", "neg_mean_absolute_error",
                                     "neg_root_mean_squared_error"])
def test_regression_scoring_matches_gridsearchcv(regression, scoring):
    X, y = regression
    folds = KFold(4, shuffle=True, random_state=2)
    reference = GridSearchCV(KernelRidgeRegressor(), GRID, cv=folds, scoring=scoring).fit(X, y)
    search = KernelSearchCV("krr", GRID, cv=folds, scoring=scoring).fit(X, y)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               reference.cv_results_["mean_test_score"], rtol=1e-8)
    assert search.best_params_ == reference.best_params_
    assert search.score(X, y) == pytest.approx(reference.score(X, y))


def test_multiclass_balanced_accuracy_matches_gridsearchcv(three_classes):
    X, y = three_classes
    folds = StratifiedKFold(4)
    for multiclass in ("ovr", "ovo"):
        estimator = LSSVMClassifier(multiclass=multiclass)
        reference = GridSearchCV(estimator, GRID, cv=folds,
                                 scoring="balanced_accuracy").fit(X, y)
        search = KernelSearchCV(estimator, GRID, cv=folds,
                                scoring="balanced_accuracy").fit(X, y)
        np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                                   reference.cv_results_["mean_test_score"], atol=1e-10)
    bif = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds, scoring="balanced_accuracy")
    _check_invariants(bif.fit(X, y))
    with pytest.raises(KernelCVError, match="two classes"):
        KernelSearchCV("lssvm", GRID, scoring="roc_auc").fit(X, y)


def test_scorers_that_need_a_model_go_fold_by_fold(binary):
    X, y = binary
    folds = PredefinedSplit(np.arange(N) % 4)
    f1 = make_scorer(f1_score, pos_label="yes")
    reference = GridSearchCV(L2SVMClassifier(), GRID, cv=folds, scoring=f1).fit(X, y)
    search = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds, scoring=f1,
                            method="exact").fit(X, y)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               reference.cv_results_["mean_test_score"], atol=1e-12)
    assert search.best_index_ == reference.best_index_
    assert search.scorer_ is f1 and search.search_ is None
    with pytest.raises(KernelCVError, match="method='exact'"):
        KernelSearchCV(L2SVMClassifier(), GRID, scoring=f1).fit(X, y)
    with pytest.raises(KernelCVError, match="unknown scoring"):
        KernelSearchCV(L2SVMClassifier(), GRID, scoring="nonsense").fit(X, y)
    with pytest.raises(KernelCVError, match="several metrics at once"):
        KernelSearchCV(L2SVMClassifier(), GRID, scoring=["accuracy", "roc_auc"],
                       refit="roc_auc").fit(X, y)
    with pytest.raises(KernelCVError, match="refit must name"):
        KernelSearchCV(L2SVMClassifier(), GRID, scoring=["accuracy", "roc_auc"],
                       method="exact").fit(X, y)
    with pytest.raises(KernelCVError, match="does not apply to a regressor"):
        KernelSearchCV("krr", GRID, scoring="accuracy").fit(X, np.arange(N) * 0.5)
    with pytest.raises(KernelCVError, match="cannot compute a scoring"):
        KernelSearchCV("svm", GRID, method="gacv", scoring="roc_auc").fit(X, y)


def test_c_and_alpha_grids_map_to_lam(binary, regression):
    X, y = binary
    Cs = [0.5, 4.0, 32.0]
    by_c = KernelSearchCV(L2SVMClassifier(), {"gamma": [0.25], "C": Cs}, cv=5,
                          method="exact").fit(X, y)
    by_lam = KernelSearchCV(L2SVMClassifier(), {"gamma": [0.25],
                                                "lam": [1 / (2 * N * C) for C in Cs]},
                            cv=5, method="exact").fit(X, y)
    np.testing.assert_array_equal(by_c.cv_results_["mean_test_score"],
                                  by_lam.cv_results_["mean_test_score"])
    np.testing.assert_allclose(by_c.cv_results_["lam"], [1 / (2 * N * C) for C in Cs])
    assert "C" in by_c.best_params_
    assert by_c.best_estimator_.lam == pytest.approx(1 / (2 * N * by_c.best_params_["C"]))
    Xr, yr = regression
    search = KernelSearchCV("krr", {"gamma": [0.1], "alpha": [0.01, 0.1, 1.0]}).fit(Xr, yr)
    ridge = KernelRidge(kernel="rbf", gamma=0.1, alpha=search.best_params_["alpha"])
    np.testing.assert_allclose(search.predict(Xr), ridge.fit(Xr, yr).predict(Xr), rtol=1e-6)
    with pytest.raises(KernelCVError, match="one of lam, C and alpha"):
        KernelSearchCV("krr", {"C": [1.0], "lam": [0.1]}).fit(Xr, yr)
    with pytest.raises(KernelCVError, match="C must be a positive"):
        KernelSearchCV("krr", {"C": [-1.0]}).fit(Xr, yr)


def test_pipeline_fast_and_exact(binary):
    X, y = binary
    X = X * 10 + 3
    folds = PredefinedSplit(np.arange(N) % 5)
    pipe = make_pipeline(StandardScaler(), L2SVMClassifier())
    grid = {f"l2svmclassifier__{k}": v for k, v in GRID.items()}
    reference = GridSearchCV(pipe, grid, cv=folds).fit(X, y)
    exact = KernelSearchCV(pipe, grid, cv=folds, method="exact").fit(X, y)
    np.testing.assert_allclose(exact.cv_results_["mean_test_score"],
                               reference.cv_results_["mean_test_score"], atol=1e-12)
    np.testing.assert_array_equal(exact.predict(X), reference.predict(X))
    fast = KernelSearchCV(pipe, grid, cv=folds).fit(X, y)
    scaled = StandardScaler().fit_transform(X)
    plain = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds).fit(scaled, y)
    np.testing.assert_array_equal(fast.cv_results_["mean_test_score"],
                                  plain.cv_results_["mean_test_score"])
    assert list(fast.best_estimator_.named_steps) == ["standardscaler", "l2svmclassifier"]
    np.testing.assert_array_equal(fast.predict(X), plain.predict(scaled))
    with pytest.raises(KernelCVError, match="l2svmclassifier__"):
        KernelSearchCV(pipe, GRID).fit(X, y)
    with pytest.raises(KernelCVError, match="last step"):
        KernelSearchCV(make_pipeline(StandardScaler(), SVC()), grid).fit(X, y)


def test_default_estimator_is_inferred_from_y(binary, regression, three_classes):
    grid = {"gamma": [0.1], "lam": [0.01]}
    X, y = binary
    assert isinstance(KernelSearchCV(param_grid=grid).fit(X, y).best_estimator_,
                      LSSVMClassifier)
    X3, y3 = three_classes
    search = KernelSearchCV(param_grid=grid).fit(X3, y3)
    assert set(search.predict(X3)) <= {"a", "b", "c"} and search.score(X3, y3) > 0.6
    Xr, yr = regression
    assert isinstance(KernelSearchCV(param_grid=grid).fit(Xr, yr).best_estimator_,
                      KernelRidgeRegressor)


def test_verbose_reports_on_stderr(binary, capsys):
    X, y = binary
    KernelSearchCV("l2svm", GRID, verbose=2, cv=3).fit(X, y)
    err = capsys.readouterr().err
    assert "16 candidates (4 kernel settings), method 'bif'" in err
    assert "confirm" in err and "best {" in err
    KernelSearchCV("l2svm", GRID, cv=3).fit(X, y)
    assert capsys.readouterr().err == ""


def test_cross_validate_accepts_splitters(binary):
    X, y = binary
    ids = np.arange(N) % 4
    for method in ("exact", "closed-form"):
        by_ids = cross_validate(X, y, "lssvm", gamma=0.3, lam=0.01, folds=ids,
                                method=method)
        by_split = cross_validate(X, y, "lssvm", gamma=0.3, lam=0.01,
                                  folds=PredefinedSplit(ids), method=method)
        np.testing.assert_array_equal(by_ids.predictions, by_split.predictions)
    kfold = cross_validate(X, y, "lssvm", gamma=0.3, lam=0.01, folds=KFold(5))
    pairs = cross_validate(X, y, "lssvm", gamma=0.3, lam=0.01,
                           folds=list(KFold(5).split(X)))
    assert kfold.cv_error == pairs.cv_error and kfold.n_folds == 5
    grouped = cross_validate(X, y, "lssvm", gamma=0.3, lam=0.01, folds=GroupKFold(3),
                             groups=np.arange(N) // 10)
    assert grouped.n_folds == 3
    with pytest.raises(KernelCVError, match="partition"):
        cross_validate(X, y, "lssvm", gamma=0.3, lam=0.01, folds=ShuffleSplit(2))


def test_return_train_score_and_the_other_gridsearchcv_parameters(binary):
    # issue 40: every GridSearchCV parameter is accepted and does what GridSearchCV does
    X, y = binary
    folds = PredefinedSplit(np.arange(N) % 4)
    options = {"cv": folds, "return_train_score": True, "error_score": np.nan,
               "pre_dispatch": "2*n_jobs"}
    reference = GridSearchCV(LSSVMClassifier(), GRID, **options).fit(X, y)
    search = KernelSearchCV(LSSVMClassifier(), GRID, method="exact", **options).fit(X, y)
    for key in ("mean_train_score", "std_train_score", "split0_train_score",
                "mean_test_score"):
        np.testing.assert_allclose(search.cv_results_[key], reference.cv_results_[key],
                                   atol=1e-12)
    assert search.best_index_ == reference.best_index_
    assert set(GridSearchCV(SVC(), {}).get_params(deep=False)) <= set(
        search.get_params(deep=False))
    with pytest.raises(KernelCVError, match="method='exact'"):
        KernelSearchCV(LSSVMClassifier(), GRID, cv=folds, return_train_score=True).fit(X, y)


def test_several_metrics_with_refit_by_name_are_gridsearchcvs(binary):
    # issue 40: multimetric scoring with refit="name", as GridSearchCV
    X, y = binary
    folds = PredefinedSplit(np.arange(N) % 4)
    scoring = {"acc": "accuracy", "auc": "roc_auc", "f1": make_scorer(f1_score,
                                                                     pos_label="yes")}
    reference = GridSearchCV(LSSVMClassifier(), GRID, cv=folds, scoring=scoring,
                             refit="auc", return_train_score=True).fit(X, y)
    search = KernelSearchCV(LSSVMClassifier(), GRID, cv=folds, scoring=scoring, refit="auc",
                            method="exact", return_train_score=True).fit(X, y)
    for name in scoring:
        for key in (f"mean_test_{name}", f"std_test_{name}", f"rank_test_{name}",
                    f"split3_test_{name}", f"mean_train_{name}"):
            np.testing.assert_allclose(search.cv_results_[key], reference.cv_results_[key],
                                       atol=1e-12)
    assert search.multimetric_ and reference.multimetric_
    assert search.best_index_ == reference.best_index_
    assert search.best_score_ == pytest.approx(reference.best_score_)
    assert search.best_params_ == reference.best_params_
    assert np.array_equal(search.predict(X), reference.predict(X))
    assert search.score(X, y) == pytest.approx(reference.score(X, y))
    listed = KernelSearchCV(LSSVMClassifier(), GRID, cv=folds, method="exact",
                            scoring=["accuracy", "balanced_accuracy"],
                            refit="balanced_accuracy").fit(X, y)
    assert "mean_test_balanced_accuracy" in listed.cv_results_
    assert "mean_test_score" not in listed.cv_results_


def test_splitters_that_do_not_partition_run_fold_by_fold_with_method_exact(binary):
    # issue 40: ShuffleSplit and repeated K-fold, as GridSearchCV takes them
    from sklearn.model_selection import RepeatedStratifiedKFold

    X, y = binary
    for cv in (ShuffleSplit(4, test_size=0.25, random_state=0),
               RepeatedStratifiedKFold(n_splits=3, n_repeats=2, random_state=0)):
        reference = GridSearchCV(LSSVMClassifier(), GRID, cv=cv).fit(X, y)
        search = KernelSearchCV(LSSVMClassifier(), GRID, cv=cv, method="exact").fit(X, y)
        np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                                   reference.cv_results_["mean_test_score"], atol=1e-12)
        assert search.best_index_ == reference.best_index_
        assert search.n_splits_ == reference.n_splits_
        with pytest.raises(AttributeError, match="partition"):
            search.predict_proba(X)
        with pytest.raises(KernelCVError, match="partition"):
            KernelSearchCV(LSSVMClassifier(), GRID, cv=cv).fit(X, y)


@pytest.mark.parametrize("method", [None, "exact"])
def test_feature_names_in_as_gridsearchcv(method):
    pytest.importorskip("pandas")  # in the test extra; a DataFrame carries the names
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X, y = X.iloc[:150, :6], y.iloc[:150]
    grid = {"svc__gamma": [0.01, 0.1], "svc__C": [1.0, 10.0]}
    pipe = make_pipeline(StandardScaler(), SVC())
    ours = KernelSearchCV(pipe, grid, cv=3, method=method).fit(X, y)
    theirs = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    np.testing.assert_array_equal(ours.feature_names_in_, theirs.feature_names_in_)
    assert ours.n_features_in_ == theirs.n_features_in_ == 6
    ours.predict(X)  # a DataFrame with the same columns: no feature-name warning
    # an array has no names: refitting on one removes them, as for GridSearchCV
    plain = ours.fit(X.to_numpy(), y)
    assert not hasattr(plain, "feature_names_in_") and plain.n_features_in_ == 6
