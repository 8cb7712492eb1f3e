"""Stacks of small symmetric positive definite systems: factor once, solve with the factor.

The stacked Newton solver (:mod:`.stacked`) and the batched order-inf fold steps
(:mod:`kernelcv.criteria.stacked_pairs`, :func:`kernelcv.criteria.fold_out.solve_each_fold`)
solve stacks of tens to thousands of small systems ``M_p x_p = b_p``. Each needs to know
whether ``M_p`` is numerically positive definite (a Cholesky factor exists), and then the
solution. numpy factors a whole stack in one call (``np.linalg.cholesky``) but has no
batched triangular solve, so the solve used to be a second, LU factorisation of the stack
(``np.linalg.solve``: ``2 a^3 / 3`` flops per system on top of the Cholesky's ``a^3 / 3``).
:func:`cholesky_solve_each` instead calls LAPACK's ``dpotrs`` with each factor (``2 a^2``
flops per right-hand side): one Python-level call per system, which at these sizes costs
less than the LU it replaces. Measured, one thread: 55 systems of 48 rows (vowel's
one-vs-one pairs) 0.24 ms against 1.24 ms for ``np.linalg.solve``; 45 of 120 rows
1.4 ms against 4.6 ms; 15 of 36 rows 0.05 against 0.13 ms.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dpotrs

from ..exceptions import KernelCVError


def cholesky_factors(M):
    """Lower Cholesky factors of a stack of matrices, and which ones have one.

    Parameters
    ----------
    M : (P, a, a) symmetric matrices.

    Returns
    -------
    factors : (P, a, a) lower-triangular factors (zeros for a matrix without one).
    ok : (P,) bool, whether each matrix is numerically positive definite.

    Cost: one batched LAPACK call when every matrix has a factor (the usual case), else one
    call per matrix.
    """
    try:
        return np.linalg.cholesky(M), np.ones(M.shape[0], dtype=bool)
    except np.linalg.LinAlgError:
        factors = np.zeros_like(M)
        ok = np.ones(M.shape[0], dtype=bool)
        for p in range(M.shape[0]):
            try:
                factors[p] = np.linalg.cholesky(M[p])
            except np.linalg.LinAlgError:
                ok[p] = False
        return factors, ok


def cholesky_solve_each(factors, B, ok=None):
    """``M_p^-1 B_p`` for every system p with a factor from :func:`cholesky_factors`.

    Parameters
    ----------
    factors : (P, a, a) lower factors; B : (P, a, k) right-hand sides.
    ok : (P,) bool or None (all): systems to solve; the others get zeros.

    Returns
    -------
    (P, a, k) solutions. Cost: ``2 a^2 k`` flops and one ``dpotrs`` call per system.
    """
    X = np.zeros_like(B)
    which = range(B.shape[0]) if ok is None else np.flatnonzero(ok)
    for p in which:
        # numpy's C-ordered lower factor L is, read in Fortran order, the upper factor
        # L^T: LAPACK takes it without the copy it makes of a C-ordered array (the same
        # triangular solves, the same numbers; 15-30 % less time per call)
        x, info = dpotrs(factors[p].T, B[p], lower=0, overwrite_b=0)
        if info != 0:
            raise KernelCVError(f"LAPACK dpotrs failed (info {info})")
        X[p] = x
    return X


# Grouping the systems of a padded stack by size (:func:`size_groups`): one
# more group costs about as much as this many flops of factorisation (the overhead of a
# batched call, ~20 us at ~3 GFlop/s on one core), so a group is split off only where the
# padding it saves is larger.
GROUP_OVERHEAD_FLOPS = 6e4


def size_groups(sizes, per_item=1) -> list[np.ndarray]:
    """Items of a padded stack of systems grouped by size, each group to be solved at its
    largest size (index arrays): item i has ``per_item`` systems of size ``sizes[i]``
    (e.g. one per fold), real in their leading rows and identity beyond.

    The sorted sizes are cut into at most three runs where that minimises
    ``per_item sum_g count_g max_g^3 / 3`` plus :data:`GROUP_OVERHEAD_FLOPS` per group
    (every pair of cut points tried at once: ``O(u^2)`` numbers for u distinct sizes, in a
    few numpy calls). One-vs-one pairs of unequal classes: glass's fold systems ~2.5 times
    fewer flops than all at the largest pair's size.
    """
    sizes = np.asarray(sizes)
    distinct = np.unique(sizes)
    u = distinct.size
    cube = per_item * distinct.astype(np.float64) ** 3 / 3
    upto = np.searchsorted(np.sort(sizes), distinct, side="right")  # systems <= each size
    # cut after distinct[i] and after distinct[j], i <= j (i == j: one cut; j = u - 1: none)
    low = upto[:, None] * cube[:, None]
    middle = (upto[None, :] - upto[:, None]) * cube[None, :]
    high = (sizes.size - upto[None, :]) * cube[-1]
    first, second = np.arange(u)[:, None], np.arange(u)[None, :]
    groups = 1 + (first < u - 1) + (second > first) * (second < u - 1)
    cost = np.where(first <= second, low + middle + high + groups * GROUP_OVERHEAD_FLOPS,
                    np.inf)
    i, j = np.unravel_index(int(np.argmin(cost)), cost.shape)
    members, floor = [], -np.inf
    for cut in sorted({int(i), int(j), u - 1}):
        members.append(np.flatnonzero((sizes > floor) & (sizes <= distinct[cut])))
        floor = distinct[cut]
    return members
