"""kernelcv's svmlight/LIBSVM reader against scikit-learn's loader as the oracle.

Hypothesis writes files with random sparse rows, zero- or one-based indices, float labels
in several spellings, comments, qid tokens, blank lines and assorted whitespace; both
readers must give the same CSR matrix (float64, 32-bit indices once kernelcv has it) and
labels, alone and for train/test pairs read together. Malformed lines must give a
one-line KernelCVError with the line number where scikit-learn's loader fails too. The
shared LIBSVM data sets are compared as well when /work/shared/datasets exists.
"""

import gzip
import io
import tempfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_svmlight_file, load_svmlight_files

import kernelcv.reading.svmlight as svmlight
from kernelcv.exceptions import KernelCVError
from kernelcv.reading.files import load_data, load_train_test

LIBSVM = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "libsvm"
SPACES = [" ", "  ", "\t", " \t "]


def _number(draw, integer_ok=True):
    value = draw(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
    style = draw(st.sampled_from(["repr", "g", "e", "int", "plus"] if integer_ok
                                 else ["repr", "g", "e"]))
    if style == "repr":
        return repr(value)
    if style == "g":
        return f"{value:g}"
    if style == "e":
        return f"{value:.3e}"
    if style == "int":
        return str(int(value))
    return f"+{abs(value)!r}"


@st.composite
def svmlight_text(draw, base=None):
    """(text, number of data lines) of a valid svmlight file."""
    base = draw(st.sampled_from([0, 1])) if base is None else base
    n_rows = draw(st.integers(1, 12))
    qid = draw(st.booleans())
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines = []
    if draw(st.booleans()):
        lines.append("# a comment line: 1 2:3")
    for _ in range(n_rows):
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", "   ", "\t", "# only a comment"])))
        label = draw(st.sampled_from(["+1", "-1", "1", "0", "2.5", "-0.5", "1e-3", "3."]))
        n_features = draw(st.integers(0, 8))
        indices = sorted(draw(st.sets(st.integers(base, base + 40), min_size=n_features,
                                      max_size=n_features)))
        tokens = [label]
        if qid:
            tokens.append(f"qid:{draw(st.integers(0, 99))}")
        for index in indices:
            value = draw(st.sampled_from(["0", "1", "-1"])) if draw(st.booleans()) \
                else _number(draw)
            tokens.append(f"{index}:{value}")
        line = tokens[0]
        for token in tokens[1:]:
            line += draw(st.sampled_from(SPACES)) + token
        if draw(st.integers(0, 4)) == 0:
            line += draw(st.sampled_from(SPACES)) + "# trailing comment 7:8"
        if draw(st.integers(0, 4)) == 0:
            line += draw(st.sampled_from(SPACES))
        lines.append(line)
    text = newline.join(lines)
    if draw(st.booleans()):
        text += newline
    return text.encode(), n_rows


def assert_same(ours, theirs):
    X, y = ours
    X_ref, y_ref = theirs
    assert isinstance(X, sp.csr_matrix) and X.dtype == np.float64
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32
    assert X.shape == X_ref.shape
    assert np.array_equal(X.indptr, X_ref.indptr)
    assert np.array_equal(X.indices, X_ref.indices)
    assert np.array_equal(X.data, X_ref.data)
    assert np.array_equal(np.signbit(X.data), np.signbit(X_ref.data))
    assert y.dtype == np.float64 and np.array_equal(y, y_ref)


def read(text, name="data.svm"):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
        return load_data(path)


@settings(max_examples=100, deadline=None)
@given(svmlight_text(), st.sampled_from(["data.svm", "data.t.gz"]))
def test_one_file_equals_scikit_learn(case, name):
    text, n_rows = case
    ours = read(text, name)
    assert ours[0].shape[0] == n_rows
    assert_same(ours, load_svmlight_file(io.BytesIO(text), dtype=np.float64))


@settings(max_examples=100, deadline=None)
@given(svmlight_text(), svmlight_text())
def test_train_and_test_read_together_equal_scikit_learn(train, test):
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / "train.svm", Path(folder) / "test.svm"]
        for path, (text, _) in zip(paths, (train, test), strict=True):
            path.write_bytes(text)
        X, y, X_test, y_test = load_train_test(*paths)
    reference = load_svmlight_files([io.BytesIO(train[0]), io.BytesIO(test[0])],
                                    dtype=np.float64)
    assert_same((X, y), reference[:2])
    assert_same((X_test, y_test), reference[2:])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(svmlight_text(), st.integers(1, 40))
def test_chunk_boundaries_do_not_matter(monkeypatch_chunks, case, chunk):
    text, _ = case
    monkeypatch_chunks(chunk)
    assert_same(read(text), load_svmlight_file(io.BytesIO(text), dtype=np.float64))


