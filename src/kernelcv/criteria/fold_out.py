"""Solves of every fold-out active system from one factorisation of the full one.

The order-inf step of the BIF criterion (:func:`kernelcv.criteria.bif.newton_step_weights`)
solves, for every fold i, the active system ``K_{A_i A_i} + n_i D`` on the fold's retained
active points. :class:`FoldOutSolver` gets all of them from one Cholesky factorisation and
inverse of the full active system (Schur complement); :func:`shared_factorisation_pays`
says when that beats one Cholesky factorisation per fold; below that size
:func:`solve_each_fold` solves all the small fold systems in one batched LAPACK call. The
first two are re-exported by :mod:`kernelcv.criteria.bif`.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

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

    Cost: ``t |A|^3`` flops (Cholesky as the definiteness check, then LU) in two LAPACK
    loops without Python work per fold; for systems below a hundred rows that overhead is
    what a per-fold loop costs.
    """
    t, m = retained_sizes.shape[0], active.shape[0]
    kept = fold_of_active[None, :] != np.arange(t)[:, None]  # (t, |A|) retained rows
    B = K[np.ix_(active, active)][None, :, :] * (kept[:, :, None] & kept[:, None, :])
    on_diagonal = np.arange(m)
    B[:, on_diagonal, on_diagonal] += np.where(kept, retained_sizes[:, None] * diag[None, :],
                                               1.0)
    try:
        np.linalg.cholesky(B)
    except np.linalg.LinAlgError:
        return None
    return np.linalg.solve(B, np.where(kept[:, :, None], V, 0.0))


def shared_factorisation_pays(n_active, retained_active, retained_sizes=None) -> bool:
    """Whether one shared factorisation beats one Cholesky per fold (flop count).

    Per fold: ``sum_i |A_i|^3 / 3``; shared: ``|A|^3`` (Cholesky ``|A|^3 / 3`` and inverse
    ``2 |A|^3 / 3``) plus the direct factorisations of the folds whose retained size
    ``n_i`` differs from the most common one (``retained_sizes``; see
    :class:`FoldOutSolver`). At t = 10 equal folds the ratio is 2.4 (1.2 with four folds
    one sample larger: kept per fold); at t = 5 (0.85) and t = 2 (0.08) the per-fold
    solves are cheaper and are kept.
    """
    if n_active < SHARED_FACTORISATION_MIN_ACTIVE:
        return False
    cubes = np.asarray(retained_active, dtype=np.float64) ** 3 / 3.0
    shared = float(n_active) ** 3
    if retained_sizes is not None:
        sizes = np.asarray(retained_sizes)
        values, counts = np.unique(sizes, return_counts=True)
        shared += float(cubes[sizes != values[np.argmax(counts)]].sum())
    return float(cubes.sum()) > 1.3 * shared


