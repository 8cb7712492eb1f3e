"""Reading data sets from files (the demo set and synthetic problems: :mod:`._synthetic`).

Supported file formats (chosen by the file name's suffix):

``.svm``, ``.txt``, ``.libsvm``, ``.t`` (each optionally followed by ``.gz``)
    svmlight / LIBSVM text, one sample per line: ``label index:value index:value ...``
    with strictly increasing indices, an optional ``qid:N`` token after the label and
    comments from ``#`` to the end of the line. Read by :mod:`kernelcv.reading.svmlight` with the
    rules and results of :func:`sklearn.datasets.load_svmlight_file` (indices are
    one-based, and shifted to zero-based, only if every file read together has a feature
    and no index 0); ``X`` stays a sparse CSR matrix (float64, 32-bit indices).
``.csv``, ``.csv.gz``
    Comma-separated numbers, one sample per row, the **last column is the target** unless
    ``target`` names another (a header name or a column number, 1 = first, -1 = last);
    targets may be text labels for classification. A header row is allowed:
    ``header="auto"`` (default) decides from the first row and logs the decision,
    ``"yes"`` / ``"no"`` say it (see :mod:`kernelcv.reading.csvdata`; a first row that is
    "almost numeric" is an error under ``"auto"``, not a header).
``.npz``
    A NumPy archive (:func:`numpy.savez`) holding the arrays ``X`` and ``y``.

Every problem with a file (missing, unreadable, corrupt or truncated gzip, malformed
content, empty, inconsistent lengths) raises :class:`~kernelcv.exceptions.KernelCVError`
with a one-line message that names the file.
"""

from __future__ import annotations

import gzip
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .._synthetic import load_demo_data, make_synthetic
from ..exceptions import KernelCVError
from ..validation import as_2d_float, check_sample_weight
from .csvdata import HEADERS, parse_csv
from .svmlight import parse_svmlight_files

__all__ = [
    "HEADERS",
    "SUPPORTED_FORMATS",
    "file_format",
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


# --------------------------------------------------------------------------------------
# public loaders
# --------------------------------------------------------------------------------------


def load_data(path, header="auto", target=None):
    """Load a data set from a file, choosing the format by the file name's suffix.

    Parameters
    ----------
    path : str or os.PathLike
        File in one of the formats listed in the module docstring.
    header : {"auto", "yes", "no"}
        Whether the first row of a CSV file is a header (other formats ignore it).
    target : str, int or None
        CSV files: the target column, a header name or a column number (1 = first, -1 =
        last; None: the last). Refused for the other formats, which store y apart.

    Returns
    -------
    X : scipy.sparse.csr_matrix or numpy.ndarray of float64, shape (n_samples, n_features)
        Sparse for svmlight files, dense for CSV and ``.npz``.
    y : numpy.ndarray, shape (n_samples,)
        Labels or regression targets, as stored (no class mapping is done here; a CSV
        column of text labels is an array of strings).

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
    if kind == "csv":
        return _load_csv(path, header, target)
    if target is not None:
        raise KernelCVError(f"{path}: --target picks a column of a CSV file; {kind} files "
                            "store the target apart from the features")
    if kind == "svmlight":
        return _load_svmlight(path)
    return _load_npz(path)


def load_train_test(train, test, header="auto", target=None):
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
    if _format_of(train) != "svmlight" or _format_of(test) != "svmlight" \
            or target is not None:
        return (*load_data(train, header, target), *load_data(test, header, target))
    (X, y), (X_test, y_test) = parse_svmlight_files(
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
    return _read_per_row(path, n_samples, "fold-id file", "fold id", int, np.int64,
                         "an integer (expected one integer fold id per line)")


def read_sample_weights(path, n_samples):
    """Read sample weights from a text file: one number per line, line i for sample i
    (as the LIBSVM tools' weight files); blank lines at the end are ignored.

    Returns
    -------
    numpy.ndarray of float64, shape (n_samples,)

    Raises
    ------
    KernelCVError
        Missing or unreadable file, a line that is not a number (the message gives its
        line number), a count different from ``n_samples``, or weights that are negative,
        not finite or all zero.
    """
    weights = _read_per_row(path, n_samples, "sample-weight file", "weight", float,
                            np.float64, "a number (expected one weight per line)")
    try:
        return check_sample_weight(weights, n_samples)
    except KernelCVError as error:
        raise KernelCVError(f"{path}: {error}") from None


def _read_per_row(path, n_samples, kind, item, parse, dtype, expected):
    """One value per line, line i for sample i (``parse`` of the stripped line; trailing
    blank lines ignored), as an (n_samples,) array; a one-line :class:`KernelCVError`
    naming the line of a value ``parse`` refuses, or the count when it is not
    ``n_samples``."""
    path = Path(path)
    text = _decode(path, _read_bytes(path), kind)
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    values = np.empty(len(lines), dtype=dtype)
    for number, line in enumerate(lines, start=1):
        try:
            values[number - 1] = parse(line.strip())
        except ValueError:
            raise KernelCVError(f"{path}, line {number}: {item} {line.strip()!r} is not "
                                f"{expected}") from None
        except OverflowError:
            raise KernelCVError(
                f"{path}, line {number}: {item} {line.strip()!r} is too large") from None
    if values.size != n_samples:
        raise KernelCVError(
            f"{path}: has {values.size} {item}(s) but the data have {n_samples} samples; "
            f"expected {n_samples} lines, one per sample")
    return values


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def file_format(path):
    """``"svmlight"``, ``"csv"``, ``"npz"`` or None, from the file name (as :func:`load_data`
    chooses)."""
    return _format_of(Path(path))


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
        raise file_read_error(path, exc) from None


def _read_head(path, size):
    """The first ``size`` bytes of an uncompressed file."""
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise file_read_error(path, exc) from None


def file_read_error(path, exc):
    """A one-line :class:`KernelCVError` naming ``path`` for an ``OSError`` reading it."""
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
    [(X, y)] = parse_svmlight_files([(path, _read_bytes(path))])
    return X, y


def _load_csv(path, header="auto", target=None):
    return parse_csv(path, _decode(path, _read_bytes(path), "CSV file"), header, target)


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
