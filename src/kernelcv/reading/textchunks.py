"""svmlight and CSV training files read a block of lines at a time (out of core).

:class:`SvmlightSource` and :class:`CsvSource` are row sources (see
:mod:`kernelcv.reading.rowchunks`): they never hold the whole file. Opening one scans the file
once (``.gz`` decompressed as it is read, :data:`BLOCK_BYTES` of whole lines at a time):
it counts the rows, checks every line and keeps the targets (n values) and, for
svmlight, the smallest and largest feature index. Each later pass parses the file again
and hands out its rows in chunks. A malformed line is a one-line
:class:`~kernelcv.exceptions.KernelCVError` naming the file and the line.

svmlight rules are :mod:`kernelcv.reading.svmlight`'s (scikit-learn's): indices are one-based,
and shifted down, only if every file read together (:func:`open_svmlight_files`) has a
feature and no index 0; the width is the largest index over those files. CSV: numbers
separated by commas, the last column the (numeric) target; ``header`` ``"yes"``, ``"no"``
or ``"auto"`` (a first row with no number in it is a header; one mixing numbers and
names is refused, as a typo in the first sample must not become a header).
"""

from __future__ import annotations

import gzip
import io
import zlib

import numpy as np
import scipy.sparse as sp

from ..exceptions import KernelCVError
from .files import file_read_error
from .svmlight import parse_svmlight_block

__all__ = ["BLOCK_BYTES", "CsvSource", "SvmlightSource", "open_svmlight_files"]

#: Bytes of text (whole lines) parsed at a time.
BLOCK_BYTES = 4 * 2**20


def _blocks(path, block_bytes=BLOCK_BYTES):
    """``(first line number, text of whole lines)`` pieces of a (gzip) text file."""
    compressed = str(path).lower().endswith(".gz")
    try:
        handle = gzip.open(path, "rb") if compressed else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise file_read_error(path, exc) from None
    line, carry = 1, b""
    try:
        with handle:
            while True:
                try:
                    data = handle.read(block_bytes)
                except EOFError:
                    raise KernelCVError(f"{path}: the gzip file is truncated (it ends before "
                                        "the end of the compressed data)") from None
                except (OSError, zlib.error) as exc:
                    raise KernelCVError(f"{path}: not a valid gzip file, or it is corrupt "
                                        f"({' '.join(str(exc).split())})") from None
                if not data:
                    break
                data = carry + data
                cut = data.rfind(b"\n")
                if cut < 0:
                    carry = data
                    continue
                block, carry = data[:cut + 1], data[cut + 1:]
                yield line, block
                line += block.count(b"\n")
    except OSError as exc:  # on close
        raise file_read_error(path, exc) from None
    if carry.strip():
        yield line, carry + b"\n"


class _TextSource:
    """What the two text sources share: rows in chunks of consecutive rows."""

    is_row_source = True
    in_memory = False

    @property
    def n_rows(self) -> int:
        return int(self._y.size)

    @property
    def shape(self):
        return (self.n_rows, self.n_dims)

    def labels(self) -> np.ndarray:
        return self._y

    def chunks(self, chunk_rows: int, rows=None):
        """``(row_indices, X_chunk, y_chunk)`` of consecutive rows (``rows`` is refused:
        a streamed file is read in its own order)."""
        if rows is not None:
            raise KernelCVError(f"{self.path}: a streamed file is read in order")
        start = 0
        for X, y in self._parsed_blocks():
            for a in range(0, y.size, chunk_rows):
                b = min(a + chunk_rows, y.size)
                yield np.arange(start + a, start + b), X[a:b], y[a:b]
            start += y.size

    def take(self, rows):
        """The given rows, in the given order (one pass over the file)."""
        rows = np.asarray(rows)
        order = np.argsort(rows, kind="stable")
        wanted = rows[order]
        parts, start = [], 0
        for X, y in self._parsed_blocks():
            lo, hi = np.searchsorted(wanted, [start, start + y.size])
            if hi > lo:
                parts.append(X[wanted[lo:hi] - start])
            start += y.size
        stacked = sp.vstack(parts, format="csr") if self.sparse else np.vstack(parts)
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        return stacked[inverse]


