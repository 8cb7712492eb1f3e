"""One-dimensional searches of the batched Newton solver (:mod:`.stacked`), for many
problems at once: the exact line search along each problem's Newton step.

The losses are piecewise quadratic, so along a step ``F + t dF`` the derivative
``phi'(t)`` of the objective is continuous, non-decreasing and linear between the times
where a point changes piece (its knots). The search takes the full step where it does not
overshoot; elsewhere it brackets the root of ``phi'`` between two consecutive knots
(:func:`_knot_bracket`: two rounds of ``~sqrt(K)`` evaluations over the K knots in
(0, 1), every problem at once) and interpolates, then finishes with the safeguarded
Newton iteration of the one-problem search (:func:`kernelcv.machines.solver._line_search`)
until ``|phi'|`` is at rounding level.
"""

from __future__ import annotations

import numpy as np

# The line search evaluates phi' at every knot a step crosses (see _knot_bracket) while
# that takes at most this many (problem, knot, row) values; else it iterates alone.
KNOT_SEARCH_FLOATS = 2_000_000


def _derivatives(loss, y, F, valid):
    g, h = loss.derivatives(y, F)
    return g * valid, h * valid


def line_search(loss, y, valid, n, F, dF, g0, d_alpha, K_alpha, K_d, lam):
    """:func:`kernelcv.machines.solver._line_search` for every problem at once.

    The full step first; a problem that overshoots its minimiser then takes the root of
    ``phi'`` between the knots that bracket it (:func:`_knot_bracket`, exact: ``phi'``
    is linear between consecutive knots), where its loss has knots, and the safeguarded
    Newton iteration of the one-problem search from there (or from the full step) until
    ``|phi'|`` is at rounding level.

    Returns ``(t, g, h, recompute)``: steps (P,), the derivatives at ``F + t dF`` and
    which problems stopped at the tiny step 1e-12 (their derivatives must be recomputed).
    """
    curvature_reg = 2 * lam * np.einsum("pi,pi->p", d_alpha, K_d)
    slope_reg = 2 * lam * np.einsum("pi,pi->p", d_alpha, K_alpha)
    dF2 = dF * dF
    slope0 = np.einsum("pi,pi->p", g0, dF) / n + slope_reg
    t = np.ones(F.shape[0])  # the full Newton step first
    g, h = _derivatives(loss, y, F + dF, valid)
    slope = np.einsum("pi,pi->p", g, dF) / n + slope_reg + curvature_reg
    curv = np.einsum("pi,pi->p", h, dF2) / n + curvature_reg
    sel = np.flatnonzero(~(slope <= 1e-10 * np.abs(slope0) + 1e-300))
    # The open problems' data, gathered once and compacted as problems stop (not
    # gathered again at every evaluation): a safeguarded Newton iteration on phi'(t)
    # inside the bracket [lo, hi], bisection where the Newton point leaves it.
    t_s, s_s, c_s = t[sel], slope[sel], curv[sel]
    lo, hi = np.zeros(sel.size), np.ones(sel.size)
    y_s, v_s, F_s, dF_s, dF2_s = y[sel], valid[sel], F[sel], dF[sel], dF2[sel]
    n_s, reg_s, curv_reg_s, limit_s = n[sel], slope_reg[sel], curvature_reg[sel], 1e-12 * np.abs(
        slope0[sel])
    first = None  # (problems, their first trial step) from the knot bracket
    if sel.size and getattr(loss, "knots", None) is not None:
        bracket = _knot_bracket(loss, y_s, v_s, n_s, F_s, dF_s, slope0[sel], s_s, reg_s,
                                curv_reg_s)
        if bracket is not None:
            lo_b, hi_b, root, ok = bracket
            lo, hi = np.where(ok, lo_b, lo), np.where(ok, hi_b, hi)
            first = (ok, root)
    for _ in range(100):
        if sel.size == 0:
            break
        newton = c_s > 0
        quotient = np.divide(s_s, c_s, out=np.zeros_like(s_s), where=newton)
        candidate = np.where(newton, t_s - quotient, -1.0)
        inside = (lo < candidate) & (candidate < hi)
        t_s = np.where(inside, candidate, 0.5 * (lo + hi))
        if first is not None:
            t_s = np.where(first[0], first[1], t_s)
            first = None
        g_s, h_s = _derivatives(loss, y_s, F_s + t_s[:, None] * dF_s, v_s)
        s_s = np.einsum("pi,pi->p", g_s, dF_s) / n_s + reg_s + t_s * curv_reg_s
        c_s = np.einsum("pi,pi->p", h_s, dF2_s) / n_s + curv_reg_s
        t[sel], slope[sel], curv[sel], g[sel], h[sel] = t_s, s_s, c_s, g_s, h_s
        stop = (np.abs(s_s) <= limit_s) | (hi - lo < 1e-12)
        positive = s_s > 0
        hi = np.where(~stop & positive, t_s, hi)
        lo = np.where(~stop & ~positive, t_s, lo)
        if stop.any():
            go = ~stop
            sel, t_s, s_s, c_s, lo, hi = sel[go], t_s[go], s_s[go], c_s[go], lo[go], hi[go]
            y_s, v_s, F_s, dF_s, dF2_s = y_s[go], v_s[go], F_s[go], dF_s[go], dF2_s[go]
            n_s, reg_s, curv_reg_s, limit_s = n_s[go], reg_s[go], curv_reg_s[go], limit_s[go]
    tiny = t < 1e-12
    t[tiny] = 1e-12
    return t, g, h, tiny


