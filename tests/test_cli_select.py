"""Tests of ``kernelcv select`` (grid search from the command line), mostly in-process."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv import BIF, cross_validate
from kernelcv.cli import main
from kernelcv.estimators import KernelRidgeRegressor, L2SVMClassifier
from kernelcv.reading.files import load_data, make_synthetic
from kernelcv.selection import screening
from kernelcv.selection.granularity import bound_rule
from kernelcv.selection.search import grid_search

N = 100
D = 4
GAMMAS = "2^-4..2^-1"  # 4 gammas
LAMS = "2^-7..2^-4"  # 4 lams
GAMMA_VALUES = [2.0**k for k in range(-4, 0)]
LAM_VALUES = [2.0**k for k in range(-7, -3)]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Fields of a candidate that must not depend on how (or whether resumed) a run was done.
_STABLE = ("setting", "gamma", "lam", "score", "cv_error", "exact_error", "status", "rank",
           "n_folds", "fold_errors")


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Training/test files in several formats, drawn from one synthetic problem."""
    folder = tmp_path_factory.mktemp("select_data")
    X, y = make_synthetic(N + 60, D, random_state=11)
    X_train, y_train, X_test, y_test = X[:N], y[:N], X[N:], y[N:]
    paths = {"train": folder / "train.svm", "test": folder / "test.svm",
             "test_narrow": folder / "test_narrow.svm", "test_wide": folder / "test_wide.svm",
             "test_wide_csv": folder / "test_wide.csv", "test_wide_npz": folder / "wide.npz"}
    dump_svmlight_file(X_train, y_train, str(paths["train"]))
    dump_svmlight_file(X_test, y_test, str(paths["test"]))
    # svmlight test data that never use the last feature: fewer columns once read.
    dump_svmlight_file(X_test[:, :-1], y_test, str(paths["test_narrow"]))
    wide = np.hstack([X_test, np.ones((X_test.shape[0], 1))])
    dump_svmlight_file(wide, y_test, str(paths["test_wide"]))
    _write_csv(paths["test_wide_csv"], wide, y_test)
    np.savez(paths["test_wide_npz"], X=wide, y=y_test)

    Xr, yr = make_synthetic(N + 40, 5, task="regression", random_state=4)
    paths["reg_train"] = folder / "reg_train.npz"
    paths["reg_test"] = folder / "reg_test.csv"
    np.savez(paths["reg_train"], X=Xr[:N], y=yr[:N])
    _write_csv(paths["reg_test"], Xr[N:], yr[N:])
    return paths


def _write_csv(path, X, y):
    rows = [",".join(repr(v) for v in [*row, target])
            for row, target in zip(X.tolist(), y.tolist(), strict=True)]
    path.write_text("\n".join(rows) + "\n")


def _run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _select(capsys, data, *options):
    """``kernelcv select DATA ... --json``: the parsed report (exit status 0 asserted)."""
    code, out, err = _run(capsys, "select", data, "--gamma-grid", GAMMAS, "--lam-grid", LAMS,
                          *options, "--json")
    assert code == 0, err
    assert "kernelcv: error" not in err
    return json.loads(out)


def _assert_one_line_error(code, out, err):
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kernelcv: error: ")
    return lines[0]


def _stable(report):
    return [{key: c.get(key) for key in _STABLE} for c in report["candidates"]]


def _without_timings(report):
    report = dict(report)
    report.pop("timings")
    report["candidates"] = [{k: v for k, v in c.items() if "seconds" not in k}
                            for c in report["candidates"]]
    return report


# ---------------------------------------------------------------------------- results


