"""Order inf from one shared factorisation equals one Cholesky per fold, and refit CV.

The oracles are :func:`reference_step` (the previous implementation: one Cholesky per
fold, predictions formed as ``F + Delta``) and, where the Newton step is exact (square
loss), exact refit cross-validation.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kernelcv as kc
from kernelcv import BIF
from kernelcv.criteria import bif
from kernelcv.machines import Machine
from kernelcv.machines.losses import (
    HuberHingeLoss,
    HuberInsensitiveLoss,
    SquaredHingeLoss,
    SquareLoss,
)

LOSSES = {
    "square": SquareLoss(),
    "squared_hinge": SquaredHingeLoss(),
    "huber_hinge": HuberHingeLoss(0.05),
    "huber_insensitive": HuberInsensitiveLoss(epsilon=0.02, width=0.05),
}


def problem(n, d, gamma, seed, loss_name):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = X[:, 0] + 0.7 * np.sin(2 * X[:, 1]) + 0.4 * rng.normal(size=n)
    y = score if loss_name in ("square", "huber_insensitive") else np.where(score > 0, 1., -1.)
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * sq), y


def reference_step(K, g, h, lam, n, fold_ids, sizes, fit_intercept, F):
    """One Newton step per fold, each from its own Cholesky factorisation: ``F + Delta``."""
    eps = -sizes / (n - sizes)
    Z = -bif._kernel_times_dg(K, g, fold_ids, sizes) * eps[None, :]
    out = F.copy()
    for i in range(sizes.shape[0]):
        held = np.flatnonzero(fold_ids == i)
        retained = fold_ids != i
        n_retained = int(retained.sum())
        active = np.flatnonzero(retained & (h > 0))
        beta = 0.0
        y_a = np.zeros(0)
        if active.size:
            M = K[np.ix_(active, active)] + np.diag(2 * lam * n_retained / h[active])
            y_a = np.linalg.solve(M, Z[active, i])
            if fit_intercept:
                ones = np.linalg.solve(M, np.ones(active.size))
                beta = (-g[retained].sum() / n_retained - y_a.sum()) / ones.sum()
                y_a = y_a + beta * ones
        out[held] += (Z[held, i] + beta - K[np.ix_(held, active)] @ y_a) / (2 * lam)
    return out


def both_steps(K, y, lam, machine, fold_ids):
    n = y.shape[0]
    fit = machine.fit(K, y, lam)
    g, h = machine.loss.derivatives(y, fit.decision)
    t = int(fold_ids.max()) + 1
    sizes = np.bincount(fold_ids, minlength=t).astype(np.float64)
    eps = -sizes / (n - sizes)
    per_fold = reference_step(K, g, h, lam, n, fold_ids, sizes, machine.fit_intercept,
                              fit.decision)
    shared = bif._newton_step(K, g, h, lam, n, fold_ids, eps, sizes, machine.fit_intercept,
                              fit.intercept)
    return per_fold, shared, h


def rel(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


@pytest.fixture
def always_shared(monkeypatch):
    """Use the shared factorisation even on problems too small for it to pay."""
    monkeypatch.setattr(bif, "shared_factorisation_pays", lambda *args: True)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(40, 90), t=st.sampled_from([3, 7, 10, 13]),
       loss_name=st.sampled_from(sorted(LOSSES)), intercept=st.booleans(),
       log_lam=st.floats(-4, 1), log_gamma=st.floats(-3, 1), seed=st.integers(0, 10_000))
def test_shared_factorisation_equals_per_fold_solves(always_shared, n, t, loss_name,
                                                     intercept, log_lam, log_gamma, seed):
    K, y, = problem(n, 3, 10.0 ** log_gamma, seed, loss_name)
    rng = np.random.default_rng(seed + 1)
    fold_ids = rng.permutation(np.arange(n) % t)  # sizes differ by one when t does not divide n
    machine = Machine("m", LOSSES[loss_name], intercept)
    per_fold, shared, _ = both_steps(K, y, 10.0 ** log_lam, machine, fold_ids)
    assert rel(shared, per_fold) < 1e-8


def test_unequal_fold_sizes_equal_the_per_fold_solution(always_shared):
    K, y = problem(131, 4, 0.2, 3, "squared_hinge")
    fold_ids = np.arange(131) % 10
    fold_ids[:6] = 0  # fold 0 has 18 samples, the others 12 or 13: three retained sizes
    sizes = np.bincount(fold_ids)
    assert len(set(sizes.tolist())) == 3
    for intercept in (False, True):
        per_fold, shared, _ = both_steps(K, y, 1e-3, Machine("l2svm", SquaredHingeLoss(),
                                                             intercept), fold_ids)
        assert rel(shared, per_fold) < 1e-8


def test_default_rule_uses_the_shared_factorisation_at_ten_folds(monkeypatch):
    calls = []
    original = bif.FoldOutSolver.__init__

    def spy(self, *args, **kwargs):
        calls.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(bif.FoldOutSolver, "__init__", spy)
    K, y = problem(263, 4, 0.1, 1, "square")
    fold_ids = np.arange(263) % 10
    per_fold, shared, _ = both_steps(K, y, 1e-3, Machine("krr", SquareLoss()), fold_ids)
    assert calls, "the shared factorisation was not used at t = 10, |A| = 263"
    assert rel(shared, per_fold) < 1e-8
    calls.clear()
    both_steps(K, y, 1e-3, Machine("krr", SquareLoss()), np.arange(263) % 2)
    assert not calls, "two folds: two half-size Cholesky factorisations are cheaper"


def test_flop_rule():
    assert bif.shared_factorisation_pays(500, [450] * 10)
    assert bif.shared_factorisation_pays(500, [400] * 5)  # 1.1 times the shared flops
    assert not bif.shared_factorisation_pays(500, [375] * 4)  # 0.7 times
    assert not bif.shared_factorisation_pays(500, [250] * 2)
    assert not bif.shared_factorisation_pays(50, [45] * 10)
    # a fold of another retained size is factored directly on top of the shared solver
    assert not bif.shared_factorisation_pays(500, [400] * 5, [4000, 4001, 4002, 4003, 4004])


@pytest.mark.parametrize("intercept", [False, True])
def test_order_inf_with_shared_factorisation_equals_refit_cv_for_the_square_loss(intercept):
    """For the square loss one Newton step is the fold-out solution: order inf is exact."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(157, 3))
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=157) > 0, 1.0, -1.0)
    fold_ids = rng.permutation(np.arange(157) % 10)
    machine = kc.make_machine("lssvm", fit_intercept=True) if intercept else "krr"
    exact = kc.cross_validate(X, y, machine, gamma=0.3, lam=1e-3, folds=fold_ids,
                              method="exact").predictions
    fast = kc.cross_validate(X, y, machine, gamma=0.3, lam=1e-3, folds=fold_ids,
                             method=BIF(order="inf")).predictions
    assert rel(fast, exact) < 1e-8


