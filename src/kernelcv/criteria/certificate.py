"""A guaranteed enclosure of exact refit CV values around approximate fold-out models.

BIF of order ``"inf"`` is one Newton step on each fold-out problem from the full fit,
and a finite order truncates that step. Both are exact for the square loss; for the
squared hinge and the Huber losses they are off wherever a retained point changes loss
piece, and nothing in the series shows by how much. This module bounds it from the
approximate model itself, with the strong convexity of the fold-out objective.

Fold i's problem is ``J_i(f, b) = (1/m_i) sum_{a in R_i} L(y_a, f(x_a) + b) + lam ||f||^2``
(``R_i`` the m_i retained rows). The approximate model is ``f^ = sum_a c_a k(x_a, .)``
(coefficients on all n rows) with an intercept. Three facts give the enclosure:

1. ``J_i`` is convex in ``(f, b)`` plus ``lam ||f||^2``, so its gradient is monotone with
   ``<grad J(f^, b^) - grad J(f*, b*), (f^ - f*, b^ - b*)> >= 2 lam ||f^ - f*||_H^2``
   and ``grad J(f*, b*) = 0`` at the exact refit. With ``g = ||grad_f J(f^, b^)||_H``,
   the intercept's residual ``eta = d J / d b`` at ``b^`` (the midpoint of fact 3's
   interval, ideally 0) and ``|b^ - b*| <= (b_hi - b_lo) / 2 + kappa x`` (fact 3), the
   distance ``x = ||f^ - f*||_H`` obeys ``2 lam x^2 <= (g + |eta| kappa) x + |eta|
   (b_hi - b_lo) / 2``: ``x <= r``, the positive root (``g / (2 lam)`` when ``eta = 0``),
   and ``|f^(x) - f*(x)| <= r sqrt(k(x, x))`` at every x.
2. ``grad_f J(f^, b^) = sum_a G_a k(x_a, .)`` with ``G_a = 2 lam c_a + 1[a in R_i]
   L'_a / m_i``, the loss derivatives at ``f^ + b^``, so its norm is ``sqrt(G' K G)``.
3. The intercepts minimising ``J_i(f^, .)`` are the roots ``[b_lo, b_hi]`` of the
   nondecreasing ``phi(b) = sum_{a in R_i} L'(y_a, f^(x_a) + b)``. Moving every
   ``f(x_a)`` by at most ``r kappa`` (``kappa = max_{a in R_i} sqrt(K_aa)``) moves the
   roots by at most as much, so every optimal intercept of the exact refit (the
   solver's midpoint of a flat interval too) lies in ``[b_lo - r kappa, b_hi + r kappa]``.

4. For a held-out row far from every retained point (narrow kernels) ``r sqrt(K_jj)``
   is far above the value ``f*(x_j) = K_jR alpha*_R`` itself. Row by row instead:
   ``G = 2 lam (c - alpha*) + (L'(f^ + b^) - L'(f* + b*)) / m_i`` on the retained rows
   (``G = 2 lam c`` on the fold), and ``L'`` is Lipschitz with constant ``l`` (the
   loss's largest curvature), so ``|c_a - alpha*_a| <= (|G_a| + l d_a / m_i) / (2 lam)
   =: delta_a`` with ``d_a = r (sqrt(K_aa) + kappa) + (b_hi - b_lo) / 2`` the change of
   ``f + b`` at row a, and ``|f^(x_j) - f*(x_j)| <= sum_a |K_ja| delta_a`` (``O(n t)``
   per row, computed for the rows whose sign fact 1 leaves open): this keeps the
   relative precision of tiny held-out values.

Hence, with ``s_j`` the smaller of ``r sqrt(K_jj)`` and ``sum_a |K_ja| delta_a``, the
exact held-out value of a row j of fold i lies in::

    [f^(x_j) + b_lo - r kappa - s_j,  f^(x_j) + b_hi + r kappa + s_j]

(``kappa`` and the intercept terms are absent without an intercept). This is a bound,
not an estimate; it is loose by the factor between ``2 lam`` and the objective's actual
curvature, so it certifies the values of well-regularised problems and of Newton steps
that changed no loss piece, and leaves the rest flagged. Rounding is covered by adding
``8 u sqrt(n ||K||_2)`` times the size of ``G``'s terms (``||K||_2 <= n max K_jj``) and
``sqrt(n u max K_jj) sum |G|`` (the sum ``G' K G``) to ``g``, ``n u sum |L'| / m`` to
``eta``. (Fact 1 with ``eta`` is a review's correction: the first version took ``b^`` as
an exact root, which a bisected midpoint is not, and one refit value fell 7e-7 outside.)

:func:`certified_error` converts the enclosure into the units of the CV error (the share
of held-out labels not fixed by it, or the MSE's largest change); a value whose bound
exceeds :data:`kernelcv.criteria.truncation.TOLERANCE` is flagged *uncertified*.

Cost per candidate: one ``n x n x t`` product (``K G``, reading only the rows of K where
G is non-zero: :mod:`kernelcv.machines.gram_products`), ``O(n t)`` per row whose sign the
first bound leaves open (those rows of K only, unless they are many), the fold functions
``K C`` (the order-inf step already forms it) and ``O(n t)`` per bisection step of the
intercept interval (two steps where the approximate intercept is a root, else 20 more,
vectorised over the folds and both ends).
"""

