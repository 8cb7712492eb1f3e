"""The spectral engine with one Cholesky factorization of ``K + rho I`` per lam (no
eigendecomposition, for n past one ``eigh``) against refit cross-validation on the same
folds, uneven folds included (every fold of a lam shares one ridge, the curvature raised
per fold), against the eigendecomposition path, and on torch against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics.pairwise import rbf_kernel

from kernelcv import grid_search
from kernelcv.criteria.evaluate import evaluate_lam
from kernelcv.criteria.ridge_factors import CholeskyFactor, EigenFactor
from kernelcv.criteria.spectral import (
    EIGH_ROWS,
    SpectralCV,
    choose_factorization,
    spectral_evaluations,
)
from kernelcv.exceptions import KernelCVError, MemoryBudgetError
from kernelcv.machines import make_machine
from kernelcv.selection import Execution, Spectral

MACHINES = ("l2svm", "svm", "svr", "lssvm", "krr")


def _problem(n, seed, regression):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    if regression:
        y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=n)
    else:
        y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.4 * rng.normal(size=n) > 0.3, 1.0, -1.0)
        y[:2] = [1.0, -1.0]
    return X, y


def _uneven_folds(n, t, seed):
    """Fold ids with every fold non-empty and sizes that differ."""
    rng = np.random.default_rng(seed)
    folds = np.concatenate([np.arange(t), rng.integers(0, t, n - t)])
    return rng.permutation(folds)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(12, 40), t=st.integers(2, 6), seed=st.integers(0, 10_000),
       name=st.sampled_from(MACHINES), intercept=st.booleans(),
       log_lam=st.floats(-4, 1), log_gamma=st.floats(-1.5, 1))
def test_cholesky_per_lam_equals_refit_cv(n, t, seed, name, intercept, log_lam, log_gamma):
    machine = make_machine(name, fit_intercept=intercept if name != "krr" else None)
    X, y = _problem(n, seed, regression=name in ("svr", "krr"))
    folds = _uneven_folds(n, t, seed)
    K = rbf_kernel(X, gamma=10.0**log_gamma)
    lams = [10.0**log_lam, 10.0**log_lam * 7.0]
    solution = SpectralCV(K, folds, machine.fit_intercept,
                          factorization="cholesky").solve(y, lams, machine.loss)
    for k, lam in enumerate(lams):
        exact = evaluate_lam(K, y, folds, lam, machine, "exact").predictions
        values = solution.predictions[:, 0, k]
        scale = max(1.0, float(np.abs(exact).max()))
        assert np.max(np.abs(values - exact)) <= 1e-5 * scale
        if machine.is_classifier:
            clear = np.abs(exact) > 1e-4 * scale
            assert np.array_equal(values[clear] >= 0, exact[clear] >= 0)


@pytest.mark.parametrize("intercept", [True, False])
def test_one_ridge_solve_equals_the_eigendecomposition_and_the_kkt_system(intercept):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    K = rbf_kernel(X, gamma=0.3)
    Z = rng.normal(size=(60, 4))
    rho = 0.07
    f, b = CholeskyFactor(K, rho, intercept).ridge_solve(Z, np.full(4, rho))
    f_eig, b_eig = EigenFactor(K, intercept).ridge_solve(Z.copy(), np.full(4, rho))
    np.testing.assert_allclose(f, f_eig, atol=1e-9)
    np.testing.assert_allclose(b, b_eig, atol=1e-9)
    # the KKT system solved directly: [[K + rho I, 1], [1', 0]] [alpha; b] = [z; 0]
    n = 60
    if intercept:
        system = np.block([[K + rho * np.eye(n), np.ones((n, 1))],
                           [np.ones((1, n)), np.zeros((1, 1))]])
        solved = np.linalg.solve(system, np.vstack([Z, np.zeros((1, 4))]))
        alpha, b_direct = solved[:n], solved[n]
    else:
        alpha, b_direct = np.linalg.solve(K + rho * np.eye(n), Z), np.zeros(4)
    np.testing.assert_allclose(b, b_direct, atol=1e-9)
    np.testing.assert_allclose(f, K @ alpha + b_direct, atol=1e-9)


@pytest.mark.parametrize("name", ["l2svm", "svm", "svr", "lssvm"])
def test_cholesky_path_equals_the_eigendecomposition_path(name):
    machine = make_machine(name)
    X, y = _problem(150, 3, regression=name == "svr")
    folds = np.random.default_rng(2).permutation(np.arange(150) % 7)
    K = rbf_kernel(X, gamma=0.5)
    lams = [2.0**i / 150 for i in range(-4, 10, 3)]
    by_eigh = spectral_evaluations(K, y, folds, lams, machine, huber="mm",
                                   factorization="eigh")
    by_cholesky = spectral_evaluations(K, y, folds, lams, machine, huber="mm",
                                       factorization="cholesky")
    # both to the engine's stopping rule (1e-10 per step; the distance to the optimum
    # is larger by the conditioning): equal to 1e-5, the 0-1 error up to a row near 0
    for a, b in zip(by_eigh, by_cholesky, strict=True):
        scale = max(1.0, float(np.abs(a.predictions).max()))
        np.testing.assert_allclose(b.predictions, a.predictions, atol=1e-5 * scale)
        near = int(np.sum(np.abs(a.predictions) < 1e-4 * scale))
        assert abs(b.cv_error - a.cv_error) <= near / len(y) + 1e-9


def test_multiclass_one_vs_one_takes_the_cholesky_path():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(90, 2))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=90), [-0.5, 0.5])
    machine = make_machine("l2svm", multiclass="ovo").for_labels({0: 0, 1: 1, 2: 2}, y)
    folds = np.arange(90) % 5
    K = rbf_kernel(X, gamma=0.8)
    by_eigh = spectral_evaluations(K, y, folds, [1e-3, 3e-2], machine,
                                   factorization="eigh")
    by_cholesky = spectral_evaluations(K, y, folds, [1e-3, 3e-2], machine,
                                       factorization="cholesky")
    for a, b in zip(by_eigh, by_cholesky, strict=True):
        np.testing.assert_allclose(b.decisions, a.decisions, atol=1e-6)
        assert b.cv_error == a.cv_error


def test_auto_takes_cholesky_on_a_cpu_and_eigh_on_a_gpu_up_to_the_limit(monkeypatch):
    from kernelcv.devices import Device

    assert choose_factorization("auto", 2000) == "cholesky"
    gpu = Device("cuda", card="a test card")
    assert choose_factorization("auto", EIGH_ROWS, device=gpu) == "eigh"
    assert choose_factorization("auto", EIGH_ROWS + 1, device=gpu) == "cholesky"
    assert choose_factorization("auto", 2000, "mixed", device=gpu) == "cholesky"
    assert choose_factorization("eigh", EIGH_ROWS + 1) == "eigh"
    with pytest.raises(KernelCVError, match="factorization must be one of"):
        choose_factorization("qr", 10)


def test_a_matrix_that_is_not_positive_definite_is_refused_in_one_line():
    K = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    with pytest.raises(KernelCVError, match="not numerically positive definite"):
        CholeskyFactor(K, 0.5, True)


def test_torch_cholesky_equals_numpy_cholesky():
    pytest.importorskip("torch")
    machine = make_machine("l2svm")
    X, y = _problem(120, 5, regression=False)
    folds = _uneven_folds(120, 5, 5)
    K = rbf_kernel(X, gamma=0.4)
    lams = np.array([3e-4, 3e-3, 3e-2])
    expected = SpectralCV(K, folds, factorization="cholesky").solve(y, lams, machine.loss)
    got = SpectralCV(K, folds, device="cpu", factorization="cholesky").solve(
        y, lams, machine.loss)
    np.testing.assert_allclose(got.predictions, expected.predictions, atol=1e-8)
    assert np.array_equal(got.steps, expected.steps)


def _searched_under_budgets(machine):
    """A 100-row problem (100 x 100 float64 = 80 kB: eigh needs 4.5 of them, Cholesky 3)
    searched with eigh, and ``under(budget)``: the same search with ``Spectral()``
    ("auto") under a host memory budget in bytes."""
    X, y = _problem(100, 9, regression=False)
    common = dict(gammas=[0.2, 1.0], lams=[1e-3, 1e-2, 1e-1], folds=4)
    by_eigh = grid_search(X, y, machine, method=Spectral(factorization="eigh"), **common)

    def under(budget):
        return grid_search(X, y, machine, method=Spectral(),
                           execution=Execution(memory_budget=budget), **common)
    return by_eigh, under


def _same_cv_errors(a, b):
    for x, z in zip(a.candidates, b.candidates, strict=True):
        assert z["cv_error"] == pytest.approx(x["cv_error"], abs=1.5 / a.n_samples)


def test_auto_falls_back_to_cholesky_where_the_eigendecomposition_does_not_fit():
    # lssvm: "auto" takes the closed form of one eigh where it fits
    by_eigh, under = _searched_under_budgets("lssvm")
    assert not any("Cholesky" in note for note in by_eigh.notes)
    fallback = under(300_000)
    assert any("one Cholesky factorization of K + rho I per (kernel, lam)" in note
               and "host memory" in note for note in fallback.notes)
    assert fallback.config["factorization"] == "cholesky"
    assert fallback.best_params == by_eigh.best_params
    _same_cv_errors(by_eigh, fallback)
    with pytest.raises(MemoryBudgetError, match="even with one Cholesky factor per lam"):
        under(200_000)


def test_auto_counts_the_memory_of_the_factorization_it_will_use():
    def bound(name, **options):
        return Spectral(**options).bind(make_machine(name), "rbf")

    assert Spectral().dense_matrices == 4.5  # unbound: the larger count
    assert bound("lssvm").dense_matrices == 4.5  # the closed form's eigh
    assert bound("krr").dense_matrices == 4.5
    assert bound("lssvm", precision="mixed").dense_matrices == 3.0  # MM on Cholesky
    assert bound("l2svm").dense_matrices == 3.0  # "auto" is Cholesky on a CPU
    assert bound("svm").dense_matrices == 3.0
    assert bound("l2svm", factorization="eigh").dense_matrices == 4.5
    # the L2-SVM within 3 but not 4.5 matrices: no fallback note, the same values as eigh
    by_eigh, under = _searched_under_budgets("l2svm")
    tight = under(300_000)
    assert not any("Cholesky" in note for note in tight.notes)
    _same_cv_errors(by_eigh, tight)
    with pytest.raises(MemoryBudgetError, match="cholesky needs about .* of host memory"):
        under(200_000)


def test_the_gram_matrix_formed_on_the_device_equals_numpys():
    pytest.importorskip("torch")
    from kernelcv.criteria.spectral_torch import device_gram, to_numpy
    from kernelcv.devices import resolve_device
    from kernelcv.kernels import GramFactory, make_kernel

    X, _y = _problem(50, 10, regression=False)
    factory = GramFactory(X)
    for name, gamma, degree in (("rbf", 0.3, 3), ("laplace", 0.5, 3), ("poly", 0.2, 2),
                                ("linear", None, 3)):
        kernel = make_kernel(name, gamma, degree, 1.0)
        on_device = device_gram(factory.base_for(kernel), kernel, resolve_device("cpu"))
        np.testing.assert_allclose(to_numpy(on_device), factory.gram(kernel), rtol=1e-13,
                                   atol=1e-15)


@pytest.mark.parametrize("factorization", ["eigh", "cholesky"])
def test_a_search_on_the_torch_device_equals_the_numpy_search(factorization):
    pytest.importorskip("torch")
    from kernelcv import grid_search
    from kernelcv.selection import Execution, Spectral

    X, y = _problem(90, 11, regression=False)
    common = dict(gammas=[0.2, 1.0], lams=[1e-3, 1e-2, 1e-1], folds=4,
                  method=Spectral(factorization=factorization))
    numpy = grid_search(X, y, "l2svm", **common)
    torch = grid_search(X, y, "l2svm", execution=Execution(device="cpu"), **common)
    assert torch.best_params == numpy.best_params
    for a, b in zip(numpy.candidates, torch.candidates, strict=True):
        assert b["cv_error"] == pytest.approx(a["cv_error"], abs=1e-12)
