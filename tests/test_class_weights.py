"""Class weights (SVC's class_weight) through the machines, every CV method that takes
them and the search, against independent references: scikit-learn's KernelRidge with
sample weights, the weighted problem's optimality conditions written out here, LIBSVM's
SVC(class_weight=...), and refit cross-validation on the same folds."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import dump_svmlight_file, make_classification
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC
from sklearn.utils.class_weight import compute_class_weight

from kernelcv import (
    BIF,
    FeatureSpace,
    KernelCVError,
    KernelSearchCV,
    MemoryBudgetError,
    cross_validate,
    grid_search,
    make_machine,
)
from kernelcv.cli import main
from kernelcv.criteria.evaluate import evaluate_lam
from kernelcv.estimators import HuberSVMClassifier, L2SVMClassifier, LSSVMClassifier
from kernelcv.kernels import make_kernel
from kernelcv.machines.weights import WeightedLoss
from kernelcv.reading.files import load_data
from kernelcv.selection.method_choice import LOW_RANK_FROM, make_method, method_for_size
from kernelcv.validation import check_data
from weighted_checks import check_fast_criteria_against_refits, exact_heldout_labels, folds_of


def rbf_kernel(X, _, gamma):
    return make_kernel("rbf", gamma)(X)


def problem(n=60, d=4, classes=2, seed=0, imbalance=0.75):
    weights = [imbalance] + [(1 - imbalance) / (classes - 1)] * (classes - 1)
    X, y = make_classification(n, d, n_informative=min(d, 3), n_redundant=0,
                               n_classes=classes, n_clusters_per_class=1, weights=weights,
                               flip_y=0.05, random_state=seed)
    return X, y


def resolved(name, class_weight, X, y, **options):
    """The machine with its weights resolved, the checked data and the Gram matrix."""
    X, codes, mapping = check_data(X, y, True, multiclass=True)
    machine = make_machine(name, class_weight=class_weight, **options).for_labels(mapping,
                                                                                   codes)
    return machine, codes, mapping


# -- the weights --------------------------------------------------------------------------


def test_balanced_weights_are_scikit_learns():
    X, y = problem(classes=3, n=90)
    machine, _, mapping = resolved("svm", "balanced", X, y)
    expected = compute_class_weight("balanced", classes=np.unique(y), y=y)
    assert np.allclose(machine.class_weights, expected)
    binary, _, _ = resolved("svm", "balanced", *problem())
    assert isinstance(binary.loss, WeightedLoss)
    expected = compute_class_weight("balanced", classes=np.array([0, 1]), y=problem()[1])
    assert np.allclose([binary.loss.negative, binary.loss.positive], expected)


def test_a_dict_weighs_the_named_classes_and_one_for_the_rest():
    X, y = problem(classes=3, n=90)
    machine, _, _ = resolved("l2svm", {2: 3.0, 0: 0.5}, X, y)
    assert machine.class_weights == (0.5, 1.0, 3.0)
    labels = np.array(["spam", "ham"])[problem()[1]]
    machine, _, _ = resolved("svm", {"spam": 4.0}, problem()[0], labels)
    # "ham" < "spam": ham is -1, spam is +1
    assert (machine.loss.negative, machine.loss.positive) == (1.0, 4.0)


@pytest.mark.parametrize("class_weight, words", [
    ({0: -1.0}, "positive finite"),
    ({0: float("nan")}, "positive finite"),
    ({7: 2.0}, "not in y"),
    ("balance", "class_weight must be"),
    ([1.0, 2.0], "class_weight must be"),
])
def test_bad_class_weights_are_one_line_errors(class_weight, words):
    X, y = problem()
    with pytest.raises(KernelCVError, match=words):
        cross_validate(X, y, machine=make_machine("svm", class_weight=class_weight),
                       gamma=0.5, lam=0.01, folds=3)


@pytest.mark.parametrize("name", ["krr", "svr"])
def test_regressors_refuse_class_weights(name):
    with pytest.raises(KernelCVError, match="regressor"):
        make_machine(name, class_weight="balanced")


@pytest.mark.parametrize("method", ["closed-form", "gacv", "rff"])
def test_methods_without_class_weights_refuse_them(method):
    X, y = problem()
    machine = make_machine("lssvm" if method == "closed-form" else "svm",
                           class_weight="balanced")
    with pytest.raises(KernelCVError, match="no class or sample weights"):
        grid_search(X, y, machine=machine, method=method, gammas=[0.5], lams=[0.01],
                    folds=3)


# -- the weighted machines against independent references ---------------------------------


def test_weighted_lssvm_is_kernel_ridge_with_sample_weights():
    X, y = problem(n=50)
    machine, codes, _ = resolved("lssvm", {0: 0.4, 1: 2.5}, X, y, fit_intercept=False)
    K = rbf_kernel(X, X, gamma=0.3)
    lam = 0.02
    fit = machine.fit(K, codes, lam)
    weights = np.where(codes > 0, 2.5, 0.4)
    reference = KernelRidge(alpha=len(y) * lam, kernel="precomputed").fit(
        K, codes, sample_weight=weights)
    assert np.allclose(fit.alpha, reference.dual_coef_, atol=1e-9)


@pytest.mark.parametrize("name, start", [("svm", "given"), ("svm", "libsvm"),
                                         ("l2svm", "given")])
def test_weighted_svm_meets_the_weighted_optimality_conditions(name, start):
    # (1/n) c_j L'(y_j, f_j) + 2 lam alpha_j = 0 for every j and sum_j c_j L'_j = 0 (the
    # intercept), with L' written out here for the two losses.
    X, y = problem(n=70, seed=3)
    weights = {0: 0.3, 1: 3.0}
    machine, codes, _ = resolved(name, weights, X, y)
    K = rbf_kernel(X, X, gamma=0.4)
    lam = 0.005
    fit = machine.fit(K, codes, lam, start=start)
    f = K @ fit.alpha + fit.intercept
    c = np.where(codes > 0, 3.0, 0.3)
    margin = codes * f
    if name == "svm":
        w = 0.01
        slope = np.clip((1 - margin + w) / (2 * w), 0, 1)
    else:
        slope = 2 * np.maximum(0.0, 1 - margin)
    derivative = -codes * slope
    n = len(codes)
    assert np.max(np.abs(c * derivative / n + 2 * lam * fit.alpha)) < 1e-8
    assert abs(np.sum(c * derivative)) < 1e-7


def test_libsvm_start_lands_on_the_weighted_optimum():
    X, y = problem(n=300, seed=4)
    machine, codes, _ = resolved("svm", "balanced", X, y)
    K = rbf_kernel(X, X, gamma=0.3)
    cold = machine.fit(K, codes, 1e-3, start="given")
    started = machine.fit(K, codes, 1e-3, start="libsvm")
    assert np.allclose(started.decision, cold.decision, atol=1e-8)
    # the per-row ridge 4 w lam n / c_j puts LIBSVM's solution on the final pieces
    assert started.n_iter <= 3 < cold.n_iter


def test_huber_svm_with_class_weights_is_close_to_svc():
    # width 0.01: the Huber hinge is within 0.0025 of the hinge, so the decision values
    # are close to LIBSVM's with the same class weights
    X, y = problem(n=120, seed=5)
    class_weight = {0: 0.5, 1: 2.0}
    ours = HuberSVMClassifier(gamma=0.3, lam=1 / (2 * 120 * 2.0),
                              class_weight=class_weight).fit(X, y)
    svc = SVC(gamma=0.3, C=2.0, class_weight=class_weight).fit(X, y)
    assert np.max(np.abs(ours.decision_function(X) - svc.decision_function(X))) < 0.05
    plain = HuberSVMClassifier(gamma=0.3, lam=1 / (2 * 120 * 2.0)).fit(X, y)
    assert np.max(np.abs(plain.decision_function(X) - svc.decision_function(X))) > 0.1


def test_one_vs_one_pairs_weigh_their_classes_as_libsvm():
    # pair (a, b) of the multiclass machine is LIBSVM's binary SVC on a's and b's rows with
    # their two weights (its C = 1 / (2 n_pair lam): each pair's loss is averaged over
    # its own rows)
    X, y = problem(n=150, classes=3, seed=5)
    class_weight = {0: 0.5, 1: 2.0, 2: 4.0}
    lam = 2e-3
    ours = HuberSVMClassifier(gamma=0.3, lam=lam, class_weight=class_weight).fit(X, y)
    values = ours.machine_values(X)
    for column, (a, b) in enumerate([(0, 1), (0, 2), (1, 2)]):
        rows = (y == a) | (y == b)
        svc = SVC(gamma=0.3, C=1 / (2 * rows.sum() * lam),
                  class_weight={a: class_weight[a], b: class_weight[b]}).fit(X[rows],
                                                                             y[rows])
        # SVC's binary value is positive for its classes_[1] = b, as our pair's
        assert np.max(np.abs(values[rows, column] - svc.decision_function(X[rows]))) < 0.05


# -- CV with class weights against refits on the same folds -------------------------------


def manual_refit_cv(name, class_weight, X, y, fold_ids, gamma, lam, intercept=True):
    """Held-out class predictions of the estimator refitted on each training part with the
    weights given explicitly (a dict resolved from all rows), through scikit-learn's
    estimator path (fit_scheme / the binary fit), not the CV code."""
    estimator = {"svm": HuberSVMClassifier, "l2svm": L2SVMClassifier,
                 "lssvm": LSSVMClassifier}[name]
    predictions = np.empty(len(y), dtype=y.dtype)
    for i in range(fold_ids.max() + 1):
        train = fold_ids != i
        model = estimator(gamma=gamma, lam=lam, class_weight=class_weight,
                          fit_intercept=intercept, tol=1e-12).fit(X[train], y[train])
        predictions[~train] = model.predict(X[~train])
    return predictions


@pytest.mark.parametrize("name", ["svm", "l2svm", "lssvm"])
@pytest.mark.parametrize("classes", [2, 3])
def test_exact_cv_with_class_weights_equals_refits(name, classes):
    X, y = problem(n=90, classes=classes, seed=6)
    classes_ = np.unique(y)
    class_weight = dict(zip(classes_.tolist(), [0.5, 3.0, 1.5][:classes], strict=True))
    fold_ids = folds_of(y)
    machine, codes, mapping = resolved(name, class_weight, X, y)
    K = rbf_kernel(X, X, gamma=0.4)
    lam = 2e-3
    ev, ours = exact_heldout_labels(K, codes, fold_ids, lam, machine, mapping)
    reference = manual_refit_cv(name, class_weight, X, y, fold_ids, 0.4, lam)
    assert np.array_equal(ours, reference)
    unweighted = evaluate_lam(K, codes, fold_ids, lam, make_machine(name), "exact") \
        if classes == 2 else None
    if unweighted is not None:  # the weights changed the held-out values
        assert np.max(np.abs(unweighted.predictions - ev.predictions)) > 1e-3


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), name=st.sampled_from(["svm", "l2svm", "lssvm"]),
       negative=st.floats(0.1, 10.0), positive=st.floats(0.1, 10.0),
       lam=st.floats(1e-4, 1.0), gamma=st.floats(0.05, 2.0), intercept=st.booleans(),
       t=st.integers(2, 6))
def test_fast_criteria_with_class_weights_equal_refit_cv(seed, name, negative, positive, lam,
                                                         gamma, intercept, t):
    # BIF order inf (the series' limit: one Newton step of each fold-out problem from the
    # full fit) and the spectral engine against the exact refits, weighted problems
    X, y = problem(n=40, seed=seed % 50, imbalance=0.6)
    fold_ids = folds_of(y, t, seed)
    machine, codes, _ = resolved(name, {0: negative, 1: positive}, X, y,
                                 fit_intercept=intercept)
    check_fast_criteria_against_refits(rbf_kernel(X, X, gamma=gamma), codes, fold_ids, lam,
                                       machine)


def test_bif_with_class_weights_converges_to_the_refits():
    # a finite order is an approximation; order inf is the Newton step: for the smooth
    # squared hinge at a large lam it moves no point between pieces and is exact
    X, y = problem(n=80, seed=8)
    fold_ids = folds_of(y, 5)
    machine, codes, _ = resolved("l2svm", {0: 0.5, 1: 2.0}, X, y)
    K = rbf_kernel(X, X, gamma=0.2)
    exact = evaluate_lam(K, codes, fold_ids, 0.5, machine, "exact")
    for order in (1, 5, "inf"):
        bif = evaluate_lam(K, codes, fold_ids, 0.5, machine, "bif", order=order)
        gap = np.max(np.abs(bif.predictions - exact.predictions))
        if order == "inf":
            assert gap < 1e-8
        else:
            assert gap < 0.2


# -- the search ---------------------------------------------------------------------------


def test_grid_search_with_class_weights_confirms_by_weighted_refits():
    X, y = problem(n=120, seed=9, imbalance=0.85)
    result = grid_search(X, y, machine=make_machine("svm", class_weight="balanced"),
                         gammas=[0.1, 0.5], lams=[1e-3, 1e-2, 1e-1], folds=4,
                         method=BIF(order="inf"))
    assert result.config["class_weight"] == "balanced"
    best = result.best
    balanced = dict(zip([0, 1], compute_class_weight("balanced", classes=np.array([0, 1]),
                                                     y=y), strict=True))
    reference = manual_refit_cv("svm", balanced, X, y, result.fold_ids, best["gamma"],
                                best["lam"])
    assert best["exact_error"] == pytest.approx(np.mean(reference != y))
    plain = grid_search(X, y, machine="svm", gammas=[0.1, 0.5], lams=[1e-3, 1e-2, 1e-1],
                        folds=4, method=BIF(order="inf"))
    assert "class_weight" not in plain.config or plain.config["class_weight"] is None


def test_kernel_search_cv_takes_svc_class_weight():
    X, y = problem(n=150, seed=10, imbalance=0.85)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    grid = {"C": [0.5, 4.0, 32.0], "gamma": [0.1, 0.5]}
    search = KernelSearchCV(SVC(class_weight="balanced"), grid, cv=cv,
                            method="exact").fit(X, y)
    assert search.best_estimator_.class_weight == "balanced"
    # every candidate's CV score is the weighted machine's refit CV on the same folds
    balanced = dict(zip([0, 1], compute_class_weight("balanced", classes=np.array([0, 1]),
                                                     y=y), strict=True))
    fold_ids = np.empty(len(y), dtype=np.intp)
    for i, (_, test) in enumerate(cv.split(X, y)):
        fold_ids[test] = i
    for index, params in enumerate(search.cv_results_["params"][:3]):
        lam = 1 / (2 * len(y) * params["C"])
        reference = manual_refit_cv("svm", balanced, X, y, fold_ids, params["gamma"], lam)
        assert search.cv_results_["mean_test_score"][index] == pytest.approx(
            np.mean([np.mean(reference[fold_ids == i] == y[fold_ids == i])
                     for i in range(4)]))
    unweighted = KernelSearchCV(SVC(), grid, cv=cv, method="exact").fit(X, y)
    assert not np.allclose(unweighted.cv_results_["mean_test_score"],
                           search.cv_results_["mean_test_score"])


def test_a_class_weighted_default_search_keeps_its_method_at_any_size():
    # the low-rank feature space has no class weights: from 10,000 rows a weighted search
    # keeps its default method, and above the memory budget it is refused in one line
    default = make_method(None, "svm")
    assert method_for_size(default, "svm", ["rbf"], LOW_RANK_FROM, 1, "100G",
                           class_weighted=True) == (default, None)
    assert isinstance(method_for_size(default, "svm", ["rbf"], LOW_RANK_FROM, 1,
                                      "100G")[0], FeatureSpace)
    with pytest.raises(MemoryBudgetError, match="has no class or sample weights"):
        method_for_size(default, "svm", ["rbf"], 5000, 1, "40M", class_weighted=True)


# -- the command line ---------------------------------------------------------------------


def _svm_file(tmp_path):
    X, y = problem(n=80, seed=11, imbalance=0.8)
    path = tmp_path / "imbalanced.svm"
    dump_svmlight_file(X, np.where(y == 1, 1, -1), str(path))
    return path


def test_cli_cv_class_weight_equals_the_library(tmp_path, capsys):
    path = _svm_file(tmp_path)
    code = main(["cv", str(path), "--machine", "svm", "--gamma", "0.3", "--lam", "0.002",
                 "--method", "exact", "--folds", "4", "--class-weight", "1:5,-1:1", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    summary = json.loads(out)
    X, y = load_data(path)
    expected = cross_validate(X, y, machine=make_machine("svm", class_weight={1.0: 5.0}),
                              gamma=0.3, lam=0.002, folds=4, method="exact")
    assert summary["cv_error"] == expected.cv_error
    assert summary["params"]["class_weight"] == {"1": 5.0, "-1": 1.0}
    plain = cross_validate(X, y, machine="svm", gamma=0.3, lam=0.002, folds=4,
                           method="exact")
    assert plain.cv_error != expected.cv_error  # the weights changed the answer


def test_cli_select_class_weight_balanced(tmp_path, capsys):
    path = _svm_file(tmp_path)
    code = main(["select", str(path), "--machine", "svm", "--gamma-grid", "0.1,0.5",
                 "--lam-grid", "0.001,0.01,0.1", "--folds", "4", "--class-weight",
                 "balanced", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["class_weight"] == "balanced"
    X, y = load_data(path)
    result = grid_search(X, y, machine=make_machine("svm", class_weight="balanced"),
                         gammas=[0.1, 0.5], lams=[0.001, 0.01, 0.1], folds=4)
    assert report["best_cv_error"] == result.best["exact_error"]


@pytest.mark.parametrize("argv, words", [
    (["--machine", "svm", "--class-weight", "7:2"], "not in y"),
    (["--machine", "svm", "--class-weight", "heavy"], "LABEL:WEIGHT"),
    (["--machine", "krr", "--class-weight", "balanced"], "regressor"),
    (["--machine", "lssvm", "--class-weight", "balanced", "--method", "closed-form"],
     "no class or sample weights"),
])
def test_cli_bad_class_weights_are_one_line_errors(tmp_path, capsys, argv, words):
    path = _svm_file(tmp_path)
    method = [] if "--method" in argv else ["--method", "exact"]
    code = main(["cv", str(path), "--gamma", "0.3", "--lam", "0.01", *method, *argv])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    if words == "LABEL:WEIGHT":  # argparse's own error: usage, then the one reason
        assert words in lines[-1], captured.err
    else:
        assert len(lines) == 1 and words in lines[0], captured.err