class FoldOutSolver:
    """Solves of every fold-out active system from one factorisation of the full one.

    For fold i with active rows S (retained R = A minus S) and retained size ``n_i`` the
    system is ``B_i = K_RR + n_i D_R``. With ``G = (K_AA + m D)^-1`` for one reference
    size m (the most common ``n_i``)::

        (K_RR + m D_R)^-1 v = G_RR v - G_RS G_SS^-1 G_SR v        (Schur complement)

    A fold of another size (``n_i != m``: stratified folds differ by one sample when t
    does not divide n) is factored directly (Cholesky of ``B_i``, once per fold and
    solver). Cost: ``|A|^3 / 3`` (Cholesky) + ``2 |A|^3 / 3`` (inverse) once, then per
    right-hand side and fold ``O(|A|^2)`` (one matrix product with G for all folds at
    once) plus ``O(|A| |S|)`` for the Schur correction, whose matrix ``G_{:,S} G_SS^-1``
    is formed once per fold (``O(|A| |S|^2)``); ``|A_i|^3 / 3`` per fold of another size.

    ``G`` is None when the reference system needed jitter to factor; the caller then
    solves each fold directly.
    """

    def __init__(self, K, active, diag, fold_of_active, retained_sizes):
        self.diag = diag
        self.fold_of_active = fold_of_active
        self.retained_sizes = np.asarray(retained_sizes, dtype=np.float64)
        t = retained_sizes.shape[0]
        values, counts = np.unique(retained_sizes, return_counts=True)
        self.reference = float(values[np.argmax(counts)])
        self.delta = retained_sizes - self.reference
        self._K_AA = K[np.ix_(active, active)]
        M = self._K_AA.copy()
        M[np.diag_indices_from(M)] += self.reference * diag
        cho, jitter = cholesky_with_jitter(M)
        if jitter > 0:
            self.G = None
            return
        G, info = lapack.dpotri(cho[0], lower=1, overwrite_c=1)
        if info != 0:
            self.G = None
            return
        # dpotri fills the lower triangle only: mirror it (one pass)
        G = np.where(np.tri(G.shape[0], dtype=bool), G, G.T)
        self.G = G
        self._held = [np.flatnonzero(fold_of_active == i) for i in range(t)]
        # Per fold of the reference size the (|A|, |S|) matrix G_{:,S} G_SS^-1 of its
        # Schur correction, with LAPACK called directly (scipy's cho_factor/cho_solve
        # wrappers cost more than these |S| x |S| factorisations).
        self._corrections = [self._correction(G, s) if d == 0 else None
                             for s, d in zip(self._held, self.delta, strict=True)]
        self._direct: dict[int, tuple] = {}

    @staticmethod
    def _correction(G, held):
        """``G_{:,S} G_SS^-1`` (|A|, |S|) for the held-out active positions S."""
        if held.size == 0:
            return None
        c, info = lapack.dpotrf(G[np.ix_(held, held)], lower=1, clean=0)
        if info != 0:  # G_SS is a principal block of an SPD inverse: SPD unless rounding
            return np.linalg.solve(G[np.ix_(held, held)], G[held]).T
        x, _ = lapack.dpotrs(c, G[held], lower=1)
        return x.T

    def retained(self, i):
        """Positions within the active set of fold i's retained active points."""
        return np.flatnonzero(self.fold_of_active != i)

    def _apply_reference(self, V, folds):
        """Column c of V (zero on its fold's rows) -> ``(K_RR + m D_R)^-1 V_R``, zero on S.

        ``folds[c]`` is the fold of column c. One product ``G V`` for all columns, then
        per column ``U_R - G_RS (G_SS^-1 U_S)``.
        """
        U = self.G @ V
        for c, i in enumerate(folds):
            held = self._held[i]
            if held.size:
                U[:, c] -= self._corrections[i] @ U[held, c]
                U[held, c] = 0.0
        return U

    def _direct_solve(self, i, V):
        """``B_i^-1 V`` on fold i's retained positions from its own Cholesky factor."""
        kept = self.retained(i)
        if kept.size == 0:
            return kept, np.zeros((0, V.shape[1]))
        if i not in self._direct:
            M = self._K_AA[np.ix_(kept, kept)]
            M[np.diag_indices_from(M)] += self.retained_sizes[i] * self.diag[kept]
            self._direct[i] = cholesky_with_jitter(M)[0]
        return kept, cholesky_solve(self._direct[i], V[kept])

    def solve(self, V, folds):
        """``B_i^-1`` applied to each column of the (|A|, k) matrix V, i = ``folds[c]``.

        The rows of a column's own fold are ignored; the solutions come back in the same
        layout, zero there. Columns of the reference size use the Schur complement of G;
        columns of a fold of another size its own factorisation.
        """
        folds = np.asarray(folds)
        V = np.where(self.fold_of_active[:, None] == folds[None, :], 0.0, V)
        odd = self.delta[folds] != 0
        X = np.zeros_like(V)
        same = np.flatnonzero(~odd)
        if same.size:
            X[:, same] = self._apply_reference(V[:, same], folds[same])
        for i in np.unique(folds[odd]):
            columns = np.flatnonzero(folds == i)
            kept, solution = self._direct_solve(int(i), V[:, columns])
            X[np.ix_(kept, columns)] = solution
        return X
