"""Products with the Gram matrix that read only the rows they need.

Most products of BIF's order-inf step and of its certificate multiply the n x n Gram
matrix K by an (n, k) matrix of coefficients that is zero on most rows: an SVM's loss
derivatives, and so its coefficients and fold-out steps, vanish at every point beyond
the margin. K is symmetric, so ``K V = K[:, R] V[R] = K[R]' V[R]`` with R the non-zero
rows of V: a gather of |R| contiguous rows of K and one product, ``|R| n k`` flops and
``|R| n`` values read instead of ``n^2``. At 5,000 rows one full pass over K (200 MB)
costs 30-40 ms on one core whatever k; with R a tenth of the rows the gathered product
costs 6-7 ms, with a quarter 18 ms, with 45 % 33 ms (measured, k = 5 and 7, one
thread), hence :data:`GATHER_MAX_SHARE`. A product with one vector (BLAS level 2) reads
K at full memory speed, 8-10 ms, and gathering pays only below about a sixth of the rows
(a tenth: 2.8 ms, a quarter: 12 ms): :data:`GATHER_MAX_SHARE_VECTOR`.

The result equals ``K' V``; for the Gram matrices of this package (symmetric up to
rounding) it differs from ``K V`` by rounding only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GATHER_MAX_SHARE", "GATHER_MAX_SHARE_VECTOR", "GATHER_MIN_ROWS", "kernel_times",
           "nonzero_rows", "rows_times"]

# Up to this share of non-zero rows a product gathers K's rows; above it, one full pass.
GATHER_MAX_SHARE = 0.35
# The same for a product with one vector.
GATHER_MAX_SHARE_VECTOR = 0.15
# Below this many rows K is read whole: the product is a few microseconds and the index
# work of a gather costs more (one thread, a tenth of the rows non-zero: 60 rows 7.5
# against 23 us, 150 rows 12 against 37 us, 300 rows about even, 600 rows 115 against 83).
GATHER_MIN_ROWS = 400


def nonzero_rows(V) -> np.ndarray:
    """Indices of the rows of ``V`` ((n,) or (n, k)) holding a non-zero (or NaN) value."""
    V = np.asarray(V)
    return np.flatnonzero(V != 0 if V.ndim == 1 else np.any(V != 0, axis=1))


def kernel_times(K, V, rows=None) -> np.ndarray:
    """``K V`` for a symmetric ``K`` (n, n), reading only the rows of K where ``V`` (n,)
    or (n, k) is non-zero (``rows``, when the caller knows them: a superset is fine).

    Cost: ``|R| n k`` flops after a gather of ``|R|`` rows of K; one full product when
    more than :data:`GATHER_MAX_SHARE` of the rows are non-zero
    (:data:`GATHER_MAX_SHARE_VECTOR` for one column) or K has fewer than
    :data:`GATHER_MIN_ROWS` rows.
    """
    n = K.shape[0]
    if n < GATHER_MIN_ROWS:
        return K @ V
    rows = nonzero_rows(V) if rows is None else rows
    one_column = np.ndim(V) == 1 or np.shape(V)[1] == 1
    if rows.size > (GATHER_MAX_SHARE_VECTOR if one_column else GATHER_MAX_SHARE) * n:
        return K @ V
    if rows.size == 0:
        return np.zeros((n,) + np.shape(V)[1:])
    return K[rows].T @ V[rows]


def rows_times(K, rows, V) -> np.ndarray:
    """``(K V)[rows]``: the rows ``rows`` of ``K V`` only, reading the block of K on those
    rows and on the non-zero rows of ``V``. Cost: ``|rows| |R| k`` flops."""
    if K.shape[0] < GATHER_MIN_ROWS:
        return K[rows] @ V
    inner = nonzero_rows(V)
    if inner.size > GATHER_MAX_SHARE * K.shape[0]:
        return K[rows] @ V
    return K[np.ix_(rows, inner)] @ V[inner]