class SvmlightSource(_TextSource):
    """An svmlight / LIBSVM file (``.gz`` allowed) read in blocks; rows as CSR chunks.

    Open it with :func:`open_svmlight_files` (several files share the zero-/one-based
    decision and the width).
    """

    sparse = True

    def __init__(self, path, block_bytes=BLOCK_BYTES):
        self.path = path
        self.block_bytes = block_bytes
        labels, self.nnz, self.min_index, self.max_index = [], 0, None, -1
        for line, text in _blocks(path, block_bytes):
            y, _, indices, _ = parse_svmlight_block(path, text, line)
            labels.append(y)
            self.nnz += indices.size
            if indices.size:
                low, high = int(indices.min()), int(indices.max())
                self.min_index = low if self.min_index is None else min(self.min_index, low)
                self.max_index = max(self.max_index, high)
        self._y = np.concatenate(labels) if labels else np.empty(0)
        if self._y.size == 0:
            raise KernelCVError(f"{path}: the file is empty (no samples)")
        self.shift, self.n_dims = 0, self.max_index + 1

    @property
    def row_bytes(self) -> float:
        return 12.0 * self.nnz / max(self.n_rows, 1) + 8.0

    @property
    def parse_bytes(self) -> int:
        """Peak bytes of parsing one block: its text, a copy, and a bytes object and
        list slot per token (about 12 times the text, measured)."""
        return 12 * self.block_bytes

    def _parsed_blocks(self):
        for line, text in _blocks(self.path, self.block_bytes):
            y, values, indices, indptr = parse_svmlight_block(self.path, text, line)
            if not np.all(np.isfinite(values)):
                row = int(np.searchsorted(indptr, np.flatnonzero(~np.isfinite(values))[0],
                                          side="right")) - 1
                raise KernelCVError(f"{self.path}: line {_data_line(text, line, row)} holds "
                                    "a NaN or infinite value; remove or impute it first")
            X = sp.csr_matrix((values, (indices - self.shift).astype(np.int32), indptr),
                              shape=(y.size, self.n_dims))
            yield X, y


def _data_line(text, first_line, row) -> int:
    """The file's line number of data row ``row`` of a block that starts at line
    ``first_line`` (blank and comment-only lines hold no row)."""
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    seen = -1
    for offset, content in enumerate(text.split("\n")):
        if content.split("#", 1)[0].strip():
            seen += 1
            if seen == row:
                return first_line + offset
    return first_line


def open_svmlight_files(*paths, block_bytes=BLOCK_BYTES):
    """:class:`SvmlightSource` objects of files read together: one-based indices (shifted
    down) only if every file has a feature and no index 0; the largest width for all."""
    sources = [SvmlightSource(path, block_bytes) for path in paths]
    one_based = all(s.min_index is not None and s.min_index > 0 for s in sources)
    width = max(s.max_index for s in sources) + (0 if one_based else 1)
    for source in sources:
        source.shift, source.n_dims = int(one_based), max(width, 1)
    return sources


