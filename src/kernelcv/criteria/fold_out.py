"""Solves of every fold-out active system from one factorisation of the full one.

The order-inf step of the BIF criterion (:func:`kernelcv.criteria.bif.newton_step_weights`)
solves, for every fold i, the active system ``K_{A_i A_i} + n_i D`` on the fold's retained
active points. :class:`FoldOutSolver` gets all of them from one Cholesky factorisation of
the full active system and the inverse of its triangular factor (Schur complement on each
fold's block); :func:`shared_factorisation_pays`
says when that beats one Cholesky factorisation per fold; below that size
:func:`solve_each_fold` solves all the small fold systems in one batched LAPACK call. The
first two are re-exported by :mod:`kernelcv.criteria.bif`.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack
from scipy.linalg.blas import dtrmm

from ..machines.batched_linalg import cholesky_factors, cholesky_solve_each
from ..machines.solver import cholesky_solve, cholesky_with_jitter

# Below this many active points the per-fold factorisations are cheaper than the Python
# bookkeeping of the shared one (measured: equal at about 100 on the development machine).
SHARED_FACTORISATION_MIN_ACTIVE = 100
# solve_each_fold stacks t systems of |A| x |A| and spends t |A|^3 flops (per-fold
# Cholesky: about a third of that). It pays below about 48 active points, where a
# per-fold loop is Python overhead (measured, 10 folds: 15 active points 0.25 vs 0.44 ms,
# 39 points 0.40 vs 0.46 ms, 94 points 2.2 vs 1.4 ms).
BATCHED_MAX_ACTIVE = 48


def solve_each_fold(K, active, diag, fold_of_active, retained_sizes, V):
    """Every fold-out active system solved in one batched call, or None if one is not SPD.

    Fold i's system is ``B_i = K_RR + n_i D_R`` on its retained active points R (``D =
    diag(diag)``, ``n_i = retained_sizes[i]``). To give all folds one shape, fold i's
    held-out active rows and columns are replaced by those of the identity (and its
    right-hand sides set to 0 there), which decouples them: the stacked ``(t, |A|, |A|)``
    systems have the solutions of the ``B_i`` on R and exact zeros on the fold.

    Parameters
    ----------
    K : (n, n) Gram matrix; ``active`` (|A|,) its active rows.
    diag : (|A|,) the diagonal ``D`` (``2 lam / h_A``).
    fold_of_active : (|A|,) fold id of each active row.
    retained_sizes : (t,) ``n_i``.
    V : (t, |A|, k) right-hand sides (rows of fold i ignored for fold i).

    Returns
    -------
    X : (t, |A|, k) the solutions, zero on each fold's own rows; None when a stacked
        system is not numerically positive definite (the caller then factors each fold
        with :func:`~kernelcv.machines.solver.cholesky_with_jitter`, which adds jitter and
        warns).

    Cost: ``t |A|^3 / 3`` flops for one batched Cholesky call (the definiteness check),
    then ``t`` triangular solves with its factors (:mod:`kernelcv.machines.batched_linalg`).
    """
    t, m = retained_sizes.shape[0], active.shape[0]
    kept = fold_of_active[None, :] != np.arange(t)[:, None]  # (t, |A|) retained rows
    B = K[np.ix_(active, active)][None, :, :] * (kept[:, :, None] & kept[:, None, :])
    on_diagonal = np.arange(m)
    B[:, on_diagonal, on_diagonal] += np.where(kept, retained_sizes[:, None] * diag[None, :],
                                               1.0)
    factors, ok = cholesky_factors(B)
    if not ok.all():
        return None
    return cholesky_solve_each(factors, np.where(kept[:, :, None], V, 0.0))


def shared_factorisation_pays(n_active, retained_active, retained_sizes=None) -> bool:
    """Whether one shared factorisation beats one Cholesky per fold (flop count).

    Per fold: ``sum_i |A_i|^3 / 3``; shared: ``(2/3 + 1/(2t)) |A|^3`` (Cholesky ``|A|^3 /
    3``, the triangular inverse ``|A|^3 / 3``, the t fold blocks of the inverse, see
    :class:`FoldOutSolver`) plus the direct factorisations of the folds whose retained
    size ``n_i`` differs from the most common one (``retained_sizes``). Kept when it
    needs fewer flops: at t = 10 equal folds the per-fold count is 3.1 times the shared
    one, at t = 5 1.1 times (shared), at t = 4 0.7 and t = 2 0.1 (per fold). At t = 5 the
    shared solver was measured 0-16 % faster (5,000-row subsamples of w8a and a9a, 1 thread,
    |A| = 129-3,879: w8a |A| = 1,807 0.253 -> 0.215 s, a9a |A| = 3,744 1.34 -> 1.22 s; the
    per-fold path also gathers t blocks of K), so no margin is asked of it (it was 1.3).
    """
    if n_active < SHARED_FACTORISATION_MIN_ACTIVE:
        return False
    cubes = np.asarray(retained_active, dtype=np.float64) ** 3 / 3.0
    t = max(cubes.size, 1)
    shared = (2.0 / 3.0 + 0.5 / t) * float(n_active) ** 3
    if retained_sizes is not None:
        sizes = np.asarray(retained_sizes)
        values, counts = np.unique(sizes, return_counts=True)
        shared += float(cubes[sizes != values[np.argmax(counts)]].sum())
    return float(cubes.sum()) > shared


class FoldOutSolver:
    """Solves of every fold-out active system from one factorisation of the full one.

    For fold i with active rows S (retained R = A minus S) and retained size ``n_i`` the
    system is ``B_i = K_RR + n_i D_R``. With ``M = K_AA + m D = L L'`` for one reference
    size m (the most common ``n_i``) and ``W = L^-1 E_S`` (the columns S of ``L^-1``)::

        (K_RR + m D_R)^-1 v = [L^-T (u + W mu)]_R,  u = L^-1 v,  mu = -(W' W)^-1 W' u

    (Schur complement: ``W' W = (M^-1)_SS``, and ``mu`` makes the solution vanish on S).
    The active points are ordered by fold, so each fold's W is zero above its block and
    ``W' W`` costs ``(|A| - s_i) |S|^2`` (s_i: the block's first row). A fold of another
    size (``n_i != m``: stratified folds differ by one sample when t does not divide n)
    is factored directly (Cholesky of ``B_i``, once per fold and solver). Cost:
    ``|A|^3 / 3`` (Cholesky) + ``|A|^3 / 3`` (``L^-1``) + about ``|A|^3 / (2 t)`` (the
    blocks ``W' W`` and their factors) once, then ``2 |A|^2`` per right-hand side (two
    triangular products for all folds at once) plus ``O(|A| |S|)`` per column for the
    Schur correction; ``|A_i|^3 / 3`` per fold of another size. (The explicit inverse
    ``M^-1``, ``2 |A|^3 / 3`` more than the Cholesky factor, is never formed.)

    ``usable`` is False when the reference system needed jitter to factor; the caller
    then solves each fold directly.
    """

    def __init__(self, K, active, diag, fold_of_active, retained_sizes):
        self.fold_of_active = fold_of_active
        self.retained_sizes = np.asarray(retained_sizes, dtype=np.float64)
        t = retained_sizes.shape[0]
        values, counts = np.unique(retained_sizes, return_counts=True)
        self.reference = float(values[np.argmax(counts)])
        self.delta = retained_sizes - self.reference
        # positions of the active points ordered by fold, and each fold's block there
        self._order = np.argsort(fold_of_active, kind="stable")
        ends = np.cumsum(np.bincount(fold_of_active, minlength=t))
        self._blocks = list(zip(ends - np.bincount(fold_of_active, minlength=t), ends,
                                strict=True))
        rows = active[self._order]
        self._diag = diag[self._order]
        self._M = K[rows[:, None], rows]
        self._M[np.diag_indices_from(self._M)] += self.reference * self._diag
        cho, jitter = cholesky_with_jitter(self._M)
        self.usable = jitter == 0
        if not self.usable:
            return
        inverse, info = lapack.dtrtri(cho[0], lower=1, overwrite_c=1)
        if info != 0:
            self.usable = False
            return
        self._inverse = inverse  # L^-1 in the lower triangle (the upper one is not used)
        # Per fold of the reference size: its W (rows from the block's start) and the
        # Cholesky factor of W' W, with LAPACK called directly.
        self._schur = [self._fold_block(start, end) if d == 0 else None
                       for (start, end), d in zip(self._blocks, self.delta, strict=True)]
        self._direct: dict[int, tuple] = {}

    def _fold_block(self, start, end):
        """``(W, chol(W' W))`` for the block ``start:end``: W is ``L^-1[start:, start:end]``
        (lower triangular on its first rows); None for an empty block."""
        if end == start:
            return None
        W = self._inverse[start:, start:end].copy()
        W[:end - start] = np.tril(W[:end - start])
        c, info = lapack.dpotrf(W.T @ W, lower=1, clean=0)
        if info != 0:  # W' W is SPD unless rounding: a solve without the factor then
            return W, None, np.linalg.inv(W.T @ W)
        return W, c, None

    def retained(self, i):
        """Positions within the active set of fold i's retained active points."""
        return np.flatnonzero(self.fold_of_active != i)

    def _apply_reference(self, V, folds):
        """Column c of V (rows ordered by fold, zero on its fold's rows) ->
        ``(K_RR + m D_R)^-1 V_R``, zero on S.

        ``folds[c]`` is the fold of column c. One triangular product ``L^-1 V`` for all
        columns, the Schur correction per fold, one product with ``L^-T``.
        """
        U = dtrmm(1.0, self._inverse, V, lower=1)
        for i in np.unique(folds):
            block = self._schur[i]
            if block is None:
                continue
            W, c, inverse = block
            start, end = self._blocks[i]
            columns = np.flatnonzero(folds == i)
            right = W.T @ U[start:, columns]
            mu = (lapack.dpotrs(c, right, lower=1)[0] if c is not None
                  else inverse @ right)
            U[start:, columns] -= W @ mu
        X = dtrmm(1.0, self._inverse, U, lower=1, trans_a=1)
        for i in np.unique(folds):
            start, end = self._blocks[i]
            X[start:end, folds == i] = 0.0
        return X

    def _direct_solve(self, i, V):
        """``B_i^-1 V`` (rows ordered by fold) on fold i's retained positions, from its own
        Cholesky factor."""
        start, end = self._blocks[i]
        kept = np.r_[0:start, end:self._M.shape[0]]
        if kept.size == 0:
            return kept, np.zeros((0, V.shape[1]))
        if i not in self._direct:
            M = self._M[np.ix_(kept, kept)]
            M[np.diag_indices_from(M)] += self.delta[i] * self._diag[kept]
            self._direct[i] = cholesky_with_jitter(M)[0]
        return kept, cholesky_solve(self._direct[i], V[kept])

    def solve(self, V, folds):
        """``B_i^-1`` applied to each column of the (|A|, k) matrix V, i = ``folds[c]``.

        The rows of a column's own fold are ignored; the solutions come back in the same
        layout, zero there. Columns of the reference size use the Schur complement;
        columns of a fold of another size its own factorisation.
        """
        folds = np.asarray(folds)
        V = np.where(self.fold_of_active[:, None] == folds[None, :], 0.0, V)[self._order]
        odd = self.delta[folds] != 0
        X = np.zeros_like(V)
        same = np.flatnonzero(~odd)
        if same.size:
            X[:, same] = self._apply_reference(np.asfortranarray(V[:, same]), folds[same])
        for i in np.unique(folds[odd]):
            columns = np.flatnonzero(folds == i)
            kept, solution = self._direct_solve(int(i), V[:, columns])
            X[np.ix_(kept, columns)] = solution
        out = np.empty_like(X)
        out[self._order] = X
        return out