from __future__ import annotations

import numpy as np

from ..machines.gram_products import GATHER_MAX_SHARE, kernel_times
from ..machines.weights import weight_bound
from .truncation import TOLERANCE

__all__ = ["UNCERTIFIED", "certified_error", "fixed_classes", "fold_out_enclosure",
           "uncertified_note"]

#: How the warning of an uncertified approximate value starts (notes, warnings, the CLI).
UNCERTIFIED = "BIF value not certified"

# The intercept bracket starts this share of the decision values' scale around the
# approximate intercept, grows 16-fold per side at most this many times ...
_START_WIDTH = 1e-13
# Newton steps on phi before the bracket (0 where phi' = 0, e.g. no point in a band).
_NEWTON_STEPS = 3
_BRACKET_GROWTHS = 40
# ... and one that grew is bisected this many times (2^-20 of its width, which is at most
# 16 times the distance of the approximate intercept from a root; the interval returned
# contains the roots at any step count, a wider one only loosens the bound).
_BISECTION_STEPS = 20


def fold_out_enclosure(K, y, fold_ids, lam, loss, fit_intercept, coef, intercepts,
                       fold_functions=None, extra=None):
    """Lower and upper bounds of each row's exact held-out value.

    Parameters
    ----------
    K : (n, n) Gram matrix; y : (n,) targets; fold_ids : (n,) ids ``0..t-1``.
    lam : float > 0, the regularisation of ``(1/m) sum L + lam ||f||^2``.
    loss : a loss of :mod:`kernelcv.machines.losses` (convex, continuously differentiable).
    fit_intercept : whether the fold-out problems have an unregularised intercept.
    coef : (n, t) column i: coefficients of the approximate fold-i function (any rows).
    intercepts : (t,) the approximate intercepts (the bisection starts there).
    fold_functions : (n, t) ``K @ coef`` when the caller has it, else computed.
    extra : None or ``(K_extra, ids, diag)``: (m, n) kernel values of m points off the
        sample, the fold that holds each out (-1: none) and their ``k(x, x)``. Their
        values under fold i's refit lie within ``r_i (sqrt(k(x, x)) + kappa_i)`` of
        ``K_extra[e] coef_i + [b_lo, b_hi]`` (facts 1 and 3); -1 gets ``(nan, nan)``
        (the caller's full fit).

    Returns
    -------
    lower, upper : (n,) bounds of ``f_{-S(j)}(x_j)`` for every row j, with the exact
        refit of its fold (``-inf``/``inf`` where no bound was found).
    radius : (t,) ``r`` of each fold, the RKHS distance bound of the function part.
    extra_lower, extra_upper : (m,) the extra points' bounds; returned only with ``extra``.

    Cost: ``O(n |R| t)`` for ``K G`` (and ``K C`` if not given), R the rows where they
    are non-zero (all n when more than a third are), ``O(n t)`` per row whose sign the
    first bound leaves open, ``O(n t)`` per bisection step.
    """
    n = y.shape[0]
    t = coef.shape[1]
    sizes = np.bincount(fold_ids, minlength=t)
    retained = fold_ids[:, None] != np.arange(t)[None, :]
    m = (n - sizes).astype(np.float64)
    F = kernel_times(K, coef) if fold_functions is None else fold_functions
    Y = y[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        if fit_intercept:
            lo, hi = _intercept_interval(loss, Y, F, retained, np.asarray(intercepts, float))
            middle = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi),
                              np.asarray(intercepts, float))
        else:
            lo = hi = middle = np.zeros(t)
        derivative = loss.derivatives(Y, F + middle[None, :])[0]
        share = np.where(retained, derivative, 0.0) / m[None, :]
        G = 2.0 * lam * coef + share
        squared = np.einsum("at,at->t", G, kernel_times(K, G))
        u = np.finfo(np.float64).eps
        top_k = float(np.max(np.abs(np.diag(K)))) if n else 0.0
        # rounding of G's terms (||K||_2 <= n max_j K_jj for a positive semi-definite K)
        # and of the sum G'KG (sqrt of its error, at most n u max K_jj (sum |G|)^2)
        terms = np.linalg.norm(2.0 * lam * np.abs(coef) + np.abs(share), axis=0)
        rounding = (8.0 * u * np.sqrt(n * n * top_k) * terms
                    + np.sqrt(n * u * top_k) * np.abs(G).sum(axis=0))
        norm = np.sqrt(np.maximum(squared, 0.0)) + rounding
        root_k = np.sqrt(np.maximum(np.diag(K), 0.0))
        rows = np.arange(n)
        own = F[rows, fold_ids]
        kappa = np.zeros(t)
        if fit_intercept:
            kappa = np.array([root_k[retained[:, i]].max(initial=0.0) for i in range(t)])
        # fact 1 with the intercept's own residual eta = phi(middle) / m (middle need not
        # be an exact root): 2 lam x^2 <= (norm + |eta| kappa) x + |eta| (hi - lo) / 2
        eta = np.abs(share.sum(axis=0)) + n * u * np.abs(share).sum(axis=0)
        width = np.where(np.isfinite(hi - lo), hi - lo, np.inf) if fit_intercept else 0.0
        linear = norm + eta * kappa
        radius = (linear + np.sqrt(linear * linear + 4.0 * lam * eta * width)) / (4.0 * lam)
        radius = np.where(np.isfinite(radius), radius, np.inf)
        # fact 4: the coefficients' distance, row by row, through the kernel rows
        moved = (radius[None, :] * (root_k[:, None] + kappa[None, :])
                 + 0.5 * (hi - lo)[None, :])  # |change of f + b| at each retained row
        entry_rounding = 4.0 * np.finfo(np.float64).eps * (
            2.0 * lam * np.abs(coef) + np.abs(share))
        delta = (np.abs(G) + entry_rounding + np.where(
            retained, derivative_lipschitz(loss) * moved / m[None, :], 0.0)) / (2.0 * lam)
        delta = np.where(np.isfinite(delta), delta, np.inf)
        spread = radius[fold_ids] * root_k
        beyond = radius[fold_ids] * kappa[fold_ids]

        def bounds():
            return own + lo[fold_ids] - beyond - spread, own + hi[fold_ids] + beyond + spread

        lower, upper = bounds()
        # fact 4 only where fact 1 leaves the sign open (narrow kernels): |J| n t
        open_sign = np.flatnonzero((lower < 0) & (upper >= 0))
        if open_sign.size > GATHER_MAX_SHARE * n:  # one pass over K beats the gathers
            absolute = K if K.min() >= 0 else np.abs(K)  # RBF, Laplace: K >= 0
            through_rows = (absolute @ delta)[open_sign, fold_ids[open_sign]]
        elif open_sign.size:  # those rows of |K| only
            through_rows = (np.abs(K[open_sign]) @ delta)[np.arange(open_sign.size),
                                                          fold_ids[open_sign]]
        if open_sign.size:
            spread[open_sign] = np.minimum(spread[open_sign], through_rows)
            lower, upper = bounds()
    lower = np.where(np.isnan(lower), -np.inf, lower)
    upper = np.where(np.isnan(upper), np.inf, upper)
    if extra is None:
        return lower, upper, radius
    K_extra, ids, diag = extra
    inside = ids >= 0
    fold = np.where(inside, ids, 0)
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.einsum("en,ne->e", K_extra, coef[:, fold]) if ids.size else np.zeros(0)
        reach = radius[fold] * (np.sqrt(np.maximum(diag, 0.0)) + kappa[fold])
        extra_lower = values + np.asarray(lo)[fold] - reach
        extra_upper = values + np.asarray(hi)[fold] + reach
    extra_lower = np.where(inside, np.where(np.isnan(extra_lower), -np.inf, extra_lower),
                           np.nan)
    extra_upper = np.where(inside, np.where(np.isnan(extra_upper), np.inf, extra_upper),
                           np.nan)
    return lower, upper, radius, extra_lower, extra_upper