class CsvSource(_TextSource):
    """A CSV file of numbers (last column the target; ``.gz`` allowed) read in blocks;
    rows as dense chunks. The target column may hold text class labels (as in memory):
    decided on the first data row, whose other cells are numbers."""

    sparse = False

    def __init__(self, path, header="auto", block_bytes=BLOCK_BYTES):
        if header not in ("auto", "yes", "no"):
            raise KernelCVError(f"header must be one of auto, yes, no, got {header!r}")
        self.path, self.block_bytes = path, block_bytes
        self.skip = None  # line number of the header row, if any
        self.text_labels = None  # decided on the first data row
        self.n_dims, labels = None, []
        for line, text in _blocks(path, block_bytes):
            if self.skip is None:
                text, line = self._header(text, line, header)
            _, y = self._parse(text, line)
            if y.size:
                labels.append(y)
        self._y = np.concatenate(labels) if labels else np.empty(0)
        if self._y.size == 0:
            raise KernelCVError(f"{path}: the file has no data rows")

    @property
    def row_bytes(self) -> float:
        return 8.0 * self.n_dims

    @property
    def parse_bytes(self) -> int:
        """Peak bytes of parsing one block (the text and numpy's parse), about 4 times it."""
        return 4 * self.block_bytes

    def _header(self, text, line, header):
        """Decide on the first non-blank row; return the text (and line) after it."""
        lines = text.split(b"\n")
        first = next((i for i, row in enumerate(lines) if row.strip()), None)
        if first is None:
            return text, line
        cells = [cell.strip() for cell in lines[first].split(b",")]
        numeric = [_is_number(cell) for cell in cells]
        is_header = header == "yes" or (header == "auto" and not any(numeric))
        # numbers and a text target: a data row with a class label, not a header
        text_target = len(cells) > 1 and all(numeric[:-1]) and not numeric[-1]
        if header == "auto" and any(numeric) and not all(numeric) and not text_target:
            bad = numeric.index(False)
            raise KernelCVError(
                f"{self.path}, line {line + first}: column {bad + 1} "
                f"({cells[bad].decode('utf-8', 'replace')!r}) is not a number while others "
                "are; fix the row, or give --header yes if it is a header")
        self.skip = line + first if is_header else 0
        if not is_header:
            return text, line
        return b"\n".join(lines[first + 1:]), line + first + 1

    def _parse(self, text, line):
        """The block's features (float64, n x d) and targets (float64, or text labels);
        errors name the line and column."""
        if not text.strip():
            return np.empty((0, self.n_dims or 0)), np.empty(0)
        rows = [row for row in text.split(b"\n") if row.strip()]
        if self.text_labels is None:
            self.text_labels = not _is_number(rows[0].rsplit(b",", 1)[-1].strip())
        labels = None
        if self.text_labels:
            parts = [row.rsplit(b",", 1) for row in rows]
            if any(len(part) != 2 for part in parts):
                raise self._explain(text, line)
            labels = np.array([part[1].strip().decode("utf-8", "replace") for part in parts])
            text = b"\n".join(part[0] + b",0" for part in parts)  # a numeric stand-in
        try:
            values = np.loadtxt(io.BytesIO(text), delimiter=",", dtype=np.float64, ndmin=2,
                                comments=None)
        except ValueError:
            raise self._explain(text, line) from None
        width = values.shape[1] - 1
        if width < 1:
            raise KernelCVError(f"{self.path}: needs at least two columns (features and the "
                                "target in the last column)")
        if self.n_dims is None:
            self.n_dims = width
        elif width != self.n_dims:
            raise self._explain(text, line)
        if not np.all(np.isfinite(values)):
            row = int(np.flatnonzero(~np.all(np.isfinite(values), axis=1))[0])
            number = line + _nonblank_offsets(text)[row]
            raise KernelCVError(f"{self.path}, line {number}: NaN or infinite value; remove "
                                "or impute it first")
        return values[:, :-1], (values[:, -1].copy() if labels is None else labels)

    def _explain(self, text, line):
        expected = None if self.n_dims is None else self.n_dims + 1
        for offset, row in enumerate(text.split(b"\n")):
            if not row.strip():
                continue
            cells = row.split(b",")
            if expected is None:
                expected = len(cells)
            if len(cells) != expected:
                return KernelCVError(f"{self.path}, line {line + offset}: {len(cells)} "
                                     f"columns, expected {expected}")
            for column, cell in enumerate(cells, start=1):
                if not _is_number(cell.strip()):
                    shown = cell.strip().decode("utf-8", "replace")
                    return KernelCVError(f"{self.path}, line {line + offset}, column "
                                         f"{column}: {shown!r} is not a number")
        return KernelCVError(f"{self.path}: unreadable content near line {line}")

    def _parsed_blocks(self):
        for line, text in _blocks(self.path, self.block_bytes):
            if self.skip and line <= self.skip:
                lines = text.split(b"\n")
                text = b"\n".join(lines[self.skip - line + 1:])
                line = self.skip + 1
            X, y = self._parse(text, line)
            if y.size:
                yield X, y


def _is_number(cell: bytes) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _nonblank_offsets(text):
    return [i for i, row in enumerate(text.split(b"\n")) if row.strip()]
