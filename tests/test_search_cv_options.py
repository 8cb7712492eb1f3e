"""KernelSearchCV's option objects (issue 39): the method, ``Safeguards`` and ``Execution``
replace the flat options of 0.1, which are refused with their new spelling."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils import estimator_checks

from kernelcv import (
    BIF,
    Execution,
    FeatureSpace,
    GranularityRule,
    KernelCVError,
    KernelSearchCV,
    MemoryBudgetError,
    Safeguards,
    make_machine,
)
from kernelcv.estimators import L2SVMClassifier
from kernelcv.features import LinearFeatureModel
from kernelcv.reading.files import make_synthetic
from kernelcv.selection.options import SearchSpace
from kernelcv.selection.search import run_search

GAMMAS = [2.0**k for k in (-6, -3, 0)]
LAMS = [2.0**i / 90 for i in (-2, 2, 6)]
GRID = {"gamma": GAMMAS, "lam": LAMS}


@pytest.fixture(scope="module")
def data():
    X, y = make_synthetic(90, n_features=4, random_state=3)
    folds = np.random.default_rng(2).permutation(np.arange(90) % 5)
    return X, y, folds


def _by_candidate(search):
    """cv_results_ columns keyed by (gamma, lam)."""
    results = search.cv_results_
    return {(p["gamma"], p["lam"]): i for i, p in enumerate(results["params"])}


def _direct(X, y, method, folds, safeguards=None):
    """The same search through run_search, with its objects built by hand."""
    safeguards = Safeguards() if safeguards is None else safeguards
    return run_search(X, y, make_machine("l2svm"), method,
                      SearchSpace.explicit("rbf", [{"kernel": "rbf", "gamma": g}
                                                   for g in GAMMAS], [LAMS] * len(GAMMAS)),
                      folds=folds, random_state=0, average="folds", safeguards=safeguards,
                      execution=Execution())


def test_the_signature_has_the_scikit_learn_parameters_and_three_objects():
    names = list(inspect.signature(KernelSearchCV.__init__).parameters)[1:]
    assert names == ["estimator", "param_grid", "scoring", "n_jobs", "refit", "cv", "verbose",
                     "pre_dispatch", "error_score", "return_train_score", "method", "screen",
                     "random_state", "safeguards", "execution"]
    assert len(names) <= 15


@pytest.mark.parametrize(("old", "match"), [
    ({"folds": 5}, r"alias folds went in kernelcv 0\.2; write cv="),
    ({"order": 5}, r"write method=<method object>\(order=\.\.\.\), e\.g\. BIF\(order=5\)"),
    ({"epsilon": 0.1, "granularity": "bound"},
     r"write method=<method object>\(epsilon=\.\.\., granularity=\.\.\.\)"),
    ({"confirm": 0}, r"write safeguards=Safeguards\(confirm=\.\.\.\)"),
    ({"recheck_degenerate": False}, r"Safeguards\(recheck_degenerate=\.\.\.\)"),
    ({"memory_budget": "1G", "backend": "dask"},
     r"write execution=Execution\(memory_budget=\.\.\., backend=\.\.\.\)"),
    ({"scheduler": None, "checkpoint": "c.jsonl"}, r"Execution\(scheduler=\.\.\., checkpoint="),
    ({"features": 50, "final": "linear"}, r"\(features=\.\.\., final=\.\.\.\).*FeatureSpace"),
    ({"folds": 5, "confirm": 1}, r"write cv=.*Safeguards\(confirm=\.\.\.\)"),
])
def test_the_old_flat_names_are_refused_with_the_new_spelling(old, match):
    with pytest.raises(KernelCVError, match=match):
        KernelSearchCV("l2svm", GRID, **old)
    with pytest.raises(KernelCVError, match=match):
        KernelSearchCV("l2svm", GRID).set_params(**old)


def test_an_unknown_name_is_still_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        KernelSearchCV("l2svm", colour="red")
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        KernelSearchCV("l2svm", folds=3, colour="red")
    with pytest.raises(ValueError, match="Invalid parameter 'colour'"):
        KernelSearchCV("l2svm").set_params(colour="red")


def test_clone_get_params_set_params_and_pickle_keep_the_objects(data):
    X, y, folds = data
    search = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds, method=BIF(order=3),
                            safeguards=Safeguards(confirm=1),
                            execution=Execution(memory_budget="1G"))
    params = search.get_params(deep=False)
    assert params["method"] == BIF(order=3) and params["safeguards"] == Safeguards(1)
    copy = clone(search)
    assert copy.get_params(deep=False)["method"] == BIF(order=3)
    assert copy.get_params(deep=False)["execution"] == Execution(memory_budget="1G")
    assert copy.set_params(safeguards=Safeguards(confirm=2)).safeguards.confirm == 2
    assert copy.set_params(estimator__lam=0.5).estimator.lam == 0.5
    fitted = search.fit(X, y)
    restored = pickle.loads(pickle.dumps(fitted))
    assert restored.method == BIF(order=3) and restored.safeguards.confirm == 1
    np.testing.assert_array_equal(restored.predict(X), fitted.predict(X))
    np.testing.assert_array_equal(restored.cv_results_["mean_test_score"],
                                  fitted.cv_results_["mean_test_score"])


@pytest.mark.parametrize("check", ["check_parameters_default_constructible",
                                   "check_no_attributes_set_in_init",
                                   "check_get_params_invariance", "check_set_params",
                                   "check_estimator_cloneable", "check_estimator_repr",
                                   "check_dont_overwrite_parameters"])
def test_scikit_learn_api_checks(check):
    getattr(estimator_checks, check)(
        "KernelSearchCV", KernelSearchCV("lssvm", {"gamma": [0.1], "lam": [0.1]}, cv=3,
                                         method=BIF(order=2), safeguards=Safeguards(),
                                         execution=Execution()))


def test_a_bif_object_gives_what_run_search_gives_with_it(data):
    X, y, folds = data
    search = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds, method=BIF(order=3)).fit(X, y)
    direct = _direct(X, y, BIF(order=3), folds)
    index = _by_candidate(search)
    results = search.cv_results_
    assert len(direct.candidates) == len(index) == 9
    for c in direct.candidates:
        i = index[(c["gamma"], c["lam"])]
        assert results["approx_test_score"][i] == pytest.approx(1 - c["score"], abs=1e-12)
        assert results["status"][i] == c["status"]
        assert results["order_used"][i] == c["order_used"] == 3
    best = direct.best
    assert search.best_params_ == {"gamma": best["gamma"], "lam": best["lam"]}
    # the order travels inside the object: the default BIF (order "inf") differs
    default = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds, method="bif").fit(X, y)
    assert set(default.cv_results_["order_used"]) == {"inf"}
    same = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds, method=BIF()).fit(X, y)
    np.testing.assert_array_equal(same.cv_results_["approx_test_score"],
                                  default.cv_results_["approx_test_score"])


def test_granularity_selection_is_a_bif_object(data):
    X, y, folds = data
    method = BIF(granularity=GranularityRule(0.1, "adaptive"))
    search = KernelSearchCV(L2SVMClassifier(), GRID, method=method).fit(X, y)
    direct = _direct(X, y, method, "auto")
    assert search.search_.folds == direct.folds == "auto"
    assert search.n_splits_ is None
    index = _by_candidate(search)
    for c in direct.candidates:
        i = index[(c["gamma"], c["lam"])]
        assert search.cv_results_["approx_test_score"][i] == pytest.approx(1 - c["score"],
                                                                           abs=1e-12)
        assert search.cv_results_["n_folds"][i] == c["n_folds"]
    with pytest.raises(KernelCVError, match="leave cv=None"):
        KernelSearchCV(L2SVMClassifier(), GRID, cv=5, method=method).fit(X, y)
    with pytest.raises(KernelCVError, match=r"BIF\(granularity=GranularityRule\(epsilon"):
        KernelSearchCV(L2SVMClassifier(), GRID, cv="auto").fit(X, y)


def test_safeguards_set_the_confirmations(data):
    X, y, folds = data
    default = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds, method=BIF(order=3)).fit(X, y)
    assert np.sum(default.cv_results_["status"] == "confirmed") >= 3
    none = KernelSearchCV(L2SVMClassifier(), GRID, cv=folds, method=BIF(order=3),
                          safeguards=Safeguards(confirm=0)).fit(X, y)
    assert "confirmed" not in set(none.cv_results_["status"])
    assert np.all(np.isnan(none.cv_results_["exact_test_score"]))
    direct = _direct(X, y, BIF(order=3), folds, Safeguards(confirm=0))
    assert direct.confirmed == [] and none.search_.confirmed == []
    with pytest.raises(KernelCVError, match="safeguards must be a kernelcv.Safeguards"):
        KernelSearchCV("l2svm", GRID, safeguards={"confirm": 0}).fit(X, y)


def test_execution_memory_budget_and_n_jobs(data):
    X, y, folds = data
    with pytest.raises(MemoryBudgetError, match="budget"):
        KernelSearchCV("l2svm", GRID, cv=folds,
                       execution=Execution(memory_budget="1K")).fit(X, y)
    with pytest.raises(KernelCVError, match="give n_jobs once"):
        KernelSearchCV("l2svm", GRID, n_jobs=2, execution=Execution(n_jobs=2)).fit(X, y)
    with pytest.raises(KernelCVError, match="execution must be a kernelcv.Execution"):
        KernelSearchCV("l2svm", GRID, execution="sequential").fit(X, y)
    # the flat n_jobs wins over an execution that leaves its own at the default; left
    # None, the execution's applies
    assert KernelSearchCV(n_jobs=3, execution=Execution())._execution().n_jobs == 3
    assert KernelSearchCV(execution=Execution(n_jobs=2))._execution().n_jobs == 2
    assert KernelSearchCV()._execution() == Execution(n_jobs=None)


def test_execution_progress_is_called(data):
    X, y, folds = data
    calls = []
    KernelSearchCV("l2svm", GRID, cv=folds, method=BIF(order=3),
                   execution=Execution(progress=lambda *a: calls.append(a))).fit(X, y)
    stages = {stage for stage, _, _ in calls}
    assert stages == {"search", "confirm"}
    assert ("search", 3, 3) in calls  # three kernel settings


def test_feature_space_carries_the_final_model(data):
    X, y, folds = data
    grid = {"gamma": [0.05, 0.5], "lam": [1e-2, 1e-4]}
    kernel = KernelSearchCV("l2svm", grid, cv=folds,
                            method=FeatureSpace(features=20)).fit(X, y)
    assert kernel.final_kind_ == "kernel"
    assert isinstance(kernel.best_estimator_, L2SVMClassifier)
    linear = KernelSearchCV("l2svm", grid, cv=folds,
                            method=FeatureSpace(features=20, final="linear")).fit(X, y)
    assert linear.final_kind_ == "linear"
    assert isinstance(linear.best_estimator_, LinearFeatureModel)
    assert linear.best_estimator_.n_features == 40  # twice the search's D
    assert linear.search_.refined == []  # final="linear" turns refine="auto" off
    wider = KernelSearchCV("l2svm", grid, cv=folds,
                           method=FeatureSpace(features=20, final="linear",
                                               final_features=64)).fit(X, y)
    assert wider.best_estimator_.n_features == 64
    # final="auto" beyond final_kernel_limit samples keeps the linear model
    limited = KernelSearchCV("l2svm", grid, cv=folds,
                             method=FeatureSpace(features=20, final_kernel_limit=50)).fit(X, y)
    assert limited.final_kind_ == "linear"