def _knot_bracket(loss, y, valid, n, F, dF, slope0, slope1, reg, curv_reg):
    """The knots of ``phi'`` on (0, 1) that bracket its root, and the root, per problem.

    ``phi'(t) = sum_j g_j(F_j + t dF_j) dF_j / n + reg + t curv_reg`` is continuous,
    non-decreasing and linear between the times ``(knot - F_j) / dF_j`` where a point
    changes piece. With ``phi'(0) = slope0 < 0`` and ``phi'(1) = slope1 > 0`` known, the
    K sorted times in (0, 1) are searched in two rounds of ``~sqrt(K)`` evaluations each
    ((Q, sqrt K, m) arrays): every ``s``-th time first, then the times between the two
    that bracket the sign change; between the last time with ``phi' < 0`` and the first
    with ``phi' >= 0`` the root is the linear interpolation. Returns ``(lo, hi, root,
    ok)`` ((Q,) each; ``ok`` where ``slope0 < 0`` gave a bracket) or None when an array
    would exceed :data:`KNOT_SEARCH_FLOATS` (the caller searches without them).
    """
    Q, m = y.shape
    with np.errstate(divide="ignore", invalid="ignore"):  # dF_j = 0: never crosses
        times = (loss.knots(y.ravel()).reshape(Q, m, -1) - F[:, :, None]) / dF[:, :, None]
    crossed = valid[:, :, None] & (times > 0.0) & (times < 1.0)
    count = int(crossed.sum(axis=(1, 2)).max())
    stride = max(1, int(np.ceil(np.sqrt(count))))
    if Q * (count // stride + stride) * m > KNOT_SEARCH_FLOATS:
        return None
    times = np.sort(np.where(crossed, times, 1.0).reshape(Q, -1), axis=1)[:, :count]
    rows = np.arange(Q)[:, None]

    def slopes_at(points):  # phi' at (Q, k) times
        g = loss.derivatives(y[:, None, :], F[:, None, :] + points[:, :, None] * dF[:, None, :])[0]
        return (np.einsum("qkm,qm->qk", g * valid[:, None, :], dF) / n[:, None]
                + reg[:, None] + points * curv_reg[:, None])

    def first_nonnegative(points, values):  # bracket [points[k - 1], points[k]]
        k = np.argmax(values >= 0.0, axis=1)
        before = np.maximum(k - 1, 0)
        return (points[rows[:, 0], before], points[rows[:, 0], k],
                values[rows[:, 0], before], values[rows[:, 0], k], k)

    zero, one = np.zeros((Q, 1)), np.ones((Q, 1))
    coarse = times[:, stride - 1::stride]  # every stride-th time
    points = np.concatenate([zero, coarse, one], axis=1)
    values = np.concatenate([slope0[:, None], slopes_at(coarse), slope1[:, None]], axis=1)
    lo, hi, s_lo, s_hi, k = first_nonnegative(points, values)
    ok = (slope0 < 0.0) & (k > 0)
    if stride > 1:  # the times strictly between the two coarse points
        first = (k - 1) * stride  # index in times of the first time after coarse point k - 1
        inner = np.minimum(first[:, None] + np.arange(stride - 1)[None, :], count - 1)
        fine = np.clip(times[rows, inner], lo[:, None], hi[:, None])
        points = np.concatenate([lo[:, None], fine, hi[:, None]], axis=1)
        values = np.concatenate([s_lo[:, None], slopes_at(fine), s_hi[:, None]], axis=1)
        lo, hi, s_lo, s_hi, _ = first_nonnegative(points, values)
    with np.errstate(divide="ignore", invalid="ignore"):  # used where s_lo < 0 <= s_hi
        root = lo + (0.0 - s_lo) * (hi - lo) / (s_hi - s_lo)
    ok &= np.isfinite(root) & (lo <= root) & (root <= hi) & (s_lo < 0.0) & (s_hi >= 0.0)
    return lo, hi, root, ok
