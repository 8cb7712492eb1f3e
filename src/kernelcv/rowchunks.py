"""Training rows in chunks: in-memory arrays, memory-mapped arrays and (streamed) files.

A *row source* hands out the rows of a data set a chunk at a time, so that a computation
that needs only sums over rows (the feature-space CV of
:mod:`kernelcv.criteria.feature_sums`) never holds the whole matrix X:

:class:`ArraySource`
    A dense array (a ``numpy.memmap`` or ``numpy.load(..., mmap_mode="r")`` array too:
    only the chunk's pages are read) or a CSR matrix already in memory.

Every source has ``n_rows``, ``n_dims``, ``labels()`` (the n targets, as stored),
``chunks(chunk_rows, rows=None)`` yielding ``(row_indices, X_chunk, y_chunk)`` and
``take(rows)`` (the given rows, in the given order: Nystroem's landmarks).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .exceptions import KernelCVError

__all__ = ["ArraySource", "chunk_rows_for", "row_bytes"]

#: Bytes of chunk temporaries a pass aims at (per chunk: the rows and a few c x D arrays).
CHUNK_BYTES = 32 * 2**20


def chunk_rows_for(n_features: int, row_bytes: float, n_arrays: int = 4) -> int:
    """Rows per chunk so that the chunk's rows (``row_bytes`` each) and ``n_arrays``
    float64 arrays of c x D stay near :data:`CHUNK_BYTES` (at least 64 rows)."""
    per_row = 8 * n_arrays * max(int(n_features), 1) + max(float(row_bytes), 8.0)
    return max(64, int(CHUNK_BYTES // per_row))


def row_bytes(X) -> float:
    """Bytes of one row of X as a chunk holds it: 8 d dense, about 12 per stored value
    (plus a row pointer) sparse."""
    if sp.issparse(X):
        return 12.0 * X.nnz / max(X.shape[0], 1) + 8.0
    return 8.0 * X.shape[1]


class ArraySource:
    """Rows of an in-memory (or memory-mapped) matrix and its targets.

    Parameters
    ----------
    X : ndarray, numpy.memmap or CSR matrix, shape (n, d)
    y : array of n targets
    name : how errors name the data (default "X")
    """

    def __init__(self, X, y, name="X"):
        if X.ndim != 2:
            raise KernelCVError(f"{name} must be 2-D, got shape {X.shape}")
        self.X = sp.csr_matrix(X) if sp.issparse(X) and X.format != "csr" else X
        self.y = np.asarray(y)
        if self.y.shape[0] != X.shape[0]:
            raise KernelCVError(f"{name} has {X.shape[0]} rows but y has {self.y.shape[0]} "
                                "values")
        self.name = name

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_dims(self) -> int:
        return int(self.X.shape[1])

    @property
    def sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def row_bytes(self) -> float:
        return row_bytes(self.X)

    def labels(self) -> np.ndarray:
        return self.y

    def chunks(self, chunk_rows: int, rows=None):
        """``(row_indices, X_chunk, y_chunk)`` for consecutive row chunks, or for chunks
        of the given ``rows`` (an index array, e.g. the rows of one fold)."""
        n = self.n_rows
        if rows is None:
            for start in range(0, n, chunk_rows):
                stop = min(start + chunk_rows, n)
                yield (np.arange(start, stop), _dense_rows(self.X[start:stop]),
                       self.y[start:stop])
            return
        for start in range(0, len(rows), chunk_rows):
            part = rows[start:start + chunk_rows]
            yield part, _dense_rows(self.X[part]), self.y[part]

    def take(self, rows):
        """The given rows (dense rows as float64, CSR rows as CSR), in the given order."""
        return _dense_rows(self.X[np.asarray(rows)])


def _dense_rows(block):
    """Sparse chunks stay CSR; dense chunks become float64 in memory (memmap: a copy)."""
    if sp.issparse(block):
        return sp.csr_matrix(block, dtype=np.float64)
    return np.asarray(block, dtype=np.float64)
