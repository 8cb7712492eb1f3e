"""Chunk functions mapped over the training rows, their results added (map-reduce).

The feature-space CV of the square loss needs only sums over rows
(:mod:`kernelcv.random_features.sums`). :class:`LocalRows` computes them here, a chunk
of rows at a time, from a row source of :mod:`kernelcv.reading.rowchunks` (an array in memory, a
memory-mapped array or a file read as it goes), so the peak memory is that of one chunk
plus the sums.

A chunk function has the form ``function(X_chunk, y_chunk, fold_chunk, out=None, **kw)``
and returns its sums added to ``out`` (a list of arrays or of
:class:`~kernelcv.random_features.sums.FoldSums`).
"""

from __future__ import annotations

import numpy as np


class LocalRows:
    """The training rows in this process.

    Parameters
    ----------
    source : a row source (:mod:`kernelcv.reading.rowchunks`).
    y : (n,) the targets as the CV uses them (+-1 for a classifier).
    fold_ids : (n,) fold ids 0..t-1.
    fold_major : read the rows of fold 0 first, then fold 1, ... (default: when the
        source is in memory, so each chunk holds one fold); else in stored order.
    n_folds : t (default: the largest fold id + 1).
    """

    def __init__(self, source, y, fold_ids, fold_major=None, n_folds=None):
        self.source = source
        self.y = np.asarray(y, dtype=np.float64)
        self.fold_ids = np.asarray(fold_ids)
        self.n_folds = int(self.fold_ids.max()) + 1 if n_folds is None else int(n_folds)
        self.fold_major = (getattr(source, "in_memory", True) if fold_major is None
                           else fold_major)
        self.passes = 0

    @property
    def n_rows(self) -> int:
        return self.source.n_rows

    @property
    def n_dims(self) -> int:
        return self.source.n_dims

    def fold_counts(self) -> np.ndarray:
        """Rows per fold."""
        return np.bincount(self.fold_ids, minlength=self.n_folds)

    def take(self, rows):
        """The given rows of X (Nystroem's landmarks)."""
        return self.source.take(rows)

    def _chunks(self, chunk_rows):
        if not self.fold_major:
            yield from self.source.chunks(chunk_rows)
            return
        for fold in range(self.n_folds):
            yield from self.source.chunks(chunk_rows, rows=np.flatnonzero(self.fold_ids == fold))

    def map_reduce(self, function, chunk_rows: int, **kwargs):
        """``function`` over every chunk of rows, each result added to the previous."""
        self.passes += 1
        out = None
        for rows, X, _ in self._chunks(chunk_rows):
            out = function(X, self.y[rows], self.fold_ids[rows], out=out, **kwargs)
        return out
