"""Training rows in chunks: in-memory arrays, memory-mapped arrays and (streamed) files.

A *row source* hands out the rows of a data set a chunk at a time, so that a computation
that needs only sums over rows (the feature-space CV of
:mod:`kernelcv.random_features.sums`) never holds the whole matrix X:

:class:`ArraySource`
    A dense array (a ``numpy.memmap`` or ``numpy.load(..., mmap_mode="r")`` array too:
    only the chunk's pages are read, and it is read in order) or a CSR matrix.
:class:`NpzSource`
    The ``X`` of an ``.npz`` archive (``numpy.savez``, compressed or not), read from the
    archive member a chunk of rows at a time; ``y`` is read whole.
:class:`~.textchunks.SvmlightSource`, :class:`~.textchunks.CsvSource`
    Text files parsed a block of lines at a time (:func:`open_rows` picks by suffix).
:class:`DaskArraySource`
    A ``dask.array`` X by row blocks (:func:`as_source` wraps one).

Every source has ``is_row_source``, ``n_rows``, ``n_dims``, ``shape``, ``sparse``,
``row_bytes`` (bytes of one row in a chunk), ``in_memory`` (False: read in stored
order), ``labels()`` (the n targets, as stored), ``chunks(chunk_rows, rows=None)``
yielding ``(row_indices, X_chunk, y_chunk)`` and ``take(rows)`` (the given rows, in the
given order: Nystroem's landmarks). Chunks are checked as they are read: a NaN or
infinite value is an error naming where it is.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..exceptions import KernelCVError
from .files import file_format
from .textchunks import CsvSource, open_svmlight_files

__all__ = ["ArraySource", "DaskArraySource", "NpzSource", "as_source", "chunk_rows_for",
           "is_dask_array", "is_row_source", "open_rows", "row_bytes"]

#: Bytes of chunk temporaries a pass aims at (per chunk: the rows and a few c x D arrays).
CHUNK_BYTES = 32 * 2**20


def chunk_rows_for(n_features: int, row_bytes: float, n_arrays: int = 4) -> int:
    """Rows per chunk so that the chunk's rows (``row_bytes`` each) and ``n_arrays``
    float64 arrays of c x D stay near :data:`CHUNK_BYTES` (at least 64 rows)."""
    per_row = 8 * n_arrays * max(int(n_features), 1) + max(float(row_bytes), 8.0)
    return max(64, int(CHUNK_BYTES // per_row))


def is_row_source(X) -> bool:
    """Whether X is a row source (rather than an array)."""
    return bool(getattr(X, "is_row_source", False))


def row_bytes(X) -> float:
    """Bytes of one row of X as a chunk holds it: 8 d dense, about 12 per stored value
    (plus a row pointer) sparse."""
    if is_row_source(X):
        return float(X.row_bytes)
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

    is_row_source = True

    def __init__(self, X, y, name="X"):
        if X.ndim != 2:
            raise KernelCVError(f"{name} must be 2-D, got shape {X.shape}")
        self.X = sp.csr_matrix(X) if sp.issparse(X) and X.format != "csr" else X
        self.y = np.asarray(y)
        if self.y.shape[0] != X.shape[0]:
            raise KernelCVError(f"{name} has {X.shape[0]} rows but y has {self.y.shape[0]} "
                                "values")
        self.name = name
        # A memory map is read in stored order (random rows would touch every page).
        self.in_memory = not isinstance(getattr(X, "base", None), np.memmap) and \
            not isinstance(X, np.memmap)

    @property
    def shape(self):
        return (self.n_rows, self.n_dims)

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

    @property
    def nnz(self) -> int:
        return int(self.X.nnz) if self.sparse else int(np.prod(self.X.shape))

    def labels(self) -> np.ndarray:
        return self.y

    def chunks(self, chunk_rows: int, rows=None):
        """``(row_indices, X_chunk, y_chunk)`` for consecutive row chunks, or for chunks
        of the given ``rows`` (an index array, e.g. the rows of one fold)."""
        n = self.n_rows
        if rows is None:
            for start in range(0, n, chunk_rows):
                stop = min(start + chunk_rows, n)
                yield (np.arange(start, stop), self._checked(self.X[start:stop], start),
                       self.y[start:stop])
            return
        for start in range(0, len(rows), chunk_rows):
            part = rows[start:start + chunk_rows]
            yield part, self._checked(self.X[part], part[0] if len(part) else 0), \
                self.y[part]

    def _checked(self, block, first):
        block = _dense_rows(block)
        values = block.data if sp.issparse(block) else block
        if not self.in_memory and not np.all(np.isfinite(values)):
            raise KernelCVError(f"{self.name}: NaN or infinite values in the rows from "
                                f"{first}; remove or impute them first")
        return block

    def take(self, rows):
        """The given rows (dense rows as float64, CSR rows as CSR), in the given order."""
        return _dense_rows(self.X[np.asarray(rows)])


def _dense_rows(block):
    """Sparse chunks stay CSR; dense chunks become float64 in memory (memmap: a copy)."""
    if sp.issparse(block):
        return sp.csr_matrix(block, dtype=np.float64)
    return np.asarray(block, dtype=np.float64)


class NpzSource:
    """``X`` of an ``.npz`` archive read a chunk of rows at a time from its zip member
    (stored or deflated: ``numpy.savez`` or ``savez_compressed``); ``y`` read whole.

    ``X`` must be a 2-D C-ordered numeric array (``numpy.save``'s default order).
    """

    is_row_source = True
    in_memory = False
    sparse = False

    def __init__(self, path):
        self.path = Path(path)
        try:
            with zipfile.ZipFile(self.path) as archive:
                names = archive.namelist()
                missing = [k for k in ("X", "y") if f"{k}.npy" not in names]
                if missing:
                    raise KernelCVError(f"{path}: missing array(s) {', '.join(missing)} (save "
                                        "with numpy.savez(file, X=X, y=y))")
                with archive.open("y.npy") as member:
                    y = np.lib.format.read_array(member, allow_pickle=False)
                with archive.open("X.npy") as member:
                    shape, fortran, dtype = _npy_header(member)
        except (OSError, zipfile.BadZipFile, zlib.error, ValueError, EOFError) as exc:
            raise KernelCVError(f"{path}: not a valid .npz archive with arrays X and y "
                                f"({' '.join(str(exc).split())})") from None
        if len(shape) != 2 or fortran or dtype.kind not in "biuf":
            raise KernelCVError(f"{path}: X must be a 2-D C-ordered numeric array to be read "
                                f"in chunks (got shape {shape}, dtype {dtype}"
                                f"{', Fortran order' if fortran else ''})")
        y = np.squeeze(y) if y.ndim > 1 else y
        if y.ndim != 1 or y.shape[0] != shape[0]:
            raise KernelCVError(f"{path}: X has {shape[0]} rows but y has shape {y.shape}")
        if shape[0] == 0:
            raise KernelCVError(f"{path}: the arrays are empty (no samples)")
        self._y, self.n_dims, self.dtype = y, int(shape[1]), dtype

    n_rows = property(lambda self: int(self._y.size))
    shape = property(lambda self: (self.n_rows, self.n_dims))
    row_bytes = property(lambda self: 8.0 * self.n_dims)

    def labels(self) -> np.ndarray:
        return self._y

    def chunks(self, chunk_rows: int, rows=None):
        if rows is not None:
            raise KernelCVError(f"{self.path}: a streamed file is read in order")
        size = self.n_dims * self.dtype.itemsize
        with zipfile.ZipFile(self.path) as archive, archive.open("X.npy") as member:
            _npy_header(member)
            for start in range(0, self.n_rows, chunk_rows):
                count = min(chunk_rows, self.n_rows - start)
                raw = member.read(count * size)
                if len(raw) != count * size:
                    raise KernelCVError(f"{self.path}: X ends after {start} rows")
                X = np.frombuffer(raw, dtype=self.dtype).reshape(count, self.n_dims)
                X = X.astype(np.float64)
                if not np.all(np.isfinite(X)):
                    raise KernelCVError(f"{self.path}: NaN or infinite values in the rows "
                                        f"from {start}; remove or impute them first")
                yield np.arange(start, start + count), X, self._y[start:start + count]

    def take(self, rows):
        rows = np.asarray(rows)
        out = np.empty((rows.size, self.n_dims))
        for index, X, _ in self.chunks(65536):
            hit = np.isin(rows, index)
            out[hit] = X[rows[hit] - index[0]]
        return out


def _npy_header(member):
    version = np.lib.format.read_magic(member)
    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
            else np.lib.format.read_array_header_2_0)
    return read(member)


def open_rows(path, header="auto"):
    """The row source of a training file, by its suffix (see :mod:`kernelcv.reading.files`)."""
    kind = file_format(Path(path))
    if kind == "svmlight":
        return open_svmlight_files(path)[0]
    if kind == "csv":
        return CsvSource(path, header)
    if kind == "npz":
        return NpzSource(path)
    raise KernelCVError(f"{path}: unknown data format; supported: svmlight, CSV, npz")


def is_dask_array(X) -> bool:
    """Whether X looks like a 2-D ``dask.array.Array`` (duck-typed: dask is optional)."""
    return hasattr(X, "to_delayed") and hasattr(X, "chunks") and getattr(X, "ndim", 0) == 2


class DaskArraySource:
    """A ``dask.array`` X (row blocks) with its targets: computed a block at a time here,
    or kept on the cluster block by block (:mod:`kernelcv.random_features.dask_rows`)."""

    is_row_source = True
    in_memory = False

    def __init__(self, X, y):
        self.X = X
        y = y.compute() if hasattr(y, "compute") else y
        self._y = np.asarray(y)
        if self._y.ndim != 1 or self._y.shape[0] != X.shape[0]:
            raise KernelCVError(f"X has {X.shape[0]} rows but y has shape {self._y.shape}")
        self.sparse = False
        self.path = "the dask array X"

    n_rows = property(lambda self: int(self.X.shape[0]))
    n_dims = property(lambda self: int(self.X.shape[1]))
    shape = property(lambda self: (self.n_rows, self.n_dims))
    row_bytes = property(lambda self: 8.0 * self.n_dims)

    def labels(self) -> np.ndarray:
        return self._y

    def row_blocks(self):
        """``(start, stop)`` of each row block."""
        stops = np.cumsum(self.X.chunks[0])
        return list(zip(np.concatenate([[0], stops[:-1]]).tolist(), stops.tolist(),
                        strict=True))

    def chunks(self, chunk_rows: int, rows=None):
        if rows is not None:
            raise KernelCVError("a dask array is read block by block, in order")
        for start, stop in self.row_blocks():
            block = np.asarray(self.X[start:stop].compute(), dtype=np.float64)
            if not np.all(np.isfinite(block)):
                raise KernelCVError(f"{self.path}: NaN or infinite values in the rows from "
                                    f"{start}; remove or impute them first")
            for a in range(0, stop - start, chunk_rows):
                b = min(a + chunk_rows, stop - start)
                yield np.arange(start + a, start + b), block[a:b], self._y[start + a:
                                                                           start + b]

    def take(self, rows):
        rows = np.asarray(rows)
        order = np.argsort(rows, kind="stable")
        picked = np.asarray(self.X[rows[order]].compute(), dtype=np.float64)
        out = np.empty_like(picked)
        out[order] = picked
        return out


def as_source(X, y):
    """``(X, y)``, with a dask array X made a :class:`DaskArraySource` (y then None)."""
    if is_dask_array(X):
        return DaskArraySource(X, y), None
    return X, y
