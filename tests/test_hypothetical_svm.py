"""Squared-hinge SVM with bias: solver agreement, criterion (37) and Theorem 5."""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.svm import LinearSVC

from kernelcv.exceptions import KernelCVError
from kernelcv.hypothetical.svm import (
    fit_squared_hinge_svm,
    squared_hinge_objective,
    support_effective_dimension,
    svm_criterion,
)


def _data(seed, n=80, p=5, shift=0.8):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    X = rng.standard_normal((n, p))
    X[:, 0] += shift * y
    return X, y


def _scipy_svm(X, y, C):
    """Independent reference: L-BFGS on the (C^1) primal with its analytic gradient."""
    p = X.shape[1]

    def fun(w):
        xi = np.maximum(0.0, 1.0 - y * (X @ w[:p] + w[p]))
        grad_f = -2.0 * C * y * xi
        grad = np.append(X.T @ grad_f + 2.0 * w[:p], grad_f.sum())
        return w[:p] @ w[:p] + C * xi @ xi, grad

    res = minimize(fun, np.zeros(p + 1), jac=True, method="L-BFGS-B",
                   options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 5000})
    return res.x[:p], res.x[p], res.fun


@pytest.mark.parametrize("C", [0.05, 1.0, 20.0])
def test_newton_solver_agrees_with_scipy(C):
    X, y = _data(0)
    coef, intercept = fit_squared_hinge_svm(X, y, C)
    ref_coef, ref_b, ref_obj = _scipy_svm(X, y, C)
    obj = squared_hinge_objective(X, y, coef, intercept, C)
    assert obj <= ref_obj * (1 + 1e-9)
    assert obj == pytest.approx(ref_obj, rel=1e-7)
    np.testing.assert_allclose(np.append(coef, intercept), np.append(ref_coef, ref_b),
                               atol=1e-4)


def test_newton_solver_agrees_with_liblinear():
    """LinearSVC minimises 1/2||a||^2 + C' sum xi^2 (bias barely penalised) -> C' = C / 2."""
    X, y = _data(1)
    C = 2.0
    coef, intercept = fit_squared_hinge_svm(X, y, C)
    svc = LinearSVC(loss="squared_hinge", C=C / 2, intercept_scaling=100.0, tol=1e-10,
                    max_iter=100000).fit(X, y)
    np.testing.assert_allclose(svc.coef_.ravel(), coef, atol=2e-3)
    assert svc.intercept_[0] == pytest.approx(intercept, abs=2e-3)


def test_criterion_is_risk_plus_effective_dimension_of_the_support_ridge():
    X, y = _data(2)
    res = svm_criterion(X, y, C=1.0)
    S = res["support"]
    Z = np.column_stack([X[S], np.ones(S.size)])
    B = np.diag([1.0] * X.shape[1] + [0.0])
    hat = Z @ np.linalg.inv(Z.T @ Z + B) @ Z.T
    assert res["effective_dimension"] == pytest.approx(np.trace(hat), rel=1e-10)
    assert res["criterion"] == pytest.approx(res["empirical_risk"] + np.trace(hat))
    # on S the SVM is the ridge regression of y_S on [X_S, 1] with B_C (eq. 33 -> 37)
    w = np.linalg.solve(Z.T @ Z + B, Z.T @ y[S])
    np.testing.assert_allclose(w, np.append(res["coef"], res["intercept"]), atol=1e-8)


@pytest.mark.parametrize("n_support, expected", [(40, 6), (12, 6), (6, 6), (4, 4)])
def test_theorem5_limit_for_a_fixed_support_set(n_support, expected):
    """C -> inf: d_S -> rank [X_S, 1] = min(p + 1, |S|) (= min(p, |S|) + 1 when |S| > p)."""
    X, _ = _data(3, n=50, p=5)
    S = np.arange(n_support)
    assert support_effective_dimension(X, S, 1e10) == pytest.approx(expected, abs=1e-5)
    assert support_effective_dimension(X, S, 1e-8) == pytest.approx(1.0, abs=1e-5)
    if n_support > 5:
        assert expected == min(5, n_support) + 1


def test_theorem5_limit_on_a_fitted_svm():
    X, y = _data(4, n=120, p=4, shift=0.5)
    res = svm_criterion(X, y, C=1e7)
    assert res["n_support"] > 4
    assert res["rank_limit"] == min(4, res["n_support"]) + 1
    assert res["effective_dimension"] == pytest.approx(5, abs=1e-4)
    small = svm_criterion(X, y, C=1e-3)
    assert small["effective_dimension"] < res["effective_dimension"]


@pytest.mark.parametrize("C", [0, -1.0, np.nan])
def test_bad_C_is_reported(C):
    X, y = _data(5, n=10)
    with pytest.raises(KernelCVError, match="C must be a positive"):
        svm_criterion(X, y, C=C)
