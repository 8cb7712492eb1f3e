"""CSV headers: explicit ``--header {auto,yes,no}``; auto says what it decided; an almost
numeric first row is an error; pandas' numeric header ``0,1,2,...`` is recognised."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelcv.cli import main
from kernelcv.exceptions import KernelCVError
from kernelcv.reading.files import load_data

ROWS = ["1,2,1", "2,3,-1", "3,1,1", "0,2,-1", "1,1,1", "2,2,-1"]


def _csv(tmp_path, first, name="data.csv"):
    path = tmp_path / name
    path.write_text("\n".join(([first] if first is not None else []) + ROWS) + "\n")
    return path


@pytest.mark.parametrize("first,header,n,decision", [
    ("a,b,y", "auto", 6, "read as a header"),
    ("0,1,2", "auto", 6, "column names 0, 1, 2"),  # pandas to_csv(index=False)
    ("0,1,target", "auto", 6, "read as a header"),
    ("5,1,1", "auto", 7, "read as a sample"),
    ("0,1,2", "no", 7, None),
    ("5,1,1", "yes", 6, None),
    ("a,b,y", "yes", 6, None),
    (None, "auto", 6, "read as a sample"),
])
def test_header_decision(tmp_path, caplog, first, header, n, decision):
    path = _csv(tmp_path, first)
    with caplog.at_level(logging.INFO, logger="kernelcv.reading.files"):
        X, y = load_data(path, header=header)
    assert X.shape == (n, 2) and y.shape == (n,)
    if decision is None:
        assert not caplog.records  # an explicit choice needs no note
    else:
        assert len(caplog.records) == 1 and decision in caplog.records[0].getMessage()
        assert str(path) in caplog.records[0].getMessage()


def test_text_in_the_target_of_a_numeric_file_is_an_error(tmp_path):
    """A typo in the first row's target ('O' for 0) is not a text label: the other
    targets are numbers."""
    path = _csv(tmp_path, "1,2,O")
    for header in ("auto", "no"):
        with pytest.raises(KernelCVError, match="line 1, column 3: the target 'O' is text "
                                                "but 6 other targets are numbers"):
            load_data(path, header=header)
    assert load_data(path, header="yes")[0].shape == (6, 2)


@pytest.mark.parametrize("first,column", [("1.5,l.2,1", 2), ("x,3.5,1", 1)])
def test_almost_numeric_first_row_is_an_error(tmp_path, first, column):
    path = _csv(tmp_path, first)
    with pytest.raises(KernelCVError, match=f"line 1: the first row is almost numeric.*"
                                            f"column {column}.*--header yes"):
        load_data(path)
    assert load_data(path, header="yes")[0].shape == (6, 2)
    with pytest.raises(KernelCVError, match=f"line 1, column {column}"):
        load_data(path, header="no")


def test_pandas_written_file(tmp_path):
    """What ``pandas.DataFrame(a).to_csv(index=False)`` writes (pandas is not needed)."""
    table = np.array([[0.125, -1.5, 3.0, 1.0], [2.0, 0.0, -0.25, -1.0], [1.0, 1.0, 1.0, 1.0]])
    path = tmp_path / "frame.csv"
    path.write_text("0,1,2,3\n" + "".join(",".join(repr(v) for v in row.tolist()) + "\n"
                                          for row in table))
    X, y = load_data(path)
    assert np.array_equal(X, table[:, :3]) and np.array_equal(y, table[:, 3])


def test_pandas_index_column_warns(tmp_path):
    path = tmp_path / "indexed.csv"
    path.write_text(",0,1,2\n" + "".join(f"{i},{i % 3},{(i * 7) % 5},{1 if i % 2 else -1}\n"
                                         for i in range(8)))
    with pytest.warns(UserWarning, match="pandas index"):
        X, _ = load_data(path)
    assert X.shape == (8, 3)


def test_cli_prints_the_decision_and_takes_the_option(tmp_path, capsys):
    path = _csv(tmp_path, "0,1,2")
    argv = ["cv", str(path), "--machine", "krr", "--gamma", "1", "--lam", "0.1",
            "--method", "exact", "--folds", "2", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if "first row" in line]
    assert len(notes) == 1 and notes[0].startswith("kernelcv: note: ")
    assert '"n_samples": 6' in captured.out
    assert main([*argv, "--header", "no"]) == 0
    captured = capsys.readouterr()
    assert '"n_samples": 7' in captured.out and "first row" not in captured.err
    typo = _csv(tmp_path, "1.5,l.2,1", "typo.csv")
    assert main(["select", str(typo), "--machine", "krr", "--gamma-grid", "1",
                 "--lam-grid", "0.1", "--folds", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "almost numeric" in err[0]


@pytest.mark.parametrize("command", [["tune"], ["hypothetical", "--model", "svm"]])
def test_every_reading_command_has_the_option(tmp_path, capsys, command):
    path = _csv(tmp_path, "1.5,l.2,1")
    assert main([command[0], str(path), *command[1:]]) == 2
    assert "almost numeric" in capsys.readouterr().err
    code = main([command[0], str(path), *command[1:], "--header", "no"])
    assert code == 2 and "line 1, column 2" in capsys.readouterr().err


@given(values=st.lists(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3,
                                max_size=3), min_size=2, max_size=6))
@settings(max_examples=60, deadline=None)
def test_numeric_files_round_trip_with_header_no(tmp_path_factory, values):
    """Every numeric row is a sample under ``--header no``, whatever it holds."""
    path = tmp_path_factory.mktemp("csv") / "numbers.csv"
    path.write_text("\n".join(",".join(repr(v) for v in row) for row in values) + "\n")
    X, y = load_data(path, header="no")
    table = np.asarray(values)
    assert np.array_equal(X, table[:, :2]) and np.array_equal(y, table[:, 2])
