"""One-dimensional searches of the batched Newton solver (:mod:`.stacked`), for many
problems at once: the exact line search along each problem's Newton step.

The losses are piecewise quadratic, so along a step ``F + t dF`` the derivative
``phi'(t)`` of the objective is continuous, non-decreasing and linear between the times
where a point changes piece (its knots). The search takes the full step where it does not
overshoot; elsewhere it brackets the root of ``phi'`` between two consecutive knots
(:func:`_knot_bracket`: two rounds of ``~sqrt(K)`` evaluations over the K knots in
(0, 1), every problem at once) and interpolates, then finishes with the safeguarded
Newton iteration of the one-problem search (:func:`kernelcv.machines.solver._line_search`)
until ``|phi'|`` is at rounding level. :func:`best_intercepts` finds the best intercept of
problems with no point on a quadratic piece the same way (their slope in b is linear
between knots too).
"""

from __future__ import annotations

import numpy as np

from .solver import _best_intercept

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
    sorted times in (0, 1) are searched by :func:`_root_on_knots`. Returns ``(lo, hi,
    root, ok)`` ((Q,) each; ``ok`` where ``slope0 < 0`` gave a bracket) or None when an
    array would exceed :data:`KNOT_SEARCH_FLOATS` (the caller searches without them).
    """
    Q, m = y.shape
    with np.errstate(divide="ignore", invalid="ignore"):  # dF_j = 0: never crosses
        times = (loss.knots(y.ravel()).reshape(Q, m, -1) - F[:, :, None]) / dF[:, :, None]
    crossed = valid[:, :, None] & (times > 0.0) & (times < 1.0)
    count = int(crossed.sum(axis=(1, 2)).max())
    if Q * _evaluations(count) * m > KNOT_SEARCH_FLOATS:
        return None
    times = np.sort(np.where(crossed, times, 1.0).reshape(Q, -1), axis=1)[:, :count]

    def slopes_at(points):  # phi' at (Q, k) times
        g = loss.derivatives(y[:, None, :], F[:, None, :] + points[:, :, None] * dF[:, None, :])[0]
        return (np.einsum("qkm,qm->qk", g * valid[:, None, :], dF) / n[:, None]
                + reg[:, None] + points * curv_reg[:, None])

    lo, hi, s_lo, s_hi, k = _root_on_knots(times, slopes_at, np.zeros(Q), slope0,
                                           np.ones(Q), slope1)
    with np.errstate(divide="ignore", invalid="ignore"):  # used where s_lo < 0 <= s_hi
        root = lo + (0.0 - s_lo) * (hi - lo) / (s_hi - s_lo)
    ok = ((slope0 < 0.0) & (k > 0) & np.isfinite(root) & (lo <= root) & (root <= hi)
          & (s_lo < 0.0) & (s_hi >= 0.0))
    return lo, hi, root, ok


def _evaluations(count):
    """Points :func:`_root_on_knots` evaluates per problem for ``count`` knots."""
    stride = max(1, int(np.ceil(np.sqrt(count))))
    return count // stride + stride


def _root_on_knots(knots, values_at, lo, s_lo, hi, s_hi):
    """The two consecutive points around the sign change of a non-decreasing function.

    ``knots`` (Q, K): each problem's sorted points strictly between ``lo`` and ``hi``
    (padding: any value in [lo, hi]) where the function may bend; ``values_at(points)``
    its values at (Q, k) points; ``s_lo``/``s_hi`` its values at the ends. Two rounds of
    ``~sqrt(K)`` evaluations: every ``s``-th knot, then the knots between the two coarse
    points that bracket the sign change. Returns ``(lo, hi, s_lo, s_hi, k)`` with the last
    point whose value is ``< 0`` and the first ``>= 0`` (k, the coarse position of the
    latter: 0 when ``s_lo >= 0`` already).
    """
    Q, count = knots.shape
    rows = np.arange(Q)
    stride = max(1, int(np.ceil(np.sqrt(count))))

    def first_nonnegative(points, values):  # bracket [points[k - 1], points[k]]
        k = np.argmax(values >= 0.0, axis=1)
        before = np.maximum(k - 1, 0)
        return (points[rows, before], points[rows, k], values[rows, before],
                values[rows, k], k)

    coarse = knots[:, stride - 1::stride]  # every stride-th knot
    points = np.concatenate([lo[:, None], coarse, hi[:, None]], axis=1)
    values = np.concatenate([s_lo[:, None], values_at(coarse), s_hi[:, None]], axis=1)
    lo, hi, s_lo, s_hi, k = first_nonnegative(points, values)
    if stride > 1:  # the knots strictly between the two coarse points
        first = (k - 1) * stride  # index in knots of the first one after coarse point k - 1
        inner = np.clip(first[:, None] + np.arange(stride - 1)[None, :], 0, count - 1)
        fine = np.clip(knots[rows[:, None], inner], lo[:, None], hi[:, None])
        points = np.concatenate([lo[:, None], fine, hi[:, None]], axis=1)
        values = np.concatenate([s_lo[:, None], values_at(fine), s_hi[:, None]], axis=1)
        lo, hi, s_lo, s_hi, _ = first_nonnegative(points, values)
    return lo, hi, s_lo, s_hi, k


def best_intercepts(loss, y, valid, F0, b0):
    """:func:`kernelcv.machines.solver._best_intercept` of Q problems at once: (Q,) each
    problem's minimiser over b of ``sum_j loss(y_j, F0_j + b)`` on its real rows.

    The slope ``s(b) = sum_j g_j(F0_j + b)`` is non-decreasing and linear between the
    shifts ``b = knot - F0_j``; as the one-problem rule, the root is bracketed among the
    sorted shifts and one shift beyond each end (where every point is off its quadratic
    pieces), here by :func:`_root_on_knots` for every problem at once, and interpolated.
    A problem whose slope does not change sign there (or a loss without knots, or arrays
    above :data:`KNOT_SEARCH_FLOATS`) goes to the one-problem rule. Equal to it up to
    rounding (the slopes are summed in another order; on a flat stretch of the objective
    another point of the stretch may come out).
    """
    Q, m = y.shape
    out = np.array(b0, dtype=np.float64)

    def slopes_at(points):  # s at (Q', k) intercepts
        g = loss.derivatives(y_t[:, None, :], F_t[:, None, :] + points[:, :, None])[0]
        return np.where(v_t[:, None, :], g, 0.0).sum(axis=2)

    g0 = loss.derivatives(y, F0 + out[:, None])[0]
    todo = np.flatnonzero(np.where(valid, g0, 0.0).sum(axis=1) != 0.0)
    knots = getattr(loss, "knots", None)
    alone = todo
    if todo.size and knots is not None:
        y_t, v_t, F_t = y[todo], valid[todo], F0[todo]
        shifts = knots(y_t.ravel()).reshape(todo.size, m, -1) - F_t[:, :, None]
        shifts = np.where(v_t[:, :, None], shifts, np.nan).reshape(todo.size, -1)
        count = int(np.max(np.sum(~np.isnan(shifts), axis=1)))
        if todo.size * (_evaluations(count) + 2) * m <= KNOT_SEARCH_FLOATS:
            reach = 1.0 + np.nanmax(np.abs(shifts), axis=1)
            shifts = np.sort(shifts, axis=1)[:, :count]  # nan last
            last = np.nanmax(shifts, axis=1)
            shifts = np.where(np.isnan(shifts), last[:, None], shifts)
            ends = np.stack([shifts[:, 0] - reach, last + reach], axis=1)
            s_ends = slopes_at(ends)
            lo, hi, s_lo, s_hi, _ = _root_on_knots(shifts, slopes_at, ends[:, 0],
                                                   s_ends[:, 0], ends[:, 1], s_ends[:, 1])
            with np.errstate(divide="ignore", invalid="ignore"):  # used where s_lo < 0 < s_hi
                between = lo + (0.0 - s_lo) * (hi - lo) / (s_hi - s_lo)
            out[todo] = np.where(s_hi == 0.0, hi, between)
            alone = todo[~((s_ends[:, 0] <= 0.0) & (s_ends[:, 1] >= 0.0))]
    for q in alone:  # no sign change among the shifts: the one-problem rule brackets it
        out[q] = _best_intercept(loss, y[q, valid[q]], F0[q, valid[q]], b0[q])
    return out
