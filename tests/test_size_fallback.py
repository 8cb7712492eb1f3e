"""The default method above the memory budget: a low-rank feature space instead
(``method_for_size``), the same search as naming ``method="rff"``, at every front door."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv import BIF, Execution, FeatureSpace, KernelSearchCV, MemoryBudgetError, grid_search
from kernelcv.cli import main
from kernelcv.exceptions import KernelCVError
from kernelcv.reading.files import make_synthetic
from kernelcv.selection.method_choice import LOW_RANK_FROM, make_method, method_for_size

N = 1500  # BIF's 2.5 dense n x n matrices: 42.9 MiB; the feature space fits in 40 MiB
BUDGET = "40M"
GAMMAS, CS = [0.1, 1.0], [1.0, 10.0]


@pytest.fixture(scope="module")
def data():
    return make_synthetic(N, 5, random_state=0)


def test_only_a_default_method_gives_way_and_only_above_the_budget():
    default = make_method(None, "svm")
    assert default.by_default and isinstance(default, BIF)
    assert make_method(None, "krr").by_default
    assert not make_method("bif", "svm").by_default and not BIF().by_default
    assert method_for_size(default, "svm", ["rbf"], N, 1, "1G") == (default, None)
    named = make_method("bif", "svm")
    assert method_for_size(named, "svm", ["rbf"], N, 1, BUDGET) == (named, None)
    method, note = method_for_size(default, "svm", ["rbf"], N, 1, BUDGET)
    assert isinstance(method, FeatureSpace) and not method.by_default
    assert "42.9 MiB" in note and "40.0 MiB" in note and "'rff'" in note
    # the estimate counts the workers' matrices
    assert method_for_size(default, "svm", ["rbf"], 1200, 1, BUDGET)[1] is None
    assert isinstance(method_for_size(default, "svm", ["rbf"], 1200, 2, BUDGET)[0],
                      FeatureSpace)


def test_from_ten_thousand_rows_the_default_gives_way_within_the_budget_too():
    default = make_method(None, "l2svm")
    method, note = method_for_size(default, "l2svm", ["rbf"], LOW_RANK_FROM, 1, "100G")
    assert isinstance(method, FeatureSpace) and "from 10000 rows" in note
    assert method_for_size(default, "l2svm", ["rbf"], LOW_RANK_FROM - 1, 1, "100G") == (
        default, None)
    # where the feature space cannot stand in, the default keeps the rows it can hold
    svr = make_method(None, "svr")
    assert method_for_size(svr, "svr", ["rbf"], LOW_RANK_FROM, 1, "100G") == (svr, None)
    laplace = make_method(None, "krr")
    assert method_for_size(laplace, "krr", ["laplace"], 50_000, 1, "100G") == (laplace, None)
    named = make_method("bif", "l2svm")
    assert method_for_size(named, "l2svm", ["rbf"], 50_000, 1, "100G") == (named, None)


@pytest.mark.parametrize("machine, kernels, named, need", [
    ("svr", ["rbf"], "not svr with the rbf kernel", "42.9 MiB"),
    ("svm", ["poly"], "not svm with the poly kernel", "42.9 MiB"),
    ("krr", ["rbf", "laplace"], "not krr with the laplace and rbf kernels", "51.5 MiB"),
])
def test_where_neither_fits_one_line_names_both(machine, kernels, named, need):
    with pytest.raises(MemoryBudgetError) as refused:
        method_for_size(make_method(None, machine), machine, kernels, N, 1, BUDGET)
    message = str(refused.value)
    assert "\n" not in message and need in message and named in message
    assert "method='rff'" in message


def test_grid_search_runs_the_feature_space_search_it_names(data):
    X, y = data
    execution = Execution(memory_budget=BUDGET)
    fallback = grid_search(X, y, "svm", gammas=GAMMAS, Cs=CS, folds=5, execution=execution)
    named = grid_search(X, y, "svm", gammas=GAMMAS, Cs=CS, folds=5, execution=execution,
                        method="rff")
    assert fallback.method == named.method == "rff"
    assert fallback.notes[0].startswith(f"{N} samples: the default method 'bif'")
    assert fallback.notes[1:] == named.notes
    assert [c["score"] for c in fallback.candidates] == [c["score"] for c in named.candidates]
    assert fallback.best_index == named.best_index
    assert fallback.best["exact_error"] == named.best["exact_error"]
    # within the budget the default runs as before
    assert grid_search(X[:300], y[:300], "svm", gammas=GAMMAS, Cs=CS, folds=5,
                       execution=execution).method == "bif"
    with pytest.raises(KernelCVError, match="screen='off'"):
        grid_search(X, y, "svm", gammas=GAMMAS, Cs=CS, folds=5, execution=execution,
                    screen="halving")


def test_kernel_search_cv_falls_back_and_predicts(data):
    X, y = data
    grid = {"gamma": GAMMAS, "C": CS}
    execution = Execution(memory_budget=BUDGET)
    fallback = KernelSearchCV("svm", grid, cv=5, execution=execution).fit(X, y)
    named = KernelSearchCV("svm", grid, cv=5, execution=execution, method="rff").fit(X, y)
    assert fallback.search_.method == "rff"
    assert "low-rank factor" in fallback.search_.notes[0]
    assert fallback.best_params_ == named.best_params_
    np.testing.assert_array_equal(fallback.cv_results_["mean_test_score"],
                                  named.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(fallback.predict(X[:50]), named.predict(X[:50]))
    with pytest.raises(KernelCVError, match="screen='off'"):
        KernelSearchCV("svm", grid, cv=5, execution=execution, screen="halving").fit(X, y)


def test_cli_select_reports_the_switch(tmp_path, capsys):
    # BIF on 2,000 rows: 76.3 MiB; the feature space's first size about 33 MiB
    X, y = make_synthetic(2300, 5, random_state=1)
    dump_svmlight_file(X[:2000], y[:2000], str(tmp_path / "train.svm"))
    dump_svmlight_file(X[2000:], y[2000:], str(tmp_path / "test.svm"))
    grid = ["--gamma-grid", "0.1,1", "--C-grid", "1,10", "--folds", "5"]
    code = main(["select", str(tmp_path / "train.svm"), "--test", str(tmp_path / "test.svm"),
                 "--machine", "svm", *grid, "--memory-budget", "50M", "--json",
                 "--no-progress"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["method"] == "rff"
    assert report["notes"][0].startswith("2000 samples: the default method 'bif'")
    assert report["test_error"] is not None and report["final_model"]
    code = main(["select", str(tmp_path / "train.svm"), "--machine", "svm", *grid,
                 "--memory-budget", "50M", "--screen", "halving", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 2 and "drop --screen" in captured.err
    assert len(captured.err.strip().splitlines()) == 1
