"""The command line never prints a traceback, whatever bytes a data file holds.

Random bytes, near-valid text (CSV, svmlight) and damaged archives (gzip, npz) go to every
command that reads a data file, in-process: any exception other than the one-line error
path would escape ``main`` and fail the test; stderr must hold only ``kernelcv:`` lines.
"""

from __future__ import annotations

import gzip
import io
import zipfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelcv.cli import main

COMMANDS = {
    "cv": ["--machine", "l2svm", "--gamma", "0.5", "--lam", "0.1", "--method", "bif",
           "--folds", "2"],
    "select": ["--machine", "krr", "--gamma-grid", "0.5", "--lam-grid", "0.1", "--folds",
               "2", "--no-progress"],
    "hypothetical": ["--model", "svm"],
    "tune": ["--kernels", "gaussian", "--betas", "1", "--restarts", "1", "--max-iter", "2",
             "--folds", "2"],
}
SUFFIXES = [".csv", ".svm", ".npz", ".csv.gz", ".svm.gz", ".txt"]

CELL = st.one_of(st.integers(-3, 3).map(str), st.floats(-10, 10).map(lambda v: f"{v:.3g}"),
                 st.sampled_from(["", "nan", "inf", "a", "1e400", "-0", " 1", "0x1"]))
CSV_TEXT = st.lists(st.lists(CELL, min_size=1, max_size=4).map(",".join),
                    min_size=0, max_size=8).map("\n".join)
SVM_TOKEN = st.one_of(
    st.tuples(st.integers(-1, 5), st.floats(-5, 5)).map(lambda t: f"{t[0]}:{t[1]:.3g}"),
    st.sampled_from(["qid:1", "#", "1:", ":1", "x:1", "3:nan", "99999999999:1", "2:1e999"]))
SVM_TEXT = st.lists(st.tuples(st.sampled_from(["1", "-1", "+1", "2", "a", ""]),
                              st.lists(SVM_TOKEN, max_size=4)).map(
    lambda row: " ".join([row[0], *row[1]])), min_size=0, max_size=8).map("\n".join)


def _npz_bytes(draw_data):
    buffer = io.BytesIO()
    kind = draw_data.draw(st.sampled_from(["good", "no_y", "ragged", "text", "truncated"]))
    arrays = {"X": np.arange(12.0).reshape(6, 2), "y": np.array([1, -1] * 3)}
    if kind == "no_y":
        del arrays["y"]
    elif kind == "ragged":
        arrays["y"] = np.ones(4)
    elif kind == "text":
        arrays["X"] = np.array(["a"] * 6)
    np.savez(buffer, **arrays)
    data = buffer.getvalue()
    if kind == "truncated":
        data = data[:draw_data.draw(st.integers(0, len(data) - 1))]
    return data


@st.composite
def contents(draw):
    """Bytes for a file of the drawn suffix: random, or near-valid for its format."""
    suffix = draw(st.sampled_from(SUFFIXES))
    how = draw(st.sampled_from(["bytes", "text", "archive"]))
    if how == "bytes":
        data = draw(st.binary(max_size=300))
    elif how == "text":
        data = draw(CSV_TEXT if "csv" in suffix else SVM_TEXT).encode()
    elif suffix == ".npz":
        data = _npz_bytes(draw(st.data()))
    else:
        data = draw(st.sampled_from([b"PK\x03\x04", b"\x1f\x8b\x08\x00junk", b"\x93NUMPY"]))
    if suffix.endswith(".gz") and draw(st.booleans()):
        data = gzip.compress(data)
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] if draw(st.booleans()) else data
    return suffix, data


@given(item=contents(), command=st.sampled_from(sorted(COMMANDS)))
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
def test_no_traceback_on_any_file(tmp_path_factory, capsys, item, command):
    suffix, data = item
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / f"data{suffix}"
    path.write_bytes(data)
    code = main([command, str(path), *COMMANDS[command]])
    captured = capsys.readouterr()
    assert code in (0, 2), captured.err
    for line in captured.err.splitlines():
        assert line.startswith("kernelcv: "), captured.err
    if code == 2:
        assert captured.err.splitlines()[-1].startswith("kernelcv: error: ")
    assert "Traceback" not in captured.err + captured.out


def test_the_generators_reach_the_success_path(tmp_path, capsys):
    """The fuzzed arguments are valid: a well-formed file of each kind succeeds."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    csv = tmp_path / "ok.csv"
    csv.write_text("".join(f"{a!r},{b!r},{c}\n" for (a, b), c in zip(X.tolist(), y,
                                                                      strict=True)))
    npz = tmp_path / "ok.npz"
    np.savez(npz, X=X, y=y)
    for command, options in COMMANDS.items():
        for path in (csv, npz):
            assert main([command, str(path), *options]) == 0, capsys.readouterr().err
    assert zipfile.is_zipfile(npz)
