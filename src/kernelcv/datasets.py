"""Reading data sets from files (the demo set and synthetic problems: :mod:`._synthetic`).

Supported file formats (chosen by the file name's suffix):

``.svm``, ``.txt``, ``.libsvm``, ``.t`` (each optionally followed by ``.gz``)
    svmlight / LIBSVM text, one sample per line: ``label index:value index:value ...``
    with strictly increasing indices, an optional ``qid:N`` token after the label and
    comments from ``#`` to the end of the line. Read by kernelcv's own parser with the
    rules and results of :func:`sklearn.datasets.load_svmlight_file` (indices are
    one-based, and shifted to zero-based, only if every file read together has a feature
    and no index 0); ``X`` stays a sparse CSR matrix (float64, 32-bit indices).
``.csv``, ``.csv.gz``
    Comma-separated numbers, one sample per row, the **last column is the target**. A
    header row is allowed; it is recognised by being non-numeric.
``.npz``
    A NumPy archive (:func:`numpy.savez`) holding the arrays ``X`` and ``y``.

Every problem with a file (missing, unreadable, corrupt or truncated gzip, malformed
content, empty, inconsistent lengths) raises :class:`~kernelcv.exceptions.KernelCVError`
with a one-line message that names the file.
"""

from __future__ import annotations

import gzip
import io
import re
import zipfile
import zlib
from operator import itemgetter, methodcaller
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ._synthetic import load_demo_data, make_synthetic
from .exceptions import KernelCVError
from .validation import as_2d_float

__all__ = [
    "SUPPORTED_FORMATS",
    "load_data",
    "load_demo_data",
    "load_train_test",
    "make_synthetic",
    "read_fold_ids",
]

_SVMLIGHT_SUFFIXES = (".svm", ".txt", ".libsvm", ".t")

SUPPORTED_FORMATS = (
    "svmlight (.svm, .txt, .libsvm, .t, optionally + .gz), "
    "CSV with the target in the last column (.csv, .csv.gz), "
    "NumPy archive with arrays X and y (.npz)"
)

# svmlight: a comment runs from "#" to the end of its line.
_SVM_COMMENT = re.compile(rb"#[^\n]*")
# The parser works through the text this many bytes (whole lines) at a time, bounding the
# memory of its per-token Python objects.
_SVM_CHUNK_BYTES = 2**22
_SVM_MAX_INDEX = 2**31 - 1  # scipy's 32-bit indices (and scikit-learn's reader)
_label_and_rest = methodcaller("split", None, 1)
_count_colons = methodcaller("count", b":")
# ASCII whitespace, as bytes.split() sees it: space, \t, \n, \v, \f, \r.
_SVM_WHITESPACE = np.zeros(256, dtype=bool)
_SVM_WHITESPACE[[32, 9, 10, 11, 12, 13]] = True


# --------------------------------------------------------------------------------------
# public loaders
# --------------------------------------------------------------------------------------


def load_data(path):
    """Load a data set from a file, choosing the format by the file name's suffix.

    Parameters
    ----------
    path : str or os.PathLike
        File in one of the formats listed in the module docstring.

    Returns
    -------
    X : scipy.sparse.csr_matrix or numpy.ndarray of float64, shape (n_samples, n_features)
        Sparse for svmlight files, dense for CSV and ``.npz``.
    y : numpy.ndarray, shape (n_samples,)
        Labels or regression targets, as stored (no class mapping is done here).

    Raises
    ------
    KernelCVError
        For an unknown suffix, a missing or unreadable file, and any malformed content;
        the one-line message names the file.
    """
    path = Path(path)
    kind = _format_of(path)
    if kind is None:
        raise KernelCVError(
            f"{path}: unknown data format {''.join(path.suffixes) or '(no suffix)'!r}; "
            f"supported: {SUPPORTED_FORMATS}")
    if kind == "svmlight":
        return _load_svmlight(path)
    if kind == "csv":
        return _load_csv(path)
    return _load_npz(path)


