"""Sample weights (``fit(X, y, sample_weight=w)``) through the machines, every CV method
that takes them and the search, against independent references: scikit-learn's
KernelRidge and SVC with sample weights, the weighted optimality conditions, refits of
the estimators on each training part with its rows' weights, and GridSearchCV itself
searching kernelcv's estimator with the same weights."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import dump_svmlight_file, make_classification, make_regression
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import accuracy_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from kernelcv import KernelCVError, KernelSearchCV, cross_validate, grid_search, make_machine
from kernelcv.cli import main
from kernelcv.criteria.evaluate import evaluate_lam
from kernelcv.estimators import (
    HuberSVMClassifier,
    KernelRidgeRegressor,
    L2SVMClassifier,
    LSSVMClassifier,
)
from kernelcv.kernels import make_kernel
from kernelcv.machines.calibration import fit_score_scale
from kernelcv.reading.files import load_data
from kernelcv.validation import check_data
from weighted_checks import check_fast_criteria_against_refits, exact_heldout_labels, folds_of

ESTIMATORS = {"svm": HuberSVMClassifier, "l2svm": L2SVMClassifier, "lssvm": LSSVMClassifier}


def problem(n=60, classes=2, seed=0):
    return make_classification(n, 4, n_informative=3, n_redundant=0, n_classes=classes,
                               n_clusters_per_class=1, flip_y=0.05, random_state=seed)


def weights_for(n, seed, zeros=0.1):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 4.0, n)
    w[rng.random(n) < zeros] = 0.0
    return w


def gram(X, gamma):
    return make_kernel("rbf", gamma)(X)


def weighted_machine(name, X, y, w, **options):
    X, codes, mapping = check_data(X, y, True, multiclass=True)
    machine = make_machine(name, **options).for_labels(mapping, codes).with_sample_weight(w)
    return machine, codes, mapping


def manual_refit_cv(name, X, y, w, fold_ids, gamma, lam, **options):
    """Held-out labels of the estimator refitted on each training part with its rows'
    weights (the estimator's fit path, not the CV code)."""
    predictions = np.empty(len(y), dtype=y.dtype)
    for i in range(fold_ids.max() + 1):
        train = fold_ids != i
        model = ESTIMATORS[name](gamma=gamma, lam=lam, tol=1e-12, **options).fit(
            X[train], y[train], sample_weight=w[train])
        predictions[~train] = model.predict(X[~train])
    return predictions


# -- one fit -------------------------------------------------------------------------------


def test_weighted_krr_is_kernel_ridge_with_sample_weights():
    X, y = make_regression(50, 4, noise=0.5, random_state=1)
    w = weights_for(50, 1)
    lam = 0.01
    ours = KernelRidgeRegressor(gamma=0.2, lam=lam).fit(X, y, sample_weight=w)
    reference = KernelRidge(alpha=50 * lam, kernel="rbf", gamma=0.2).fit(X, y,
                                                                         sample_weight=w)
    assert np.allclose(ours.predict(X), reference.predict(X), atol=1e-8)
    assert not np.allclose(ours.predict(X), KernelRidgeRegressor(gamma=0.2, lam=lam)
                           .fit(X, y).predict(X), atol=1e-3)


def test_huber_svm_with_sample_weights_is_close_to_svc():
    X, y = problem(n=120, seed=5)
    w = weights_for(120, 5, zeros=0.0)
    ours = HuberSVMClassifier(gamma=0.3, lam=1 / (2 * 120 * 2.0)).fit(X, y, sample_weight=w)
    svc = SVC(gamma=0.3, C=2.0).fit(X, y, sample_weight=w)
    assert np.max(np.abs(ours.decision_function(X) - svc.decision_function(X))) < 0.05


@pytest.mark.parametrize("name, start", [("svm", "given"), ("svm", "libsvm"),
                                         ("l2svm", "given")])
def test_sample_and_class_weights_meet_the_optimality_conditions(name, start):
    # (1/n) c_j L'_j + 2 lam alpha_j = 0 and sum_j c_j L'_j = 0, c_j = s_j times the class
    # weight; rows of weight 0 have alpha_j = 0
    X, y = problem(n=70, seed=3)
    w = weights_for(70, 3)
    machine, codes, _ = weighted_machine(name, X, y, w, class_weight={1: 2.5})
    K = gram(X, 0.4)
    lam = 0.005
    fit = machine.fit(K, codes, lam, start=start)
    f = K @ fit.alpha + fit.intercept
    c = w * np.where(codes > 0, 2.5, 1.0)
    margin = codes * f
    slope = (np.clip((1 - margin + 0.01) / 0.02, 0, 1) if name == "svm"
             else 2 * np.maximum(0.0, 1 - margin))
    derivative = -codes * slope
    assert np.max(np.abs(c * derivative / len(codes) + 2 * lam * fit.alpha)) < 1e-8
    assert abs(np.sum(c * derivative)) < 1e-7
    assert np.all(fit.alpha[w == 0] == 0)


@pytest.mark.parametrize("bad, words", [
    (np.ones(5), "one weight per sample"),
    (-np.ones(60), "finite and >= 0"),
    (np.full(60, np.nan), "finite and >= 0"),
    (np.zeros(60), "every weight is zero"),
    ("heavy", "array of numbers"),
])
def test_bad_sample_weights_are_one_line_errors(bad, words):
    X, y = problem()
    with pytest.raises(KernelCVError, match=words):
        cross_validate(X, y, machine="svm", gamma=0.3, lam=0.01, folds=3,
                       sample_weight=bad)


@pytest.mark.parametrize("method", ["closed-form", "rff", "gacv"])
def test_methods_without_weights_refuse_sample_weights(method):
    X, y = problem()
    with pytest.raises(KernelCVError, match="no class or sample weights"):
        grid_search(X, y, machine="lssvm" if method == "closed-form" else "svm",
                    method=method, gammas=[0.5], lams=[0.01], folds=3,
                    sample_weight=weights_for(60, 0))


# -- cross-validation ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["svm", "l2svm", "lssvm"])
@pytest.mark.parametrize("classes, scheme", [(2, "ovo"), (3, "ovo"), (3, "ovr")])
def test_exact_cv_with_sample_weights_equals_refits(name, classes, scheme):
    X, y = problem(n=90, classes=classes, seed=6)
    w = weights_for(90, 6)
    fold_ids = folds_of(y)
    machine, codes, mapping = weighted_machine(name, X, y, w, multiclass=scheme,
                                               class_weight={0: 0.5})
    K = gram(X, 0.4)
    lam = 2e-3
    _, ours = exact_heldout_labels(K, codes, fold_ids, lam, machine, mapping)
    reference = manual_refit_cv(name, X, y, w, fold_ids, 0.4, lam, multiclass=scheme,
                                class_weight={0: 0.5})
    assert np.array_equal(ours, reference)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), name=st.sampled_from(["svm", "l2svm", "lssvm"]),
       lam=st.floats(1e-4, 1.0), gamma=st.floats(0.05, 2.0), intercept=st.booleans(),
       t=st.integers(2, 6), zeros=st.sampled_from([0.0, 0.2]))