@pytest.mark.parametrize(("machine", "method"), [("l2svm", "bif"), ("krr", "closed-form")])
def test_select_agrees_with_library_and_brute_force(capsys, files, machine, method):
    code, out, err = _run(capsys, "select", files["train"], "--machine", machine,
                          "--gamma-grid", GAMMAS, "--lam-grid", LAMS)
    assert code == 0, err
    report = _select(capsys, files["train"], "--machine", machine, "--screen", "off")
    assert report["method"] == method
    assert len(report["candidates"]) == 16
    assert report["n_samples"] == N and report["folds"] == 10

    # The readable summary shows the choice and a ranked table.
    best = report["best_params"]
    for text in ("best CV error", f"gamma={best['gamma']:.4g}", f"lam={best['lam']:.4g}",
                 "rank", "score", "exact", "status", method, str(files["train"])):
        assert text in out
    assert len(re.findall(r"^ *[0-9]+\* ", out, re.MULTILINE)) == 1  # the chosen row

    # The library called directly with the same options.
    X, y = load_data(files["train"])
    result = grid_search(X, y, machine, gammas=GAMMA_VALUES, lams=LAM_VALUES)
    assert report["best_params"] == result.best_params
    assert report["best_index"] == result.best_index
    assert report["confirmed"] == result.confirmed
    expected_best = result.best["exact_error"]
    assert report["best_cv_error"] == pytest.approx(expected_best, rel=1e-12)
    assert [c["score"] for c in report["candidates"]] == pytest.approx(
        [c["score"] for c in result.candidates], rel=1e-12)

    # Brute force: exact refit CV on the same folds for every exact / confirmed value.
    exact = {}
    for index, c in enumerate(report["candidates"]):
        if c["exact_error"] is None:
            continue
        value = cross_validate(X, y, machine=machine, gamma=c["gamma"], lam=c["lam"],
                               folds=result.fold_ids, method="exact").cv_error
        assert c["exact_error"] == pytest.approx(value, rel=1e-7, abs=1e-12)
        exact[index] = value
    if method == "bif":
        assert sorted(exact) == report["confirmed"] and len(exact) >= 3
        # The 3 best-scored candidates (ties: grid order), passing over a repeat of a
        # (gamma, score) pair already taken; the chosen one is the best by exact error.
        by_score = sorted(range(16), key=lambda i: (report["candidates"][i]["score"], i))
        first, seen = [], set()
        for i in by_score:
            key = (report["candidates"][i]["gamma"], report["candidates"][i]["score"])
            if key not in seen:
                seen.add(key)
                first.append(i)
        # They are confirmed; more only where a later score beats or ties (not at 0) the
        # best exact error found.
        assert set(first[:3]) <= set(report["confirmed"])
        first_best = min(exact[j] for j in first[:3])
        for i in set(report["confirmed"]) - set(first[:3]):
            assert 0 < report["candidates"][i]["score"] <= first_best
    else:
        assert len(exact) == 16
    chosen = min(exact, key=lambda i: (exact[i], i))
    assert report["candidates"][chosen]["exact_error"] == pytest.approx(
        report["best_cv_error"], rel=1e-7)
    assert report["best_cv_error"] == pytest.approx(min(exact.values()), rel=1e-7)


def test_fold_ids_file(capsys, files, tmp_path):
    ids = np.arange(N) % 4
    path = tmp_path / "folds.txt"
    path.write_text("\n".join(str(i) for i in ids) + "\n")
    report = _select(capsys, files["train"], "--machine", "l2svm", "--fold-ids", path,
                     "--screen", "off")
    X, y = load_data(files["train"])
    result = grid_search(X, y, "l2svm", gammas=GAMMA_VALUES, lams=LAM_VALUES, folds=ids)
    assert report["folds"] == 4 and report["fold_ids"] == str(path)
    assert report["seed"] is None and report["granularity"] is None
    assert report["best_params"] == result.best_params
    assert [c["score"] for c in report["candidates"]] == [c["score"] for c in result.candidates]
    code, out, err = _run(capsys, "select", files["train"], "--machine", "l2svm",
                          "--fold-ids", path, "--seed", "3", "--gamma-grid", GAMMAS)
    assert code == 2 and "--seed" in err