def derivative_lipschitz(loss) -> float:
    """A Lipschitz constant of ``L'`` in the prediction: the loss's largest curvature (2
    for the square and squared hinge losses, ``1 / w`` covers the Huber losses, whose two
    bands of curvature ``1 / (2 w)`` may overlap for the SVR at ``eps < w``), times the
    largest class weight."""
    width = getattr(loss, "width", None)
    return (2.0 if width is None else 1.0 / float(width)) * weight_bound(loss)


def _intercept_interval(loss, Y, F, retained, start):
    """``[b_lo, b_hi]``, the roots of ``phi_i(b) = sum_{a in R_i} L'(y_a, F_ai + b)`` per fold.

    ``phi`` is nondecreasing and piecewise linear in b. A few Newton steps from ``start``
    (the approximate intercept) usually reach a root. A bracket ``below < root < above``
    with ``phi(below) < 0 < phi(above)`` contains every root; it starts at the rounding
    level around the Newton point (where it holds, nothing more is done) and each side
    that does not hold grows 16-fold. Bisection then closes in on the
    lower end (keeping ``phi(a) < 0 <= phi(c)``, returning a) and the upper end (keeping
    ``phi(a) <= 0 < phi(c)``, returning c) for :data:`_BISECTION_STEPS` halvings of the
    bracket, so the interval returned contains every root at any step count. A fold whose
    bracket does not close (a one-class part of a classifier) gets ``(-inf, inf)``.
    """
    t = F.shape[1]

    def phi(b, columns=slice(None)):
        return np.where(retained[:, columns],
                        loss.derivatives(Y, F[:, columns] + b[None, :])[0], 0.0).sum(axis=0)

    start = np.where(np.isfinite(start), start, 0.0)
    for _ in range(_NEWTON_STEPS):  # phi is piecewise linear: Newton usually lands on a root
        first, second = loss.derivatives(Y, F + start[None, :])
        value = np.where(retained, first, 0.0).sum(axis=0)
        slope = np.where(retained, second, 0.0).sum(axis=0)
        moving = (slope > 0) & (value != 0)
        if not moving.any():
            break
        step = np.where(moving, value / np.where(moving, slope, 1.0), 0.0)
        start = np.where(np.isfinite(step), start - step, start)
    scale = 1.0 + np.max(np.abs(F), axis=0, initial=0.0)
    first = _START_WIDTH * scale + 8.0 * np.finfo(np.float64).eps * np.abs(start)
    low_step, high_step = first.copy(), first.copy()
    low_ok = high_ok = np.zeros(t, dtype=bool)
    for _ in range(_BRACKET_GROWTHS):
        low_ok = phi(start - low_step) < 0
        high_ok = phi(start + high_step) > 0
        if low_ok.all() and high_ok.all():
            break
        low_step = np.where(low_ok, low_step, 16.0 * low_step)
        high_step = np.where(high_ok, high_step, 16.0 * high_step)
    closed = low_ok & high_ok
    below, above = start - low_step, start + high_step
    wide = np.flatnonzero(closed & ((low_step > first) | (high_step > first)))
    if wide.size:  # bisect only the brackets that had to grow
        both = np.r_[wide, wide]  # lower ends, then upper ends
        upper_end = np.arange(both.size) >= wide.size
        a, c = below[both], above[both]
        for _ in range(_BISECTION_STEPS):
            mid = 0.5 * (a + c)
            value = phi(mid, both)
            go_up = np.where(upper_end, value <= 0, value < 0)  # the end lies above mid
            a, c = np.where(go_up, mid, a), np.where(go_up, c, mid)
        below[wide], above[wide] = a[:wide.size], c[wide.size:]
    nothing = np.full(t, np.inf)
    return np.where(closed, below, -nothing), np.where(closed, above, nothing)


