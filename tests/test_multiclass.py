"""Multiclass CV: one-vs-one and one-vs-rest against scikit-learn's wrappers refit per fold.

The oracle is independent of kernelcv's multiclass code: scikit-learn's
``OneVsOneClassifier`` / ``OneVsRestClassifier`` around a kernelcv binary estimator,
refit on every training part of the same folds.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.model_selection import GridSearchCV, PredefinedSplit, StratifiedKFold
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier

import kernelcv as kc
from kernelcv import BIF, GranularityRule, Safeguards
from kernelcv.criteria.multiclass import MulticlassCV
from kernelcv.estimators import HuberSVMClassifier, L2SVMClassifier, LSSVMClassifier
from kernelcv.kernels import Kernel
from kernelcv.machines import make_machine
from kernelcv.machines.model import KernelModel
from kernelcv.machines.multiclass import binary_problems, class_scores, predict_codes
from kernelcv.validation import make_folds

ESTIMATORS = {"lssvm": LSSVMClassifier, "l2svm": L2SVMClassifier, "svm": HuberSVMClassifier}
WRAPPERS = {"ovo": OneVsOneClassifier, "ovr": OneVsRestClassifier}


def blobs(seed, n, k, d=3, spread=1.5):
    rng = np.random.default_rng(seed)
    codes = np.arange(n) % k
    rng.shuffle(codes)
    centres = rng.normal(scale=spread, size=(k, d))
    return centres[codes] + rng.normal(size=(n, d)), codes


def refit_oracle(X, labels, folds, machine, strategy, gamma, lam):
    """Held-out class scores and labels of scikit-learn's wrapper refit on each fold."""
    n = X.shape[0]
    k = np.unique(labels).size
    scores = np.empty((n, k))
    predicted = np.empty(n, dtype=labels.dtype)
    for i in np.unique(folds):
        test = folds == i
        estimator = ESTIMATORS[machine](gamma=gamma, lam=lam)
        model = WRAPPERS[strategy](estimator).fit(X[~test], labels[~test])
        scores[test] = model.decision_function(X[test])
        predicted[test] = model.predict(X[test])
    return scores, predicted


def multiclass_cv(X, codes, folds, machine, strategy, gamma, lam, method, **options):
    spec = make_machine(machine, multiclass=strategy)
    from dataclasses import replace
    spec = replace(spec, n_classes=int(codes.max()) + 1)
    K = Kernel("rbf", gamma)(X)
    return MulticlassCV(K, codes.astype(float), folds, spec,
                        closed_form=method == "closed-form").evaluate(
        lam, spec, method, **options)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), k=st.integers(3, 4), t=st.integers(2, 5),
       strategy=st.sampled_from(["ovo", "ovr"]),
       machine=st.sampled_from(["lssvm", "l2svm"]),
       gamma=st.sampled_from([0.05, 0.5, 3.0]), lam=st.sampled_from([1e-3, 1e-2, 0.3]))
def test_exact_multiclass_cv_equals_the_wrappers_refit_per_fold(seed, k, t, strategy,
                                                                machine, gamma, lam):
    """lssvm and l2svm have one optimum; the Huber SVM's intercept is not unique when no
    point lies in its quadratic band (large lam), so two correct solvers may differ there:
    it is compared on the grid below, at lam values where the band is populated."""
    X, codes = blobs(seed, 10 * k + seed % 7, k)
    folds = make_folds(codes.astype(float), t, True, seed)
    ev = multiclass_cv(X, codes, folds, machine, strategy, gamma, lam, "exact")
    scores, predicted = refit_oracle(X, codes, folds, machine, strategy, gamma, lam)
    ours = class_scores(ev.decisions, k, strategy)
    np.testing.assert_allclose(ours, scores, atol=1e-6, rtol=1e-6)
    # predictions can only differ where two classes' scores tie to rounding
    margin = np.sort(scores, axis=1)
    clear = margin[:, -1] - margin[:, -2] > 1e-6
    assert np.array_equal(ev.predictions[clear], predicted[clear])
    assert ev.cv_error == pytest.approx(np.mean(ev.predictions != codes))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(3, 5), t=st.integers(2, 6),
       strategy=st.sampled_from(["ovo", "ovr"]), intercept=st.booleans(),
       gamma=st.sampled_from([0.02, 0.4, 5.0]), lam=st.sampled_from([1e-4, 1e-2, 1.0]))
