"""Updated solves of the Newton systems (machines/active_updates.py) against direct
Cholesky solves, and Newton fits with them against fits that factor every iteration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification

import kernelcv.machines.active_updates as updates
from kernelcv import make_kernel, make_machine
from kernelcv.machines.solver import _factorise


def _gram(n, seed, gamma):
    X, _ = make_classification(n, 6, random_state=seed)
    return make_kernel("rbf", gamma)(X)


def _direct(K, active, shift, rhs):
    M = K[np.ix_(active, active)] + np.diag(shift)
    return np.linalg.solve(M, rhs)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n_out=st.integers(0, 6), n_in=st.integers(0, 3),
       n_shifted=st.integers(0, 2), log_gamma=st.floats(-2, 1), log_shift=st.floats(-3, 1),
       columns=st.integers(1, 2))
def test_updated_solve_equals_direct_solve(seed, n_out, n_in, n_shifted, log_gamma,
                                           log_shift, columns):
    """A system on the base set with points removed, added and re-shifted is solved from
    the base factor (no new factorisation) to the accuracy of a direct solve."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(updates, "MIN_ACTIVE", 10)
        monkeypatch.setattr(updates, "MAX_CHANGE", 1.0)
        _check_updated_solve(seed, n_out, n_in, n_shifted, log_gamma, log_shift, columns)


def _check_updated_solve(seed, n_out, n_in, n_shifted, log_gamma, log_shift, columns):
    rng = np.random.default_rng(seed)
    n = 90
    K = _gram(n, seed % 1000, 10.0**log_gamma)
    base = np.sort(rng.choice(n, size=70, replace=False))
    base_shift = np.full(base.size, 10.0**log_shift)
    systems = updates.ActiveSystems(K, _factorise)
    systems.factor(base, base_shift)
    outside = np.setdiff1d(np.arange(n), base)
    kept = np.sort(rng.choice(base, size=base.size - n_out, replace=False))
    active = np.union1d(kept, rng.choice(outside, size=n_in, replace=False))
    shift = np.full(active.size, 10.0**log_shift)
    shift[rng.choice(active.size, size=n_shifted, replace=False)] *= 2.0
    rhs = rng.standard_normal((active.size, columns)).squeeze()
    factor = systems.factor(active, shift)
    assert systems.refactored == 1 and systems.updates == 1
    assert factor.updated
    x = factor.solve(rhs)
    reference = _direct(K, active, shift, rhs)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(x, reference, atol=1e-9 * scale)
    assert factor._fallback is None  # solved from the base factor, not factored afresh
    # the Cholesky pair of the system itself, on demand (the rounding check uses it)
    c = np.tril(factor.cho[0])
    np.testing.assert_allclose(c @ c.T, K[np.ix_(active, active)] + np.diag(shift),
                               atol=1e-10 * (1 + shift.max()))


def test_new_factor_where_an_update_does_not_pay_or_is_inaccurate(monkeypatch):
    """Small systems, large changes and a failed residual check all factor afresh; the
    answer is the direct solve's every time."""
    K = _gram(120, 1, 0.3)
    base = np.arange(100)
    rng = np.random.default_rng(0)
    rhs = rng.standard_normal(98)
    active = np.arange(2, 100)
    shift = np.full(98, 0.05)

    def solve_after_base():
        systems = updates.ActiveSystems(K, _factorise)
        systems.factor(base, np.full(100, 0.05))
        factor = systems.factor(active, shift)
        np.testing.assert_allclose(factor.solve(rhs), _direct(K, active, shift, rhs),
                                   rtol=1e-9, atol=1e-12)
        return systems

    assert solve_after_base().refactored == 2  # 98 < MIN_ACTIVE
    monkeypatch.setattr(updates, "MIN_ACTIVE", 10)
    systems = solve_after_base()
    assert (systems.refactored, systems.updates) == (1, 1)
    monkeypatch.setattr(updates, "MAX_CHANGE", 0.01)  # 2 removed of 98 is too many
    assert solve_after_base().refactored == 2
    monkeypatch.setattr(updates, "MAX_CHANGE", 1.0)
    monkeypatch.setattr(updates, "RESIDUAL_TOL", 0.0)  # every update fails its check
    systems = solve_after_base()
    assert (systems.refactored, systems.updates) == (2, 1)


@pytest.mark.parametrize("name,intercept", [("svm", True), ("svm", False), ("svr", True),
                                            ("l2svm", True)])
def test_newton_fits_with_updates_equal_fits_without(monkeypatch, name, intercept):
    """Fits whose later iterations are solved from the first factor reach the optimum of
    fits that factor every iteration (narrow kernel: most points in the smoothed band)."""
    monkeypatch.setattr(updates, "MIN_ACTIVE", 20)
    X, y01 = make_classification(300, 6, flip_y=0.1, random_state=2)
    y = 2.0 * y01 - 1 if name != "svr" else X[:, 0] + 0.3 * X[:, 1] ** 2
    K = make_kernel("rbf", 1.0)(X)
    machine = make_machine(name, fit_intercept=intercept)
    used = []
    real = updates.ActiveSystems.factor

    def counting(self, active, shift):
        factor = real(self, active, shift)
        used.append(bool(getattr(factor, "updated", False)))
        return factor

    monkeypatch.setattr(updates.ActiveSystems, "factor", counting)
    for lam in (1e-4, 1e-3):
        fit = machine.fit(K, y, lam, start="libsvm" if name != "l2svm" else "given")
        with monkeypatch.context() as m:
            m.setattr(updates, "MIN_ACTIVE", 10**9)
            reference = machine.fit(K, y, lam, start="libsvm" if name != "l2svm"
                                    else "given")
        assert fit.converged and reference.converged
        scale = max(1.0, float(np.abs(reference.decision).max()))
        np.testing.assert_allclose(fit.decision, reference.decision, atol=1e-9 * scale)
        g, _ = machine.loss.derivatives(y, fit.decision)
        np.testing.assert_allclose(2 * lam * y.size * fit.alpha, -g,
                                   atol=1e-8 * max(1.0, float(np.abs(g).max())))
    assert any(used)