def load_train_test(train, test):
    """Load a training and a test file so that their feature columns agree.

    Two svmlight files are parsed **together** (as
    :func:`sklearn.datasets.load_svmlight_files` does): the zero-/one-based index
    detection looks at both files and both matrices get the larger number of columns,
    so a test file whose highest feature index is smaller (or larger) than the training
    file's still lines up. Other formats are loaded one by one
    (their column count is checked by the caller).

    Returns
    -------
    X, y, X_test, y_test

    Raises
    ------
    KernelCVError
        As :func:`load_data`, naming the offending file.
    """
    train, test = Path(train), Path(test)
    if _format_of(train) != "svmlight" or _format_of(test) != "svmlight":
        return (*load_data(train), *load_data(test))
    (X, y), (X_test, y_test) = _parse_svmlight_files(
        [(train, _read_bytes(train)), (test, _read_bytes(test))])
    return X, y, X_test, y_test


def read_fold_ids(path, n_samples):
    """Read fold ids from a text file: one integer per line, line i for sample i.

    Blank lines at the end of the file are ignored; any other blank or non-integer line
    is an error. The ids may be any integers (they are relabelled ``0..t-1`` by
    cross-validation).

    Parameters
    ----------
    path : str or os.PathLike
        The fold-id file (``.gz`` allowed).
    n_samples : int
        Number of samples of the data set; the file must have exactly this many ids.

    Returns
    -------
    numpy.ndarray of int64, shape (n_samples,)

    Raises
    ------
    KernelCVError
        Missing or unreadable file, a line that is not an integer (the message gives its
        line number) or a count different from ``n_samples``.
    """
    path = Path(path)
    text = _decode(path, _read_bytes(path), "fold-id file")
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    ids = np.empty(len(lines), dtype=np.int64)
    for number, line in enumerate(lines, start=1):
        try:
            ids[number - 1] = int(line.strip())
        except ValueError:
            raise KernelCVError(
                f"{path}, line {number}: fold id {line.strip()!r} is not an integer "
                "(expected one integer fold id per line)") from None
        except OverflowError:
            raise KernelCVError(
                f"{path}, line {number}: fold id {line.strip()!r} is too large") from None
    if ids.size != n_samples:
        raise KernelCVError(
            f"{path}: has {ids.size} fold id(s) but the data have {n_samples} samples; "
            f"expected {n_samples} lines, one per sample")
    return ids


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _format_of(path):
    """``"svmlight"``, ``"csv"``, ``"npz"`` or None, from the (lower-cased) name."""
    name = path.name.lower()
    stem = name[:-3] if name.endswith(".gz") else name
    if stem.endswith(_SVMLIGHT_SUFFIXES):
        return "svmlight"
    if stem.endswith(".csv"):
        return "csv"
    if name.endswith(".npz"):
        return "npz"
    return None


def _read_bytes(path):
    """The file's content, decompressed when the name ends in ``.gz``."""
    compressed = path.name.lower().endswith(".gz")
    try:
        if compressed:
            with gzip.open(path, "rb") as handle:
                return handle.read()
        return path.read_bytes()
    except EOFError:
        raise KernelCVError(
            f"{path}: the gzip file is truncated (it ends before the end of the "
            "compressed data)") from None
    except zlib.error as exc:
        raise _gzip_error(path, exc) from None
    except OSError as exc:
        if compressed and not isinstance(exc, FileNotFoundError | PermissionError
                                         | IsADirectoryError):
            raise _gzip_error(path, exc) from None
        raise _file_error(path, exc) from None


def _read_head(path, size):
    """The first ``size`` bytes of an uncompressed file."""
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise _file_error(path, exc) from None