def test_json_has_no_spurious_warning(capsys, files):
    code, _, err = _run(capsys, "select", files["train"], "--machine", "krr",
                        "--gamma-grid", GAMMAS, "--lam-grid", LAMS, "--json")
    assert code == 0
    assert "not a finite number" not in err


def test_poly_degree_range(capsys, files):
    code, out, err = _run(capsys, "select", files["train"], "--machine", "lssvm", "--kernel",
                          "poly", "--degree-grid", "1..3", "--gamma", "0.5", "--lam-grid",
                          LAMS, "--json")
    assert code == 0, err
    report = json.loads(out)
    X, y = load_data(files["train"])
    result = grid_search(X, y, "lssvm", kernel="poly", degrees=[1, 2, 3], lams=LAM_VALUES,
                         kernel_params={"gamma": 0.5})
    assert report["param_name"] == "degree"
    assert report["best_params"] == result.best_params
    assert [c["score"] for c in report["candidates"]] == [c["score"] for c in result.candidates]


def test_top_limits_the_table(capsys, files):
    code, out, err = _run(capsys, "select", files["train"], "--machine", "krr",
                          "--gamma-grid", GAMMAS, "--lam-grid", LAMS, "--top", "2")
    assert code == 0, err
    rows = re.findall(r"^ *[0-9]+\*? ", out, re.MULTILINE)
    assert 2 <= len(rows) <= 3  # the top 2, plus the chosen one if it is not among them


def test_linear_kernel_plot_note(capsys, files, tmp_path):
    code, out, err = _run(capsys, "select", files["train"], "--machine", "krr", "--kernel",
                          "linear", "--lam-grid", LAMS, "--out", tmp_path, "--plot")
    assert code == 0, err
    assert "kernelcv: note: --plot: the linear kernel has no parameter" in err
    assert os.listdir(tmp_path) == ["report.json"]


def test_sigma_grid_equals_gamma_grid(capsys, files):
    sigmas = [0.5, 1.0, 2.0, 4.0]
    gammas = [1.0 / (2.0 * s * s) for s in sigmas]
    code, out, err = _run(capsys, "select", files["train"], "--machine", "krr", "--lam-grid",
                          LAMS, "--sigma-grid", ",".join(map(str, sigmas)), "--json")
    assert code == 0, err
    by_sigma = json.loads(out)
    code, out, err = _run(capsys, "select", files["train"], "--machine", "krr", "--lam-grid",
                          LAMS, "--gamma-grid", ",".join(map(repr, gammas)), "--json")
    assert code == 0, err
    by_gamma = json.loads(out)
    assert [c["gamma"] for c in by_sigma["candidates"]][::4] == gammas
    assert by_sigma["best_params"] == by_gamma["best_params"]
    assert _stable(by_sigma) == _stable(by_gamma)


def test_parallel_equals_sequential(capsys, files):
    sequential = _select(capsys, files["train"], "--machine", "l2svm", "--n-jobs", "1")
    parallel = _select(capsys, files["train"], "--machine", "l2svm", "--n-jobs", "2")
    assert parallel["best_params"] == sequential["best_params"]
    for a, b in zip(parallel["candidates"], sequential["candidates"], strict=True):
        assert (a["gamma"], a["lam"], a["status"]) == (b["gamma"], b["lam"], b["status"])
        assert a["score"] == pytest.approx(b["score"], rel=1e-9, abs=1e-12)
        assert (a["exact_error"] is None) == (b["exact_error"] is None)
        if a["exact_error"] is not None:
            assert a["exact_error"] == pytest.approx(b["exact_error"], rel=1e-9, abs=1e-12)


