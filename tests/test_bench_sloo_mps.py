"""The ``sloo-mps`` table of ``kernelcv bench`` (SLOO-MPS, Bo, Wang & Jiao, Table 1).

The table's CV errors are checked against an independent numpy recomputation (bias-free
LS-SVM per fold and pair of classes, with the tuned weights, majority vote) and against
``kernelcv tune``'s report on the same file; the scikit-learn reference against SVC fits
per fold. Tiny optimiser budgets and subsampled scikit-learn data keep it to seconds.
"""

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.datasets import dump_svmlight_file, load_wine
from sklearn.svm import SVC

from kernelcv import cli
from kernelcv.estimators import SmoothLOOTuning
from kernelcv.experiments import BenchFiles, BenchPlan, bench, sloo_mps
from kernelcv.reports.command_files import DataFiles
from kernelcv.reports.tune import run_tune

TINY = sloo_mps.SlooMode("quick", ("wine", "iris", "glass"), 1, 3, svc_gammas=(0.25, 1.0),
                         svc_cs=(1.0, 8.0))
SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(autouse=True)
def tiny_quick_mode(monkeypatch):
    monkeypatch.setitem(sloo_mps.SLOO_MODES, "quick", TINY)


def _wine(per_class=14, classes=(0, 1, 2), seed=0):
    """A stratified subsample of scikit-learn's wine, min-max scaled to [-1, 1]; three
    weak features (malic acid, ash, alkalinity), so that CV errors are 18-43 %, not 0."""
    X, y = load_wine(return_X_y=True)
    rng = np.random.default_rng(seed)
    keep = np.concatenate([rng.choice(np.flatnonzero(y == c), per_class, replace=False)
                           for c in classes])
    X = X[keep][:, 1:4]
    X = 2 * (X - X.min(0)) / (X.max(0) - X.min(0)) - 1
    return X, y[keep] + 1  # labels 1, 2, 3 as in wine.scale


def _independent_cv(X, y, result, fold_ids):
    """10-fold 0-1 error of the tuned weights: for each fold and machine, solve
    (sum theta^2 K_c + I) alpha = y_pm on the pair's training rows, then vote."""
    wrong = 0
    for fold in np.unique(fold_ids):
        train, test = fold_ids != fold, fold_ids == fold
        Xtr, ytr, Xte = X[train], y[train], X[test]
        scores = {c: np.zeros((Xte.shape[0], 2)) for c in np.unique(y)}  # votes, confidence
        for machine in result["machines"]:
            positive, negative = machine["classes"]
            rows = (ytr == positive) | (ytr == negative)
            H, K_test = np.eye(rows.sum()), 0.0  # I / C with the paper's C = 1
            for name, theta in machine["theta"].items():
                kernel, beta = re.fullmatch(r"(\w+)\(beta=(.+)\)", name).groups()
                metric = "sqeuclidean" if kernel == "gaussian" else "cityblock"
                H = H + theta**2 * np.exp(-cdist(Xtr[rows], Xtr[rows], metric) / float(beta))
                K_test = K_test + theta**2 * np.exp(-cdist(Xte, Xtr[rows], metric)
                                                    / float(beta))
            f = K_test @ np.linalg.solve(H, np.where(ytr[rows] == positive, 1.0, -1.0))
            scores[positive][:, 0] += f >= 0
            scores[negative][:, 0] += f < 0
            scores[positive][:, 1] += f
            scores[negative][:, 1] -= f
        labels = list(scores)
        predicted = [max(labels, key=lambda c, i=i: tuple(scores[c][i]))
                     for i in range(Xte.shape[0])]
        wrong += int(np.sum(np.array(predicted) != y[test]))
    return wrong / y.shape[0]


