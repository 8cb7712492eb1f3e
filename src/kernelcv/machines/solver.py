"""Exact primal Newton solver for kernel machines with piecewise-quadratic losses.

Problem (the papers' form, on a Gram matrix ``K`` of the n training points)::

    minimise_{alpha, b}  (1/n) sum_j loss(y_j, F_j) + lam * alpha' K alpha,   F = K alpha + b

with ``b = 0`` unless ``fit_intercept``. At the optimum ``2 lam n alpha = -g`` where
``g_j = loss'(y_j, F_j)``, and with an intercept also ``sum_j alpha_j = 0``.

Each iteration fixes the loss pieces at the current F (``h_j = loss''``) and jumps to the
exact minimiser of that piecewise-quadratic model: points with ``h_j = 0`` get
``alpha_j = -g_j / (2 lam n)``; the set ``Q = {h_j > 0}`` solves the symmetric
positive-definite system::

    (K_QQ + 2 lam n H_Q^-1) alpha_Q + b 1 = -H_Q^-1 (g_Q - H_Q F_Q) - K_QL alpha_L

bordered by ``1' alpha = 0`` when there is an intercept. An exact line search on the
convex, piecewise-quadratic objective along the step keeps the iteration monotone
(Chapelle, 2007, "Training a support vector machine in the primal"). For the square
loss one iteration is the closed form; for the other losses the iteration ends when the
pieces stop changing, in a few iterations from a warm start.

Cost per iteration: one Cholesky factorisation of ``|Q| x |Q|`` (``|Q|^3 / 3`` flops) and
O(n^2) for the matrix-vector products. Only the Q system is ever factored.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.lapack import dpotrf, dpotrs

from ..exceptions import KernelCVError
from .active_updates import ActiveSystems
from .gram_products import kernel_times


@dataclass
class Factorisation:
    """Cholesky factor of ``M = K_QQ + 2 lam n H_Q^-1`` on the index set ``active``."""

    active: np.ndarray
    cho: tuple
    jitter: float = 0.0

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        return cholesky_solve(self.cho, rhs)


@dataclass
class FitResult:
    """A fitted machine on its training Gram matrix.

    Attributes
    ----------
    alpha : (n,) coefficients, ``f(x) = sum_j alpha_j k(x_j, x) + intercept``.
    intercept : float (0 without intercept).
    decision : (n,) training decision values ``F = K alpha + intercept``.
    n_iter : Newton iterations used.
    converged : whether the pieces settled within ``max_iter``.
    factor : the factorisation of the last Newton system (reused by the BIF criterion).
    """

    alpha: np.ndarray
    intercept: float
    decision: np.ndarray
    n_iter: int
    converged: bool
    factor: Factorisation | None = field(default=None, repr=False)


def _potrf(M: np.ndarray):
    """LAPACK's Cholesky of ``M`` (lower), or None when it is not positive definite.

    ``scipy.linalg.cho_factor`` without its wrappers (argument checks, copies): the
    solver factors thousands of small matrices per search, where those cost more than the
    factorisation. Returns scipy's ``(c, lower)`` pair (the upper triangle of ``c`` keeps
    ``M``'s values), so ``scipy.linalg.cho_solve`` accepts it too.
    """
    c, info = dpotrf(M, lower=1, clean=0, overwrite_a=0)
    if info != 0:
        return None
    return c, True


def cholesky_solve(cho: tuple, rhs: np.ndarray) -> np.ndarray:
    """``M^-1 rhs`` from the Cholesky pair ``cho`` of :func:`cholesky_with_jitter`."""
    c, lower = cho
    x, info = dpotrs(c, rhs, lower=int(lower), overwrite_b=0)
    if info != 0:
        raise KernelCVError(f"LAPACK dpotrs failed (info {info})")
    return x


def cholesky_with_jitter(M: np.ndarray) -> tuple[tuple, float]:
    """Cholesky factor of the SPD matrix ``M``, adding a growing diagonal jitter if needed.

    The jitter starts at ``1e-12 * mean(diag M)`` and grows tenfold up to ``1e-6``; its
    final value is returned (0 when none was needed) and a warning is issued.
    """
    factor = _potrf(np.asarray(M, dtype=np.float64))
    if factor is not None:
        return factor, 0.0
    scale = float(np.mean(np.diag(M))) if M.size else 1.0
    for exponent in range(-12, -5):
        jitter = scale * 10.0**exponent
        factor = _potrf(M + jitter * np.eye(M.shape[0]))
        if factor is None:
            continue
        warnings.warn(
            f"kernel system not numerically positive definite; added jitter {jitter:.3g} "
            "to its diagonal (lam is tiny relative to the kernel's scale: consider a larger "
            "lam)", RuntimeWarning, stacklevel=3)
        return factor, jitter
    raise KernelCVError(
        "the kernel system is singular even with jitter: lam is too small for this kernel "
        "matrix; increase lam")


def _factorise(M, active) -> Factorisation:
    """:class:`Factorisation` of ``M`` on ``active`` (jitter where needed)."""
    cho, jitter = cholesky_with_jitter(M)
    return Factorisation(active=active, cho=cho, jitter=jitter)


class _NoFactor(Exception):
    """A Newton system without a Cholesky factor, in a strict fit (no jitter)."""


def _factorise_strict(M, active) -> Factorisation:
    """:class:`Factorisation` of ``M`` on ``active``; :class:`_NoFactor` if it has none."""
    cho = _potrf(np.asarray(M, dtype=np.float64))
    if cho is None:
        raise _NoFactor
    return Factorisation(active=active, cho=cho)


def _objective(loss, y, F, alpha, K_alpha_dot, lam):
    return float(np.mean(loss.value(y, F)) + lam * K_alpha_dot)


def _line_search(loss, y, F, dF, g0, d_alpha, K_alpha, K_d, lam, n):
    """Exact minimiser over t in (0, 1] of the objective along the step.

    ``phi'(t)`` is monotone and piecewise linear (the losses are piecewise quadratic), so
    Newton's method on ``phi' = 0``, safeguarded by bisection of the bracket, lands on the
    root as soon as it reaches the right linear piece: a handful of O(n) evaluations.
    ``g0`` is the loss gradient at ``F`` (``phi'(0)`` needs no new evaluation).

    Returns ``(t, g, h)``: the step and the loss derivatives at ``F + t dF``, which the
    search evaluated last (the solver's next iteration needs them).
    """
    curvature_reg = 2 * lam * float(d_alpha @ K_d)
    slope_reg = 2 * lam * float(d_alpha @ K_alpha)
    dF2 = dF * dF

    def dphi(t):
        g, h = loss.derivatives(y, F + t * dF)
        return (float(g @ dF) / n + slope_reg + t * curvature_reg,
                float(h @ dF2) / n + curvature_reg, g, h)

    slope0 = float(g0 @ dF) / n + slope_reg
    slope1, curv1, g, h = dphi(1.0)
    # phi' is monotone; at the exact minimiser phi'(1) is 0 up to rounding.
    if slope1 <= 1e-10 * abs(slope0) + 1e-300:
        return 1.0, g, h
    lo, hi = 0.0, 1.0
    t, slope, curv = 1.0, slope1, curv1
    for _ in range(100):
        candidate = t - slope / curv if curv > 0 else -1.0
        t = candidate if lo < candidate < hi else 0.5 * (lo + hi)
        slope, curv, g, h = dphi(t)
        if abs(slope) <= 1e-12 * abs(slope0) or hi - lo < 1e-12:
            break
        if slope > 0:
            hi = t
        else:
            lo = t
    if t < 1e-12:
        return 1e-12, None, None
    return t, g, h


def _best_intercept(loss, y, F0, b0):
    """Minimiser over b of ``sum_j loss(y_j, F0_j + b)`` (convex, piecewise quadratic).

    Its derivative ``sum_j g_j(F0_j + b)`` is non-decreasing in b. Up to
    :data:`KNOT_SCAN_MAX_ROWS` rows its root is found exactly from the knots
    (:func:`_intercept_between_knots`, ``O(n^2)`` in one pass); else a bracket around its
    sign change is found by doubling steps from ``b0``, then narrowed by bisection (and a
    Newton step where the curvature is positive) to rounding level, ``O(n)`` per
    evaluation (about fifty).
    """
    def slope(b):
        g, h = loss.derivatives(y, F0 + b)
        return float(np.sum(g)), float(np.sum(h))

    s0, _ = slope(b0)
    if s0 == 0.0:
        return b0
    exact = _intercept_between_knots(loss, y, F0)
    if exact is not None:
        return exact
    direction = -1.0 if s0 > 0 else 1.0
    step, lo, hi = 1.0, b0, b0
    for _ in range(200):
        candidate = b0 + direction * step
        value = slope(candidate)[0]
        if (value > 0) if s0 > 0 else (value < 0):  # no sign change yet (0 ends it)
            step *= 2.0
            continue
        lo, hi = sorted((b0 + direction * step / 2.0 if step > 1.0 else b0, candidate))
        break
    else:
        return b0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        value, curvature = slope(mid)
        if curvature > 0:
            newton = mid - value / curvature
            if lo < newton < hi:
                value_newton = slope(newton)[0]
                if value_newton == 0.0:
                    return newton
                mid, value = newton, value_newton
        if value > 0:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-15 * max(1.0, abs(lo), abs(hi)):
            break
    return 0.5 * (lo + hi)


# _best_intercept evaluates the slope at every knot at once up to this many rows
# (an (2n, n) array); above it, it brackets and bisects.
KNOT_SCAN_MAX_ROWS = 400


def _intercept_between_knots(loss, y, F0):
    """The root of ``s(b) = sum_j g_j(F0_j + b)`` from the knots, or None.

    ``s`` is non-decreasing and linear between the shifts ``b = knot - F0_j`` where a
    point changes piece, so evaluating it at every shift (one (2n, n) pass) brackets its
    sign change between two consecutive shifts, where linear interpolation is exact.
    None for a loss without ``knots``, more than :data:`KNOT_SCAN_MAX_ROWS` rows, or no
    sign change among the shifts (the caller then brackets by doubling steps).
    """
    knots = getattr(loss, "knots", None)
    n = y.shape[0]
    if knots is None or n == 0 or n > KNOT_SCAN_MAX_ROWS:
        return None
    shifts = np.unique((knots(y) - F0[:, None]).ravel())
    # one shift beyond each end, where every point is off its quadratic pieces (the
    # slope's limits, exact there; at a knot itself rounding may leave it a hair off)
    reach = 1.0 + float(np.max(np.abs(shifts)))
    shifts = np.concatenate([[shifts[0] - reach], shifts, [shifts[-1] + reach]])
    slopes = loss.derivatives(y[None, :], F0[None, :] + shifts[:, None])[0].sum(axis=1)
    if not (slopes[0] <= 0.0 <= slopes[-1]):
        return None
    k = int(np.searchsorted(slopes, 0.0, side="left"))  # first shift with s >= 0
    if slopes[k] == 0.0 or k == 0:
        return float(shifts[k])
    lo, hi = shifts[k - 1], shifts[k]
    return float(lo + (0.0 - slopes[k - 1]) * (hi - lo) / (slopes[k] - slopes[k - 1]))


# A point this fraction of its quadratic band's width inside it is on the band's edge
# for the flat-intercept rule (the objective differs by ~ (depth)^2 / (4 w) from the edge).
SHALLOW_BAND_DEPTH = 1e-4


def central_intercept(loss, y, F0, b0):
    """The midpoint of the interval of optimal intercepts around ``b0`` (flat slope).

    When no point lies on a quadratic piece the objective is linear in b near the
    optimum and, with ``sum_j g_j = 0``, flat: every b that keeps each point off the
    quadratic pieces is optimal (the same alpha). The solver would stop wherever its path
    entered that interval, so fits from different starts disagreed; the midpoint
    (LIBSVM's choice for a free-vector-less solution) makes the fit unique. The
    interval's ends come from the quadratic bands ``[lo, hi]`` between consecutive pairs
    of ``loss.knots``: a point at ``v = F0_j + b0 <= lo`` bounds the shift above by
    ``lo - v`` (0 when it sits on the knot, where the line search often stops), one at
    ``v >= hi`` bounds it below by ``hi - v``. A point less than
    :data:`SHALLOW_BAND_DEPTH` of the band's width inside it counts as on its edge (the
    solver can stop there, with the same alpha, when the slopes balance); a point deeper
    in a band means the intercept is unique and ``b0`` is returned. An interval open on
    one side (one class in the data, every point off its loss) gives its finite end.
    O(n).
    """
    knots = getattr(loss, "knots", None)
    if knots is None:
        return b0
    bands = np.sort(knots(y).reshape(y.shape[0], -1, 2), axis=2)
    value = (F0 + b0)[:, None]
    lo, hi = bands[:, :, 0], bands[:, :, 1]
    slack = SHALLOW_BAND_DEPTH * (bands[:, :, 1] - bands[:, :, 0]) + 1e-12 * np.maximum(
        1.0, np.abs(bands).max(axis=2))
    below_band, above_band = value <= lo + slack, value >= hi - slack
    if not np.all(below_band | above_band):
        return b0  # a point inside a band: not the flat case
    uppers = np.maximum(lo - value, 0.0)[below_band]
    lowers = np.minimum(hi - value, 0.0)[above_band]
    if uppers.size == 0 and lowers.size == 0:
        return b0
    # One side unbounded (a training part of one class: every point off its loss): the
    # finite end, where the first point meets its band, whatever the start was.
    if lowers.size == 0:
        return b0 + float(uppers.min())
    if uppers.size == 0:
        return b0 + float(lowers.max())
    return b0 + 0.5 * (float(uppers.min()) + float(lowers.max()))


def deepest_band_depth(loss, y, values) -> float:
    """How far the deepest point lies inside a quadratic band of ``loss`` (the Huber
    pieces between consecutive pairs of ``loss.knots``), as a fraction of the band's
    width: 0 where no point is inside a band (the flat-intercept case of
    :func:`central_intercept`), ``inf`` for a loss without bands. O(n)."""
    knots = getattr(loss, "knots", None)
    if knots is None:
        return float("inf")
    bands = np.sort(knots(y).reshape(y.shape[0], -1, 2), axis=2)
    lo, hi = bands[:, :, 0], bands[:, :, 1]
    value = np.asarray(values, dtype=np.float64)[:, None]
    depth = np.minimum(value - lo, hi - value) / (hi - lo)
    return float(max(depth.max(), 0.0)) if depth.size else 0.0


def fit_kernel_machine(K, y, lam, loss, fit_intercept=False, alpha0=None, intercept0=0.0,
                       tol=1e-10, max_iter=100, *, strict=False) -> FitResult:
    """Minimise ``(1/n) sum loss(y, K alpha + b) + lam alpha' K alpha`` by primal Newton.

    Parameters
    ----------
    K : (n, n) Gram matrix (symmetric positive semi-definite).
    y : (n,) targets (+-1 for the classification losses).
    lam : regularisation ``lam > 0`` (scikit-learn: ``alpha = n lam``, ``C = 1 / (2 n lam)``).
    loss : a loss from :mod:`kernelcv.machines.losses`.
    fit_intercept : add an unregularised intercept ``b`` (bordered system).
    alpha0, intercept0 : warm start (e.g. the solution at a neighbouring lam).
    tol : relative change of F below which the iteration stops once the pieces are fixed.
    max_iter : Newton iterations before giving up with a ``ConvergenceWarning``.
    strict : for a caller that refits what this fit cannot finish (the batched solver
        hands it its last problems): a Newton system without a Cholesky factor, or no
        convergence within ``max_iter``, ends the fit with ``converged=False``, without
        jitter and without a warning.

    Returns
    -------
    FitResult

    Notes
    -----
    Cost: ``O(|Q|^3 / 3 + n^2)`` per iteration; one iteration for the square loss.
    """
    n = K.shape[0]
    alpha = np.zeros(n) if alpha0 is None else np.array(alpha0, dtype=np.float64)
    b = float(intercept0) if fit_intercept else 0.0
    K_alpha = kernel_times(K, alpha)  # the rows of K where alpha != 0 (a warm start's SVs)
    F = K_alpha + b
    factor = None
    converged = False
    g, h = loss.derivatives(y, F)
    two_lam_n = 2 * lam * n
    # Later iterations' systems from the first one's factor where few points changed.
    systems = ActiveSystems(K, _factorise_strict if strict else _factorise)
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        on_quadratic = h > 0
        active = on_quadratic.nonzero()[0]
        fixed = (~on_quadratic).nonzero()[0]
        target = np.empty(n)
        target[fixed] = -g[fixed] / two_lam_n
        b_new = b
        if active.size:
            h_a = h[active]
            rhs = -(g[active] - h_a * F[active]) / h_a
            if fixed.size:
                # K_AF target_F as a product with the rows of K where target != 0 (zeros
                # on A; all of K when they are many): not the |A| x |F| block's gather
                # (n = 2,000: 1.2 ms for all of K, 3.0 for the block).
                target[active] = 0.0
                rhs -= kernel_times(K, target)[active]
            try:
                factor = systems.factor(active, two_lam_n / h_a)
                if fit_intercept:
                    both = factor.solve(np.column_stack([rhs, np.ones(active.size)]))
                    sol, ones = both[:, 0], both[:, 1]
                    b_new = (sol.sum() + target[fixed].sum()) / ones.sum()
                    sol = sol - b_new * ones
                else:
                    sol = factor.solve(rhs)
            except _NoFactor:
                break  # strict: not converged, the caller refits
            target[active] = sol
        else:
            factor = None
            if fit_intercept:
                # No point on a quadratic piece: the bordered system is empty and would
                # never move b. First step along b alone, to its exact minimiser with alpha
                # fixed (which brings a point onto a quadratic piece, or shows b optimal).
                b_best = _best_intercept(loss, y, K_alpha, b)
                if abs(b_best - b) > 1e-12 * max(1.0, abs(b)):
                    target = alpha.copy()
                    b_new = b_best
        d_alpha = target - alpha
        K_d = kernel_times(K, d_alpha)
        dF = K_d + (b_new - b)
        scale_F = max(1.0, float(np.abs(F).max())) if n else 1.0
        full_change = float(np.abs(dF).max()) if n else 0.0
        g_old_fixed = g[fixed]
        h_old_active = h[active]
        if full_change <= tol * scale_F:
            # The Newton target is the current point: take it and stop (no line search,
            # whose slopes are pure rounding here).
            step, g, h = 1.0, None, None
        else:
            step, g, h = _line_search(loss, y, F, dF, g, d_alpha, K_alpha, K_d, lam, n)
        alpha = alpha + step * d_alpha
        b = b + step * (b_new - b)
        K_alpha = K_alpha + step * K_d
        # F moves along the ray the line search evaluated (so its g, h are F's); it
        # differs from K_alpha + b by rounding only.
        F = F + step * dF
        if g is None:
            g, h = loss.derivatives(y, F)
        residual = float(np.abs(two_lam_n * alpha + g).max()) if n else 0.0
        g_scale = max(1.0, float(np.abs(g).max())) if n else 1.0
        # The full step landed on the same loss pieces it was computed for: F is then the
        # exact minimiser of a convex objective that equals the model near F. The active
        # set and curvatures can repeat while a point moves to another quadratic piece
        # (the two bands of the eps-insensitive loss), so stationarity
        # 2 lam n alpha + g = 0 is checked as well.
        balanced = (not fit_intercept
                    or abs(float(np.sum(g))) <= 1e-6 * g_scale * np.sqrt(max(n, 1)))
        same_pieces = (np.array_equal(h > 0, on_quadratic)
                       and np.array_equal(h[active], h_old_active)
                       and np.array_equal(g[fixed], g_old_fixed)
                       and residual <= 1e-6 * g_scale and balanced)
        change = step * full_change
        if step == 1.0 and (same_pieces or change <= tol * scale_F):
            converged = True
            break
        # Short steps can also creep onto the optimum: stop once 2 lam n alpha + g = 0.
        if residual <= 1e-12 * g_scale and change <= tol * scale_F and balanced:
            converged = True
            break
    balanced = fit_intercept and n and (
        abs(float(np.sum(g))) <= 1e-9 * max(1.0, float(np.sum(np.abs(g)))))
    if converged and balanced:
        centred = central_intercept(loss, y, K_alpha, b)
        if centred != b:
            b = centred
            F = K_alpha + b
    if not converged and not strict:
        # scikit-learn's warning class, so that users' filters for it apply; imported
        # here because importing scikit-learn costs ~1 s of a command's start-up.
        from sklearn.exceptions import ConvergenceWarning

        warnings.warn(
            f"Newton solver stopped after {max_iter} iterations without the loss pieces "
            "settling; the result may be inexact (increase max_iter)",
            ConvergenceWarning, stacklevel=2)
    return FitResult(alpha=alpha, intercept=float(b), decision=F, n_iter=n_iter,
                     converged=converged, factor=factor)
