"""Many small kernel machines fitted together: the primal Newton solver, batched.

A multiclass candidate has many binary machines (one-vs-one: k (k - 1) / 2 pairs of
about 2n/k rows each; its exact CV t refits of each). Solved one at a time, each small
Newton iteration costs about forty numpy calls whatever its size, and on the pair
problems of a multiclass search that overhead, not arithmetic, was the time (vowel, 48
rows per pair: 1.1 ms per fit, ~0.1 ms of it flops). :func:`fit_stacked` runs the
iteration of :func:`kernelcv.machines.solver.fit_kernel_machine` on all problems at once:
every array gains a leading problem axis, every product is one batched BLAS / LAPACK
call, and a problem leaves the batch when it has converged.

Layout: P problems padded to m rows. ``K`` is (P, m, m), zero on padding; ``y`` (P, m);
``valid`` (P, m) marks the real rows (a problem's rows need not come first). Padded rows
have zero loss derivatives and zero coefficients, so they never change a problem.

Each iteration, with ``Q_p = {h > 0}`` of problem p padded to ``a = max_p |Q_p|`` rows
(identity rows and zero right-hand sides on the padding), solves the stacked systems::

    (K_QQ + 2 lam n_p H_Q^-1) alpha_Q + b 1 = -H_Q^-1 (g_Q - H_Q F_Q) - K_QL alpha_L

(bordered by ``1' alpha = 0`` with an intercept), then takes the same exact line search
(batched in :mod:`.stacked_search`)
and the same stopping rules as the one-problem solver, problem by problem in vectorised
form. The optimum of each problem is the one-problem solver's (tested to 1e-8).

Cost per iteration: ``P a^3 / 3`` flops for the batched Cholesky factorisation of the
stacked systems (which also tells which ones are positive definite), ``P a^2`` for their
triangular solves (:mod:`.batched_linalg`) and ``O(P m^2)`` for the products.

When fewer than :data:`SOLO_BELOW` problems are left, each is finished by
:func:`~kernelcv.machines.solver.fit_kernel_machine` from its current iterate (the same
iteration, without the batch's fixed cost; ``strict``, so that what it cannot finish is
handed back as below).

Problems the batch does not handle are returned in ``FitStack.fallback`` for the caller
to fit with the one-problem solver (which adds jitter and warns, or warns about
convergence): a stacked system that is not numerically positive definite, or no
convergence within ``max_iter``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .batched_linalg import cholesky_factors, cholesky_solve_each
from .solver import SHALLOW_BAND_DEPTH, fit_kernel_machine
from .stacked_search import _derivatives, best_intercepts, line_search

# Callers stack the binary problems of a multiclass scheme from this many problems of at
# most STACK_MAX_ROWS rows (measured on one-vs-one searches: see
# kernelcv.criteria.multiclass); larger problems gain nothing from the batch.
STACK_MIN_PROBLEMS = 10
STACK_MAX_ROWS = 120

# The stacked systems keep all m rows (identity rows where a point is not on a quadratic
# piece) when the largest active set has at least this share of them; below it they are
# gathered to the active rows (``P a^3`` instead of ``P m^3`` flops, for the price of two
# gathers of (P, a, m) values).
GATHER_BELOW = 0.6

# When fewer problems than this are left unconverged, each is finished by the one-problem
# solver from its current iterate: a batched iteration costs ~0.6 ms of numpy calls
# whatever the batch size, a one-problem iteration of these sizes ~0.15 ms. One pair of a
# multiclass candidate often needs several times the iterations of the others (glass's
# two large overlapping classes at small lam: 7-21 against 2-5).
SOLO_BELOW = 4


@dataclass
class FitStack:
    """The fits of :func:`fit_stacked` (rows as the input's, zero on padding).

    Attributes
    ----------
    alpha : (P, m) coefficients; intercept : (P,); decision : (P, m) ``K alpha + b``.
    n_iter : (P,) Newton iterations; converged : (P,) bool.
    fallback : (P,) bool, problems the batch could not finish (their other fields are
        meaningless): refit them with :func:`~kernelcv.machines.solver.fit_kernel_machine`.
    """

    alpha: np.ndarray
    intercept: np.ndarray
    decision: np.ndarray
    n_iter: np.ndarray
    converged: np.ndarray
    fallback: np.ndarray


def worth_stacking(sizes) -> bool:
    """Whether problems of these row counts are fitted faster together (see above)."""
    return len(sizes) >= STACK_MIN_PROBLEMS and max(sizes) <= STACK_MAX_ROWS


def stack_blocks(K, rows, targets):
    """Pad and stack the problems ``K[rows[p], rows[p]]``, ``targets[p]``.

    Returns ``(K_stack (P, m, m), y (P, m), valid (P, m))`` with each problem's rows
    first and zeros on the padding.
    """
    sizes = np.array([r.size for r in rows])
    P, m = len(rows), int(sizes.max())
    valid = np.arange(m)[None, :] < sizes[:, None]
    index = np.zeros((P, m), dtype=np.intp)
    y = np.zeros((P, m))
    for p, (r, target) in enumerate(zip(rows, targets, strict=True)):
        index[p, :r.size] = r
        y[p, :r.size] = target
    blocks = K[index[:, :, None], index[:, None, :]]
    return np.where(valid[:, :, None] & valid[:, None, :], blocks, 0.0), y, valid


def gather_blocks(K, order, problems=None):
    """``K[p][np.ix_(order[i], order[i])]`` for every problem p = ``problems[i]`` (all of
    K's, in order, by default): (P, m, m), (Q, a) -> (Q, a, a).

    One ``np.take`` with flat indices into contiguous K (at the sizes of one-vs-one pairs,
    15 blocks of 38 of 73 rows: 0.05 ms, against 0.1 ms for a three-array fancy index and
    0.3 ms for two ``take_along_axis`` calls).
    """
    m = K.shape[1]
    problems = np.arange(K.shape[0]) if problems is None else np.asarray(problems)
    flat = (problems[:, None, None] * m + order[:, :, None]) * m + order[:, None, :]
    return np.take(np.ascontiguousarray(K).reshape(-1), flat)


def batched_matvec(K, v):
    """``K[p] @ v[p]`` for every p: (P, m, m), (P, m) -> (P, m)."""
    return np.matmul(K, v[:, :, None])[:, :, 0]


def _active_systems(K, on, g, h, F, target, two_lam_n):
    """The stacked active systems of one iteration and their right-hand sides.

    Returns ``(order, mask, M, rhs)``: ``order`` (P, a) the row positions of each
    problem's active points first, or None when the systems keep all m rows (inactive
    rows replaced by identity rows: cheaper than gathering when most rows are active);
    ``mask`` (P, a) which of them are real; ``M`` (P, a, a) with identity padding;
    ``rhs`` (P, a), zero on padding.
    """
    counts = on.sum(axis=1)
    a = int(counts.max())
    m = on.shape[1]
    safe_h = np.where(on, h, 1.0)
    rhs = np.where(on, -(g - h * F) / safe_h - batched_matvec(K, target), 0.0)
    if a >= GATHER_BELOW * m:
        order, mask = None, on
        M = K * (on[:, :, None] & on[:, None, :])
        diagonal = np.where(on, two_lam_n[:, None] / safe_h, 1.0)
    else:
        order = np.argsort(~on, axis=1, kind="stable")[:, :a]
        mask = np.arange(a)[None, :] < counts[:, None]
        M = gather_blocks(K, order)
        M *= mask[:, :, None] & mask[:, None, :]
        problems = np.arange(K.shape[0])[:, None]
        diagonal = np.where(mask, two_lam_n[:, None] / safe_h[problems, order], 1.0)
        rhs = rhs[problems, order]
    M[:, np.arange(M.shape[1]), np.arange(M.shape[1])] += diagonal
    return order, mask, M, rhs


def _central_intercepts(loss, y, valid, K_alpha, b):
    """:func:`kernelcv.machines.solver.central_intercept` of every problem at once.

    The same rule on (P, m) arrays: where every real row sits on or outside each
    quadratic band (within :data:`~kernelcv.machines.solver.SHALLOW_BAND_DEPTH` of its
    width), the intercept moves to the middle of the interval of optimal intercepts (its
    finite end when it is open on one side); padded rows take no part. O(P m) in a fixed
    number of numpy calls.
    """
    knots = getattr(loss, "knots", None)
    if knots is None:
        return b
    P, m = y.shape
    bands = np.sort(knots(y.ravel()).reshape(P, m, -1, 2), axis=3)
    value = (K_alpha + b[:, None])[:, :, None]
    lo, hi = bands[..., 0], bands[..., 1]
    slack = SHALLOW_BAND_DEPTH * (hi - lo) + 1e-12 * np.maximum(1.0, np.abs(bands).max(axis=3))
    real = valid[:, :, None]
    below, above = real & (value <= lo + slack), real & (value >= hi - slack)
    flat = np.all(~real | below | above, axis=(1, 2))
    uppers = np.where(below, np.maximum(lo - value, 0.0), np.inf).min(axis=(1, 2))
    lowers = np.where(above, np.minimum(hi - value, 0.0), -np.inf).max(axis=(1, 2))
    up, low = np.isfinite(uppers), np.isfinite(lowers)
    both = up & low
    shift = np.where(both, 0.5 * (np.where(both, uppers, 0.0) + np.where(both, lowers, 0.0)),
                     np.where(up, np.where(up, uppers, 0.0), np.where(low, lowers, 0.0)))
    return np.where(flat & (up | low), b + shift, b)


def _finish_alone(p, K, y, valid, lam, loss, fit_intercept, tol, max_iter, alpha, b, K_alpha,
                  F, n_iter, converged, fallback):
    """Problem p of a stack finished by the one-problem solver from its current iterate
    (its remaining ``max_iter``, ``strict``: what it cannot finish stays a fallback); the
    stack's arrays are updated in place."""
    rows = np.flatnonzero(valid[p])
    left = max_iter - int(n_iter[p])
    if left <= 0:
        return
    fit = fit_kernel_machine(K[p][np.ix_(rows, rows)], y[p, rows], lam, loss,
                             fit_intercept=fit_intercept, alpha0=alpha[p, rows],
                             intercept0=float(b[p]), tol=tol, max_iter=left, strict=True)
    n_iter[p] += fit.n_iter
    if not fit.converged:
        fallback[p] = True
        return
    alpha[p] = 0.0
    alpha[p, rows] = fit.alpha
    b[p] = fit.intercept
    K_alpha[p] = K[p] @ alpha[p]
    F[p] = 0.0
    F[p, rows] = fit.decision
    converged[p] = True


def fit_stacked(K, y, valid, lam, loss, fit_intercept=False, alpha0=None, intercept0=None,
                tol=1e-10, max_iter=100) -> FitStack:
    """Fit P padded problems at once (see the module notes); each as ``fit_kernel_machine``.

    Parameters
    ----------
    K : (P, m, m) Gram blocks, zero on padded rows and columns.
    y : (P, m) targets (any value on padding); valid : (P, m) bool, the real rows.
    lam : float; loss : a loss of :mod:`kernelcv.machines.losses`.
    fit_intercept : bool; alpha0 : (P, m) or None; intercept0 : (P,) or None (warm start).
    tol, max_iter : as :func:`~kernelcv.machines.solver.fit_kernel_machine`.

    Returns
    -------
    FitStack
    """
    P, m = y.shape
    valid = np.asarray(valid, dtype=bool)
    y = np.where(valid, y, 0.0)
    n = valid.sum(axis=1).astype(np.float64)
    two_lam_n = 2 * lam * n
    alpha = np.zeros((P, m)) if alpha0 is None else np.where(valid, alpha0, 0.0)
    b = np.zeros(P) if intercept0 is None or not fit_intercept else np.array(
        intercept0, dtype=np.float64)
    K_alpha = batched_matvec(K, alpha)
    F = K_alpha + b[:, None]
    g, h = _derivatives(loss, y, F, valid)
    n_iter = np.zeros(P, dtype=np.intp)
    converged = np.zeros(P, dtype=bool)
    fallback = np.zeros(P, dtype=bool)
    solo = np.zeros(P, dtype=bool)  # finished by the one-problem solver (centred there)
    for _ in range(max_iter):
        run = np.flatnonzero(~converged & ~fallback)
        if run.size == 0:
            break
        if run.size < SOLO_BELOW:
            for p in run:
                _finish_alone(p, K, y, valid, lam, loss, fit_intercept, tol, max_iter,
                              alpha, b, K_alpha, F, n_iter, converged, fallback)
            solo[run] = True
            break
        every = run.size == P
        Kr = K if every else K[run]
        yr, vr, nr, tlr = y[run], valid[run], n[run], two_lam_n[run]
        Fr, gr, hr, ar, br, Kar = F[run], g[run], h[run], alpha[run], b[run], K_alpha[run]
        n_iter[run] += 1
        on = hr > 0
        target = np.where(on, 0.0, -gr / tlr[:, None])
        b_new = br.copy()
        counts = on.sum(axis=1)
        if counts.max() > 0:
            order, mask, M, rhs = _active_systems(Kr, on, gr, hr, Fr, target, tlr)
            factors, spd = cholesky_factors(M)
            fallback[run[~spd]] = True
            if fit_intercept:
                X = cholesky_solve_each(factors, np.stack([rhs, mask.astype(np.float64)], axis=2),
                                    spd)
                sol, ones = X[:, :, 0], X[:, :, 1]
                with np.errstate(divide="ignore", invalid="ignore"):
                    b_solved = (sol.sum(axis=1) + target.sum(axis=1)) / ones.sum(axis=1)
                has = (counts > 0) & spd  # no factor: b stays (the problem falls back)
                b_new = np.where(has, b_solved, br)
                sol = sol - np.where(has, b_solved, 0.0)[:, None] * ones
            else:
                sol = cholesky_solve_each(factors, rhs[:, :, None], spd)[:, :, 0]
            if order is None:
                target = np.where(mask, sol, target)
            else:
                problems = np.arange(order.shape[0])[:, None]
                target[problems, order] = np.where(mask, sol, target[problems, order])
        empty = np.flatnonzero(counts == 0)
        if fit_intercept and empty.size:
            # No point on a quadratic piece: first move b alone (the one-problem rule).
            b_best = best_intercepts(loss, yr[empty], vr[empty], Kar[empty], br[empty])
            move = np.abs(b_best - br[empty]) > 1e-12 * np.maximum(1.0, np.abs(br[empty]))
            target[empty[move]] = ar[empty[move]]
            b_new[empty[move]] = b_best[move]
        d_alpha = np.where(vr, target - ar, 0.0)
        K_d = batched_matvec(Kr, d_alpha)
        dF = np.where(vr, K_d + (b_new - br)[:, None], 0.0)
        scale_F = np.maximum(1.0, np.abs(np.where(vr, Fr, 0.0)).max(axis=1))
        full_change = np.abs(dF).max(axis=1)
        small = full_change <= tol * scale_F
        step = np.ones(run.size)
        g_new, h_new = gr.copy(), hr.copy()
        moving = np.flatnonzero(~small)
        recompute = small.copy()
        if moving.size:
            t, g_m, h_m, tiny = line_search(
                loss, yr[moving], vr[moving], nr[moving], Fr[moving], dF[moving],
                gr[moving], d_alpha[moving], Kar[moving], K_d[moving], lam)
            step[moving], g_new[moving], h_new[moving] = t, g_m, h_m
            recompute[moving[tiny]] = True
        ar = ar + step[:, None] * d_alpha
        br = br + step * (b_new - br)
        Kar = Kar + step[:, None] * K_d
        Fr = Fr + step[:, None] * dF
        if recompute.any():
            g_new[recompute], h_new[recompute] = _derivatives(loss, yr[recompute], Fr[recompute],
                                                              vr[recompute])
        residual = np.abs(np.where(vr, tlr[:, None] * ar + g_new, 0.0)).max(axis=1)
        g_scale = np.maximum(1.0, np.abs(g_new).max(axis=1))
        balanced = (np.ones(run.size, dtype=bool) if not fit_intercept else
                    np.abs(g_new.sum(axis=1)) <= 1e-6 * g_scale * np.sqrt(np.maximum(nr, 1)))
        fixed = ~on
        same = (np.all((h_new > 0) == on, axis=1)
                & np.all(~on | (h_new == hr), axis=1)
                & np.all(~fixed | (g_new == gr), axis=1)
                & (residual <= 1e-6 * g_scale) & balanced)
        change = step * full_change
        done = ((step == 1.0) & (same | (change <= tol * scale_F))) | (
            (residual <= 1e-12 * g_scale) & (change <= tol * scale_F) & balanced)
        alpha[run], b[run], K_alpha[run], F[run] = ar, br, Kar, Fr
        g[run], h[run] = g_new, h_new
        converged[run] = done & ~fallback[run]
    fallback |= ~converged
    if fit_intercept:
        sums = np.abs(g.sum(axis=1))
        balanced = sums <= 1e-9 * np.maximum(1.0, np.abs(g).sum(axis=1))
        which = np.flatnonzero(converged & balanced & ~solo)
        if which.size:
            centred = _central_intercepts(loss, y[which], valid[which], K_alpha[which],
                                          b[which])
            moved = centred != b[which]
            b[which[moved]] = centred[moved]
            F[which[moved]] = K_alpha[which[moved]] + centred[moved, None]
    return FitStack(alpha=alpha, intercept=b, decision=np.where(valid, F, 0.0),
                    n_iter=n_iter, converged=converged, fallback=fallback)