def test_auto_folds_granularity(capsys, files):
    report = _select(capsys, files["train"], "--machine", "svm", "--folds", "auto",
                     "--epsilon", "0.5")
    assert report["folds"] == "auto" and report["granularity"] == "adaptive"
    assert report["epsilon"] == 0.5
    for c in report["candidates"]:
        choice = bound_rule(0.5, delta=0.01, lam=c["lam"], kappa=1.0, n_samples=N)
        g = c["granularity"]
        assert g["rule"] == "adaptive"
        assert (g["n_folds"], g["order"]) == (choice.n_folds, choice.order)
        assert g["bound"] == pytest.approx(choice.bound)
        assert c["n_folds"] == choice.n_folds
    # Larger lam: fewer (or as many) folds.
    folds = {c["lam"]: c["n_folds"] for c in report["candidates"]}
    ordered = [folds[lam] for lam in sorted(folds)]
    assert ordered == sorted(ordered, reverse=True) and ordered[0] > ordered[-1]


# ---------------------------------------------------------------------------- test data


@pytest.mark.parametrize(("machine", "train", "test", "estimator"), [
    ("l2svm", "train", "test", L2SVMClassifier),
    ("krr", "reg_train", "reg_test", KernelRidgeRegressor),
])
def test_test_error_equals_refit_estimator(capsys, files, machine, train, test, estimator):
    report = _select(capsys, files[train], "--machine", machine, "--test", files[test])
    X, y = load_data(files[train])
    X_test, y_test = load_data(files[test])
    params = {k: v for k, v in report["best_params"].items() if k != "kernel"}
    model = estimator(kernel="rbf", **params).fit(X, y)
    if machine == "l2svm":
        expected = np.mean(model.predict(X_test) != y_test)
    else:
        expected = np.mean((model.predict(X_test) - y_test) ** 2)
    assert report["test"] == str(files[test])
    assert report["test_error"] == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert report["timings"]["test_seconds"] >= 0
    code, out, _ = _run(capsys, "select", files[train], "--machine", machine, "--gamma-grid",
                        GAMMAS, "--lam-grid", LAMS, "--test", files[test])
    assert code == 0 and "test error" in out and f"{report['test_error']:.4g}" in out


def test_svmlight_test_file_with_fewer_features_is_padded(capsys, files):
    report = _select(capsys, files["train"], "--machine", "l2svm", "--test",
                     files["test_narrow"])
    X, y = load_data(files["train"])
    X_test, y_test = load_data(files["test"])
    X_test = X_test.toarray()
    X_test[:, -1] = 0.0
    params = {k: v for k, v in report["best_params"].items() if k != "kernel"}
    model = L2SVMClassifier(**params).fit(X, y)
    assert report["test_error"] == pytest.approx(np.mean(model.predict(X_test) != y_test))


def test_svmlight_test_file_with_more_features_keeps_the_joint_width(capsys, files):
    # Read together, the training data get an all-zero column for the test file's extra
    # feature: the search is unchanged (no kernel value between training points changes)
    # and the model predicts the test rows with every feature they have.
    plain = _select(capsys, files["train"], "--machine", "l2svm", "--test", files["test"])
    wide = _select(capsys, files["train"], "--machine", "l2svm", "--test", files["test_wide"])
    assert wide["best_params"] == plain["best_params"]
    assert [c["score"] for c in wide["candidates"]] == [c["score"] for c in plain["candidates"]]
    X, y = load_data(files["train"])
    X_wide, y_test = load_data(files["test_wide"])
    X_pad = np.hstack([X.toarray(), np.zeros((X.shape[0], 1))])
    params = {k: v for k, v in wide["best_params"].items() if k != "kernel"}
    model = L2SVMClassifier(**params).fit(X_pad, y)
    assert wide["test_error"] == pytest.approx(np.mean(model.predict(X_wide) != y_test))
    # bias-free rbf machine: the extra feature scales every k(x, x_i) by exp(-gamma),
    # so no sign (and no test error) changes
    assert wide["test_error"] == pytest.approx(plain["test_error"])
    krr = _select(capsys, files["train"], "--machine", "krr", "--test", files["test_wide"])
    params = {k: v for k, v in krr["best_params"].items() if k != "kernel"}
    model = KernelRidgeRegressor(**params).fit(X_pad, y)
    mse = np.mean((model.predict(X_wide) - y_test) ** 2)
    assert krr["test_error"] == pytest.approx(mse)