def _file_error(path, exc):
    if isinstance(exc, FileNotFoundError):
        return KernelCVError(f"{path}: no such file")
    if isinstance(exc, IsADirectoryError):
        return KernelCVError(f"{path}: is a directory, not a file")
    if isinstance(exc, PermissionError):
        return KernelCVError(f"{path}: permission denied")
    return KernelCVError(f"{path}: cannot read the file ({exc.strerror or _one_line(exc)})")


def _gzip_error(path, exc):
    return KernelCVError(
        f"{path}: not a valid gzip file, or it is corrupt ({_one_line(exc)})")


def _decode(path, data, what):
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KernelCVError(
            f"{path}: not a text {what} (byte {exc.start} is not valid UTF-8)") from None


def _one_line(exc):
    return " ".join(str(exc).split()).rstrip(".") or type(exc).__name__


def _load_svmlight(path):
    [(X, y)] = _parse_svmlight_files([(path, _read_bytes(path))])
    return X, y


def _parse_svmlight_files(named_blobs):
    """``[(X, y), ...]`` from ``[(path, bytes), ...]`` of svmlight files read together.

    The rules and the result are scikit-learn's ``load_svmlight_files(..., dtype=float64,
    zero_based="auto")`` (then CSR with 32-bit indices where they fit): indices are
    one-based, and shifted down by one, only if every file has at least one feature and
    no index 0; every matrix gets ``max index + 1`` columns over all files. Cost: O(size
    of the text) time; about scikit-learn's time (0.8-1.3x of it on a9a, w8a and ijcnn1,
    2-14 MB of text, 0.2-0.8 s) without its import.
    """
    parsed = [(path, *_svmlight_arrays(path, data)) for path, data in named_blobs]
    for path, y, *_ in parsed:
        if y.size == 0:
            raise KernelCVError(f"{path}: the file is empty (no samples)")
    one_based = all(indices.size and indices.min() > 0 for _, _, _, indices, _ in parsed)
    if one_based:
        for _, _, _, indices, _ in parsed:
            indices -= 1
    width = 1 + max(int(indices.max()) if indices.size else 0
                    for _, _, _, indices, _ in parsed)
    out = []
    for _, y, values, indices, indptr in parsed:
        small = max(values.size, y.size, width) <= np.iinfo(np.int32).max
        index_type = np.int32 if small else np.int64
        X = sp.csr_matrix((values, indices.astype(index_type), indptr.astype(index_type)),
                          shape=(y.size, width))
        X.has_sorted_indices = True  # strictly increasing per row, checked
        out.append((X, y))
    return out


def _svmlight_arrays(path, data):
    """Labels, values, int64 indices (as written) and row pointers of one svmlight file.

    The text is parsed :data:`_SVM_CHUNK_BYTES` of whole lines at a time, with bytes
    methods and numpy rather than a loop over tokens: comments are cut, each line split
    into its label and the rest (a ``qid`` token dropped), the rests joined into one
    string whose separators must alternate colon, whitespace, colon (one colon per
    feature), then split at colons and whitespace; labels, indices and values are
    converted by C-level ``float``/``int`` maps (Python's own number syntax, as
    scikit-learn's reader) and checked together as arrays (indices ``0 <= i < 2**31``,
    strictly increasing within each line). Any failure is explained by
    :func:`_explain_svmlight`, which rescans line by line for the line number.
    """
    labels, values, indices, counts = [], [], [], []
    start = 0
    while start < len(data):
        stop = data.find(b"\n", start + _SVM_CHUNK_BYTES)
        stop = len(data) if stop < 0 else stop + 1
        try:
            chunk = _svmlight_chunk(data[start:stop])
        except (ValueError, OverflowError):
            raise _explain_svmlight(path, data) from None
        for collected, part in zip((labels, values, indices, counts), chunk, strict=True):
            collected.append(part)
        start = stop
    if not labels:
        return (np.empty(0), np.empty(0), np.empty(0, dtype=np.int64),
                np.zeros(1, dtype=np.int64))
    y, values, indices, counts = (np.concatenate(parts)
                                  for parts in (labels, values, indices, counts))
    indptr = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    follows = np.ones(indices.size, dtype=bool)  # index follows one on its own line
    follows[indptr[:-1][counts > 0]] = False
    if (indices.size and (indices.min() < 0 or indices.max() > _SVM_MAX_INDEX)
            or np.any(np.diff(indices)[follows[1:]] <= 0)):
        raise _explain_svmlight(path, data)
    return y, values, indices, indptr