@pytest.mark.parametrize("shared", [False, True])
def test_order_inf_keeps_narrow_kernel_predictions_to_relative_precision(monkeypatch,
                                                                        shared):
    """Held-out kernel sums far below |F| survive (they would be rounding noise in F + Delta).

    Square loss: the step is the exact refit, whose held-out predictions
    ``K_{S R} alpha'`` are formed directly and serve as the oracle.
    """
    monkeypatch.setattr(bif, "shared_factorisation_pays", lambda *args: shared)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    fold_ids = np.arange(120) % 10
    exact = kc.cross_validate(X, y, "krr", gamma=300.0, lam=1e-2, folds=fold_ids,
                              method="exact").predictions
    fast = kc.cross_validate(X, y, "krr", gamma=300.0, lam=1e-2, folds=fold_ids,
                             method=BIF(order="inf")).predictions
    assert np.median(np.abs(exact)) < 1e-8  # far below |F| ~ 0.5: the narrow-kernel regime
    assert np.all(np.abs(fast - exact) <= 1e-8 * np.abs(exact) + 1e-300)


@pytest.fixture
def never_shared(monkeypatch):
    """Keep the small-system path (batched or per-fold) whatever the problem size."""
    monkeypatch.setattr(bif, "shared_factorisation_pays", lambda *args: False)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(6, 48), t=st.integers(2, 12), loss_name=st.sampled_from(sorted(LOSSES)),
       intercept=st.booleans(), log_lam=st.floats(-4, 1), log_gamma=st.floats(-3, 1),
       seed=st.integers(0, 10_000))