@pytest.mark.parametrize("name", ["test_wide_csv", "test_wide_npz"])
def test_test_file_with_more_features_is_refused(capsys, files, tmp_path, name):
    out_dir = tmp_path / "out"
    result = _run(capsys, "select", files["train"], "--machine", "l2svm", "--gamma-grid",
                  GAMMAS, "--lam-grid", LAMS, "--test", files[name], "--out", out_dir,
                  "--checkpoint", tmp_path / "ck.jsonl")
    line = _assert_one_line_error(*result)
    assert f"has {D + 1} features" in line and f"has {D}" in line
    assert sorted(os.listdir(tmp_path)) == []


def test_test_labels_are_checked_before_the_search(capsys, files, tmp_path, monkeypatch):
    X_test, y_test = load_data(files["test"])
    path = tmp_path / "bad_labels.svm"
    dump_svmlight_file(X_test, np.where(y_test > 0, 3.0, -1.0), str(path))

    def no_search(*args, **kwargs):
        raise AssertionError("the search ran")

    monkeypatch.setattr("kernelcv.reports.select.grid_search", no_search)
    line = _assert_one_line_error(*_run(
        capsys, "select", files["train"], "--machine", "l2svm", "--test", path))
    assert "test labels [3.0]" in line


# ---------------------------------------------------------------------------- output files


def test_out_dir_with_plots(capsys, files, tmp_path):
    out_dir = tmp_path / "results"
    report = _select(capsys, files["train"], "--machine", "l2svm", "--out", out_dir,
                     "--plot", "--test", files["test"])
    names = sorted(os.listdir(out_dir))
    assert names == ["cv_curve.png", "cv_heatmap.png", "report.json"]
    for name in ("cv_curve.png", "cv_heatmap.png"):
        assert (out_dir / name).read_bytes().startswith(PNG_SIGNATURE)
    written = json.loads((out_dir / "report.json").read_text())
    assert _without_timings(written) == _without_timings(report)
    assert sorted(report["files"]) == sorted(str(out_dir / name) for name in names)
    assert report["timings"]["plot_seconds"] >= 0

    # The readable run lists the written files; rewriting leaves no temporary files.
    code, out, err = _run(capsys, "select", files["train"], "--machine", "krr",
                          "--gamma-grid", GAMMAS, "--lam-grid", LAMS, "--out", out_dir)
    assert code == 0, err
    assert re.search(rf"^wrote +{re.escape(str(out_dir / 'report.json'))}$", out, re.MULTILINE)
    assert sorted(os.listdir(out_dir)) == names
    assert json.loads((out_dir / "report.json").read_text())["machine"] == "krr"


def test_plot_needs_out(capsys, files):
    line = _assert_one_line_error(*_run(capsys, "select", files["train"], "--machine", "krr",
                                        "--gamma-grid", GAMMAS, "--plot"))
    assert "--out" in line