def test_fast_criteria_with_sample_weights_equal_refit_cv(seed, name, lam, gamma, intercept,
                                                          t, zeros):
    X, y = problem(n=40, seed=seed % 50)
    w = weights_for(40, seed, zeros)
    fold_ids = folds_of(y, t, seed)
    machine, codes, _ = weighted_machine(name, X, y, w, fit_intercept=intercept)
    check_fast_criteria_against_refits(gram(X, gamma), codes, fold_ids, lam, machine)


def test_order_inf_with_sample_weights_is_the_refit_for_a_smooth_loss():
    X, y = problem(n=80, seed=8)
    w = weights_for(80, 8)
    fold_ids = folds_of(y, 5)
    machine, codes, _ = weighted_machine("l2svm", X, y, w)
    K = gram(X, 0.2)
    exact = evaluate_lam(K, codes, fold_ids, 0.5, machine, "exact")
    bif = evaluate_lam(K, codes, fold_ids, 0.5, machine, "bif", order="inf")
    assert np.max(np.abs(bif.predictions - exact.predictions)) < 1e-8


# -- the searches --------------------------------------------------------------------------


@pytest.mark.parametrize("screen", ["off", "halving"])
def test_grid_search_confirms_by_weighted_refits(screen):
    X, y = problem(n=150, seed=9)
    w = weights_for(150, 9)
    result = grid_search(X, y, machine="svm", gammas=[0.1, 0.5, 2.0],
                         lams=[1e-3, 1e-2, 1e-1], folds=4, screen=screen, sample_weight=w)
    assert "sample_weight" in result.config
    best = result.best
    reference = manual_refit_cv("svm", X, y, w, result.fold_ids, best["gamma"], best["lam"])
    # the CV error is weighted by the held-out rows' weights, as GridSearchCV's scores
    assert best["exact_error"] == pytest.approx(np.sum(w * (reference != y)) / np.sum(w))
    plain = grid_search(X, y, machine="svm", gammas=[0.1, 0.5, 2.0], lams=[1e-3, 1e-2, 1e-1],
                        folds=4, screen=screen)
    assert "sample_weight" not in plain.config