@example(n=6, t=2, loss_name="squared_hinge", intercept=True, log_lam=0.0, log_gamma=0.0,
         seed=543)
def test_batched_fold_solves_equal_one_solve_per_fold(never_shared, n, t, loss_name,
                                                      intercept, log_lam, log_gamma, seed):
    """All fold systems stacked into one batched solve (up to BATCHED_MAX_ACTIVE active
    points) equal one Cholesky solve per fold (the step's weights and intercepts), with
    folds of unequal size and folds whose retained points are all off the quadratic
    pieces; and the held-out values equal the F + Delta reference up to its rounding."""
    t = min(t, n - 1)
    K, y = problem(n, 3, 10.0 ** log_gamma, seed, loss_name)
    rng = np.random.default_rng(seed + 1)
    fold_ids = rng.permutation(np.arange(n) % t)
    machine = Machine("m", LOSSES[loss_name], intercept)
    lam = 10.0 ** log_lam
    fit = machine.fit(K, y, lam)
    g, h = machine.loss.derivatives(y, fit.decision)
    assert np.count_nonzero(h) <= bif.BATCHED_MAX_ACTIVE  # the batched path runs
    sizes = np.bincount(fold_ids, minlength=t).astype(np.float64)
    Z = -bif._kernel_times_dg(K, g, fold_ids, sizes) * (-sizes / (n - sizes))[None, :]
    args = (K, g, h, lam, n, fold_ids, sizes, intercept, Z)
    w_batched, b_batched = bif._newton_step_per_fold(*args)
    w_loop, b_loop = bif._newton_step_each_fold(*args)
    # Weights that are zero up to rounding (n = 6, t = 2, every retained point off the
    # quadratic pieces: |w| = 2e-16 from both paths, with opposite signs) compare at the
    # rounding level of weights of order 1e-3 (1e-13), not relative to themselves.
    scale = max(np.max(np.abs(w_loop)), 1e-3)
    assert np.max(np.abs(w_batched - w_loop)) <= 1e-10 * scale
    assert np.allclose(b_batched, b_loop, rtol=1e-10, atol=1e-10 * scale)
    per_fold, batched, _ = both_steps(K, y, lam, machine, fold_ids)
    assert np.max(np.abs(batched - per_fold)) <= 1e-8 * max(np.max(np.abs(fit.decision)), 1.0)


def test_batched_path_is_the_per_fold_path_above_its_size(never_shared, monkeypatch):
    """Above BATCHED_MAX_ACTIVE active points the per-fold Cholesky loop runs instead."""
    calls = []
    original = bif.solve_each_fold
    monkeypatch.setattr(bif, "solve_each_fold", lambda *a: calls.append(1) or original(*a))
    K, y = problem(120, 3, 0.3, 4, "square")  # square loss: every point active
    fold_ids = np.arange(120) % 10
    per_fold, step, _ = both_steps(K, y, 1e-2, Machine("krr", SquareLoss()), fold_ids)
    assert not calls and rel(step, per_fold) < 1e-8
    K, y = problem(40, 3, 0.3, 4, "square")
    per_fold, step, _ = both_steps(K, y, 1e-2, Machine("krr", SquareLoss()),
                                   np.arange(40) % 10)
    assert calls and rel(step, per_fold) < 1e-8