def test_closed_form_and_order_inf_equal_exact_for_the_lssvm(seed, k, t, strategy, intercept,
                                                             gamma, lam):
    X, codes = blobs(seed, 9 * k + seed % 5, k)
    folds = make_folds(codes.astype(float), t, True, seed)
    from dataclasses import replace
    spec = replace(make_machine("lssvm", fit_intercept=intercept, multiclass=strategy),
                   n_classes=k)
    K = Kernel("rbf", gamma)(X)
    exact = MulticlassCV(K, codes, folds, spec).evaluate(lam, spec, "exact")
    closed = MulticlassCV(K, codes, folds, spec, closed_form=True).evaluate(
        lam, spec, "closed-form")
    newton = MulticlassCV(K, codes, folds, spec).evaluate(lam, spec, "bif", order="inf")
    scale = max(1.0, float(np.max(np.abs(exact.decisions))))
    np.testing.assert_allclose(closed.decisions, exact.decisions, atol=1e-8 * scale)
    np.testing.assert_allclose(newton.decisions, exact.decisions, atol=1e-8 * scale)
    assert closed.cv_error == exact.cv_error == newton.cv_error


@pytest.mark.parametrize("strategy", ["ovo", "ovr"])
@pytest.mark.parametrize("order", [1, 3, "auto"])
def test_finite_orders_are_the_binary_criterion_on_each_machine(strategy, order):
    """Each machine's held-out values on its own rows are the binary BIF values."""
    X, codes = blobs(3, 60, 4)
    folds = make_folds(codes.astype(float), 5, True, 0)
    ev = multiclass_cv(X, codes, folds, "svm", strategy, 0.3, 1e-2, "bif", order=order)
    spec = make_machine("svm")
    K = Kernel("rbf", 0.3)(X)
    for p, problem in enumerate(binary_problems(codes, 4, strategy)):
        rows = np.arange(60) if problem.rows is None else problem.rows
        _, local = np.unique(folds[rows], return_inverse=True)
        binary = kc.criteria.evaluate.evaluate_lam(
            K[np.ix_(rows, rows)], problem.targets(codes), local, 1e-2, spec, "bif",
            order=order)
        np.testing.assert_allclose(ev.decisions[rows, p], binary.predictions, atol=1e-10)


@pytest.mark.parametrize("strategy", ["ovo", "ovr"])
def test_grid_search_exact_equals_gridsearchcv_over_the_wrapper(strategy):
    X, codes = blobs(5, 90, 3, spread=1.0)
    labels = np.array(["setosa", "versicolor", "virginica"])[codes]
    folds = make_folds(codes.astype(float), 5, True, 1)
    grid = {"gamma": [0.02, 0.2, 2.0], "lam": [1e-3, 1e-2, 1e-1]}
    ours = kc.KernelSearchCV(HuberSVMClassifier(multiclass=strategy), grid, method="exact",
                             cv=folds).fit(X, labels)
    theirs = GridSearchCV(WRAPPERS[strategy](HuberSVMClassifier()),
                          {f"estimator__{k}": v for k, v in grid.items()},
                          cv=PredefinedSplit(folds)).fit(X, labels)
    for k in range(5):
        np.testing.assert_allclose(ours.cv_results_[f"split{k}_test_score"],
                                   theirs.cv_results_[f"split{k}_test_score"], atol=1e-12)
    assert ours.best_params_ == {k.split("__")[1]: v for k, v in theirs.best_params_.items()}
    assert set(ours.predict(X)) <= set(labels)
    assert np.array_equal(ours.predict(X), theirs.predict(X))


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.parametrize("labels", [np.array(["b", "a", "c"]), np.array([7, -2, 40]),
                                    np.array([1.0, 2.0, 5.0])])
