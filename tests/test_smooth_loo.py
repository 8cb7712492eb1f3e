"""Tests of the smooth LOO criterion (SLOO-MPS) and of the gradient tuning driver.

The closed-form LOO values are checked against n refits of the bordered LS-SVM system
solved here with numpy; the gradient against finite differences and scipy's check_grad.
"""

import numpy as np
import pytest
from scipy.optimize import approx_fprime, check_grad

from kernelcv.criteria.smooth_loo import (
    SmoothLOOObjective,
    loo_error,
    make_spec,
    smooth_loo_value,
)
from kernelcv.exceptions import KernelCVError, MemoryBudgetError
from kernelcv.selection.tuning import minimize_restarts


def toy(seed=0, n=36, d=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.where(X[:, 0] + X[:, 1] ** 2 - 0.3 + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def brute_force_loo(K, y, C, fit_intercept):
    """Leave each sample out, solve the (bordered) LS-SVM system, predict it."""
    n = y.size
    out = np.empty(n)
    for k in range(n):
        keep = np.arange(n) != k
        H = K[np.ix_(keep, keep)] + np.eye(n - 1) / C
        if fit_intercept:
            A = np.block([[H, np.ones((n - 1, 1))], [np.ones((1, n - 1)), np.zeros((1, 1))]])
            sol = np.linalg.solve(A, np.r_[y[keep], 0.0])
            out[k] = K[k, keep] @ sol[:-1] + sol[-1]
        else:
            out[k] = K[k, keep] @ np.linalg.solve(H, y[keep])
    return out


SPECS = {
    "paper mixture": dict(),
    "gaussian + free C": dict(kernels="gaussian", betas=(0.3, 3.0), tune_C=True),
    "laplace": dict(kernels=("laplace",), betas=(1.0, 10.0)),
    "ARD + free C": dict(kernels=(), ard=True, tune_C=True),
    "mixture + ARD": dict(kernels="gaussian,laplace", betas=(1.0,), ard=True),
}


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("name", list(SPECS))
def test_loo_values_match_refits(name, fit_intercept):
    X, y = toy()
    spec = make_spec(**SPECS[name])
    objective = SmoothLOOObjective(X, y, spec, C=2.0, fit_intercept=fit_intercept)
    rng = np.random.default_rng(1)
    params = objective.initial_params() + 0.5 * rng.normal(size=objective.initial_params().size)
    fit = objective.fit(params)
    K, _, _, C, _ = objective.kernel(params)
    expected = brute_force_loo(K, y, C, fit_intercept)
    np.testing.assert_allclose(fit.loo, expected, rtol=1e-9, atol=1e-10)
    # and the full fit solves the system
    H = K + np.eye(y.size) / C
    np.testing.assert_allclose(H @ fit.alpha + fit.b, y, atol=1e-9)
    if fit_intercept:
        assert abs(fit.alpha.sum()) < 1e-9


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("name", list(SPECS))
def test_gradient_matches_finite_differences(name, fit_intercept):
    X, y = toy(seed=2)
    spec = make_spec(**SPECS[name])
    objective = SmoothLOOObjective(X, y, spec, C=1.5, gamma_s=3.0, fit_intercept=fit_intercept)
    rng = np.random.default_rng(3)
    params = objective.initial_params() + 0.4 * rng.normal(size=objective.initial_params().size)
    value, grad = objective(params)
    assert grad.shape == (spec.n_params(X.shape[1]),)
    f = lambda p: objective(p)[0]  # noqa: E731
    # central differences coordinate by coordinate
    h = 1e-5
    central = np.array([(f(params + h * e) - f(params - h * e)) / (2 * h)
                        for e in np.eye(params.size)])
    np.testing.assert_allclose(grad, central, rtol=1e-5, atol=1e-9)
    # scipy's check_grad (forward differences): relative error of the whole vector
    err = check_grad(f, lambda p: objective(p)[1], params, epsilon=1e-7)
    assert err <= 1e-4 * np.linalg.norm(grad) + 1e-9
    assert np.isclose(value, smooth_loo_value(objective.fit(params).loo, y, 3.0))


def test_gradient_in_theta_not_log_theta():
    """dE/dtheta_i = dE/dlog(theta_i^2) * 2 / theta_i (the paper's parametrisation)."""
    X, y = toy(seed=4)
    objective = SmoothLOOObjective(X, y, make_spec(), gamma_s=10.0)
    theta = np.random.default_rng(0).uniform(0.3, 2.0, size=10)

    def in_theta(t):
        value, grad = objective(np.log(t**2))
        return value, grad * 2.0 / t

    err = check_grad(lambda t: in_theta(t)[0], lambda t: in_theta(t)[1], theta, epsilon=1e-7)
    assert err <= 1e-4 * np.linalg.norm(in_theta(theta)[1])
    numeric = approx_fprime(theta, lambda t: in_theta(t)[0], 1e-7)
    assert np.all(np.sign(numeric[np.abs(numeric) > 1e-6])
                  == np.sign(in_theta(theta)[1][np.abs(numeric) > 1e-6]))


def test_smooth_error_tends_to_exact_loo_error():
    X, y = toy(seed=5, n=60)
    objective = SmoothLOOObjective(X, y, make_spec())
    loo = objective.fit(objective.initial_params()).loo
    exact = loo_error(loo, y)
    assert 0 < exact < 0.5
    gaps = [abs(smooth_loo_value(loo, y, g) - exact) for g in (1.0, 10.0, 1e3, 1e6)]
    assert gaps[-1] < 1e-3
    assert gaps[0] > gaps[-1]


@pytest.mark.parametrize("kwargs, match", [
    (dict(kernels=()), "kernel list is empty"),
    (dict(kernels=""), "kernel list is empty"),
    (dict(kernels="gaussian,poly"), "unknown kernel 'poly'"),
    (dict(kernels="gaussian,gaussian"), "twice"),
    (dict(betas=(1.0, 0.0)), "positive"),
    (dict(betas=(-1.0,)), "positive"),
    (dict(betas=()), "empty"),
    (dict(betas="abc"), "positive numbers"),
])
def test_bad_kernel_settings(kwargs, match):
    with pytest.raises(KernelCVError, match=match):
        make_spec(**kwargs)


def test_memory_budget_is_checked_before_allocating():
    X, y = toy()
    with pytest.raises(MemoryBudgetError, match="smooth leave-one-out tuning"):
        SmoothLOOObjective(X, y, make_spec(), memory_budget=1000)


# ------------------------------------------------------------------- tuning driver


@pytest.mark.parametrize("optimizer", ["cg", "lbfgs"])
def test_tuning_lowers_the_criterion_and_records_history(optimizer):
    X, y = toy(seed=6, n=50)
    objective = SmoothLOOObjective(X, y, make_spec(betas=(0.1, 1.0, 10.0)))
    start = objective.initial_params()
    result = minimize_restarts(objective, start, optimizer=optimizer, n_restarts=2,
                               max_iter=30, random_state=0)
    assert result.value < objective(start)[0] - 1e-3
    assert np.isclose(objective(result.params)[0], result.value)
    assert len(result.restarts) == 2
    assert all(r["status"] in ("converged", "max_iter", "stalled") for r in result.restarts)
    history = np.array(result.history)
    assert history[0] >= history[-1]
    assert np.all(np.diff(history) <= 1e-12)  # line searches only accept decreases
    assert result.n_iter == sum(r["n_iter"] for r in result.restarts)
    assert result.failures == []
    again = minimize_restarts(objective, start, optimizer=optimizer, n_restarts=2,
                              max_iter=30, random_state=0)
    np.testing.assert_array_equal(again.params, result.params)


def test_failure_keeps_best_point_seen():
    """An evaluation that fails ends its restart; the best point seen is returned."""
    calls = {"n": 0}
    target = np.array([1.0, -2.0])

    def quadratic(x):
        calls["n"] += 1
        if calls["n"] > 3:
            raise np.linalg.LinAlgError("not positive definite")
        return float(np.sum((x - target) ** 2)), 2 * (x - target)

    result = minimize_restarts(quadratic, np.zeros(2), n_restarts=2, max_iter=50,
                               random_state=0)
    # the 4th evaluation fails inside restart 0; restart 1 fails at its start
    assert [r["status"] for r in result.restarts] == ["failed", "failed"]
    assert len(result.failures) == 2
    assert "linear algebra failed" in result.failures[-1]
    assert result.value == pytest.approx(np.sum((result.params - target) ** 2))
    assert result.value < np.sum(target**2)


def test_failure_everywhere_is_an_error():
    def broken(x):
        return np.nan, np.zeros_like(x)

    with pytest.raises(KernelCVError, match="failed at every starting point"):
        minimize_restarts(broken, np.zeros(3), n_restarts=2)


@pytest.mark.parametrize("kwargs, match", [
    (dict(optimizer="newton"), "unknown optimizer"),
    (dict(n_restarts=0), "at least 1"),
    (dict(max_iter=0), "at least 1"),
])
def test_bad_driver_settings(kwargs, match):
    with pytest.raises(KernelCVError, match=match):
        minimize_restarts(lambda x: (0.0, x), np.zeros(2), **kwargs)
