"""The svmlight / LIBSVM text format: the project's own reader, scikit-learn's rules.

One sample per line, ``label [qid:N] index:value index:value ... [# comment]`` with
strictly increasing indices. :func:`parse_svmlight_files` gives the same CSR matrices and
labels as :func:`sklearn.datasets.load_svmlight_files` (``dtype=float64``,
``zero_based="auto"``) without importing scikit-learn, whose import costs about a second
of a command's start-up (it loads scipy.stats). File access, gzip and the choice of
format are :mod:`kernelcv.reading.files`'; every malformed file raises a one-line
:class:`~kernelcv.exceptions.KernelCVError` that names the file, the line and the problem.
"""

from __future__ import annotations

import re
from operator import itemgetter, methodcaller

import numpy as np
import scipy.sparse as sp

from ..exceptions import KernelCVError

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


def parse_svmlight_files(named_blobs):
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


def parse_svmlight_block(path, text, first_line=1):
    """Labels, values, int64 indices (as written) and row pointers of whole svmlight
    lines ``text`` (a block of a file read in pieces; ``first_line`` is the file's line
    number of its first line, for the error message). Checks as
    :func:`parse_svmlight_files`, per line; the zero-/one-based shift is the caller's."""
    try:
        y, values, indices, counts = _svmlight_chunk(text)
    except (ValueError, OverflowError):
        raise _explain_svmlight(path, text, first_line) from None
    indptr = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    follows = np.ones(indices.size, dtype=bool)
    follows[indptr[:-1][counts > 0]] = False
    if (indices.size and (indices.min() < 0 or indices.max() > _SVM_MAX_INDEX)
            or np.any(np.diff(indices)[follows[1:]] <= 0)):
        raise _explain_svmlight(path, text, first_line)
    return y, values, indices, indptr


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


def _explain_svmlight(path, data, first_line=1):
    """The one-line error for the first malformed line (a line-by-line rescan)."""
    where = _first_bad_svmlight_line(data)
    detail = f"line {where[0] + first_line - 1}: {where[1]}" if where else \
        "unreadable content"
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