@pytest.mark.parametrize("classes", [(0, 1), (0, 1, 2)], ids=["binary", "one-against-one"])
def test_table_row_equals_an_independent_refit_per_fold(classes):
    X, y = _wine(classes=classes)
    row = sloo_mps.run_sloo_set(X, y, TINY, seed=0)
    fold_ids, stratified = sloo_mps.make_sloo_folds(y, 0)
    assert stratified and (row["n"], row["classes"]) == (y.size, len(classes))
    for scheme, result in row["schemes"].items():
        assert len(result["machines"]) == len(classes) * (len(classes) - 1) // 2
        expected_kernels = set(sloo_mps.SCHEMES[scheme])
        assert {n.split("(")[0] for n in result["machines"][0]["theta"]} == expected_kernels
        assert result["cv_error"] == pytest.approx(_independent_cv(X, y, result, fold_ids),
                                                   abs=1e-12), scheme
        assert len(result["fold_errors"]) == 10 and result["cv_error"] > 0.1


def test_svc_reference_equals_svc_fits_per_fold():
    X, y = _wine()
    fold_ids, _ = sloo_mps.make_sloo_folds(y, 0)
    svc = sloo_mps.run_svc(X, y, fold_ids, TINY)
    assert svc["grid_size"] == 4

    def fold_accuracies(params):
        return [np.mean(SVC(kernel="rbf", **params).fit(X[fold_ids != f], y[fold_ids != f])
                        .predict(X[fold_ids == f]) == y[fold_ids == f]) for f in range(10)]

    best = fold_accuracies(svc["best_params"])
    sizes = np.bincount(fold_ids)
    assert svc["cv_error"] == pytest.approx(np.dot(1 - np.array(best), sizes) / y.size)
    for gamma in TINY.svc_gammas:  # GridSearchCV ranks by the mean fold accuracy
        for C in TINY.svc_cs:
            assert np.mean(fold_accuracies({"gamma": gamma, "C": C})) <= np.mean(best) + 1e-12


def _data_folder(tmp_path):
    """wine (3 classes, one of 9 samples: plain shuffled folds) and a paper CSV beside."""
    folder = tmp_path / "data"
    (folder / "libsvm").mkdir(parents=True)
    X, y = _wine(per_class=12)
    keep = np.r_[np.arange(24), 24 + np.arange(9)]
    dump_svmlight_file(X[keep], y[keep], str(folder / "libsvm" / "wine.scale.svm"))
    (tmp_path / "paper_tables").mkdir()
    with (tmp_path / "paper_tables" / sloo_mps.PAPER_CSV).open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["paper", "table", "dataset", "kernel_scheme", "cv_error_10fold"])
        for scheme, value in (("gaussian", 1.11), ("laplace", 1.70), ("mix", 1.12)):
            writer.writerow(["002", "1", "wine", scheme, value])
    return folder


def test_bench_table_matches_kernelcv_tune_writes_outputs_and_resumes(tmp_path, monkeypatch):
    folder, out = _data_folder(tmp_path), tmp_path / "out"
    plan, files = BenchPlan(tables=["sloo-mps"]), BenchFiles(data_dir=folder, out=out)
    report = bench.run_bench(plan, files)
    section = report["sloo_mps"]
    assert report["tables"] == [] and [r["set"] for r in section["rows"]] == ["wine"]
    row = section["rows"][0]
    assert row["paper"] == {"gaussian": 1.11, "laplace": 1.70, "mix": 1.12}
    assert not row["stratified"] and "plain shuffled folds" in row["notes"][0]
    assert {s["set"] for s in report["skipped"]} == {"iris", "glass"}
    assert all("file not found" in s["reason"] for s in report["skipped"])
    # the protocol of `kernelcv tune --no-intercept`: the same cv_error, folds and weights
    for scheme, kernels in sloo_mps.SCHEMES.items():
        tuned = run_tune(DataFiles(folder / "libsvm" / "wine.scale.svm"),
                         SmoothLOOTuning(kernels=kernels, n_restarts=1, max_iter=3),
                         fit_intercept=False, seed=0, folds=10)
        ours = row["schemes"][scheme]
        assert ours["cv_error"] == tuned["cv_error"], scheme
        assert ours["fold_errors"] == tuned["fold_errors"]
        assert [m["theta"] for m in ours["machines"]] == \
            [m["theta"] for m in tuned["machines"]]
    for name in ("results.json", "results.md", *bench.SLOO_OUTPUTS):
        assert (out / name).stat().st_size > 0, name
    markdown = (out / "results.md").read_text()
    assert "tuned once on all the data" in markdown and "optimistic" in markdown
    table = next(b for b in markdown.split("\n\n") if b.startswith("| data (n, d"))
    assert len({line.count("|") for line in table.splitlines()}) == 1
    assert "| mean of the 1 paper sets |" in table
    lines = list(csv.DictReader((out / sloo_mps.CSV_NAME).read_text().splitlines()))
    assert len(lines) == 4 and lines[0]["paper_cv_error_10fold"] == "1.11"
    assert float(lines[2]["cv_error_10fold"]) == pytest.approx(
        100 * row["schemes"]["mix"]["cv_error"], abs=1e-4)

    def refuse(*args, **kwargs):
        raise AssertionError("sloo-mps set recomputed despite the checkpoint")

    monkeypatch.setattr(sloo_mps, "run_sloo_set", refuse)
    again = bench.run_bench(plan, files)
    assert again["sloo_mps"]["rows"][0]["schemes"] == json.loads(
        (out / "results.json").read_text())["sloo_mps"]["rows"][0]["schemes"]


