"""``kernelcv select --method rff``: report, test error, plots, checkpoint and bad input."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file
from sklearn.svm import SVC

from kernelcv import FeatureSpace
from kernelcv.cli import main
from kernelcv.features import FeatureMap
from kernelcv.random_features.linear_cv import linear_svm_path_cv
from kernelcv.reading.files import make_synthetic
from kernelcv.selection.search import grid_search

N = 150
GRID = ["--gamma-grid", "2^-5,2^-3,2^-1", "--C-grid", "2^-1,2^3,2^7"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rff_data")
    X, y = make_synthetic(N + 80, 6, random_state=5)
    paths = {"train": folder / "train.svm.gz", "test": folder / "test.svm",
             "narrow": folder / "narrow.svm", "reg": folder / "reg.npz"}
    dump_svmlight_file(X[:N], y[:N], str(folder / "train.svm"))
    import gzip

    with open(folder / "train.svm", "rb") as raw, gzip.open(paths["train"], "wb") as packed:
        packed.write(raw.read())
    dump_svmlight_file(X[N:], y[N:], str(paths["test"]))
    dump_svmlight_file(X[N:, :-1], y[N:], str(paths["narrow"]))  # last column never used
    Xr, yr = make_synthetic(100, 5, task="regression", random_state=0)
    np.savez(paths["reg"], X=Xr, y=yr)
    return paths, X, y


def _run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _report(capsys, *argv):
    code, out, err = _run(capsys, "select", *argv, "--json", "--no-progress")
    assert code == 0, err
    return json.loads(out)


def test_rff_report_and_exact_final_test_error(capsys, files):
    paths, X, y = files
    report = _report(capsys, paths["train"], "--machine", "svm", "--method", "rff",
                     "--features", "40", "--folds", "5", *GRID, "--test", paths["test"],
                     "--refine", "off")
    assert report["method"] == "rff" and report["final_model"] == "kernel"
    assert report["refined"] == [] and report["feature_space"]["refine"] is False
    assert report["feature_space"]["features"] == 40
    assert report["feature_space"]["memory_estimate"] > 0
    assert len(report["candidates"]) == 9
    best = report["best_params"]
    np.testing.assert_allclose(best["C"], 1 / (2 * N * best["lam"]))
    # the test error is that of LIBSVM's SVC at the chosen gamma and C
    svc = SVC(C=best["C"], gamma=best["gamma"]).fit(X[:N], y[:N])
    assert report["test_error"] == pytest.approx(np.mean(svc.predict(X[N:]) != y[N:]))
    # the CV error is the feature-space CV on the search's folds
    search = grid_search(X[:N], y[:N], "svm", method=FeatureSpace(features=40), folds=5,
                         gammas=[best["gamma"]], lams=[best["lam"]])
    Z = FeatureMap("rff", 40, random_state=0).fit(X[:N]).transform(X[:N], best["gamma"])
    path = linear_svm_path_cv(Z, y[:N], search.fold_ids, [best["lam"]])
    assert report["best_cv_error"] == pytest.approx(path.cv_error[0])
    for key in ("final_seconds", "search_seconds", "total_seconds"):
        assert report["timings"][key] >= 0


def test_rff_linear_final_and_summary(capsys, files):
    paths, _, _ = files
    code, out, err = _run(capsys, "select", paths["train"], "--machine", "svm", "--method",
                          "rff", "--features", "30", "--feature-map", "nystroem", *GRID,
                          "--final", "linear", "--test", paths["narrow"], "--no-progress")
    assert code == 0, err
    assert "D = 30 nystroem features" in out
    assert "linear model in feature space" in out
    assert "C=" in out


def test_rff_square_loss_and_regression(capsys, files):
    paths, _, _ = files
    report = _report(capsys, paths["train"], "--machine", "svm", "--method", "rff",
                     "--feature-loss", "square", *GRID)
    assert report["feature_space"]["feature_loss"] == "square"
    report = _report(capsys, paths["reg"], "--machine", "krr", "--method", "rff",
                     "--gamma-grid", "2^-4,2^-2", "--lam-grid", "0.001,0.1")
    assert report["metric"] == "mse" and report["best_cv_error"] > 0


def test_rff_plots(capsys, files, tmp_path):
    paths, _, _ = files
    out = tmp_path / "out"
    report = _report(capsys, paths["train"], "--machine", "svm", "--method", "rff", *GRID,
                     "--out", out, "--plot")
    assert sorted(os.listdir(out)) == ["cv_curve.png", "cv_heatmap.png", "report.json"]
    for name in ("cv_curve.png", "cv_heatmap.png"):
        assert (out / name).read_bytes().startswith(b"\x89PNG")
    assert json.loads((out / "report.json").read_text())["method"] == "rff"
    assert report["files"]


def test_rff_checkpoint_resumes(capsys, files, tmp_path):
    paths, _, _ = files
    checkpoint = tmp_path / "ck.jsonl"
    first = _report(capsys, paths["train"], "--machine", "svm", "--method", "rff", *GRID,
                    "--features", "30", "--checkpoint", checkpoint)
    assert len(checkpoint.read_text().splitlines()) == 1 + 3
    second = _report(capsys, paths["train"], "--machine", "svm", "--method", "rff", *GRID,
                     "--features", "30", "--checkpoint", checkpoint)
    assert [c["score"] for c in second["candidates"]] == \
        [c["score"] for c in first["candidates"]]
    # the adaptive feature count (the default) changes its grid with D: refused up front
    other = tmp_path / "auto.jsonl"
    code, _, err = _run(capsys, "select", paths["train"], "--machine", "svm", "--method",
                        "rff", *GRID, "--checkpoint", other)
    assert code == 2 and "--features D" in err
    assert not other.exists()


@pytest.mark.parametrize(("options", "expected"), [
    (["--method", "rff", "--features", "0"], "at least 1"),
    (["--method", "rff", "--features", "-5"], "at least 1"),
    (["--method", "rff", "--gamma-grid", "0,1"], "finite and > 0"),
    (["--method", "rff", "--gamma-grid", "-2"], "gamma grid"),
    (["--method", "rff", "--kernel", "laplace"], "Gaussian"),
    (["--method", "rff", "--folds", "auto", "--epsilon", "0.1"], "number of folds"),
    (["--features", "40"], "belong(s) to --method rff"),
    (["--final", "linear"], "belong(s) to --method rff"),
    (["--method", "rff", "--C-grid", "0"], "C grid"),
    (["--method", "rff", "--memory-budget", "1K"], "memory budget"),
])
def test_rff_bad_input(capsys, files, tmp_path, options, expected):
    paths, _, _ = files
    code, out, err = _run(capsys, "select", paths["train"], "--machine", "svm", *options,
                          "--out", tmp_path / "out")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernelcv: error:"), err
    assert expected in lines[0]
    assert os.listdir(tmp_path) == []


def test_rff_machine_not_supported(capsys, files):
    paths, _, _ = files
    code, _, err = _run(capsys, "select", paths["reg"], "--machine", "svr", "--method",
                        "rff")
    assert code == 2 and "supports the machines" in err
    code, _, err = _run(capsys, "select", paths["reg"], "--machine", "krr", "--method",
                        "rff", "--feature-loss", "hinge")
    assert code == 2 and "classification loss" in err