def test_kernel_search_cv_sample_weight_is_gridsearchcvs():
    # the fast path (exact refits sharing the Gram matrix) and GridSearchCV searching
    # kernelcv's own estimator with the same weights give the same scores
    X, y = problem(n=120, seed=10)
    w = weights_for(120, 10)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    grid = {"gamma": [0.1, 0.5], "lam": [1e-3, 1e-2]}
    ours = KernelSearchCV(HuberSVMClassifier(tol=1e-12), grid, cv=cv, method="exact").fit(
        X, y, sample_weight=w)
    reference = GridSearchCV(HuberSVMClassifier(tol=1e-12), grid, cv=cv).fit(
        X, y, sample_weight=w)
    assert np.allclose(ours.cv_results_["mean_test_score"],
                       reference.cv_results_["mean_test_score"])
    assert ours.best_params_ == reference.best_params_
    assert np.allclose(ours.best_estimator_.dual_coef_, reference.best_estimator_.dual_coef_,
                       atol=1e-8)
    # the default method (BIF, confirmed by exact refits) picks a candidate whose exact
    # score is GridSearchCV's best
    fast = KernelSearchCV(HuberSVMClassifier(), grid, cv=cv).fit(X, y, sample_weight=w)
    assert reference.cv_results_["mean_test_score"][fast.best_index_] == pytest.approx(
        reference.best_score_)


def test_kernel_search_cv_pipeline_sample_weight_weighs_fits_and_scores():
    # fold by fold (method="exact" refits the scaler on each training part): the weights
    # reach the last step's fit and weigh each test part's accuracy, as the fast path's
    X, y = problem(n=100, seed=11)
    w = weights_for(100, 11)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    pipe = make_pipeline(StandardScaler(), SVC())
    grid = {"svc__gamma": [0.1, 0.5], "svc__C": [1.0, 8.0]}
    ours = KernelSearchCV(pipe, grid, cv=cv, method="exact").fit(X, y, sample_weight=w)
    for params, mean in zip(ours.cv_results_["params"], ours.cv_results_["mean_test_score"],
                            strict=True):
        scores = []
        for train, test in cv.split(X, y):
            model = make_pipeline(StandardScaler(), HuberSVMClassifier(
                gamma=params["svc__gamma"], lam=1 / (2 * 100 * params["svc__C"]), tol=1e-12))
            model.fit(X[train], y[train], hubersvmclassifier__sample_weight=w[train])
            scores.append(accuracy_score(y[test], model.predict(X[test]),
                                         sample_weight=w[test]))
        assert mean == pytest.approx(np.mean(scores))
    unweighted = KernelSearchCV(pipe, grid, cv=cv, method="exact").fit(X, y)
    assert not np.allclose(unweighted.best_estimator_[-1].dual_coef_,
                           ours.best_estimator_[-1].dual_coef_)


def test_weighted_train_scores_fold_by_fold():
    X, y = problem(n=90, seed=12)
    w = weights_for(90, 12)
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    search = KernelSearchCV(HuberSVMClassifier(tol=1e-12), {"gamma": [0.3], "lam": [0.01]},
                            cv=cv, method="exact", return_train_score=True).fit(
        X, y, sample_weight=w)
    train_scores = []
    for train, _ in cv.split(X, y):
        model = HuberSVMClassifier(gamma=0.3, lam=0.01, tol=1e-12).fit(
            X[train], y[train], sample_weight=w[train])
        train_scores.append(accuracy_score(y[train], model.predict(X[train]),
                                           sample_weight=w[train]))
    assert search.cv_results_["mean_train_score"][0] == pytest.approx(np.mean(train_scores))


def test_probabilities_are_calibrated_with_the_sample_weights():
    # predict_proba's scale maximises the weighted likelihood of the chosen candidate's
    # out-of-fold values (weighted as scikit-learn's calibrators take sample_weight)
    X, y = problem(n=120, seed=13)
    w = weights_for(120, 13, zeros=0.0) ** 3
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    search = KernelSearchCV(HuberSVMClassifier(tol=1e-12), {"gamma": [0.3], "lam": [0.01]},
                            cv=cv, method="exact").fit(X, y, sample_weight=w)
    values = np.empty(len(y))
    for train, test in cv.split(X, y):
        values[test] = HuberSVMClassifier(gamma=0.3, lam=0.01, tol=1e-12).fit(
            X[train], y[train], sample_weight=w[train]).decision_function(X[test])
    weighted = fit_score_scale(values, y, w).scale
    assert search.calibration_.scale == pytest.approx(weighted, rel=1e-6)
    assert abs(fit_score_scale(values, y).scale - weighted) > 1e-3 * weighted