def test_cli_on_a_missing_data_folder_is_one_readable_line(tmp_path, capsys):
    out = tmp_path / "out"
    code = cli.main(["bench", "--quick", "--quiet", "--tables", "sloo-mps", "--data-dir",
                     str(tmp_path / "missing"), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("kernelcv: error: data folder not found") and "--data-dir" in err
    assert not out.exists()


def test_cli_runs_the_table_alone_and_refuses_sets_it_cannot_run(tmp_path, capsys):
    folder, out = _data_folder(tmp_path), tmp_path / "out"
    code = cli.main(["bench", "--quick", "--quiet", "--sets", "wine", "--data-dir",
                     str(folder), "--out", str(out), "--no-figures"])  # default tables
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "sloo-mps   wine" in captured.out and "(paper 1.11)" in captured.out
    assert not (out / sloo_mps.FIGURE).exists() and (out / sloo_mps.CSV_NAME).exists()
    assert cli.main(["bench", "--quick", "--sets", "glass", "--tables", "l2svm",
                     "--data-dir", str(folder), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "glass (sloo-mps set) need tables sloo-mps" in err
    assert cli.main(["bench", "--quick", "--sets", "nope", "--data-dir", str(folder)]) == 2
    assert "vowel" in capsys.readouterr().err  # the sloo-mps sets are known names


# ---------------------------------------------------------------- the shared data


@pytest.mark.skipif(not (SHARED / "datasets").is_dir(), reason="../shared/datasets absent")
def test_shared_sets_load_with_the_papers_sizes_and_wine_matches_tune():
    folder = SHARED / "datasets"
    paper = {}
    csv_path = SHARED / "paper_tables" / sloo_mps.PAPER_CSV
    if csv_path.is_file():
        with csv_path.open() as handle:
            paper = {r["dataset"]: r for r in csv.DictReader(handle)}
        assert sloo_mps.paper_numbers(folder)[0][("heart", "laplace")] == 14.07
    for name, spec in sloo_mps.SETS.items():
        found = sloo_mps.find_file(spec, folder)
        if found is None:
            continue
        X, y = sloo_mps.load_sloo_set(*found[:2])
        assert X.min() >= -1 - 1e-9 and X.max() <= 1 + 1e-9, name
        if spec.paper in paper:
            assert (y.size, np.unique(y).size) == (int(paper[spec.paper]["n"]),
                                                   int(paper[spec.paper]["classes"])), name
    found = sloo_mps.find_file(sloo_mps.SETS["wine"], folder)
    if found is None:
        pytest.skip("wine.scale.svm absent")
    X, y = sloo_mps.load_sloo_set(*found[:2])
    fold_ids, _ = sloo_mps.make_sloo_folds(y, 0)
    ours = sloo_mps.run_scheme(X, y, "laplace", fold_ids, TINY, seed=0)
    tuned = run_tune(DataFiles(found[0]),
                     SmoothLOOTuning(kernels=("laplace",), n_restarts=1, max_iter=3),
                     fit_intercept=False, seed=0, folds=10)
    assert ours["cv_error"] == tuned["cv_error"]
