"""BIF order inf for all binary machines of a multiclass candidate at once.

:class:`kernelcv.criteria.multiclass.MulticlassCV` evaluates a candidate's binary
machines one by one through :func:`kernelcv.criteria.evaluate.evaluate_lam`. For the
one-vs-one pairs (k (k - 1) / 2 machines of about 2n/k rows) each of those evaluations
is a few milliseconds of Python around microseconds of arithmetic. :class:`StackedPairs`
computes the same numbers for all pairs together:

1. the full fits by the batched Newton solver (:func:`kernelcv.machines.stacked.fit_stacked`);
2. each fold-out problem's order-inf Newton step (the limit of the BIF series, see
   :func:`kernelcv.criteria.bif.newton_step_weights`): for pair p and fold i the system
   ``K_RR + n_i D_R`` on the fold's retained active points R, ``D = diag(2 lam / h)``,
   the (pair, fold) systems stacked with identity padding and solved in up to three
   batched calls, pairs of similar active-set sizes together
   (:func:`kernelcv.machines.batched_linalg.size_groups`);
3. every point's held-out value from every pair's fold-out model: for x in fold i,
   ``b_p + (beta_pi - K(x, rows_p) w_pi) / (2 lam)`` -- the pair's own members and the
   other classes' points alike (the "extra points" of the one-problem path), and the
   full fit ``K(x, rows_p) alpha_p + b_p`` when fold i holds none of the pair's rows;
4. the flags of the one-problem path: the median held-out ratio of
   :func:`kernelcv.criteria.result.heldout_rounding`, the rounding check of
   :func:`kernelcv.criteria.conditioning.relative_rounding` (the quick bound for all
   pairs at once, the ``dpocon`` estimate for a pair that fails it), and the enclosure
   of :mod:`kernelcv.criteria.certificate` for the l2svm and svm (a pair above its
   tolerance is flagged with the one-problem path's note, not sent there).

A pair the stacked path cannot finish exactly as the one-problem path would (a fit that
needs jitter or does not converge, a fold system that is not numerically positive
definite, more than :func:`max_stacked_active` active points, or a rounding error
above tolerance, which the one-problem path reports in a note) is listed in
``fallback`` and evaluated by the one-problem path instead, so the results, notes and
flags are that path's in every case. Tested against it and against refit CV.

Cost per candidate: the batched fit (``P a^3`` per Newton iteration), ``sum_g P_g t a_g^3
/ 3`` for the fold systems (a_g the largest active set of size group g, at most
:func:`max_stacked_active`) and ``O(P n m t)`` for the held-out values (m the largest pair), in
a fixed number of numpy calls and one ``dpotrs`` call per (pair, fold) system.
Memory: the pairs' Gram blocks, (P, m, m) and (P, n, m) floats, once per kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dpotrf

from ..machines.batched_linalg import cholesky_factors, cholesky_solve_each, size_groups
from ..machines.solver import Factorisation, FitResult
from ..machines.stacked import batched_matvec, fit_stacked, gather_blocks
from .certificate import certified_error, fold_out_enclosure, uncertified_note
from .evaluate import _rounding_check, certifiable
from .result import Criterion, heldout_losses
from .truncation import TOLERANCE, within_tolerance

# Pairs whose fit has more active points than max_stacked_active(t) use the one-problem
# order-inf step. The stack factors every fold's system (t a^3 / 3 flops for a active
# points), the one-problem step one shared factorisation for all folds ((2/3 + 1/(2t)) a^3,
# FoldOutSolver) after ~2 ms of Python per pair. The cap keeps t a^3 at that of 64 active
# points with 10 folds (the first bound, 64 at any t, stays the floor): 80 at t = 5.
# Session 31: digits' 8 x 8 grid with 5 folds evaluates its n/4 subsample whole, pairs of
# ~67 rows, and at gamma >= 1 every row is active, so 39 of the 45 pairs of 24 candidates
# fell back (999 one-problem evaluations, 2.2 s): the search took 6.9 s with the bound 64,
# 5.3-5.8 s with 80 or more, the same choice; 10 folds (the CLI's default grid, glass,
# vowel, digits) were 15-25 % slower with 128 than with 64, hence the scaling with t.
STACKED_FOLD_CUBES = 10 * 64**3
# Refit problems are stacked in chunks of at most this many Gram values (8 bytes each).
REFIT_CHUNK_FLOATS = 4_000_000


@dataclass
class StackedValues:
    """What :meth:`StackedPairs.evaluate` found for the P pairs.

    Attributes
    ----------
    values : (n, P) held-out decision values at every point (columns of fallback pairs
        unset).
    fits : list of P :class:`FitResult` (None where the batched fit failed).
    fallback : (P,) bool, pairs to evaluate with the one-problem path.
    ratio : (P,) median held-out ratio of each pair (nan for fallback pairs).
    ill_conditioned : (P,) bool, pairs whose rounding error is above tolerance.
    notes : P lists of the one-problem path's notes (the ill-conditioned and
        uncertified warnings).
    uncertified : (P,) bool, pairs whose certified bound is above tolerance.
    lower, upper : (n, P) bounds of each pair's value at every point (the enclosure of
        :mod:`kernelcv.criteria.certificate`), or None where not computed.
    """

    values: np.ndarray
    fits: list
    fallback: np.ndarray
    ratio: np.ndarray
    ill_conditioned: np.ndarray
    notes: list
    uncertified: np.ndarray
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None


def row_nanmedian(Q):
    """``np.nanmedian(Q, axis=1)`` (the same values) for rows holding at least one
    number, by one sort: ten times faster on (15, 73) (numpy's masked-array path for
    small inputs costs 0.2-0.6 ms a call)."""
    ordered = np.sort(Q, axis=1)  # nan last
    counts = np.count_nonzero(~np.isnan(Q), axis=1)
    rows = np.arange(Q.shape[0])
    low, high = ordered[rows, (counts - 1) // 2], ordered[rows, counts // 2]
    return np.where(counts % 2 == 1, high, (low + high) / 2)


def max_stacked_active(t: int) -> int:
    """The most active points a pair's fit may have for the stacked order-inf step with
    ``t`` folds: ``(STACKED_FOLD_CUBES / t)^(1/3)``, never below 64, the first bound
    (64 from t = 10, 80 at t = 5, 109 at t = 2)."""
    return max(64, int(np.cbrt(STACKED_FOLD_CUBES / max(t, 1)) + 1e-9))


class StackedPairs:
    """The one-vs-one problems of a Gram matrix, padded and stacked.

    Parameters
    ----------
    K : (n, n) Gram matrix on all rows; fold_ids : (n,) fold ids ``0..t-1``.
    rows : list of P index arrays, the rows of each pair; targets : list of their +-1 labels.
    """

    def __init__(self, K, fold_ids, rows, targets):
        P = len(rows)
        sizes = np.array([r.size for r in rows])
        m = int(sizes.max())
        self.n = K.shape[0]
        self.t = int(fold_ids.max()) + 1
        self.fold_ids = fold_ids
        self.sizes = sizes.astype(np.float64)
        self.valid = np.arange(m)[None, :] < sizes[:, None]
        index = np.zeros((P, m), dtype=np.intp)
        for p, r in enumerate(rows):
            index[p, :r.size] = r
        self.index = index
        self.y = np.zeros((P, m))
        for p, y in enumerate(targets):
            self.y[p, :y.size] = y
        # (P, n, m): every point against each pair's rows (zero columns on padding), as
        # the transposed view of the pairs' rows of K (K is symmetric up to rounding; a
        # row gather is three times cheaper than a column gather)
        pair_rows = K[index]  # (P, m, n)
        pair_rows[~self.valid] = 0.0
        self.K_cross = pair_rows.transpose(0, 2, 1)
        flat = (np.arange(P * m).reshape(P, m, 1) * self.n + index[:, None, :])  # (P, m, m)
        self.K_pairs = np.take(pair_rows.reshape(-1), flat)  # pair_rows[p, i, index[p, j]]
        self.K_pairs *= self.valid[:, None, :]
        self.folds = np.where(self.valid, fold_ids[index], -1)  # (P, m), -1 on padding
        self.member = self.folds[:, :, None] == np.arange(self.t)[None, None, :]  # (P, m, t)
        self.fold_sizes = self.member.sum(axis=1).astype(np.float64)  # (P, t)
        self.diag_max = np.where(self.valid, np.diagonal(self.K_pairs, axis1=1, axis2=2),
                                 0.0).max(axis=1)
        self.diag = np.diagonal(K).copy()  # k(x, x) of every point (the enclosures)

    def evaluate(self, lam, machine, method="bif", warm=None, certify=True):
        """Held-out values of every pair at every point, and the pair fits.

        ``method="bif"``: order inf; ``"exact"``: refit CV (each (pair, fold) problem
        refitted by the batched solver, warm-started from its order-inf step as
        :func:`kernelcv.criteria.exact.refit_predictions` does). ``certify=False`` skips
        the BIF values' enclosures (no ``uncertified`` flags, bounds None).

        Returns
        -------
        StackedValues
        """
        P, m = self.y.shape
        loss, intercept = machine.loss, machine.fit_intercept
        alpha0 = b0 = None
        if warm is not None:
            alpha0 = np.zeros((P, m))
            b0 = np.zeros(P)
            for p, fit in enumerate(warm):
                alpha0[p, :fit.alpha.shape[0]] = fit.alpha
                b0[p] = fit.intercept
        stack = fit_stacked(self.K_pairs, self.y, self.valid, lam, loss, intercept,
                            alpha0=alpha0, intercept0=b0)
        fallback = stack.fallback.copy()
        ill = np.zeros(P, dtype=bool)
        uncertified = np.zeros(P, dtype=bool)
        lower = upper = None
        notes = [[] for _ in range(P)]
        g, h = loss.derivatives(self.y, stack.decision)
        g, h = g * self.valid, h * self.valid
        active = h > 0
        large = active.sum(axis=1) > max_stacked_active(self.t)
        if method == Criterion.BIF:
            fallback |= large
        weights, betas, solved = self._fold_steps(g, h, active, lam, intercept,
                                                  fallback | large)
        if method == Criterion.BIF:
            fallback |= ~solved
            values = self._values(stack, weights, betas, lam)
            passes = self._rounding_passes(stack, h, active, values, lam, intercept,
                                           machine)
            for p in np.flatnonzero(~passes & ~fallback):
                checked = self._rounding_check(p, stack, h, values, lam, machine, notes[p])
                if checked is None:  # no Cholesky factor: the one-problem path adds jitter
                    fallback[p] = True
                else:
                    ill[p] = checked
            if certify and certifiable(machine):
                uncertified, lower, upper = self._uncertified(
                    stack, weights, betas, values, lam, machine, fallback, notes)
        else:
            stepped = solved & ~large
            values, refitted = self._refit_values(stack, weights, betas, stepped, lam,
                                                  machine, fallback)
            fallback |= ~refitted
        fallback |= ~np.all(np.isfinite(values), axis=0)  # the one-problem path says why
        ratio = self._heldout_ratio(stack)
        # every converged fit is returned: a fallback pair's one-problem evaluation
        # starts from it (one Newton iteration) instead of fitting again
        fits = [None if stack.fallback[p] else FitResult(
            alpha=stack.alpha[p, :int(self.sizes[p])].copy(),
            intercept=float(stack.intercept[p]),
            decision=stack.decision[p, :int(self.sizes[p])].copy(),
            n_iter=int(stack.n_iter[p]), converged=bool(stack.converged[p]))
            for p in range(P)]
        ratio[fallback] = np.nan
        return StackedValues(values, fits, fallback, ratio, ill, notes,
                             uncertified & ~fallback, lower, upper)

    def _refit_values(self, stack, weights, betas, stepped, lam, machine, skip):
        """Exact refit CV of every pair: (n, P) held-out values and (P,) which succeeded.

        Problem (p, i) is pair p without fold i, started at its order-inf step
        (``alpha' = -w / (2 lam)``, ``b' = b + beta / (2 lam)``) where ``stepped``, else
        at the full fit rescaled to the fold (``alpha n_p / n_i``). A fold holding none
        of the pair's rows keeps the full fit. Problems are fitted in chunks of at most
        :data:`REFIT_CHUNK_FLOATS` Gram values.
        """
        P, m = self.y.shape
        t = self.t
        retained = self.sizes[:, None] - self.fold_sizes  # (P, t)
        keep = self.valid[:, None, :] & ~self.member.transpose(0, 2, 1)  # (P, t, m)
        stepped_start = -weights.transpose(0, 2, 1) / (2 * lam)
        scaled_start = (stack.alpha[:, None, :] * (self.sizes[:, None] / np.where(
            retained > 0, retained, 1.0))[:, :, None])
        alpha0 = np.where(keep, np.where(stepped[:, None, None], stepped_start, scaled_start),
                          0.0)
        b0 = stack.intercept[:, None] + np.where(stepped[:, None], betas / (2 * lam), 0.0)
        need = (self.fold_sizes > 0) & ~skip[:, None]  # (P, t)
        pairs, folds = np.nonzero(need)
        coef = np.zeros((P, m, t))
        coef[:, :, :] = stack.alpha[:, :, None]  # folds without the pair's rows: full fit
        intercepts = np.repeat(stack.intercept[:, None], t, axis=1)
        ok = ~skip.copy()
        chunk = max(1, REFIT_CHUNK_FLOATS // (m * m))
        for start in range(0, pairs.size, chunk):
            p_c, i_c = pairs[start:start + chunk], folds[start:start + chunk]
            fits = fit_stacked(self.K_pairs[p_c], self.y[p_c], keep[p_c, i_c], lam,
                               machine.loss, machine.fit_intercept,
                               alpha0=alpha0[p_c, i_c], intercept0=b0[p_c, i_c])
            ok[p_c[fits.fallback]] = False
            coef[p_c, :, i_c] = fits.alpha
            intercepts[p_c, i_c] = fits.intercept
        sums = np.matmul(self.K_cross, coef)  # (P, n, t)
        own = sums[:, np.arange(self.n), self.fold_ids]  # (P, n): each point's own fold
        values = own + intercepts[:, self.fold_ids]
        return values.T, ok

    def _fold_steps(self, g, h, active, lam, intercept, skip):
        """Order-inf step of every (pair, fold): weights (P, m, t), betas (P, t), solved (P,).

        As :func:`kernelcv.criteria.bif.newton_step_weights`: column i of a pair's weights
        is ``g_R / n_i + y`` on fold i's retained rows R (y the fold system's solution on
        the retained active rows), zero on fold i; ``beta_i`` the bordered intercept.
        """
        P, m = g.shape
        t = self.t
        n = self.sizes
        retained = n[:, None] - self.fold_sizes  # (P, t) n_i
        safe_retained = np.where(retained > 0, retained, 1.0)
        weights = np.where(self.member, 0.0, (g[:, :, None] / safe_retained[:, None, :]))
        betas = np.zeros((P, t))
        use = active & ~skip[:, None]
        counts = use.sum(axis=1)
        a = int(counts.max()) if P else 0
        solved = np.ones(P, dtype=bool)
        if a == 0:
            return weights, betas, solved
        # K (d_i g) = K G - (K g) / n with G[j, i] = g_j / l_i on fold i
        safe_sizes = np.where(self.fold_sizes > 0, self.fold_sizes, 1.0)
        G = np.where(self.member, g[:, :, None] / safe_sizes[:, None, :], 0.0)
        K_g = batched_matvec(self.K_pairs, g) / n[:, None]
        K_dg = np.matmul(self.K_pairs, G) - K_g[:, :, None]
        eps = -self.fold_sizes / safe_retained
        Z = -K_dg * eps[:, None, :]  # (P, m, t)
        order = np.argsort(~use, axis=1, kind="stable")[:, :a]  # active rows first
        mask = np.arange(a)[None, :] < counts[:, None]  # (P, a)
        pairs = np.arange(P)[:, None]
        fold_a = np.where(mask, self.folds[pairs, order], -1)
        kept = mask[:, None, :] & (fold_a[:, None, :] != np.arange(t)[None, :, None])  # (P, t, a)
        h_a = np.where(mask, h[pairs, order], 1.0)
        shift = retained[:, :, None] * (2 * lam / h_a)[:, None, :]  # (P, t, a)
        Z_a = Z[pairs, order].transpose(0, 2, 1)  # (P, t, a)
        rhs = np.where(kept, Z_a, 0.0)[..., None]
        if intercept:
            rhs = np.concatenate([rhs, kept[..., None].astype(np.float64)], axis=3)
        # each pair's fold systems are real in its leading counts[p] rows: the pairs are
        # solved in up to three groups of similar counts, each at its largest
        X = np.zeros(rhs.shape)
        ok = np.ones((P, t), dtype=bool)
        for members in size_groups(counts, per_item=t):
            size = int(counts[members].max())
            if size:
                X[members, :, :size], ok[members] = self._fold_solve(
                    members, order[members, :size], fold_a[members, :size],
                    kept[members, :, :size], shift[members, :, :size],
                    rhs[members, :, :size])
        # A pair solves only when all its fold systems have a factor.
        solved = ok.all(axis=1)
        X = np.where(solved[:, None, None, None], X, 0.0)
        y_a = X[..., 0]
        if intercept:
            ones = X[..., 1]
            count = ones.sum(axis=2)
            gradient_sums = g.sum(axis=1)[:, None] - np.einsum("pm,pmt->pt", g, self.member)
            c = -gradient_sums / safe_retained
            with np.errstate(divide="ignore", invalid="ignore"):
                betas = np.where(count > 0, (c - y_a.sum(axis=2)) / count, 0.0)
            y_a = y_a + ones * betas[:, :, None]
        y_a = np.where(mask[:, None, :], y_a, 0.0)
        added = np.zeros((P, m, t))
        added[pairs, order] = y_a.transpose(0, 2, 1)
        weights += added
        return weights, betas, solved

    def _fold_solve(self, pairs, order, fold_a, kept, shift, rhs):
        """The fold systems of some pairs at one size a: (q, t, a, k) solutions, (q, t) ok.

        ``B[p, i]`` is the pair's active block (rows ``order``, padding and fold i's rows
        zeroed, identity on their diagonal) plus ``shift`` on the kept diagonal: the
        block once per fold, then each row's fold row and column zeroed.
        """
        q, t, a = kept.shape
        real = fold_a >= 0
        block = gather_blocks(self.K_pairs, order, pairs)  # (q, a, a)
        block *= real[:, :, None] & real[:, None, :]
        B = np.repeat(block[:, None], t, axis=1)
        p_real, j_real = np.nonzero(real)
        B[p_real, fold_a[p_real, j_real], j_real, :] = 0.0
        B[p_real, fold_a[p_real, j_real], :, j_real] = 0.0
        diagonal = np.arange(a)
        B[:, :, diagonal, diagonal] += np.where(kept, shift, 1.0)
        factors, ok = cholesky_factors(B.reshape(q * t, a, a))
        X = cholesky_solve_each(factors, rhs.reshape(q * t, a, -1), ok)
        return X.reshape(rhs.shape), ok.reshape(q, t)

    def _values(self, stack, weights, betas, lam):
        """(n, P) held-out values at every point (see the module notes, item 3)."""
        sums = np.matmul(self.K_cross, weights)  # (P, n, t)
        own = sums[:, np.arange(self.n), self.fold_ids]  # (P, n): each point's own fold
        beta_x = betas[:, self.fold_ids]  # (P, n)
        values = stack.intercept[:, None] + (beta_x - own) / (2 * lam)
        empty = self.fold_sizes[:, self.fold_ids] == 0  # the fold holds none of the pair
        if empty.any():
            full = batched_matvec(self.K_cross, stack.alpha) + stack.intercept[:, None]
            values = np.where(empty, full, values)
        return values.T

    def _uncertified(self, stack, weights, betas, values, lam, machine, skip, notes):
        """(P,) whether each pair's order-inf value fails the enclosure of
        :mod:`kernelcv.criteria.certificate` on its own rows, as the one-problem path
        judges it (the same note goes to ``notes``; pairs in ``skip`` are left to that
        path), and (n, P) bounds of every pair's value at every point (NaN for skipped
        pairs; the full fit's value at a fold holding none of the pair's rows).
        ``O(m^2 t + n m)`` per pair."""
        P = self.y.shape[0]
        flagged = np.zeros(P, dtype=bool)
        bound_lower = np.full((self.n, P), np.nan)
        bound_upper = np.full((self.n, P), np.nan)
        for p in np.flatnonzero(~skip):
            size = int(self.sizes[p])
            y, folds = self.y[p, :size], self.folds[p, :size]
            empty = self.fold_sizes[p, self.fold_ids] == 0  # no fold-out model: full fit
            lower, upper, _, at_lower, at_upper = fold_out_enclosure(
                self.K_pairs[p, :size, :size], y, folds, lam, machine.loss,
                machine.fit_intercept, -weights[p, :size] / (2 * lam),
                stack.intercept[p] + betas[p] / (2 * lam),
                extra=(self.K_cross[p, :, :size], np.where(empty, -1, self.fold_ids),
                       self.diag))
            bound_lower[:, p] = np.where(empty, values[:, p], at_lower)
            bound_upper[:, p] = np.where(empty, values[:, p], at_upper)
            bound_lower[self.index[p, :size], p] = lower  # the pair's own rows: tighter
            bound_upper[self.index[p, :size], p] = upper
            predictions = values[self.index[p, :size], p]
            error = float(heldout_losses(y, predictions, machine.metric).mean())
            bound = certified_error(predictions, y, lower, upper, machine.metric)
            if np.isfinite(error) and not within_tolerance(bound, error, machine.metric):
                flagged[p] = True
                notes[p].append(uncertified_note(bound, machine.metric))
        return flagged, bound_lower, bound_upper

    def _heldout_ratio(self, stack):
        """(P,) median over each pair's rows of ``|o_j| / |(K alpha)_j|`` (heldout_rounding)."""
        off = np.where(self.member, 0.0, stack.alpha[:, :, None])
        products = np.matmul(self.K_pairs, off)  # (P, m, t)
        outside = products[np.arange(products.shape[0])[:, None],
                           np.arange(products.shape[1])[None, :], np.maximum(self.folds, 0)]
        full = batched_matvec(self.K_pairs, stack.alpha)
        usable = self.valid & (full != 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            quotient = np.where(usable, np.abs(outside) / np.abs(full), np.nan)
        ratio = np.zeros(quotient.shape[0])
        some = usable.any(axis=1)
        if some.any():
            ratio[some] = row_nanmedian(quotient[some])
        return ratio

    def _rounding_check(self, p, stack, h, values, lam, machine, notes):
        """Pair p's full rounding check (:func:`kernelcv.criteria.evaluate._rounding_check`:
        ``dpocon`` on its fit's active system, then the held-out kernel masses), for a
        pair whose quick bound failed: whether its value is ill-conditioned (the note
        goes to ``notes``), or None when the system has no Cholesky factor (the
        one-problem path then adds jitter and says so). ``O(|Q|^3 + m^2)``."""
        size = int(self.sizes[p])
        K = self.K_pairs[p, :size, :size]
        y, folds = self.y[p, :size], self.folds[p, :size]
        active = np.flatnonzero(h[p, :size] > 0)
        M = K[np.ix_(active, active)]
        M[np.diag_indices_from(M)] += 2 * lam * size / h[p, active]
        factor, info = dpotrf(M, lower=1, clean=0)
        if info != 0:
            return None
        fit = FitResult(alpha=stack.alpha[p, :size], intercept=float(stack.intercept[p]),
                        decision=stack.decision[p, :size], n_iter=int(stack.n_iter[p]),
                        converged=True,
                        factor=Factorisation(active=active, cho=(factor, True)))
        predictions = values[self.index[p, :size], p]
        # the pair's folds keep the global numbers: some may hold none of its rows
        error = float(heldout_losses(y, predictions, machine.metric).mean())
        return _rounding_check(K, y, folds, lam, machine, fit, predictions, error, notes)[1]

    def _rounding_passes(self, stack, h, active, values, lam, intercept, machine):
        """(P,) whether each pair passes the quick rounding bound of the one-problem path.

        ``rel = u/2 kappa (n / n_min) max K_QQ / (n_min min D)`` with the quick
        ``kappa = |Q| (trace K_QQ + sum shift) / min shift``, ``shift = 2 lam n / h_Q``;
        the share of the pair's held-out values within ``rel * max|F|`` (doubled with an
        intercept) of zero must be within the 0-1 tolerance. A pair with no active point
        passes (no system solved).
        """
        n = self.sizes
        n_min = n - self.fold_sizes.max(axis=1)
        safe_h = np.where(active, h, 1.0)
        shift = np.where(active, 2 * lam * n[:, None] / safe_h, np.inf)
        min_shift = shift.min(axis=1)
        count = active.sum(axis=1)
        diag = np.diagonal(self.K_pairs, axis1=1, axis2=2)
        trace = np.where(active, diag + np.where(active, shift, 0.0), 0.0).sum(axis=1)
        top_diag = np.where(active, diag, 0.0).max(axis=1)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            kappa = count * trace / min_shift
            rel = (np.finfo(np.float64).eps / 2 * kappa * (n / n_min) * top_diag
                   / (min_shift * n_min / n))
        scale = np.abs(np.where(self.valid, stack.decision, 0.0)).max(axis=1) * (
            2.0 if intercept else 1.0)
        size = rel * scale
        own = np.take_along_axis(values.T, self.index, axis=1)  # (P, m) pair's own values
        share = (np.where(self.valid, np.abs(own) <= size[:, None], False).sum(axis=1)
                 / n)
        passes = share <= TOLERANCE[machine.metric]
        return np.where(count == 0, True, passes & np.isfinite(rel))
