"""Tests of the ``kernelcv`` command line, run in-process through ``main(argv)``."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from flat_options import as_objects
from kernelcv import BIF, make_machine
from kernelcv.cli import main, run_cv
from kernelcv.cv import cross_validate
from kernelcv.reading.files import load_data, make_synthetic

N = 48


@pytest.fixture(scope="module")
def classification():
    return make_synthetic(N, 4, random_state=7)


@pytest.fixture
def svm_file(tmp_path, classification):
    X, y = classification
    path = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(path))
    return path


@pytest.fixture
def regression_file(tmp_path):
    X, y = make_synthetic(N, 5, task="regression", random_state=2)
    path = tmp_path / "reg.npz"
    np.savez(path, X=X, y=y)
    return path, X, y


def _write_csv(path, X, y):
    rows = [",".join(f"{v!r}" for v in [*row, target])
            for row, target in zip(X.tolist(), y.tolist(), strict=True)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _run(capsys, *argv):
    """``main(argv)``: the exit code, stdout and stderr."""
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _run_json(capsys, *argv):
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out), err


def _assert_one_line_error(code, out, err):
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kernelcv: error: ")
    return lines[0]


# ---------------------------------------------------------------------------- success


@pytest.mark.parametrize(
    ("machine", "method", "extra", "kwargs"),
    [("lssvm", "exact", [], {}),
     ("lssvm", "closed-form", ["--no-intercept"], {"fit_intercept": False}),
     ("krr", "bif", ["--order", "3"], {"order": 3}),
     ("l2svm", "bif", ["--order", "inf"], {"order": "inf"}),
     ("svm", "bif", ["--order", "auto", "--huber-width", "0.05"],
      {"order": "auto", "huber_width": 0.05}),
     ("lssvm", "exact", ["--kernel", "poly", "--degree", "2", "--coef0", "0.5"],
      {"kernel": "poly", "degree": 2, "coef0": 0.5}),
     ("lssvm", "exact", ["--kernel", "laplace", "--folds", "4", "--seed", "3"],
      {"kernel": "laplace", "folds": 4, "random_state": 3})],
)
@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
def test_json_equals_library(capsys, svm_file, machine, method, extra, kwargs):
    summary, _ = _run_json(capsys, "cv", svm_file, "--machine", machine, "--gamma", 0.2,
                           "--lam", 0.01, "--method", method, *extra)
    X, y = load_data(svm_file)  # the same (sparse) matrix the command line sees
    spec, options = as_objects(machine, {"folds": 10, "random_state": 0, "method": method,
                                         **kwargs})
    expected = cross_validate(X, y, machine=spec, gamma=0.2, lam=0.01, **options)
    assert summary["cv_error"] == expected.cv_error
    assert summary["fold_errors"] == [float(e) for e in expected.fold_errors]
    for key in ("cv_error", "method", "order", "folds", "n_samples", "seconds",
                "degenerate"):
        assert key in summary
    assert summary["n_samples"] == N
    assert summary["folds"] == options["folds"]
    assert summary["data"] == str(svm_file)
    assert summary["params"]["machine"] == machine


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
def test_json_regression(capsys, regression_file):
    path, X, y = regression_file
    summary, _ = _run_json(capsys, "cv", path, "--machine", "svr", "--gamma", 0.5,
                           "--lam", 1e-3, "--svr-epsilon", 0.2, "--method", "bif")
    expected = cross_validate(X, y, machine=make_machine("svr", epsilon=0.2), gamma=0.5,
                              lam=1e-3, method=BIF(order="inf"), random_state=0)
    assert summary["cv_error"] == expected.cv_error
    assert summary["metric"] == "mse"


def test_readable_output(capsys, svm_file):
    code, out, err = _run(capsys, "cv", svm_file, "--machine", "lssvm", "--gamma", 0.2,
                          "--lam", 0.01, "--method", "closed-form", "--folds", 5)
    assert code == 0, err
    X, y = load_data(svm_file)
    expected = cross_validate(X, y, machine="lssvm", gamma=0.2, lam=0.01, folds=5,
                              method="closed-form", random_state=0)
    assert f"{expected.cv_error:.6g}" in out
    assert "CV error" in out and "0-1 error" in out
    for word in ("lssvm", "rbf", "gamma=0.2", "closed-form", str(svm_file)):
        assert word in out
    assert "WARNING" not in out


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
def test_fold_ids_file_equals_array(capsys, tmp_path, svm_file):
    X, y = load_data(svm_file)
    ids = np.arange(N) % 4
    path = tmp_path / "folds.txt"
    path.write_text("\n".join(str(i) for i in ids) + "\n")
    summary, _ = _run_json(capsys, "cv", svm_file, "--machine", "l2svm", "--gamma", 0.2,
                           "--lam", 0.01, "--method", "bif", "--fold-ids", path)
    expected = cross_validate(X, y, machine="l2svm", gamma=0.2, lam=0.01, folds=ids,
                              method="bif")
    assert summary["cv_error"] == expected.cv_error
    assert summary["folds"] == 4
    assert summary["fold_ids"] == str(path)
    assert summary["seed"] is None


def test_label_mapping_note_on_stderr(capsys, tmp_path, classification):
    X, y = classification
    path = _write_csv(tmp_path / "labels.csv", X, np.where(y > 0, 4.0, 2.0))
    summary, err = _run_json(capsys, "cv", path, "--machine", "lssvm", "--gamma", 0.2,
                             "--lam", 0.01, "--method", "exact")
    assert "kernelcv: note: labels" in err and "mapped to -1/+1" in err
    assert summary["label_mapping"] == {"-1": 2.0, "1": 4.0}


def test_degenerate_warning(capsys, svm_file):
    argv = ["cv", svm_file, "--machine", "lssvm", "--gamma", 1e4, "--lam", 0.01,
            "--method", "bif", "--order", 5]
    code, out, err = _run(capsys, *argv)
    assert code == 0
    assert "WARNING" in out and "--method exact" in out
    summary, err = _run_json(capsys, *argv)
    assert summary["degenerate"] is True
    assert "kernelcv: warning:" in err and "--method exact" in err


def test_non_finite_error_is_flagged(capsys, monkeypatch, svm_file):
    def broken(*args, **kwargs):
        result = cross_validate(*args, **kwargs)
        result.cv_error = float("nan")
        return result

    monkeypatch.setattr("kernelcv.cli.cv.cross_validate", broken)
    argv = ["cv", svm_file, "--machine", "krr", "--gamma", 0.2, "--lam", 0.01,
            "--method", "exact"]
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    assert "WARNING: the CV error is not a finite number" in out
    summary, err = _run_json(capsys, *argv)
    assert summary["cv_error"] is None
    assert "kernelcv: warning: the CV error is not a finite number" in err


def test_python_warnings_become_one_line(capsys, monkeypatch, svm_file):
    def noisy(*args, **kwargs):
        warnings.warn("matrix was\nnearly singular", RuntimeWarning, stacklevel=1)
        warnings.warn("matrix was\nnearly singular", RuntimeWarning, stacklevel=1)
        return cross_validate(*args, **kwargs)

    monkeypatch.setattr("kernelcv.cli.cv.cross_validate", noisy)
    code, out, err = _run(capsys, "cv", svm_file, "--machine", "krr", "--gamma", 0.2,
                          "--lam", 0.01, "--method", "exact")
    assert code == 0
    assert err.strip().splitlines() == [
        "kernelcv: warning: matrix was nearly singular (RuntimeWarning)"]


def test_run_cv_returns_plain_dict(svm_file):
    summary = run_cv(svm_file, machine="lssvm", gamma=0.2, lam=0.01, folds=3)
    json.dumps(summary, allow_nan=False)
    assert summary["folds"] == 3 and summary["seed"] == 0


def test_help_exits_zero(capsys):
    assert main(["--help"]) == 0
    assert main(["cv", "--help"]) == 0
    assert "--fold-ids" in capsys.readouterr().out


def test_python_dash_m(svm_file):
    done = subprocess.run(
        [sys.executable, "-m", "kernelcv", "cv", str(svm_file), "--machine", "lssvm",
         "--gamma", "0.2", "--lam", "0.01", "--method", "exact", "--json"],
        capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n_samples"] == N


# ---------------------------------------------------------------------------- bad input


def _bad_data(tmp_path, kind, X, y):
    """A data file with a specific defect."""
    if kind == "nan":
        X = X.copy()
        X[3, 1] = np.nan
        return _write_csv(tmp_path / "nan.csv", X, y)
    if kind == "one-class":
        return _write_csv(tmp_path / "one.csv", X, np.ones_like(y))
    if kind == "lonely-class":  # a third class with one sample: no fold can hold it out
        labels = np.where(np.arange(len(y)) == 4, 2, np.arange(len(y)) % 2)
        return _write_csv(tmp_path / "lonely.csv", X, labels)
    if kind == "length-mismatch":
        path = tmp_path / "mismatch.npz"
        np.savez(path, X=X, y=y[:-1])
        return path
    if kind == "malformed-svmlight":
        path = tmp_path / "bad.svm"
        path.write_text("1 1:0.5 2:0.1\n-1 1:zero\n")
        return path
    if kind == "truncated-gz":
        plain = tmp_path / "plain.svm"
        dump_svmlight_file(X, y, str(plain))
        packed = gzip.compress(plain.read_bytes())
        path = tmp_path / "cut.svm.gz"
        path.write_bytes(packed[: len(packed) // 2])
        return path
    if kind == "missing":
        return tmp_path / "absent.svm"
    raise AssertionError(kind)


@pytest.mark.parametrize(("kind", "expected"),
                         [("nan", "NaN"),
                          ("one-class", "one"),
                          ("lonely-class", "lacks 1 of the 3 classes"),
                          ("length-mismatch", "mismatch.npz"),
                          ("malformed-svmlight", "bad.svm"),
                          ("truncated-gz", "cut.svm.gz"),
                          ("missing", "absent.svm")])
def test_bad_data_files(capsys, tmp_path, classification, kind, expected):
    X, y = classification
    path = _bad_data(tmp_path, kind, X, y)
    result = _run(capsys, "cv", path, "--machine", "lssvm", "--gamma", 0.2, "--lam", 0.01,
                  "--method", "exact")
    assert expected in _assert_one_line_error(*result)


@pytest.mark.parametrize(("options", "expected"),
                         [(["--folds", 1], "at least 2 folds"),
                          (["--folds", N + 1], "folds"),
                          (["--gamma", 0], "gamma"),
                          (["--lam", -1], "lam"),
                          (["--memory-budget", "1K"], "memory budget"),
                          (["--kernel", "rbf", "--gamma", "nan"], "gamma")])
def test_bad_settings(capsys, svm_file, options, expected):
    base = {"--gamma": 0.2, "--lam": 0.01}
    for flag, value in zip(options[::2], options[1::2], strict=True):
        base[flag] = value
    argv = [arg for pair in base.items() for arg in pair]
    result = _run(capsys, "cv", svm_file, "--machine", "lssvm", "--method", "bif", *argv)
    assert expected in _assert_one_line_error(*result)


def test_missing_gamma_for_rbf(capsys, svm_file):
    result = _run(capsys, "cv", svm_file, "--machine", "lssvm", "--lam", 0.01,
                  "--method", "exact")
    assert "gamma" in _assert_one_line_error(*result)


def test_fold_without_a_class_in_training(capsys, tmp_path, svm_file, classification):
    _, y = classification
    ids = tmp_path / "by_class.txt"
    ids.write_text("\n".join("1" if label > 0 else "0" for label in y) + "\n")
    result = _run(capsys, "cv", svm_file, "--machine", "svm", "--gamma", 0.2, "--lam", 0.01,
                  "--method", "bif", "--fold-ids", ids)
    assert "only one class" in _assert_one_line_error(*result)


@pytest.mark.parametrize(("content", "expected"),
                         [("0\n1\n", f"expected {N}"),
                          ("0\nx\n" + "1\n" * (N - 2), "line 2")])
def test_bad_fold_id_file(capsys, tmp_path, svm_file, content, expected):
    ids = tmp_path / "ids.txt"
    ids.write_text(content)
    result = _run(capsys, "cv", svm_file, "--machine", "lssvm", "--gamma", 0.2,
                  "--lam", 0.01, "--method", "exact", "--fold-ids", ids)
    line = _assert_one_line_error(*result)
    assert "ids.txt" in line and expected in line


def test_missing_fold_id_file(capsys, tmp_path, svm_file):
    result = _run(capsys, "cv", svm_file, "--machine", "lssvm", "--gamma", 0.2,
                  "--lam", 0.01, "--method", "exact", "--fold-ids", tmp_path / "nope.txt")
    assert "nope.txt" in _assert_one_line_error(*result)


def test_closed_form_needs_square_loss(capsys, svm_file):
    result = _run(capsys, "cv", svm_file, "--machine", "svm", "--gamma", 0.2,
                  "--lam", 0.01, "--method", "closed-form")
    assert "closed-form" in _assert_one_line_error(*result)


@pytest.mark.parametrize("argv", [
    [],
    ["cv"],
    ["frobnicate"],
    ["cv", "DATA", "--gamma", "0.1", "--lam", "0.01", "--method", "exact"],  # no machine
    ["cv", "DATA", "--machine", "rf", "--lam", "0.01", "--method", "exact"],
    ["cv", "DATA", "--machine", "krr", "--lam", "x", "--method", "exact"],
    ["cv", "DATA", "--machine", "krr", "--lam", "1", "--method", "bif", "--order", "0"],
    ["cv", "DATA", "--machine", "krr", "--lam", "1", "--method", "bif", "--order", "two"],
    ["cv", "DATA", "--machine", "krr", "--lam", "1", "--method", "exact",
     "--memory-budget", "lots"],
    ["cv", "DATA", "--machine", "krr", "--lam", "1", "--method", "exact",
     "--folds", "3", "--fold-ids", "ids.txt"],
    ["cv", "DATA", "--machine", "krr", "--lam", "1", "--method", "exact",
     "--seed", "3", "--fold-ids", "ids.txt"],
])
def test_usage_errors_exit_2(capsys, argv):
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert "error:" in err


def test_hundreds_of_warnings_before_an_error_print_as_a_few_kinds(monkeypatch, capsys):
    # issue 41: 344 warning lines came before a one-line error
    import warnings

    from kernelcv.cli import cv as cv_command
    from kernelcv.exceptions import KernelCVError

    def noisy(args, parser):
        for k in range(344):
            warnings.warn(f"lam = {1e-3 * (k + 1):g}: the fit stopped after {k} steps",
                          RuntimeWarning, stacklevel=1)
        for k in range(8):
            warnings.warn(f"kind {chr(97 + k)} of problem", UserWarning, stacklevel=1)
        raise KernelCVError("the real problem")

    monkeypatch.setattr(cv_command, "run_command", noisy)
    code = main(["cv", "x.svm", "--machine", "krr", "--gamma", "1", "--lam", "1",
                 "--method", "exact"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and lines[-1] == "kernelcv: error: the real problem"
    assert len(lines) <= 7
    assert "343 more like it" in lines[0]
    assert "more warning(s)" in lines[-2]
