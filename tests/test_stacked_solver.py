"""The batched Newton solver against the one-problem solver, problem by problem.

``fit_stacked`` must reach each problem's optimum as ``fit_kernel_machine`` does (the
oracle, itself tested against scikit-learn in test_machines.py), wherever its rows sit
in the padded layout, cold or warm, with or without an intercept, and hand back the
problems it cannot finish.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelcv.machines import fit_kernel_machine, make_machine
from kernelcv.machines.stacked import fit_stacked


def padded_problems(rng, P, largest, gamma, regression=False):
    """P random RBF problems of 3..largest rows, scattered into a padded layout."""
    problems = []
    for _ in range(P):
        m = int(rng.integers(3, largest + 1))
        X = rng.normal(size=(m, 3))
        signal = X[:, 0] + 0.5 * rng.normal(size=m)
        y = signal if regression else np.where(signal > 0, 1.0, -1.0)
        K = np.exp(-gamma * ((X[:, None] - X[None]) ** 2).sum(-1))
        problems.append((K, y))
    width = max(y.size for _, y in problems)
    K_pad = np.zeros((P, width, width))
    y_pad = np.zeros((P, width))
    valid = np.zeros((P, width), dtype=bool)
    places = []
    for p, (K, y) in enumerate(problems):
        place = rng.permutation(width)[:y.size]
        K_pad[p][np.ix_(place, place)] = K
        y_pad[p, place] = y
        valid[p, place] = True
        places.append(place)
    return problems, places, K_pad, y_pad, valid


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), P=st.integers(1, 7),
       machine=st.sampled_from(["svm", "l2svm", "lssvm", "svr"]), intercept=st.booleans(),
       log_lam=st.floats(-5, 0), log_gamma=st.floats(-2, 1.5), warm=st.booleans())
def test_every_problem_reaches_the_one_problem_optimum(seed, P, machine, intercept, log_lam,
                                                       log_gamma, warm):
    rng = np.random.default_rng(seed)
    spec = make_machine(machine, fit_intercept=intercept)
    lam, gamma = 10.0**log_lam, 10.0**log_gamma
    problems, places, K, y, valid = padded_problems(rng, P, 30, gamma, machine == "svr")
    alpha0 = intercept0 = None
    if warm:  # the solutions at a neighbouring lam, as a search's lam path gives them
        alpha0, intercept0 = np.zeros(y.shape), np.zeros(P)
        for p, ((K_p, y_p), place) in enumerate(zip(problems, places, strict=True)):
            near = fit_kernel_machine(K_p, y_p, lam * 1.7, spec.loss, intercept)
            alpha0[p, place], intercept0[p] = near.alpha, near.intercept
    stack = fit_stacked(K, y, valid, lam, spec.loss, intercept, alpha0, intercept0)
    for p, ((K_p, y_p), place) in enumerate(zip(problems, places, strict=True)):
        assert not stack.fallback[p]
        one = fit_kernel_machine(K_p, y_p, lam, spec.loss, intercept)
        scale = max(1.0, np.abs(one.decision).max())
        assert np.abs(stack.decision[p, place] - one.decision).max() <= 1e-8 * scale
        assert abs(stack.intercept[p] - one.intercept) <= 1e-8 * scale
        assert np.all(stack.alpha[p, ~valid[p]] == 0)
        assert stack.converged[p]


def test_a_system_that_is_not_positive_definite_is_handed_back():
    rng = np.random.default_rng(3)
    problems, places, K, y, valid = padded_problems(rng, 3, 12, 0.5)
    K[1] = -K[1]  # a negative-definite "kernel": its Newton system has no Cholesky factor
    spec = make_machine("lssvm", fit_intercept=False)
    stack = fit_stacked(K, y, valid, 1e-3, spec.loss, False)
    assert stack.fallback.tolist() == [False, True, False]
    for p in (0, 2):
        one = fit_kernel_machine(problems[p][0], problems[p][1], 1e-3, spec.loss)
        assert np.allclose(stack.decision[p, places[p]], one.decision, atol=1e-9)


def test_problems_that_do_not_converge_are_handed_back():
    rng = np.random.default_rng(5)
    _, _, K, y, valid = padded_problems(rng, 4, 20, 0.3)
    spec = make_machine("svm")
    stack = fit_stacked(K, y, valid, 1e-4, spec.loss, True, max_iter=1)
    assert np.all(stack.fallback == ~stack.converged)
    assert stack.fallback.any()


@pytest.mark.parametrize("intercept", [False, True])
def test_padding_rows_change_nothing(intercept):
    rng = np.random.default_rng(11)
    problems, places, K, y, valid = padded_problems(rng, 2, 15, 0.4)
    spec = make_machine("svm", fit_intercept=intercept)
    y_noise = np.where(valid, y, rng.choice([-1.0, 1.0], size=y.shape))
    K_noise = np.where(valid[:, :, None] & valid[:, None, :], K, rng.normal(size=K.shape))
    a = fit_stacked(K, y, valid, 1e-2, spec.loss, intercept)
    b = fit_stacked(K_noise, y_noise, valid, 1e-2, spec.loss, intercept)
    assert np.allclose(a.decision, b.decision, rtol=0, atol=1e-12)
    assert np.allclose(a.intercept, b.intercept, rtol=0, atol=1e-12)


@pytest.mark.parametrize("machine", ["svm", "l2svm"])
def test_a_multiclass_models_pairs_fitted_together_equal_one_by_one(monkeypatch, machine):
    from dataclasses import replace

    import kernelcv.machines.stacked as stacked
    from kernelcv.machines.model import fit_scheme

    rng = np.random.default_rng(8)
    k, n = 5, 60
    codes = np.arange(n) % k
    X = rng.normal(size=(n, 3)) + codes[:, None]
    K = np.exp(-0.3 * ((X[:, None] - X[None]) ** 2).sum(-1))
    spec = replace(make_machine(machine, multiclass="ovo"), n_classes=k)
    monkeypatch.setattr(stacked, "STACK_MIN_PROBLEMS", 10**6)
    one = fit_scheme(spec, K, codes, k, 1e-2)
    calls = []
    monkeypatch.setattr(stacked, "STACK_MIN_PROBLEMS", 1)
    original = stacked.fit_stacked

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    import kernelcv.machines.model as model
    monkeypatch.setattr(model, "fit_stacked", spy)
    together = fit_scheme(spec, K, codes, k, 1e-2)
    assert calls
    assert np.allclose(together[0], one[0], rtol=0, atol=1e-8)
    assert np.allclose(together[1], one[1], rtol=0, atol=1e-8)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), P=st.integers(1, 6), m=st.integers(1, 12))
def test_gather_blocks_is_each_problems_submatrix(seed, P, m):
    from kernelcv.machines.stacked import gather_blocks

    rng = np.random.default_rng(seed)
    K = rng.normal(size=(P, m, m))
    a = int(rng.integers(1, m + 1))
    order = np.stack([rng.permutation(m)[:a] for _ in range(P)])
    blocks = gather_blocks(K, order)
    for p in range(P):
        assert np.array_equal(blocks[p], K[p][np.ix_(order[p], order[p])])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_last_problems_finished_alone_equal_the_batch_finishing_them(monkeypatch, seed):
    import kernelcv.machines.stacked as stacked

    rng = np.random.default_rng(seed)
    problems, places, K, y, valid = padded_problems(rng, 9, 40, 1.0)
    spec = make_machine("svm", fit_intercept=True)
    alone = []
    original = stacked.fit_kernel_machine

    def spy(*args, **kwargs):
        alone.append(kwargs["strict"])
        return original(*args, **kwargs)

    monkeypatch.setattr(stacked, "fit_kernel_machine", spy)
    handed = fit_stacked(K, y, valid, 1e-4, spec.loss, True)
    assert alone and all(alone)  # stragglers were finished by the one-problem solver
    monkeypatch.setattr(stacked, "SOLO_BELOW", 0)  # the batch to the end
    batch = fit_stacked(K, y, valid, 1e-4, spec.loss, True)
    assert handed.converged.all() and batch.converged.all()
    for p, ((K_p, y_p), place) in enumerate(zip(problems, places, strict=True)):
        one = fit_kernel_machine(K_p, y_p, 1e-4, spec.loss, True)
        scale = max(1.0, np.abs(one.decision).max())
        for stack in (handed, batch):
            assert np.abs(stack.decision[p, place] - one.decision).max() <= 1e-8 * scale
            assert abs(stack.intercept[p] - one.intercept) <= 1e-8 * scale
        assert np.all(handed.alpha[p, ~valid[p]] == 0)
    # iterations are counted across the hand-off
    assert handed.n_iter.max() >= 2


def test_a_strict_fit_hands_back_what_it_cannot_finish_without_a_warning():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(25, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=25) > 0, 1.0, -1.0)
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    spec = make_machine("svm", fit_intercept=True)
    # no Cholesky factor (a negative-definite "kernel"): no jitter, no warning
    broken = fit_kernel_machine(-K, y, 1e-3, spec.loss, True, strict=True)
    assert not broken.converged
    from kernelcv.exceptions import KernelCVError

    with pytest.raises(KernelCVError, match="singular even with jitter"):
        fit_kernel_machine(-K, y, 1e-3, spec.loss, True)  # the default tries jitter
    # out of iterations: no ConvergenceWarning
    from sklearn.exceptions import ConvergenceWarning

    short = fit_kernel_machine(K, y, 1e-4, spec.loss, True, max_iter=1, strict=True)
    assert not short.converged and short.n_iter == 1
    with pytest.warns(ConvergenceWarning):
        fit_kernel_machine(K, y, 1e-4, spec.loss, True, max_iter=1)
    full = fit_kernel_machine(K, y, 1e-4, spec.loss, True, strict=True)
    assert full.converged
    assert np.array_equal(full.decision, fit_kernel_machine(K, y, 1e-4, spec.loss, True).decision)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), P=st.integers(1, 6), m=st.integers(2, 40),
       machine=st.sampled_from(["svm", "svr"]), lam=st.floats(1e-5, 1.0), step=st.floats(0.1, 50))
def test_the_batched_line_search_finds_the_one_problem_step(seed, P, m, machine, lam, step):
    # phi(t) along a random step for each problem: the knot bracket and the one-problem
    # search (kernelcv.machines.solver._line_search, the oracle) must agree on the step
    from kernelcv.machines.solver import _line_search as one_search
    from kernelcv.machines.stacked_search import _knot_bracket
    from kernelcv.machines.stacked_search import line_search as batched_search

    rng = np.random.default_rng(seed)
    spec = make_machine(machine)
    valid = np.ones((P, m), dtype=bool)
    valid[:, m // 2:] = rng.random((P, m - m // 2)) < 0.7
    y = rng.normal(size=(P, m)) if machine == "svr" else rng.choice([-1.0, 1.0], size=(P, m))
    y = np.where(valid, y, 0.0)
    X = rng.normal(size=(P, m, 2))
    K = np.exp(-((X[:, :, None] - X[:, None]) ** 2).sum(-1)) * (valid[:, :, None] & valid[:, None])
    alpha = rng.normal(size=(P, m)) * valid
    d_alpha = step * rng.normal(size=(P, m)) * valid
    K_alpha, K_d = np.einsum("pij,pj->pi", K, alpha), np.einsum("pij,pj->pi", K, d_alpha)
    F, dF = K_alpha, K_d
    n = valid.sum(axis=1).astype(float)
    g0 = spec.loss.derivatives(y, F)[0] * valid
    t, g, h, tiny = batched_search(spec.loss, y, valid, n, F, dF, g0, d_alpha, K_alpha, K_d, lam)
    # the knot bracket alone, where phi'(0) < 0 < phi'(1): its interpolated root is the step
    reg = 2 * lam * np.einsum("pi,pi->p", d_alpha, K_alpha)
    curv_reg = 2 * lam * np.einsum("pi,pi->p", d_alpha, K_d)
    slope0 = np.einsum("pi,pi->p", g0, dF) / n + reg
    g1 = spec.loss.derivatives(y, F + dF)[0] * valid
    slope1 = np.einsum("pi,pi->p", g1, dF) / n + reg + curv_reg
    lo, hi, root, ok = _knot_bracket(spec.loss, y, valid, n, F, dF, slope0, slope1, reg, curv_reg)
    assert not ok[slope0 >= 0].any() and ok[(slope0 < 0) & (slope1 > 0)].all()
    for p in range(P):
        if ok[p] and slope1[p] > 1e-10 * abs(slope0[p]):
            assert lo[p] <= root[p] <= hi[p]
            assert abs(root[p] - t[p]) <= 1e-9 * max(1.0, t[p])
    for p in range(P):
        v = valid[p]
        t_one, g_one, _ = one_search(spec.loss, y[p, v], F[p, v], dF[p, v], g0[p, v],
                                     d_alpha[p, v], K_alpha[p, v], K_d[p, v], lam, int(n[p]))
        assert abs(t[p] - t_one) <= 1e-9 * max(1.0, t_one) or tiny[p]
        if not tiny[p]:
            assert np.allclose(g[p, v], g_one, rtol=0, atol=1e-8)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 100_000), Q=st.integers(1, 6), m=st.integers(1, 30),
       machine=st.sampled_from(["svm", "svr"]), scale=st.floats(0.01, 100.0))
def test_batched_best_intercepts_reach_the_one_problem_minimum(seed, Q, m, machine, scale):
    from kernelcv.machines.solver import _best_intercept
    from kernelcv.machines.stacked_search import best_intercepts

    rng = np.random.default_rng(seed)
    spec = make_machine(machine)
    valid = rng.random((Q, m)) < 0.8
    y = (rng.normal(size=(Q, m)) if machine == "svr"
         else rng.choice([-1.0, 1.0], size=(Q, m)))
    F0 = scale * rng.normal(size=(Q, m))
    b = scale * rng.normal(size=Q)
    ours = best_intercepts(spec.loss, y, valid, F0, b)
    for q in range(Q):
        y_q, F_q = y[q, valid[q]], F0[q, valid[q]]
        one = _best_intercept(spec.loss, y_q, F_q, b[q])

        def objective(intercept, y_q=y_q, F_q=F_q):
            return float(np.sum(spec.loss.value(y_q, F_q + intercept)))

        # the same minimum; where the objective is flat, rounding in the slopes' sums may
        # pick another point of the flat stretch
        assert abs(objective(ours[q]) - objective(one)) <= 1e-9 * max(1.0, scale * m)
        slope = float(np.sum(spec.loss.derivatives(y_q, F_q + ours[q])[0]))
        assert abs(slope) <= 1e-8 * max(1.0, m)