def test_labels_of_any_type_round_trip(labels):
    X, codes = blobs(11, 60, 3, spread=3.0)
    y = labels[codes]
    result = kc.cross_validate(X, y, "svm", gamma=0.2, lam=1e-2, method=BIF(order="inf"),
                               folds=4, random_state=0)
    assert set(result.labels) <= set(labels)
    assert result.cv_error == pytest.approx(np.mean(result.labels != y))
    assert sorted(result.label_mapping.values()) == sorted(labels.tolist())
    search = kc.grid_search(X, y, "l2svm", gammas=[0.2], lams=[1e-2, 1e-1], folds=4)
    assert search.label_mapping == {i: v for i, v in enumerate(np.sort(labels).tolist())}
    model = L2SVMClassifier(gamma=0.2, lam=1e-2).fit(X, y)
    assert set(model.predict(X)) == set(labels)


@pytest.mark.parametrize("strategy", ["ovo", "ovr"])
def test_kernel_model_and_estimator_agree_with_the_wrappers(strategy):
    X, codes = blobs(2, 80, 4)
    y = np.array([3, 1, 4, 9])[codes]
    estimator = LSSVMClassifier(gamma=0.3, lam=1e-2, multiclass=strategy).fit(X, y)
    wrapped = WRAPPERS[strategy](LSSVMClassifier(gamma=0.3, lam=1e-2)).fit(X, y)
    model = KernelModel(make_machine("lssvm", multiclass=strategy), Kernel("rbf", 0.3),
                        1e-2).fit(X, y)
    Z, _ = blobs(7, 40, 4)
    np.testing.assert_allclose(estimator.decision_function(Z), wrapped.decision_function(Z),
                               atol=1e-8)
    np.testing.assert_allclose(class_scores(estimator.machine_values(Z), 4, strategy),
                               wrapped.decision_function(Z), atol=1e-8)
    assert np.array_equal(estimator.predict(Z), wrapped.predict(Z))
    assert np.array_equal(model.predict(Z), estimator.predict(Z))


def test_ovo_vote_rule_breaks_ties_by_confidence():
    # three classes, every pair votes for a different winner: a cycle
    decisions = np.array([[0.5, -0.2, 0.9]])  # (0,1): 1 wins; (0,2): 0 wins; (1,2): 2 wins
    scores = class_scores(decisions, 3, "ovo")
    assert np.all(np.round(scores) == 1)  # one vote each (confidences are below 1/3)
    confidence = np.array([-0.5 + 0.2, 0.5 - 0.9, -0.2 + 0.9])
    np.testing.assert_allclose(scores[0] - 1, confidence / (3 * (np.abs(confidence) + 1)))
    assert predict_codes(decisions, 3, "ovo")[0] == 2


@pytest.mark.parametrize("k, t", [(3, 5), (4, 10), (5, 3)])
@pytest.mark.parametrize("seed", [0, 1, 17])
def test_multiclass_folds_are_stratified_kfolds(k, t, seed):
    rng = np.random.default_rng(seed)
    codes = rng.choice(k, size=47, p=np.r_[0.5, np.full(k - 1, 0.5 / (k - 1))])
    codes[:k] = np.arange(k)  # every class present, one of them possibly tiny
    ours = make_folds(codes.astype(float), t, True, seed)
    theirs = np.empty_like(ours)
    splitter = StratifiedKFold(t, shuffle=True, random_state=seed)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "least populated class" warning
        for i, (_, test) in enumerate(splitter.split(np.zeros((47, 1)), codes)):
            theirs[test] = i
    assert np.array_equal(ours, theirs)