def test_out_under_a_file(capsys, files, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    line = _assert_one_line_error(*_run(
        capsys, "select", files["train"], "--machine", "krr", "--gamma-grid", GAMMAS,
        "--lam-grid", LAMS, "--out", blocker / "out"))
    assert "is a file" in line
    assert os.listdir(tmp_path) == ["file"] and blocker.read_text() == "x"
    line = _assert_one_line_error(*_run(
        capsys, "select", files["train"], "--machine", "krr", "--gamma-grid", GAMMAS,
        "--lam-grid", LAMS, "--out", blocker))
    assert "not a folder" in line


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root ignores file permissions")
def test_out_not_writable(capsys, files, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        for out in (locked, locked / "sub"):
            line = _assert_one_line_error(*_run(
                capsys, "select", files["train"], "--machine", "krr", "--gamma-grid",
                GAMMAS, "--lam-grid", LAMS, "--out", out))
            assert "not writable" in line
        assert os.listdir(locked) == []
    finally:
        locked.chmod(0o700)


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("options", "expected"), [
    (["--machine", "krr", "--gamma-grid", ""], "gamma grid is empty"),
    (["--machine", "krr", "--lam-grid", "0,1"], "lam grid"),
    (["--machine", "krr", "--sigma-grid", "1,-2"], "sigma grid"),
    (["--machine", "svm", "--method", "closed-form"], "closed-form"),
    (["--machine", "svm", "--folds", "auto"], "epsilon"),
    (["--machine", "svm", "--folds", "auto", "--epsilon", "0.004"], "0.005"),
    (["--machine", "l2svm", "--method", "gacv"], "gacv"),
    (["--machine", "krr", "--folds", "500"], "500 folds"),
    (["--machine", "l2svm", "--folds", "10", "--epsilon", "0.5"], "epsilon"),
    (["--machine", "krr", "--gamma", "0.5"], "--gamma-grid"),
])
def test_bad_options(capsys, files, tmp_path, options, expected):
    grid = [] if "--sigma-grid" in options else ["--gamma-grid", GAMMAS]
    argv = ["select", files["train"], *grid, "--lam-grid", LAMS, *options,
            "--out", tmp_path / "out", "--checkpoint", tmp_path / "ck.jsonl"]
    line = _assert_one_line_error(*_run(capsys, *argv))
    assert expected in line
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("content", ["1 1:0.5 x\n", "-1 2:1 1:2\n", ""])
def test_malformed_data_file(capsys, tmp_path, content):
    path = tmp_path / "bad.svm"
    path.write_text(content)
    line = _assert_one_line_error(*_run(capsys, "select", path, "--machine", "krr",
                                        "--out", tmp_path / "out"))
    assert str(path) in line
    assert os.listdir(tmp_path) == ["bad.svm"]


@pytest.mark.parametrize("argv", [
    ["--machine", "krr", "--folds", "1"],
    ["--machine", "krr", "--n-jobs", "0"],
    ["--machine", "krr", "--confirm", "-1"],
    ["--machine", "krr", "--top", "-1"],
    ["--machine", "forest"],
    ["--gamma-grid", "1"],
])
def test_usage_errors(capsys, files, argv):
    code, out, err = _run(capsys, "select", files["train"], *argv)
    assert code == 2 and out == "" and "error:" in err and "Traceback" not in err


# ---------------------------------------------------------------------------- checkpoints


def test_checkpoint_rerun_does_no_new_work(capsys, files, tmp_path, monkeypatch):
    checkpoint = tmp_path / "search.ckpt"
    options = ["--machine", "l2svm", "--checkpoint", checkpoint]
    first = _select(capsys, files["train"], *options)
    lines = checkpoint.read_text().splitlines()
    # header, one line per gamma, one per confirmation
    assert len(lines) == 1 + 4 + len(first["confirmed"]) and len(first["confirmed"]) >= 3
    size = checkpoint.stat().st_size

    calls = []
    real = screening.run_tasks  # the grid is evaluated there (full or screened)

    def counting(function, tasks, **kwargs):
        tasks = list(tasks)
        calls.append(len(tasks))
        return real(function, tasks, **kwargs)

    monkeypatch.setattr(screening, "run_tasks", counting)
    second = _select(capsys, files["train"], *options)
    assert calls and sum(calls) == 0
    assert checkpoint.stat().st_size == size
    assert second["best_params"] == first["best_params"]
    assert _stable(second) == _stable(first)
    assert second["best_cv_error"] == first["best_cv_error"]


def test_checkpoint_with_torn_last_line(capsys, files, tmp_path):
    reference = _select(capsys, files["train"], "--machine", "l2svm", "--screen", "off")
    checkpoint = tmp_path / "search.ckpt"
    _select(capsys, files["train"], "--machine", "l2svm", "--checkpoint", checkpoint)
    text = checkpoint.read_text()
    lines = text.splitlines(keepends=True)
    # Keep the header, two settings and half of the third setting's line.
    checkpoint.write_text("".join(lines[:3]) + lines[3][: len(lines[3]) // 2])
    resumed = _select(capsys, files["train"], "--machine", "l2svm", "--checkpoint",
                      checkpoint)
    assert resumed["best_params"] == reference["best_params"]
    assert _stable(resumed) == _stable(reference)
    for line in checkpoint.read_text().splitlines():
        json.loads(line)


def test_checkpoint_of_another_search_is_refused(capsys, files, tmp_path):
    checkpoint = tmp_path / "search.ckpt"
    _select(capsys, files["train"], "--machine", "krr", "--checkpoint", checkpoint)
    before = checkpoint.read_bytes()
    line = _assert_one_line_error(*_run(
        capsys, "select", files["train"], "--machine", "krr", "--gamma-grid", GAMMAS,
        "--lam-grid", "2^-6..2^-3", "--checkpoint", checkpoint))
    assert "different search" in line and str(checkpoint) in line
    assert checkpoint.read_bytes() == before
    assert os.listdir(tmp_path) == ["search.ckpt"]


def test_checkpoint_survives_kill_9(tmp_path):
    X, y = make_synthetic(300, 5, random_state=5)
    data = tmp_path / "big.svm"
    dump_svmlight_file(X, y, str(data))
    checkpoint = tmp_path / "big.ckpt"
    n_settings = 14
    options = ["--machine", "l2svm", "--method", "exact", "--screen", "off",
               "--gamma-grid", "2^-9..2^4",
               "--lam-grid", "2^-10..2^-5", "--no-progress", "--json"]
    command = [sys.executable, "-m", "kernelcv", "select", str(data), *options]
    # One BLAS thread: on a busy 2-core machine, spinning BLAS threads slow this 10-fold.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen([*command, "--checkpoint", str(checkpoint)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               cwd=tmp_path, env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            if checkpoint.exists() and checkpoint.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.002)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        stderr = process.stderr.read().decode()
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL, stderr
    done = checkpoint.read_bytes().count(b"\n")
    assert 3 <= done < n_settings + 1

    runs = []
    for extra in (["--checkpoint", str(checkpoint)], []):
        run = subprocess.run([*command, *extra], capture_output=True, text=True,
                             timeout=300, cwd=tmp_path, env=env)
        assert run.returncode == 0, run.stderr
        runs.append(json.loads(run.stdout))
    resumed, uninterrupted = runs
    assert checkpoint.read_bytes().count(b"\n") == n_settings + 1
    assert len(uninterrupted["candidates"]) == n_settings * 6
    assert resumed["best_params"] == uninterrupted["best_params"]
    assert resumed["best_cv_error"] == uninterrupted["best_cv_error"]
    for a, b in zip(resumed["candidates"], uninterrupted["candidates"], strict=True):
        for key in ("gamma", "lam", "score", "exact_error", "status", "rank"):
            assert a[key] == b[key], key


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
def test_curve_orders_are_bif_cv_values():
    """The low-order curves of cv_curve.png are BIF CV errors on the search's folds."""
    from kernelcv import cross_validate, grid_search
    from kernelcv.reports.select import _bif_along

    X, y = make_synthetic(80, n_features=4, random_state=5)
    result = grid_search(X, y, "l2svm", gammas=[0.05, 0.5], lams=[0.01], folds=4)
    for order in (1, 3):
        values = _bif_along(result, result.candidates, order, X, y, None)
        for c, value in zip(result.candidates, values, strict=True):
            ref = cross_validate(X, y, "l2svm", gamma=c["gamma"], lam=c["lam"],
                                 folds=result.fold_ids, method=BIF(order=order))
            assert value == pytest.approx(ref.cv_error)


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
def test_plots_draw_what_the_search_computed_and_refit_only_when_asked(monkeypatch):
    """--plot: no refits (the curve's exact line is the confirmations the search made);
    --plot-exact: the exact curve by refit CV and BIF orders 1 and 3 beside it."""
    pytest.importorskip("matplotlib")
    from kernelcv import grid_search
    from kernelcv.plotting import figure_class
    from kernelcv.reports import select as select_module

    X, y = make_synthetic(80, n_features=4, random_state=5)
    result = grid_search(X, y, "l2svm", gammas=[0.05, 0.5, 5.0], lams=[0.01, 0.1], folds=4)
    drawn = {}
    monkeypatch.setattr(select_module, "cv_curve_figure",
                        lambda curves, **kw: drawn.update(curves) or figure_class()())

    def no_refits(*args, **kwargs):
        raise AssertionError("a default plot refits nothing")

    monkeypatch.setattr(select_module, "_exact_along", no_refits)
    monkeypatch.setattr(select_module, "_bif_along", no_refits)
    figures = select_module._figures(result, X, y, None, None)
    assert set(figures) == {"cv_heatmap.png", "cv_curve.png"}
    best_lam = result.best["lam"]
    confirmed = sorted((c["gamma"], c["exact_error"]) for c in result.candidates
                       if c["lam"] == best_lam and c["exact_error"] is not None)
    assert confirmed  # the chosen candidate is confirmed
    assert sorted(zip(*drawn["exact, where computed"], strict=True)) == confirmed
    assert set(drawn) == {"bif", "exact, where computed"}
    drawn.clear()
    monkeypatch.setattr(select_module, "_exact_along", lambda r, c, *a: [0.5] * len(c))
    monkeypatch.setattr(select_module, "_bif_along", lambda r, c, o, *a: [0.25] * len(c))
    select_module._figures(result, X, y, None, None, exact=True)
    assert set(drawn) == {"bif", "exact", "bif r=1", "bif r=3"}


def test_select_screens_coarse_to_fine_by_default(capsys, files, tmp_path):
    grid = ["--gamma-grid", "2^-6..2^3", "--lam-grid", "2^-8..2^0", "--json"]
    code, out, err = _run(capsys, "select", files["train"], "--machine", "svm", *grid)
    assert code == 0, err
    screened = json.loads(out)
    code, out, err = _run(capsys, "select", files["train"], "--machine", "svm", *grid,
                          "--screen", "off")
    assert code == 0, err
    full = json.loads(out)
    assert screened["screen"] == "coarse" and full["screen"] == "off"
    assert len(full["candidates"]) == 10 * 9 > len(screened["candidates"])
    assert any("screened (coarse)" in note for note in screened["notes"])
    values = {(c["gamma"], c["lam"]): c["score"] for c in full["candidates"]}
    for c in screened["candidates"]:
        assert c["score"] == pytest.approx(values[(c["gamma"], c["lam"])], abs=1e-12)
    # a checkpointed run evaluates the whole grid; asking for both is a one-line error
    code, out, err = _run(capsys, "select", files["train"], "--machine", "svm", *grid,
                          "--screen", "coarse", "--checkpoint", tmp_path / "c.ckpt")
    assert "checkpoint" in _assert_one_line_error(code, out, err)
    assert not (tmp_path / "c.ckpt").exists()


def test_a_C_grid_search_shows_C_in_the_summary(capsys, files):
    code, out, err = _run(capsys, "select", files["train"], "--machine", "l2svm",
                          "--gamma-grid", GAMMAS, "--C-grid", "2^0..2^6:2")
    assert code == 0, err
    table = out[out.index("rank"):].splitlines()
    assert table[0].split()[:3] == ["rank", "gamma", "C"]
    Cs = {float(line.split()[2]) for line in table[1:] if line.strip()[0].isdigit()}
    assert Cs <= {1.0, 4.0, 16.0, 64.0}  # the user's own values, not lam
    best = next(line for line in out.splitlines() if line.startswith("best "))
    assert "(C=" in best