@pytest.fixture(scope="module")
def monkeypatch_chunks():
    """Set the parser's chunk size (module scope, so hypothesis may use it)."""
    original = svmlight._SVM_CHUNK_BYTES

    def set_chunk(size):
        svmlight._SVM_CHUNK_BYTES = size

    yield set_chunk
    svmlight._SVM_CHUNK_BYTES = original


CORRUPTIONS = {
    "label": lambda line: "abc" + line[line.index(" "):] if " " in line else "abc",
    "no colon": lambda line: line + " 7",
    "two colons": lambda line: line + " 90:1:2",
    "empty value": lambda line: line + " 90:",
    "empty index": lambda line: line + " :3",
    "bad index": lambda line: line + " x:1",
    "bad value": lambda line: line + " 90:abc",
    "negative index": lambda line: line.split(" ")[0] + " -1:2",
    "decreasing": lambda line: line + " 95:1 94:1",
    "repeated": lambda line: line + " 95:1 95:1",
    "huge index": lambda line: line + " 99999999999:1",
    "qid without colon": lambda line: line.split(" ")[0] + " qid 3:1",
}


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.data(), st.sampled_from(sorted(CORRUPTIONS)))
def test_malformed_line_is_named(n_lines, data, kind):
    lines = [f"{1 if i % 2 else -1} 1:0.5 3:{i}" for i in range(n_lines)]
    lines.insert(data.draw(st.integers(0, n_lines)), "# comment")
    bad = data.draw(st.integers(0, len(lines) - 1))
    if lines[bad].startswith("#"):
        bad = (bad + 1) % len(lines)
    lines[bad] = CORRUPTIONS[kind](lines[bad])
    text = "\n".join(lines).encode() + b"\n"
    with pytest.raises((ValueError, OverflowError)):  # the oracle refuses it too
        load_svmlight_file(io.BytesIO(text), dtype=np.float64)
    with pytest.raises(KernelCVError) as info:
        read(text, "bad.svm")
    message = str(info.value)
    assert "\n" not in message and "bad.svm: not a valid svmlight/LIBSVM file" in message
    assert f"(line {bad + 1}: " in message
    assert "expected lines like 'label index:value index:value ...'" in message


@pytest.mark.parametrize("text", [b"", b"\n\n", b"# only a comment\n  \n"])
def test_empty_file_message(text):
    with pytest.raises(KernelCVError, match=r"data\.svm: the file is empty \(no samples\)"):
        read(text)


def test_rules_shared_with_scikit_learn():
    # one-based only when every file has a feature and no index 0
    X, _ = read(b"1 1:2 3:4\n-1 2:1\n")
    assert X.shape == (2, 3) and X[0, 0] == 2
    X, _ = read(b"1 0:2 3:4\n")
    assert X.shape == (1, 4) and X[0, 0] == 2
    X, y = read(b"1\n-1\n")  # no features at all: one empty column, as scikit-learn
    assert X.shape == (2, 1) and X.nnz == 0 and list(y) == [1, -1]
    X, y = read(b"+1 qid:7 2:1.5 # x:y\n-2.5 qid:8\n")
    assert X.shape == (2, 2) and X[0, 1] == 1.5 and list(y) == [1, -2.5]
    X, _ = read(b"1 1:0 2:1\n")  # explicit zeros are stored, as scikit-learn does
    assert X.nnz == 2


# Files of 30,000-92,000 rows but a9a (32,561 rows, always run): with `make test-slow`.
SLOW = {"a1a.t.svm.gz", "a2a.t.svm.gz", "a9a.t.svm.gz", "ijcnn1.svm.gz", "ijcnn1.t.svm.gz",
        "w8a.svm.gz"}
SHARED = [pytest.param(path, id=path.name,
                       marks=[pytest.mark.slow] if path.name in SLOW else [])
          for path in (sorted(LIBSVM.glob("*.svm*")) if LIBSVM.is_dir() else [])]


@pytest.mark.skipif(not SHARED, reason="no shared data sets")
@pytest.mark.parametrize("path", SHARED)
def test_shared_data_sets_equal_scikit_learn(path):
    reference = load_svmlight_file(str(path), dtype=np.float64)
    assert_same(load_data(path), reference)


@pytest.mark.skipif(not (LIBSVM / "a1a.t.svm.gz").exists(), reason="no shared data sets")
def test_shared_train_test_pair_equals_scikit_learn():
    train, test = LIBSVM / "a1a.svm", LIBSVM / "a1a.t.svm.gz"
    X, y, X_test, y_test = load_train_test(train, test)
    reference = load_svmlight_files([str(train), str(test)], dtype=np.float64)
    assert_same((X, y), reference[:2])
    assert_same((X_test, y_test), reference[2:])