@pytest.mark.parametrize("strategy", ["ovo", "ovr"])
def test_auto_folds_for_multiclass_follow_eq6_and_confirm_on_the_same_folds(strategy):
    """folds="auto": each lam's t and order from eq. 6 as for a binary machine; its
    multiclass value is every machine's adaptive BIF (each stopping at its own order) on
    make_folds(y, t), within the tolerance of the series' limit; the confirmed
    candidates' exact errors are the wrappers' refit CV on those folds (an independent
    reference)."""
    from kernelcv.selection.granularity import adaptive_tolerance, bound_rule

    X, codes = blobs(7, 72, 3, spread=1.0)
    labels = np.array(["a", "b", "c"])[codes]
    eps, gamma = 0.5, 0.3
    result = kc.grid_search(X, labels, make_machine("svm", multiclass=strategy), gammas=[gamma],
                            lams=[0.05, 0.2, 1.0], method=BIF(granularity=GranularityRule(eps)),
                            folds="auto", safeguards=Safeguards(confirm=3))
    spec = replace(make_machine("svm", multiclass=strategy), n_classes=3)
    K = Kernel("rbf", gamma)(X)
    ts = set()
    for c in result.candidates:
        choice = bound_rule(eps, delta=0.01, lam=c["lam"], kappa=1.0, n_samples=72)
        g = c["granularity"]
        assert (c["n_folds"], g["n_folds"], g["order"]) == (choice.n_folds, choice.n_folds,
                                                           choice.order)
        ts.add(c["n_folds"])
        folds = make_folds(codes.astype(float), choice.n_folds, True, 0)
        problems = MulticlassCV(K, codes.astype(float), folds, spec)
        used = problems.evaluate(c["lam"], spec, "bif", order="auto",
                                 atol=adaptive_tolerance(eps, 0.01))
        limit = problems.evaluate(c["lam"], spec, "bif", order="inf")
        assert c["cv_error"] == pytest.approx(used.cv_error, abs=1e-12)
        assert np.max(np.abs(used.decisions - limit.decisions)) <= \
            2 * adaptive_tolerance(eps, 0.01)
        if c["exact_error"] is not None:
            _, predicted = refit_oracle(X, labels, folds, "svm", strategy, gamma, c["lam"])
            assert c["exact_error"] == pytest.approx(np.mean(predicted != labels), abs=1e-12)
    assert len(ts) > 1  # the lam values got different numbers of folds
    assert len(result.confirmed) == 3


def test_bad_multiclass_input_gets_clear_errors():
    X, codes = blobs(0, 40, 3)
    lonely = codes.copy()
    lonely[lonely == 2] = 1
    lonely[5] = 2  # class 2 has one sample
    with pytest.raises(kc.KernelCVError, match="lacks 1 of the 3 classes"):
        kc.cross_validate(X, lonely, "svm", gamma=0.5, lam=0.01, folds=4)
    with pytest.raises(kc.KernelCVError, match="gacv"):
        kc.grid_search(X, codes, "svm", method="gacv", gammas=[0.5], lams=[0.01])
    with pytest.raises(kc.KernelCVError, match="'ovo' or 'ovr'"):
        kc.cross_validate(X, codes, make_machine("svm", multiclass="all"), gamma=0.5, lam=0.01)
    with pytest.raises(ValueError):
        LSSVMClassifier(multiclass="one").fit(X, codes)


def test_problem_layout_is_shared_read_only_and_matches_the_definitions():
    """The kernel-free part of a scheme (rows, targets, local folds, other classes' rows)
    is computed once per (codes, folds) and reused; each MulticlassCV builds a pair's
    Gram block only when the one-problem path asks for it."""
    from kernelcv.criteria.multiclass import problem_layout

    X, codes = blobs(4, 60, 4)
    folds = make_folds(codes.astype(float), 5, True, 0)
    first = problem_layout(codes, folds, 4, "ovo")
    assert problem_layout(codes.copy(), folds.copy(), 4, "ovo") is first
    assert problem_layout(codes, (folds + 1) % 5, 4, "ovo") is not first
    for entry, problem in zip(first, binary_problems(codes, 4, "ovo"), strict=True):
        rows = entry.rows
        assert np.array_equal(rows, problem.rows)
        assert np.array_equal(entry.y, problem.targets(codes))
        # local fold ids keep the order of the global ones they renumber
        assert np.array_equal(np.argsort(entry.folds, kind="stable"),
                              np.argsort(folds[rows], kind="stable"))
        others, other_folds = entry.extra
        assert np.array_equal(np.sort(np.r_[rows, others]), np.arange(codes.size))
        for array in (rows, entry.y, entry.folds, others, other_folds):
            assert not array.flags.writeable
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    spec = replace(make_machine("svm", multiclass="ovo"), n_classes=4)
    cv = MulticlassCV(K, codes, folds, spec)
    assert all("K" not in part for part in cv._parts)
    part = cv._parts[2]
    assert np.array_equal(cv._pair_block(part), K[np.ix_(part["rows"], part["rows"])])