def _svmlight_chunk(text):
    """Labels, values, indices and per-line feature counts of whole svmlight lines;
    ValueError or OverflowError for anything malformed."""
    if b"#" in text:
        text = _SVM_COMMENT.sub(b"", text)
    lines = [parts for parts in map(_label_and_rest, text.split(b"\n")) if parts]
    labels = np.fromiter(map(float, map(itemgetter(0), lines)), np.float64, len(lines))
    rests = [parts[1] if len(parts) > 1 else b"" for parts in lines]
    if b"qid" in text:
        rests = list(map(_drop_qid, rests))
    counts = np.fromiter(map(_count_colons, rests), np.int64, len(rests))
    n_features = int(counts.sum())
    if not n_features:
        if any(rests):  # tokens without a colon
            raise ValueError("a feature is not index:value")
        return labels, np.empty(0), np.empty(0, dtype=np.int64), counts
    features = b" ".join(rests).strip()
    # Every feature holds exactly one colon: separators (colons and runs of whitespace)
    # alternate ": : ... :".
    raw = np.frombuffer(features, dtype=np.uint8)
    space = _SVM_WHITESPACE[raw]
    space[1:] &= ~space[:-1]  # the first byte of each run of whitespace
    separators = raw[(raw == ord(":")) | space]
    if (separators.size != 2 * n_features - 1 or np.any(separators[0::2] != ord(":"))
            or np.any(separators[1::2] == ord(":"))):
        raise ValueError("a feature is not index:value")
    numbers = features.replace(b":", b" ").split()
    if len(numbers) != 2 * n_features:
        raise ValueError("a feature has an empty index or value")
    indices = np.fromiter(map(int, numbers[0::2]), np.int64, n_features)
    values = np.fromiter(map(float, numbers[1::2]), np.float64, n_features)
    return labels, values, indices, counts


def _drop_qid(rest):
    """A line's features without its ``qid:...`` token (the first after the label)."""
    if not rest.startswith(b"qid"):
        return rest
    qid, *features = rest.split(None, 1)
    if b":" not in qid:
        raise ValueError("a qid token is not qid:value")
    return features[0] if features else b""


def _explain_svmlight(path, data):
    """The one-line error for the first malformed line (a line-by-line rescan)."""
    where = _first_bad_svmlight_line(data)
    detail = f"line {where[0]}: {where[1]}" if where else "unreadable content"
    return KernelCVError(
        f"{path}: not a valid svmlight/LIBSVM file ({detail}); expected lines like "
        "'label index:value index:value ...' with increasing indices")


def _first_bad_svmlight_line(data):
    """``(line number, what is wrong)`` for the first malformed line, or None.

    The same rules as the parser, one token at a time.
    """
    for number, raw in enumerate(data.split(b"\n"), start=1):
        tokens = raw.split(b"#", 1)[0].split()
        if not tokens:
            continue
        problem = _svmlight_line_problem(tokens)
        if problem:
            return number, problem
    return None