def certified_error(predictions, y, lower, upper, metric) -> float:
    """How far the reported CV error may be from exact refit CV, in its units.

    0-1 error: the share of rows whose reported label the enclosure does not fix (its
    interval contains 0 or lies on the other side; ``f = 0`` counts as +1). MSE: the
    mean of ``2 |y_j - p_j| e_j + e_j^2`` with ``e_j`` the larger distance from the
    reported value ``p_j`` to the ends of its interval (a bound on the change of the
    squared error).
    """
    if metric == "0-1":
        positive = predictions >= 0
        fixed = np.where(positive, lower >= 0, upper < 0)
        return float(np.mean(~fixed))
    e = np.maximum(predictions - lower, upper - predictions)
    if not np.all(np.isfinite(e)):
        return float("inf")
    residual = np.abs(y - predictions)
    return float(np.mean(2.0 * residual * e + e * e))


def fixed_classes(lower, upper, predicted, n_classes: int, scheme: str) -> np.ndarray:
    """(n,) whether the enclosures of the binary machines' values fix each row's
    multiclass prediction ``predicted`` (class codes).

    ``lower``, ``upper``: (n, m) bounds of the m machines' values at every row (NaN: not
    bounded). One-vs-one (pairs (a, b), a < b, b's vote where the value is positive):
    the predicted class's certain votes must outnumber every other class's possible
    votes (the squashed values that break ties add less than one vote). One-vs-rest (the
    largest value wins): its lower bound must exceed every other machine's upper bound.
    """
    lower = np.where(np.isnan(lower), -np.inf, lower)
    upper = np.where(np.isnan(upper), np.inf, upper)
    rows = np.arange(lower.shape[0])
    if scheme == "ovr":
        others = upper.copy()
        others[rows, predicted] = -np.inf
        return lower[rows, predicted] > others.max(axis=1)
    certain = np.zeros((lower.shape[0], n_classes))
    possible = np.zeros_like(certain)
    p = 0
    for a in range(n_classes):
        for b in range(a + 1, n_classes):
            b_wins, a_wins = lower[:, p] > 0, upper[:, p] <= 0
            open_ = ~(a_wins | b_wins)
            certain[:, b] += b_wins
            certain[:, a] += a_wins
            possible[:, b] += b_wins | open_
            possible[:, a] += a_wins | open_
            p += 1
    possible[rows, predicted] = -np.inf
    return certain[rows, predicted] > possible.max(axis=1)


def uncertified_note(bound, metric) -> str:
    """The one-sentence warning of an approximate value its certificate does not cover."""
    unit = "0-1 error" if metric == "0-1" else "MSE"
    limit = (f"{TOLERANCE[metric]:g}" if metric == "0-1"
             else f"{100 * TOLERANCE[metric]:g} % of the value")
    size = "unbounded" if not np.isfinite(bound) else f"up to {bound:.3g}"
    return (f"{UNCERTIFIED}: points that change loss piece between the full fit and the "
            f"fold-out fits can move this CV {unit} by {size} (guaranteed bound), above "
            f"the tolerance {limit}; use method 'spectral' or 'exact' for the exact value")
