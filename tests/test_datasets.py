"""Tests of kernelcv.reading.files: file formats, their failure messages, fold-id files,
demo data."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from kernelcv.exceptions import KernelCVError
from kernelcv.reading.files import (
    load_data,
    load_demo_data,
    make_synthetic,
    read_fold_ids,
)

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture
def small():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 4))
    X[X < -0.5] = 0.0  # some zeros, so the sparse format matters
    y = np.where(rng.random(12) < 0.5, -1.0, 1.0)
    return X, y


def _error(path, **kwargs):
    """The KernelCVError message of loading ``path``; checks it names the file, one line."""
    with pytest.raises(KernelCVError) as info:
        load_data(path, **kwargs)
    message = str(info.value)
    assert Path(path).name in message
    assert "\n" not in message
    return message


def _dump_svmlight(X, y, path):
    """Write svmlight with scikit-learn, gzip-compressed when the name ends in .gz."""
    path = Path(path)
    plain = path.with_name(path.name + ".plain") if path.name.endswith(".gz") else path
    dump_svmlight_file(X, y, str(plain), zero_based=False)
    if plain != path:
        path.write_bytes(gzip.compress(plain.read_bytes()))
    return path


def _write_csv(path, X, y, header=None):
    lines = [] if header is None else [header]
    for row, target in zip(X, y, strict=True):
        lines.append(",".join(repr(float(v)) for v in [*row, target]))
    path.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", ["data.svm", "data.txt", "data.libsvm", "data.t",
                                  "data.svm.gz", "data.t.gz"])
def test_svmlight_round_trip(tmp_path, small, name):
    X, y = small
    path = _dump_svmlight(X, y, tmp_path / name)
    X2, y2 = load_data(path)
    assert sp.issparse(X2) and X2.format == "csr" and X2.dtype == np.float64
    np.testing.assert_allclose(X2.toarray(), X)
    np.testing.assert_array_equal(y2, y)


def test_svmlight_accepts_str_path(tmp_path, small):
    X, y = small
    path = tmp_path / "data.svm"
    _dump_svmlight(X, y, path)
    X2, _ = load_data(str(path))
    assert X2.shape == X.shape


@pytest.mark.parametrize("header", [None, "a,b,c,d,target"])
@pytest.mark.parametrize("name", ["data.csv", "data.csv.gz"])
def test_csv_round_trip(tmp_path, small, header, name):
    X, y = small
    plain = tmp_path / "plain.csv"
    _write_csv(plain, X, y, header)
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(plain.read_bytes()))
    else:
        plain.rename(path)
    X2, y2 = load_data(path)
    assert isinstance(X2, np.ndarray) and X2.dtype == np.float64
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)


def test_csv_single_row_blank_lines_and_nan(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("\nx1,x2,y\n1.5, nan ,2\n\n")
    X, y = load_data(path)
    assert X.shape == (1, 2)
    assert X[0, 0] == 1.5 and np.isnan(X[0, 1])  # NaN is refused later, by cross_validate
    np.testing.assert_array_equal(y, [2.0])


def test_npz_round_trip(tmp_path, small):
    X, y = small
    path = tmp_path / "data.npz"
    np.savez(path, X=X, y=y, extra=np.arange(3))
    X2, y2 = load_data(path)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)


def test_suffix_is_case_insensitive(tmp_path, small):
    X, y = small
    path = tmp_path / "DATA.SVM"
    _dump_svmlight(X, y, path)
    assert load_data(path)[0].shape == X.shape


@pytest.mark.skipif(not SHARED_DATASETS.is_dir(), reason="shared/datasets is not present")
def test_real_heart_scale():
    path = SHARED_DATASETS / "libsvm" / "heart_scale.svm"
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    X, y = load_data(path)
    assert X.shape == (270, 13)
    assert sp.issparse(X)
    assert set(np.unique(y)) == {-1.0, 1.0}


# ---------------------------------------------------------------------------- bad files


def test_unknown_suffix_lists_formats(tmp_path):
    path = tmp_path / "data.xlsx"
    path.write_text("1,2\n")
    message = _error(path)
    assert ".svm" in message and ".csv" in message and ".npz" in message


@pytest.mark.parametrize("name", ["absent.svm", "absent.svm.gz", "absent.csv", "absent.npz"])
def test_missing_file(tmp_path, name):
    assert "no such file" in _error(tmp_path / name)


def test_directory_instead_of_file(tmp_path):
    path = tmp_path / "folder.csv"
    path.mkdir()
    assert "directory" in _error(path)


def test_truncated_gzip(tmp_path, small):
    X, y = small
    plain = tmp_path / "plain.svm"
    _dump_svmlight(np.tile(X, (20, 1)), np.tile(y, 20), plain)
    packed = gzip.compress(plain.read_bytes())
    path = tmp_path / "cut.svm.gz"
    path.write_bytes(packed[: len(packed) // 2])
    assert "truncated" in _error(path)


@pytest.mark.parametrize("name", ["notgz.svm.gz", "notgz.csv.gz"])
def test_not_gzip(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"1 1:0.5 2:1\n")
    assert "gzip" in _error(path)


def test_corrupt_gzip_stream(tmp_path, small):
    X, y = small
    plain = tmp_path / "plain.svm"
    _dump_svmlight(np.tile(X, (20, 1)), np.tile(y, 20), plain)
    packed = bytearray(gzip.compress(plain.read_bytes()))
    packed[30] ^= 0xFF
    path = tmp_path / "broken.svm.gz"
    path.write_bytes(bytes(packed))
    _error(path)


@pytest.mark.parametrize(
    ("content", "line"),
    [("1 1:0.5 2:1\n-1 1:oops\n", 2),
     ("1 1:0.5\nlabel 1:2\n", 2),
     ("1 1:0.5 x:3\n", 1),
     ("1 3:0.5 2:1\n", 1)],
)
def test_malformed_svmlight(tmp_path, content, line):
    path = tmp_path / "bad.svm"
    path.write_text(content)
    message = _error(path)
    assert "not a valid svmlight" in message
    assert f"line {line}" in message


@pytest.mark.parametrize("name", ["empty.svm", "empty.csv"])
def test_empty_file(tmp_path, name):
    path = tmp_path / name
    path.write_text("\n \n")
    assert "empty" in _error(path)


def test_csv_ragged_rows(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("1,2,3\n4,5,6\n7,8\n")
    message = _error(path)
    assert "line 3" in message and "columns" in message


@pytest.mark.parametrize(("content", "where"),
                         [("1,2,3\n4,abc,6\n", "line 2, column 2"),
                          ("f1,f2,y\n1,2,3\n4,,6\n", "line 3, column 2")])
def test_csv_non_numeric_cell(tmp_path, content, where):
    path = tmp_path / "text.csv"
    path.write_text(content)
    assert where in _error(path)


def test_csv_header_only_and_one_column(tmp_path):
    header = tmp_path / "header.csv"
    header.write_text("a,b,y\n")
    assert "no data rows" in _error(header)
    single = tmp_path / "single.csv"
    single.write_text("1\n2\n")
    assert "two columns" in _error(single)


def test_csv_binary_content(tmp_path):
    path = tmp_path / "binary.csv"
    path.write_bytes(b"\xff\xfe\x00\x01,2\n")
    _error(path)


@pytest.mark.parametrize(("arrays", "expected"),
                         [({"X": np.ones((3, 2))}, "missing"),
                          ({"y": np.ones(3)}, "missing"),
                          ({"X": np.ones((3, 2)), "y": np.ones(4)}, "must match"),
                          ({"X": np.ones(3), "y": np.ones(3)}, "2-D"),
                          ({"X": np.array([["a", "b"]]), "y": np.ones(1)}, "not numeric"),
                          ({"X": np.ones((0, 2)), "y": np.ones(0)}, "empty")])
def test_bad_npz(tmp_path, arrays, expected):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    assert expected in _error(path)


def test_npz_not_an_archive(tmp_path):
    path = tmp_path / "garbage.npz"
    path.write_bytes(b"this is not a zip archive")
    _error(path)


def test_npz_holding_a_single_array(tmp_path):
    path = tmp_path / "single.npz"
    with open(path, "wb") as handle:
        np.save(handle, np.ones((3, 2)))
    _error(path)


# ---------------------------------------------------------------------------- fold ids


def test_read_fold_ids(tmp_path):
    path = tmp_path / "folds.txt"
    path.write_text("0\n1\n 2 \n-1\n0\n\n\n")
    ids = read_fold_ids(path, 5)
    assert ids.dtype == np.int64
    np.testing.assert_array_equal(ids, [0, 1, 2, -1, 0])


def test_read_fold_ids_gz(tmp_path):
    path = tmp_path / "folds.txt.gz"
    path.write_bytes(gzip.compress(b"1\n2\n1\n"))
    np.testing.assert_array_equal(read_fold_ids(path, 3), [1, 2, 1])


@pytest.mark.parametrize(("content", "expected"),
                         [("0\n1\nx\n", "line 3"),
                          ("0\n1.5\n1\n", "line 2"),
                          ("0\n\n1\n", "line 2"),
                          ("0\n1\n", "expected 3"),
                          ("0\n1\n0\n1\n", "expected 3")])
def test_bad_fold_ids(tmp_path, content, expected):
    path = tmp_path / "folds.txt"
    path.write_text(content)
    with pytest.raises(KernelCVError, match="folds.txt") as info:
        read_fold_ids(path, 3)
    assert expected in str(info.value)


def test_missing_fold_id_file(tmp_path):
    with pytest.raises(KernelCVError, match="absent.txt.*no such file"):
        read_fold_ids(tmp_path / "absent.txt", 3)


# ---------------------------------------------------------------------------- generated data


def test_demo_data():
    X, y = load_demo_data()
    assert X.shape == (569, 30)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(X.std(axis=0), 1.0)
    assert set(np.unique(y)) == {-1.0, 1.0}


@pytest.mark.parametrize("n_features", [1, 2, 10])
def test_make_synthetic_classification(n_features):
    X, y = make_synthetic(50, n_features, random_state=3)
    assert X.shape == (50, n_features)
    assert set(np.unique(y)) == {-1.0, 1.0}
    X2, y2 = make_synthetic(50, n_features, random_state=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_make_synthetic_regression():
    X, y = make_synthetic(40, 6, task="regression", noise=0.0, random_state=1)
    assert X.shape == (40, 6) and y.shape == (40,)
    expected = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
                + 10 * X[:, 3] + 5 * X[:, 4])
    np.testing.assert_allclose(y, expected)


@pytest.mark.parametrize("kwargs",
                         [{"n_samples": 1},
                          {"n_samples": 20, "n_features": 0},
                          {"n_samples": 20, "task": "ranking"},
                          {"n_samples": 20, "n_features": 3, "task": "regression"},
                          {"n_samples": 20, "noise": 2.0}])
def test_make_synthetic_bad_arguments(kwargs):
    with pytest.raises(KernelCVError):
        make_synthetic(**kwargs)
