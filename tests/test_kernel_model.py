"""KernelModel (the estimators' fit and prediction without scikit-learn) against the
kernelcv estimators with the same settings, and the paths that use it: the test error of
``kernelcv select --test`` and the final kernel fit of a random-feature search."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelcv import FeatureSpace, grid_search
from kernelcv.estimators import (
    HuberSVMClassifier,
    HuberSVMRegressor,
    KernelRidgeRegressor,
    L2SVMClassifier,
    LSSVMClassifier,
)
from kernelcv.exceptions import KernelCVError
from kernelcv.kernels import Kernel
from kernelcv.machines import make_machine
from kernelcv.machines import model as model_module
from kernelcv.machines.model import KernelModel, decision_values
from kernelcv.random_features import final

ESTIMATORS = {"krr": KernelRidgeRegressor, "lssvm": LSSVMClassifier, "l2svm": L2SVMClassifier,
              "svm": HuberSVMClassifier, "svr": HuberSVMRegressor}
KERNELS = [Kernel("rbf", 0.3), Kernel("laplace", 0.2), Kernel("poly", 0.5, 2, 1.0),
           Kernel("linear")]


def data(seed, n, sparse, classifier, labels=(-1.0, 1.0)):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * (rng.random((n, 4)) < 0.7)
    score = X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=n)
    y = np.where(score > 0, labels[1], labels[0]) if classifier else score
    return (sp.csr_matrix(X) if sparse else X), y


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(ESTIMATORS)), st.sampled_from(range(len(KERNELS))),
       st.booleans(), st.booleans(), st.integers(0, 1000), st.sampled_from([1e-3, 0.1]))
def test_same_numbers_as_the_estimator(machine, k, sparse, intercept, seed, lam):
    spec = make_machine(machine, fit_intercept=intercept if machine != "krr" else None)
    kernel = KERNELS[k]
    X, y = data(seed, 40, sparse, spec.is_classifier, labels=(3.0, 7.0))
    X_test, _ = data(seed + 1, 15, sparse, spec.is_classifier)
    options = {"fit_intercept": intercept} if machine != "krr" else {}
    estimator = ESTIMATORS[machine](kernel=kernel.name, gamma=kernel.gamma,
                                    degree=kernel.degree, coef0=kernel.coef0, lam=lam,
                                    **options).fit(X, y)
    model = KernelModel(spec, kernel, lam).fit(X, y)
    assert np.array_equal(model.dual_coef_, estimator.dual_coef_)
    assert model.intercept_ == estimator.intercept_
    assert np.array_equal(model.predict(X_test), estimator.predict(X_test))
    if spec.is_classifier:
        assert np.array_equal(model.classes_, estimator.classes_)
        assert np.array_equal(model.decision_function(X_test),
                              estimator.decision_function(X_test))


def test_blocks_and_edge_cases(monkeypatch):
    X, y = data(0, 30, False, True)
    model = KernelModel(make_machine("l2svm"), Kernel("rbf", 0.5), 0.01).fit(X, y)
    whole = model.decision_function(X)
    monkeypatch.setattr(model_module, "BLOCK_ENTRIES", 7 * 30 + 3)  # 7 rows a block
    np.testing.assert_allclose(model.decision_function(X), whole, rtol=0, atol=1e-12)
    assert model.decision_function(X[:0]).shape == (0,)
    coef = np.ones((30, 3))
    assert decision_values(Kernel("linear"), X[:0], X, coef).shape == (0, 3)
    X[:] = 0.0  # the model keeps its own copy of the training data
    np.testing.assert_allclose(model.decision_function(model.X_fit_), whole, atol=1e-12)
    with pytest.raises(KernelCVError, match="needs two classes, got 1"):
        KernelModel(make_machine("lssvm"), Kernel("rbf", 0.5), 0.01).fit(X, np.ones(30))


@pytest.mark.parametrize("machine", ["krr", "lssvm", "l2svm"])
def test_final_kernel_fit_without_an_estimator_equals_the_estimator_clone(machine):
    spec = make_machine(machine)
    X, y = data(3, 60, True, spec.is_classifier)
    result = grid_search(X, y, machine, method=FeatureSpace(features=20), folds=3,
                         gammas=[0.1, 0.5], lams=[1e-2, 1e-1])
    plain, kind, _ = final.fit_final(X, y, result, "kernel")
    assert kind == "kernel" and isinstance(plain, KernelModel)
    options = {"fit_intercept": result.machine_spec.fit_intercept} if machine != "krr" else {}
    clone, kind, _ = final.fit_final(X, y, result, "kernel",
                                     estimator=ESTIMATORS[machine](**options))
    assert kind == "kernel" and isinstance(clone, ESTIMATORS[machine])
    assert np.array_equal(plain.dual_coef_, clone.dual_coef_)
    assert np.array_equal(plain.predict(X), clone.predict(X))
