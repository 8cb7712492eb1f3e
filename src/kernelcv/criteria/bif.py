"""Approximate t-fold CV by the Bouligand-influence-function (BIF) series.

Train once on all data (decision values ``F``, loss derivatives ``g``, ``H = diag(h)``),
then correct each fold's predictions by a Taylor series in the perturbation
``eps_i = -l_i / (n - l_i)`` that moves the sample weights from ``1/n`` to the fold-out
weights ``1/(n - l_i)`` on the retained points (``-1/(t-1)`` only for equal folds). With
``L = 2 lam I + (1/n) K H`` and ``d_i = -1/n + 1[j in S_i] / l_i``::

    f_{-S_i}(x_j) ~ F_j + sum_{s=1..r} T_s[j],
    T_1     = -eps_i L^-1 K (d_i * g),
    T_{s+1} = -eps_i L^-1 K (d_i * h * T_s).

``T_s = eps^s B_s / s!`` are the normalised BIF terms (the raw ``B_s`` grow factorially,
the ``T_s`` do not). This is the derived recursion: the printed form in "Granularity
selection for cross-validation of SVM" (Sec. 3.2) divides by t instead of ``l_i`` and
drops the Huber factor ``1/(2w)`` in the ``(1/n) K H`` term (see NUMERICS.md).

The series is a Neumann series for ``(I + N_i)^-1 T_1`` with ``N_i = eps_i L^-1 K D_i H``;
its sum (order ``"inf"``) solves ``(2 lam I + K W_i H) Delta = -eps_i K (d_i * g)`` with the
fold-out weights ``W_i``: exactly one Newton step on the fold-out problem from the full
fit. It is exact for KRR/LS-SVM and for the other losses when no retained point changes
loss piece. Its rate is ``rho(N_i)``, about the largest leverage of the fold's block of
``K (K + n lam I)^-1`` and *not* ``1/(t-1)``: at small ``n lam`` a fixed low order is biased
toward the training error. Order ``"auto"`` adds terms until the largest held-out term is
below ``tol * max|F|`` and switches to ``"inf"`` if that takes more than ``max_order``.

With an intercept (LS-SVM) each solve is bordered by the derivative of the condition
``sum_j w_j g_j = 0``.

Cost: ``L^-1`` needs only the active system ``M = K_AA + 2 lam n H_A^-1`` on
``A = {h > 0}``, already factored by the full fit. All folds are done at once as the
columns of an ``n x t`` matrix: per order ``O(n |A| t)``. Order ``"inf"`` needs the
fold-out systems on ``A \\ S_i``: with ten or more folds all of them come from one
Cholesky factor of the full active system and its triangular inverse (Schur complement,
:class:`FoldOutSolver`), else one Cholesky factorisation per fold. Its held-out values
are formed directly from the step's coefficients, not as ``F + Delta``, so they keep
their relative precision for narrow kernels (where finite orders are rounding noise).
Its products with K read only the rows they need
(:mod:`kernelcv.machines.gram_products`): the right-hand sides on A need K's block on A
and on the rows where ``g != 0``, the held-out values the rows where the step's
coefficients are non-zero (the support vectors and A), so a candidate with few support
vectors never reads all of K.

Extra points (``extra=(K_extra, extra_fold_ids)``, m points off the sample, e.g. the other
classes of a one-vs-one pair): every term is a function in the span of the kernel
sections, ``T_s(x) = (k(x)' c_s - k_A(x)' Y_s + beta_s) / (2 lam)`` where ``Z_s = K c_s``
is the right-hand side and ``Y_s``, ``beta_s`` the active solve of ``L^-1`` (``c_1 =
-eps_i d_i * g``, ``c_{s+1} = -eps_i d_i * h * T_s`` on A). So an extra point of fold i gets
``f(x_e) + sum_s T_s(x_e)`` with ``f(x_e) = K_extra[e] alpha + b``, the rows of
``K_extra`` in place of those of K and the same ``Y_s``, ``beta_s``: ``O(m n)`` for the
first term and ``O(m |A|)`` per further order (only the column of the point's own fold).
Order ``"inf"`` evaluates the step's fold-out coefficients there,
``b + (beta_i - K_extra[e] w_i) / (2 lam)`` (``O(m n)``). Id -1 (no fold holds the
point out) gives the full fit's value ``f(x_e)``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..machines.gram_products import kernel_times, rows_times
from ..machines.solver import Factorisation, cholesky_with_jitter
from .certificate import fold_out_enclosure
from .fold_out import (  # re-exported: kernelcv.criteria.bif is their historical home
    BATCHED_MAX_ACTIVE,
    SHARED_FACTORISATION_MIN_ACTIVE,
    FoldOutSolver,
    shared_factorisation_pays,
    solve_each_fold,
)
from .truncation import MIN_TERMS, SAFETY, fold_maxima, power_rate, tail, too_slow

__all__ = ["SHARED_FACTORISATION_MIN_ACTIVE", "FoldOutSolver", "bif_predictions",
           "fold_out_starts", "newton_step_weights", "shared_factorisation_pays"]


# Up to this many rows _kernel_times_dg multiplies by a dense fold matrix (measured
# crossover at about 500 rows, 10 folds, one thread).
DENSE_FOLD_PRODUCT_ROWS = 400


def _active_factor(K, h, lam, n, fit_factor, active):
    if fit_factor is not None and np.array_equal(fit_factor.active, active):
        return fit_factor
    M = K[np.ix_(active, active)]
    M[np.diag_indices_from(M)] += 2 * lam * n / h[active]
    cho, jitter = cholesky_with_jitter(M)
    return Factorisation(active=active, cho=cho, jitter=jitter)


def _kernel_times_dg(K, g, fold_ids, sizes):
    """``K (d_i * g)`` for every fold i as an n x t matrix, in O(n^2) instead of O(n^2 t).

    ``d_i * g = -g / n + g * 1[S_i] / l_i``: one product ``K g`` plus ``K G`` with the sparse
    ``G[j, i] = g_j / l_i`` for ``j in S_i`` (one non-zero per row; K is symmetric). Up to
    :data:`DENSE_FOLD_PRODUCT_ROWS` rows ``G`` is dense instead (``O(n^2 t)`` in one BLAS
    call beats building the sparse matrix there: 150 rows, 0.04 vs 0.17 ms).
    """
    n = g.shape[0]
    t = sizes.shape[0]
    if n <= DENSE_FOLD_PRODUCT_ROWS:
        G = np.zeros((n, t))
        G[np.arange(n), fold_ids] = g / sizes[fold_ids]
        return K @ G - (K @ g)[:, None] / n
    G = sp.csr_matrix((g / sizes[fold_ids], (fold_ids, np.arange(n))), shape=(t, n))
    return np.asarray((G @ K).T) - (K @ g)[:, None] / n


def bif_predictions(K, y, fold_ids, lam, machine, fit, order=5, tol=1e-6, max_order=200,
                    atol=None, extra=None, remainder=False, enclosure=False):
    """Held-out decision values from the full-data fit and the BIF correction.

    Parameters
    ----------
    K : (n, n) Gram matrix; y : (n,) targets; fold_ids : (n,) ids ``0..t-1``.
    lam : regularisation; machine : the :class:`kernelcv.machines.Machine` that was fitted.
    fit : its full-data :class:`FitResult` on ``K``.
    order : int >= 1, ``"inf"`` or ``"auto"``.
    tol : stopping tolerance of ``"auto"``, relative to ``max |F|``.
    max_order : most terms ``"auto"`` adds before switching to ``"inf"``.
    atol : float or None
        ``"auto"`` stops at the first order whose estimated remainder (the geometric tail
        of :func:`kernelcv.criteria.truncation.tail`: ``m_s rho / (1 - rho)`` per fold,
        ``m_s`` the fold's largest held-out term of order s, ``rho`` the larger of the
        last two observed ratios and the power-iteration rate; at least three terms) is
        at most ``atol``, else at most ``tol * max |F|``; at an estimated rate of
        ``SLOW_RATE`` it takes the limit at once. A small term alone never stops it.
    extra : None or ``(K_extra, extra_fold_ids)``
        (m, n) kernel values between m extra points and the sample, and (m,) ids in
        ``-1..t-1`` (trusted). The extra points of fold i get the same approximation of
        the model fitted without fold i as the fold's own members (same order; the stopping
        rule of ``"auto"`` looks at the sample only); id -1 gets the full fit.
        Cost: ``O(m n)`` plus ``O(m |A|)`` per order.

    remainder : bool
        Also return the estimated truncation remainder of each fold (below).
    enclosure : bool
        Also return guaranteed bounds of the exact refit values around the approximate
        fold-out models (:func:`kernelcv.criteria.certificate.fold_out_enclosure`; the
        models are the series' sum in coefficient form, ``alpha + sum_s (c_s - Y_s) /
        (2 lam)``, for a finite order). Cost: one or two more ``n x n x t`` products.

    Returns
    -------
    predictions : (n,) approximate ``f_{-S(j)}(x_j)``.
    order_used : int or ``"inf"``.
    extra_predictions : (m,) the extra points' values; returned only when ``extra`` is given.
    fold_remainder : (t,) estimated ``max_{j in S_i} |f_limit(x_j) - predictions[j]|``
        (0 for order ``"inf"``; measured against the limit when a fold's estimated rate
        reaches ``SLOW_RATE``); returned only when ``remainder`` is True.
    bounds : ``(lower, upper)``, (n,) each: every row's exact held-out value lies in
        ``[lower, upper]``; with extra points given as ``(K_extra, ids, diag)`` (their
        ``k(x, x)`` third) also their (m,) bounds: ``(lower, upper, extra_lower,
        extra_upper)``; returned last, only when ``enclosure`` is True.
    """
    n = y.shape[0]
    F = fit.decision
    g, h = machine.loss.derivatives(y, F)
    active = np.flatnonzero(h > 0)
    t = int(fold_ids.max()) + 1
    sizes = np.bincount(fold_ids, minlength=t).astype(np.float64)
    eps = -sizes / (n - sizes)
    D = _fold_weights(fold_ids, sizes)
    rows_e = None if extra is None else _ExtraRows(extra, fit, active)

    def bounds(coef, intercepts, fold_functions=None):
        if rows_e is None or rows_e.diag is None:
            return fold_out_enclosure(K, y, fold_ids, lam, machine.loss,
                                      machine.fit_intercept, coef, intercepts,
                                      fold_functions)[:2]
        lower, upper, _, extra_lower, extra_upper = fold_out_enclosure(
            K, y, fold_ids, lam, machine.loss, machine.fit_intercept, coef, intercepts,
            fold_functions, extra=(rows_e.K, rows_e.ids, rows_e.diag))
        own = rows_e.ids < 0  # the full fit's values: no fold-out model to bound
        return (lower, upper, np.where(own, rows_e.full, extra_lower),
                np.where(own, rows_e.full, extra_upper))

    def finish(predictions, order_used, extra_terms=None, fold_remainder=None):
        out = (predictions, order_used)
        if rows_e is not None:
            out += (rows_e.values(extra_terms),)
        if remainder:
            out += (fold_remainder,)
        if enclosure:
            out += (bounds(fit.alpha[:, None] + coef_sum / (2 * lam),
                           fit.intercept + beta_sum / (2 * lam)),)
        return out

    def newton():
        weights, betas = newton_step_weights(K, g, h, lam, n, fold_ids, eps, sizes,
                                             machine.fit_intercept)
        sums = kernel_times(K, weights)
        predictions = fit.intercept + (betas[fold_ids] - sums[np.arange(n), fold_ids]) / (
            2 * lam)
        out = (predictions, "inf")
        if rows_e is not None:
            out += (rows_e.fold_out_values(weights, betas, lam),)
        if remainder:
            out += (np.zeros(t),)
        if enclosure:
            out += (bounds(-weights / (2 * lam), fit.intercept + betas / (2 * lam),
                           -sums / (2 * lam)),)
        return out

    if order == "inf":
        return newton()

    if active.size == 0:
        # No point in a quadratic piece: L = 2 lam I, so the series stops after T_1.
        factor = None
    else:
        factor = _active_factor(K, h, lam, n, fit.factor, active)
    K_active = K[:, active]  # one copy, reused by every order

    def solve_L(Z, c):
        """``X = L^-1 Z`` column-wise; with an intercept also ``(1/n) 1' H X = c``.

        Also returns the active solve ``Y`` and the border ``beta`` (``X = (Z + beta -
        K_A Y) / (2 lam)``; None and 0 without active points) for the extra points.
        """
        if factor is None:
            return Z / (2 * lam), None, 0.0
        Z_A = Z[active]
        Y = factor.solve(Z_A)
        if machine.fit_intercept:
            ones = factor.solve(np.ones(active.size))
            beta = (c - Y.sum(axis=0)) / ones.sum()
            Y = Y + ones[:, None] * beta[None, :]
            return (Z + beta[None, :] - K_active @ Y) / (2 * lam), Y, beta
        return (Z - K_active @ Y) / (2 * lam), Y, 0.0

    rows = np.arange(n)
    scale = max(float(np.max(np.abs(F))), np.finfo(float).tiny)
    dg_sum = (D * g[:, None]).sum(axis=0)
    T, Y, beta = solve_L(-_kernel_times_dg(K, g, fold_ids, sizes) * eps[None, :],
                         -eps * dg_sum)
    # the series' sum in coefficient form (for the enclosure): term s is the function
    # (K (c_s - Y_s on A) + beta_s) / (2 lam), c_s the coefficients whose K-product is Z_s
    coef_sum = beta_sum = None
    if enclosure:
        coef_sum = -(D * g[:, None]) * eps[None, :]
        beta_sum = np.zeros(t)

    def add_coefficients(c_active, Y, beta):
        if c_active is not None:
            coef_sum[active] += c_active
        if Y is not None:
            coef_sum[active] -= Y
        beta_sum[:] += beta

    if enclosure:
        add_coefficients(None, Y, beta)
    total = T[rows, fold_ids].copy()
    total_e = None
    if rows_e is not None:
        total_e = rows_e.term(D * g[:, None], None, eps, Y, beta, lam)
    s = 1
    limit = max_order if order == "auto" else int(order)
    history = [fold_maxima(T[rows, fold_ids], fold_ids, t)]
    bound = tol * scale if atol is None else atol

    def term_map(V):  # T_s -> (T_{s+1}, its active solve Y, border beta, d h T_s)
        dhV = D[active] * (h[active, None] * V[active])
        return (*solve_L(-(K_active @ dhV) * eps[None, :], -eps * dhV.sum(axis=0)), dhV)

    def next_term(T, Y, beta, counted=True):
        T, Y, beta, dhT = term_map(T)
        history.append(fold_maxima(T[rows, fold_ids], fold_ids, t))
        if enclosure and counted:
            add_coefficients(-dhT * eps[None, :], Y, beta)
        return T, Y, beta, dhT

    rate = power_rate(lambda V: term_map(V)[0], n, t) if remainder or order == "auto" else None
    if order == "auto" and too_slow(rate):  # ~1 / (1 - rate) terms: the limit is cheaper
        return newton()

    while s < limit:
        if order == "auto" and np.max(tail(history, rate)) <= bound:
            return finish(F + total, s, total_e, tail(history, rate))
        T, Y, beta, dhT = next_term(T, Y, beta)
        total += T[rows, fold_ids]
        if rows_e is not None:
            total_e += rows_e.term(dhT, active, eps, Y, beta, lam)
        s += 1
    if order == "auto":
        if np.max(tail(history, rate)) <= bound:
            return finish(F + total, s, total_e, tail(history, rate))
        return newton()
    fold_remainder = None
    if remainder and too_slow(rate):  # too slow to judge from its terms: measure it
        limit_values = _newton_step(K, g, h, lam, n, fold_ids, eps, sizes,
                                    machine.fit_intercept, fit.intercept)
        fold_remainder = fold_maxima(limit_values - F - total, fold_ids, t)
    elif remainder:  # terms after the order used, then the geometric tail beyond them
        while len(history) < max(s + 1, MIN_TERMS):
            T, Y, beta, _ = next_term(T, Y, beta, counted=False)
        fold_remainder = SAFETY * np.sum(history[s:], axis=0) + tail(history, rate)
    return finish(F + total, s, total_e, fold_remainder)


class _ExtraRows:
    """The extra points of :func:`bif_predictions`, grouped by the fold that holds them out.

    ``full`` holds the full fit's values ``K_extra alpha + b`` (O(m n)); ``groups`` the
    positions of each fold's extra points, whose kernel rows each term multiplies.
    """

    def __init__(self, extra, fit, active):
        K_extra, ids = extra[:2]
        self.diag = extra[2] if len(extra) > 2 else None  # k(x, x): for the enclosure
        self.K = K_extra
        self.ids = ids
        self.active = active
        self.intercept = fit.intercept
        self.full = K_extra @ fit.alpha + fit.intercept
        self.groups = [(int(i), np.flatnonzero(ids == i)) for i in np.unique(ids[ids >= 0])]

    def term(self, coef, cols, eps, Y, beta, lam):
        """One series term at the extra points (0 for id -1), mirroring ``solve_L``.

        For the kernel rows ``K_i`` of fold i's extra points the right-hand side is
        ``Z = -eps_i K_i[:, cols] coef[:, i]`` (``cols`` None: all columns) and the term
        ``(Z + beta_i - K_iA Y_i) / (2 lam)``.
        """
        out = np.zeros(self.ids.shape[0])
        for i, at in self.groups:
            K_i = self.K[at]
            Z = -((K_i if cols is None else K_i[:, cols]) @ coef[:, i]) * eps[i]
            if Y is not None:
                Z = Z + (beta[i] if np.ndim(beta) else 0.0) - K_i[:, self.active] @ Y[:, i]
            out[at] = Z / (2 * lam)
        return out

    def values(self, terms):
        """``f(x_e) + sum_s T_s(x_e)``."""
        return self.full + terms

    def fold_out_values(self, weights, betas, lam):
        """Order inf: ``b + (beta_i - K_extra[e] w_i) / (2 lam)``; id -1: the full fit."""
        out = self.full.copy()
        for i, at in self.groups:
            out[at] = self.intercept + (betas[i] - self.K[at] @ weights[:, i]) / (2 * lam)
        return out


def fold_out_starts(K, y, fold_ids, lam, machine, fit):
    """Each fold-out problem's order-inf Newton step from the full fit, as a warm start.

    Returns one ``(alpha_R, b)`` per fold (coefficients on the fold's retained points, in
    their order, and the intercept): ``alpha'_R = -weights[R, i] / (2 lam)`` and
    ``b + beta_i / (2 lam)`` of :func:`newton_step_weights`. Cost: one order-inf step.
    """
    n = y.shape[0]
    g, h = machine.loss.derivatives(y, fit.decision)
    t = int(fold_ids.max()) + 1
    sizes = np.bincount(fold_ids, minlength=t).astype(np.float64)
    weights, betas = newton_step_weights(K, g, h, lam, n, fold_ids, -sizes / (n - sizes),
                                         sizes, machine.fit_intercept)
    return [(-weights[fold_ids != i, i] / (2 * lam),
             fit.intercept + betas[i] / (2 * lam)) for i in range(t)]


def _newton_step(K, g, h, lam, n, fold_ids, eps, sizes, fit_intercept, b=0.0):
    """Held-out predictions of order ``"inf"`` (see :func:`newton_step_weights`)."""
    weights, betas = newton_step_weights(K, g, h, lam, n, fold_ids, eps, sizes,
                                         fit_intercept)
    return _fold_out_predictions(K, weights, betas, fold_ids, b, lam)


def newton_step_weights(K, g, h, lam, n, fold_ids, eps, sizes, fit_intercept):
    """Order ``"inf"``: one Newton step on each fold-out problem, from the full fit.

    Fold i solves ``B_i y = z_{A_i} + beta 1`` with ``B_i = K_{A_i A_i} + n_i D``,
    ``D = diag(2 lam / h)``, on its retained active points ``A_i`` (``n_i = n - l_i``
    retained samples), ``z = -eps_i K (d_i * g)``, and with an intercept also
    ``1' y = c_i``. The step's coefficients on the retained points R are
    ``alpha'_R = -(g_R / n_i + y) / (2 lam)`` (y zero off ``A_i``) and its intercept
    ``b + beta / (2 lam)``, so each held-out prediction is evaluated directly::

        f'(x_j) = b + (beta - K_{j R} (g_R / n_i + y)) / (2 lam),      j in S_i.

    This equals ``F_j + Delta_j`` (the full fit plus the step's change) but does not
    subtract two O(|F|) numbers: for narrow kernels, where the held-out kernel sums are
    far below ``|F|``, it keeps them to relative precision instead of rounding noise.

    All folds share one factorisation (:class:`FoldOutSolver`) when that pays (see
    :func:`shared_factorisation_pays`): the Cholesky factor of the full active system
    ``K_AA + m D`` at the most common retained size m and its triangular inverse, from
    which each fold's block is eliminated (Schur complement); a fold of another retained
    size is factored on its own. Cost ``O(|A|^3)`` once (``2 |A|^3 / 3``) plus
    ``O(t |A|^2)`` per right-hand side, against t Cholesky factorisations of about
    ``|A|`` rows for a direct per-fold solve; the right-hand sides cost ``O(|A| |R| t)``
    (R the rows where ``g != 0``).

    Returns
    -------
    weights : (n, t) column i is ``g_R / n_i + y`` on fold i's retained points, 0 on the
        fold: the step's coefficients are ``alpha'_R = -weights[R, i] / (2 lam)``.
    betas : (t,) the step's intercept is ``b + beta_i / (2 lam)``.
    """
    t = sizes.shape[0]
    active = np.flatnonzero(h > 0)
    # only the active rows of z are used: K's block on them and on g's non-zero rows
    Z = np.zeros((fold_ids.shape[0], t))
    if active.size:
        Z[active] = -rows_times(K, active, _fold_gradients(g, fold_ids, sizes)) * eps[None, :]
    retained_active = active.size - np.bincount(fold_ids[active], minlength=t)
    solver = None
    if active.size and shared_factorisation_pays(active.size, retained_active, n - sizes):
        solver = FoldOutSolver(K, active, 2 * lam / h[active], fold_ids[active],
                               (n - sizes).astype(np.float64))
    if solver is None or not solver.usable:
        # Small or jittered systems: one factorisation per fold.
        return _newton_step_per_fold(K, g, h, lam, n, fold_ids, sizes, fit_intercept, Z)
    folds = np.arange(t)
    if fit_intercept:
        X = solver.solve(np.hstack([Z[active], np.ones((active.size, t))]),
                         np.concatenate([folds, folds]))
        Y, ones = X[:, :t], X[:, t:]
    else:
        Y = solver.solve(Z[active], folds)
    weights = _retained_gradient_weights(g, fold_ids, sizes)
    betas = np.zeros(t)
    for i in range(t):
        kept = solver.retained(i)
        y_a = Y[kept, i]
        if fit_intercept and kept.size:
            c = -g[fold_ids != i].sum() / (n - sizes[i])
            betas[i] = (c - y_a.sum()) / ones[kept, i].sum()
            y_a = y_a + betas[i] * ones[kept, i]
        weights[active[kept], i] += y_a
    return weights, betas


def _fold_weights(fold_ids, sizes):
    """(n, t) matrix ``D`` whose column i is ``d_i = -1/n + 1[S_i] / l_i``."""
    member = fold_ids[:, None] == np.arange(sizes.shape[0])[None, :]
    return np.where(member, 1.0 / sizes[None, :], 0.0) - 1.0 / fold_ids.shape[0]


def _fold_gradients(g, fold_ids, sizes):
    """(n, t) matrix whose column i is ``d_i * g`` (:func:`_fold_weights`)."""
    return _fold_weights(fold_ids, sizes) * g[:, None]


def _retained_gradient_weights(g, fold_ids, sizes):
    """(n, t) matrix whose column i is ``g / n_i`` off fold i and 0 on it."""
    member = fold_ids[:, None] == np.arange(sizes.shape[0])[None, :]
    n = fold_ids.shape[0]
    return np.where(member, 0.0, g[:, None] / (n - sizes)[None, :])


def _fold_out_predictions(K, weights, betas, fold_ids, b, lam):
    """``b + (beta_i - K_{j R} w_R) / (2 lam)`` for each j in fold i, all folds at once.

    Column i of ``weights`` is zero on fold i, so the product ``K W`` adds exact zeros
    for the held-out block instead of subtracting it. Cost: ``n |R| t`` for the product
    with the rows R of K where ``weights`` is non-zero
    (:func:`kernelcv.machines.gram_products.kernel_times`).
    """
    n = fold_ids.shape[0]
    sums = kernel_times(K, weights)[np.arange(n), fold_ids]
    return b + (betas[fold_ids] - sums) / (2 * lam)


def _newton_step_per_fold(K, g, h, lam, n, fold_ids, sizes, fit_intercept, Z):
    """:func:`_newton_step` with one fold-out system per fold: all folds in one batched
    solve (:func:`solve_each_fold`) up to :data:`BATCHED_MAX_ACTIVE` active points, else
    one Cholesky factorisation per fold."""
    t = sizes.shape[0]
    weights = _retained_gradient_weights(g, fold_ids, sizes)
    betas = np.zeros(t)
    active = np.flatnonzero(h > 0)
    if active.size == 0:
        return weights, betas
    retained_sizes = (n - sizes).astype(np.float64)
    Y = None
    if active.size <= BATCHED_MAX_ACTIVE and t * active.size**2 <= 4_000_000:
        rhs = Z[active].T[:, :, None]
        if fit_intercept:
            rhs = np.concatenate([rhs, np.ones((t, active.size, 1))], axis=2)
        Y = solve_each_fold(K, active, 2 * lam / h[active], fold_ids[active],
                            retained_sizes, rhs)
    if Y is None:
        return _newton_step_each_fold(K, g, h, lam, n, fold_ids, sizes, fit_intercept, Z)
    y_a = Y[:, :, 0].T  # (|A|, t), zero on each fold's own rows
    if fit_intercept:
        ones = Y[:, :, 1].T
        count = ones.sum(axis=0)
        gradient_sums = g.sum() - np.bincount(fold_ids, weights=g, minlength=t)
        c = -gradient_sums / retained_sizes
        safe = count > 0  # a fold with no retained active point keeps beta = 0
        betas[safe] = (c[safe] - y_a[:, safe].sum(axis=0)) / count[safe]
        y_a = y_a + ones * betas[None, :]
    weights[active] += y_a
    return weights, betas


def _newton_step_each_fold(K, g, h, lam, n, fold_ids, sizes, fit_intercept, Z):
    """:func:`_newton_step_per_fold` one fold at a time (jitter where one needs it)."""
    t = sizes.shape[0]
    weights = _retained_gradient_weights(g, fold_ids, sizes)
    betas = np.zeros(t)
    on_quadratic = h > 0
    for i in range(t):
        retained = fold_ids != i
        n_retained = int(retained.sum())
        active = (retained & on_quadratic).nonzero()[0]
        if active.size:
            M = K[active[:, None], active]
            M.flat[::active.size + 1] += 2 * lam * n_retained / h[active]
            factor = Factorisation(active, *cholesky_with_jitter(M))
            if fit_intercept:
                both = factor.solve(np.column_stack([Z[active, i], np.ones(active.size)]))
                y_a, ones = both[:, 0], both[:, 1]
                c = -g[retained].sum() / n_retained
                betas[i] = (c - y_a.sum()) / ones.sum()
                y_a = y_a + betas[i] * ones
            else:
                y_a = factor.solve(Z[active, i])
            weights[active, i] += y_a
    return weights, betas
