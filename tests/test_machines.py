"""Solver properties: optimality conditions, warm starts, intercept; KRR vs scikit-learn."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.kernel_ridge import KernelRidge

from kernelcv import KernelCVError, make_kernel, make_machine
from kernelcv.machines.losses import HuberHingeLoss, HuberInsensitiveLoss, smooth_plus

X, y01 = make_classification(150, 5, flip_y=0.1, random_state=0)
Y = 2.0 * y01 - 1
K = make_kernel("rbf", 0.3)(X)
N = len(Y)


def test_krr_equals_sklearn_kernel_ridge():
    lam = 1e-3
    fit = make_machine("krr").fit(K, Y, lam)
    reference = KernelRidge(alpha=N * lam, kernel="rbf", gamma=0.3).fit(X, Y)
    np.testing.assert_allclose(fit.alpha, reference.dual_coef_, rtol=1e-8, atol=1e-10)
    assert fit.n_iter == 1


@pytest.mark.parametrize("name", ["krr", "lssvm", "l2svm", "svm", "svr"])
@pytest.mark.parametrize("lam", [1e-4, 1e-2])
def test_optimality_conditions(name, lam):
    machine = make_machine(name)
    fit = machine.fit(K, Y, lam)
    assert fit.converged
    g, _ = machine.loss.derivatives(Y, fit.decision)
    # stationarity: 2 lam n alpha + g = 0
    np.testing.assert_allclose(2 * lam * N * fit.alpha, -g, atol=1e-8 * max(1, np.abs(g).max()))
    if machine.fit_intercept:
        assert abs(fit.alpha.sum()) < 1e-8
    np.testing.assert_allclose(fit.decision, K @ fit.alpha + fit.intercept, atol=1e-10)


@pytest.mark.parametrize("name", ["l2svm", "svm", "svr"])
def test_warm_start_reaches_same_solution_faster(name):
    machine = make_machine(name)
    cold = machine.fit(K, Y, 2e-3)
    warm = machine.fit(K, Y, 2e-3, alpha0=machine.fit(K, Y, 2.2e-3).alpha)
    np.testing.assert_allclose(warm.decision, cold.decision, atol=1e-8)
    assert warm.n_iter <= cold.n_iter


def test_huber_losses_are_smooth_versions_of_hinge_and_insensitive():
    f = np.linspace(-3, 3, 601)
    ones = np.ones_like(f)
    for width in (0.2, 0.1, 0.01):  # bands do not overlap for width <= epsilon
        hinge = HuberHingeLoss(width).value(ones, f)
        assert np.max(np.abs(hinge - np.maximum(0, 1 - f))) <= width / 4 + 1e-12
        eps_loss = HuberInsensitiveLoss(0.2, width).value(np.zeros_like(f), f)
        assert np.max(np.abs(eps_loss - np.maximum(0, np.abs(f) - 0.2))) <= width / 4 + 1e-12
    # derivatives match finite differences of the values
    z = np.linspace(-1, 1, 201) + 1e-3
    value, first, second = smooth_plus(z, 0.3)
    step = 1e-6
    numeric = (smooth_plus(z + step, 0.3)[0] - smooth_plus(z - step, 0.3)[0]) / (2 * step)
    np.testing.assert_allclose(first, numeric, atol=1e-6)
    assert set(np.unique(second)) <= {0.0, 1 / 0.6}


def test_bad_machine_settings():
    with pytest.raises(KernelCVError):
        make_machine("svc")
    with pytest.raises(KernelCVError):
        make_machine("svm", huber_width=0)
    with pytest.raises(KernelCVError):
        make_machine("svr", epsilon=-1)
    with pytest.raises(KernelCVError, match="krr.*bias-free"):
        make_machine("krr", fit_intercept=True)


def test_unconverged_solve_warns_with_sklearns_convergence_warning():
    # The class is scikit-learn's (imported only when warning), so users' filters apply.
    from sklearn.exceptions import ConvergenceWarning

    with pytest.warns(ConvergenceWarning, match="without the loss pieces settling"):
        fit = make_machine("svm").fit(K, Y, 1e-4, max_iter=1)
    assert not fit.converged and fit.n_iter == 1