@pytest.mark.parametrize("estimator", ["krr", "lssvm"])
def test_a_weighted_default_search_of_the_square_loss_runs_bif_order_inf(estimator):
    # the default closed form has no weights; BIF order inf, exact for the square loss,
    # runs instead, and its scores are the exact refits'
    if estimator == "krr":
        X, y = make_regression(80, 4, noise=0.5, random_state=3)
        base, grid = KernelRidge(kernel="rbf"), {"alpha": [0.01, 0.1, 1.0], "gamma": [0.1, 0.5]}
    else:
        X, y = problem(n=80, classes=3, seed=3)
        base, grid = LSSVMClassifier(), {"lam": [1e-3, 1e-2, 1e-1], "gamma": [0.1, 0.5]}
    w = weights_for(80, 3)
    cv = 4 if estimator == "krr" else StratifiedKFold(4, shuffle=True, random_state=0)
    fast = KernelSearchCV(base, grid, cv=cv).fit(X, y, sample_weight=w)
    exact = KernelSearchCV(base, grid, cv=cv, method="exact").fit(X, y, sample_weight=w)
    assert fast.search_.method == "bif"
    np.testing.assert_allclose(fast.cv_results_["mean_test_score"],
                               exact.cv_results_["mean_test_score"], rtol=1e-7, atol=1e-9)
    assert fast.best_index_ == exact.best_index_


def test_huber_svr_with_sample_weights_is_close_to_svr():
    from sklearn.svm import SVR

    from kernelcv.estimators import HuberSVMRegressor

    X, y = make_regression(100, 4, noise=20.0, random_state=4)
    y = y / np.std(y)
    w = weights_for(100, 4, zeros=0.0)
    ours = HuberSVMRegressor(gamma=0.2, lam=1 / (2 * 100 * 0.5), epsilon=0.1).fit(
        X, y, sample_weight=w)
    reference = SVR(gamma=0.2, C=0.5, epsilon=0.1).fit(X, y, sample_weight=w)
    assert np.max(np.abs(ours.predict(X) - reference.predict(X))) < 0.05
    plain = SVR(gamma=0.2, C=0.5, epsilon=0.1).fit(X, y)
    assert np.max(np.abs(plain.predict(X) - reference.predict(X))) > 0.05


# -- the command line ---------------------------------------------------------------------


def _files(tmp_path, n=80, seed=14):
    X, y = problem(n=n, seed=seed)
    data = tmp_path / "train.svm"
    dump_svmlight_file(X, np.where(y == 1, 1, -1), str(data))
    w = weights_for(n, seed)
    weights = tmp_path / "weights.txt"
    weights.write_text("".join(f"{float(v)!r}\n" for v in w))
    return data, weights, w


def test_cli_cv_and_select_sample_weight_equal_the_library(tmp_path, capsys):
    data, weights, w = _files(tmp_path)
    X, y = load_data(data)
    code = main(["cv", str(data), "--machine", "svm", "--gamma", "0.3", "--lam", "0.002",
                 "--method", "exact", "--folds", "4", "--sample-weight", str(weights),
                 "--json"])
    out = capsys.readouterr().out
    assert code == 0
    summary = json.loads(out)
    expected = cross_validate(X, y, machine="svm", gamma=0.3, lam=0.002, folds=4,
                              method="exact", sample_weight=w)
    assert summary["cv_error"] == expected.cv_error
    assert summary["sample_weight"] == str(weights)
    code = main(["select", str(data), "--machine", "svm", "--gamma-grid", "0.1,0.5",
                 "--lam-grid", "0.001,0.01", "--folds", "4", "--sample-weight", str(weights),
                 "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    result = grid_search(X, y, machine="svm", gammas=[0.1, 0.5], lams=[0.001, 0.01],
                         folds=4, sample_weight=w)
    assert report["best_cv_error"] == result.best["exact_error"]
    assert report["sample_weight"] == str(weights)


@pytest.mark.parametrize("content, words", [
    ("1\n2\n", "has 2 weight(s) but the data have 80 samples"),
    ("1\nheavy\n" + "1\n" * 78, "line 2: weight 'heavy' is not a number"),
    ("-1\n" + "1\n" * 79, "finite and >= 0"),
])
def test_cli_bad_sample_weight_files_are_one_line_errors(tmp_path, capsys, content, words):
    data, weights, _ = _files(tmp_path)
    weights.write_text(content)
    code = main(["cv", str(data), "--machine", "svm", "--gamma", "0.3", "--lam", "0.01",
                 "--method", "exact", "--sample-weight", str(weights)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], captured.err