def _svmlight_line_problem(tokens):
    def shown(token):
        return repr(token.decode("utf-8", "replace"))

    try:
        float(tokens[0])
    except ValueError:
        return f"label {shown(tokens[0])} is not a number"
    features = tokens[1:]
    if features and features[0].startswith(b"qid"):
        if b":" not in features[0]:
            return f"{shown(features[0])} is not qid:value"
        features = features[1:]
    previous = -1
    for token in features:
        index_text, colon, value_text = token.partition(b":")
        try:
            index = int(index_text)
        except ValueError:
            index = None
        if not colon or index is None:
            return f"{shown(token)} is not index:value with an integer index"
        try:
            float(value_text)
        except ValueError:
            return f"the value of {shown(token)} is not a number"
        if index < 0 or index > _SVM_MAX_INDEX:
            return f"index {index} is out of range (0 to {_SVM_MAX_INDEX})"
        if index <= previous:
            return f"index {index} follows index {previous}; indices must increase"
        previous = index
    return None


def _load_csv(path):
    text = _decode(path, _read_bytes(path), "CSV file")
    rows = [(number, line) for number, line in enumerate(text.splitlines(), start=1)
            if line.strip()]
    if not rows:
        raise KernelCVError(f"{path}: the file is empty (no rows)")
    if not _is_numeric_row(rows[0][1]):
        rows = rows[1:]  # a header
        if not rows:
            raise KernelCVError(f"{path}: the file has a header row but no data rows")
    width = len(rows[0][1].split(","))
    if width < 2:
        raise KernelCVError(
            f"{path}, line {rows[0][0]}: need at least two columns (features, then the "
            "target in the last column)")
    try:  # fast path; the slow scan below only runs to explain a failure
        table = np.loadtxt(io.StringIO("\n".join(line for _, line in rows)),
                           delimiter=",", dtype=np.float64, ndmin=2, comments=None)
    except ValueError as exc:
        _explain_csv_failure(path, rows, width)
        raise KernelCVError(f"{path}: not a valid CSV file ({_one_line(exc)})") from None
    return table[:, :-1].copy(), table[:, -1].copy()


def _explain_csv_failure(path, rows, width):
    """Raise an error naming the first ragged row or non-numeric cell, if there is one."""
    for number, line in rows:
        cells = line.split(",")
        if len(cells) != width:
            raise KernelCVError(
                f"{path}, line {number}: has {len(cells)} columns but the first data row "
                f"has {width}")
        for j, cell in enumerate(cells):
            try:
                float(cell)
            except ValueError:
                shown = cell.strip()
                what = "an empty cell" if not shown else f"{shown!r} is not a number"
                raise KernelCVError(
                    f"{path}, line {number}, column {j + 1}: {what}") from None


def _is_numeric_row(line):
    try:
        for cell in line.split(","):
            float(cell)
    except ValueError:
        return False
    return True


def _load_npz(path):
    head = _read_head(path, 6)
    if head == b"\x93NUMPY":
        raise KernelCVError(
            f"{path}: holds a single .npy array, not an .npz archive with arrays X and y "
            "(save with numpy.savez(file, X=X, y=y))")
    if not head.startswith(b"PK"):
        raise KernelCVError(f"{path}: not a valid .npz archive (not a zip file)")
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise KernelCVError(
            f"{path}: not a valid .npz archive ({_one_line(exc)})") from None
    with archive:
        missing = [key for key in ("X", "y") if key not in archive.files]
        if missing:
            raise KernelCVError(
                f"{path}: missing array(s) {', '.join(missing)}; the archive holds "
                f"{', '.join(archive.files) or 'nothing'} (save with numpy.savez(file, X=X, y=y))")
        try:
            X = archive["X"]
            y = archive["y"]
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise KernelCVError(
                f"{path}: cannot read arrays X and y ({_one_line(exc)})") from None
    X = as_2d_float(X, source=str(path))
    y = np.squeeze(y) if y.ndim > 1 else y
    if y.ndim != 1:
        raise KernelCVError(f"{path}: y must be 1-D, got shape {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise KernelCVError(
            f"{path}: X has {X.shape[0]} rows but y has {y.shape[0]} values; they must match")
    if X.shape[0] == 0:
        raise KernelCVError(f"{path}: the arrays are empty (no samples)")
    return X, y
