"""Random-feature selection: seeds, intercepts, final models, memory and bad data."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.datasets import dump_svmlight_file
from sklearn.linear_model import Ridge
from sklearn.svm import SVC

from kernelcv import Execution, FeatureSpace, KernelSearchCV, make_machine
from kernelcv.cli import main
from kernelcv.estimators import L2SVMClassifier, LSSVMClassifier
from kernelcv.exceptions import KernelCVError
from kernelcv.features import FeatureMap, LinearFeatureModel, feature_memory
from kernelcv.random_features import final
from kernelcv.random_features.linear_cv import (
    square_path_cv,
    squared_hinge_fit,
    squared_hinge_objective,
)
from kernelcv.reading.files import make_synthetic
from kernelcv.reports.command_files import DataFiles
from kernelcv.reports.select import run_select
from kernelcv.selection.search import grid_search
from kernelcv.validation import make_folds

LIBSVM = "/work/shared/datasets/libsvm"
GRID = {"gammas": [0.05, 0.5], "Cs": [1.0, 64.0]}


@pytest.fixture(scope="module")
def data():
    return make_synthetic(160, 5, random_state=7)


@pytest.fixture(scope="module")
def train_file(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("rff_fix")
    X, y = data
    dump_svmlight_file(X, y, str(folder / "train.svm"))
    np.savetxt(folder / "ids.txt", np.arange(160) % 4, fmt="%d")
    return folder


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------ 1. feature seed, fold ids


def test_fold_ids_keep_the_feature_draw_seeded(capsys, train_file):
    argv = ["select", train_file / "train.svm", "--machine", "svm", "--method", "rff",
            "--features", "15", "--gamma-grid", "2^-3,2^-1,2", "--C-grid", "1,16",
            "--fold-ids", train_file / "ids.txt", "--json", "--no-progress"]
    reports = []
    for _ in range(2):
        code, out, err = _cli(capsys, *argv)
        assert code == 0, err
        reports.append(json.loads(out))
    assert reports[0]["seed"] is None
    assert reports[0]["feature_space"]["feature_seed"] == 0
    scores = [[c["score"] for c in r["candidates"]] for r in reports]
    assert scores[0] == scores[1]
    # --seed now seeds the features when the folds come from a file
    code, out, err = _cli(capsys, *argv, "--seed", "5")
    assert code == 0, err
    seeded = json.loads(out)
    assert seeded["feature_space"]["feature_seed"] == 5
    assert [c["score"] for c in seeded["candidates"]] != scores[0]
    code, _, err = _cli(capsys, "select", train_file / "train.svm", "--machine", "svm",
                        "--fold-ids", train_file / "ids.txt", "--seed", "5")
    assert code == 2 and "--seed" in err


def test_feature_seed_is_part_of_the_checkpoint_fingerprint(data, tmp_path):
    X, y = data
    path = tmp_path / "ck.jsonl"
    grid_search(X, y, "svm", method=FeatureSpace(features=10, feature_seed=1), folds=3, **GRID,
                execution=Execution(checkpoint=path))
    with pytest.raises(KernelCVError):
        grid_search(X, y, "svm", method=FeatureSpace(features=10, feature_seed=2), folds=3,
                    **GRID, execution=Execution(checkpoint=path))
    again = grid_search(X, y, "svm", method=FeatureSpace(features=10, feature_seed=1), folds=3,
                        **GRID, execution=Execution(checkpoint=path))
    assert again.config["feature_seed"] == 1
    none_folds = grid_search(X, y, "svm", method=FeatureSpace(features=10), folds=3,
                             random_state=None, **GRID)
    assert none_folds.config["feature_seed"] == 0


# ------------------------------------------------------------ 2. LIBSVM train/test pairs


@pytest.mark.skipif(not os.path.exists(f"{LIBSVM}/a1a.t.svm.gz"), reason="no data sets")
def test_libsvm_pair_with_a_wider_test_file(capsys):
    code, out, err = _cli(capsys, "select", f"{LIBSVM}/a1a.svm", "--test",
                          f"{LIBSVM}/a1a.t.svm.gz", "--machine", "svm", "--method", "rff",
                          "--features", "20", "--gamma-grid", "2^-5", "--C-grid", "1",
                          "--final", "linear", "--json", "--no-progress")
    assert code == 0, err
    report = json.loads(out)
    assert 0.1 < report["test_error"] < 0.3


# ------------------------------------------------------------ 3/5. final models, budgets


def test_final_auto_falls_back_to_linear_when_the_dense_fit_is_over_budget(data):
    X, y = data
    result = grid_search(X, y, "lssvm", method=FeatureSpace(features=10), folds=3, **GRID,
                         execution=Execution(memory_budget="300K"))
    model, kind, notes = final.fit_final(X, y, result, "auto", "300K")
    assert kind == "linear" and isinstance(model, LinearFeatureModel)
    assert "memory budget" in notes[0]
    # svm's LIBSVM fit holds no n x n matrix
    svm = grid_search(X, y, "svm", method=FeatureSpace(features=10), folds=3, **GRID)
    assert final.fit_final(X, y, svm, "auto", "300K")[1] == "kernel"


def test_final_kernel_over_budget_is_refused_before_the_search(capsys, train_file,
                                                               monkeypatch):
    def no_search(*args, **kwargs):
        raise AssertionError("the search ran")

    monkeypatch.setattr("kernelcv.reports.select.grid_search", no_search)
    path = train_file / "train.svm"
    with pytest.raises(KernelCVError, match="final exact lssvm"):
        run_select(DataFiles(path, test=path), machine="lssvm",
                   method=FeatureSpace(final="kernel"),
                   execution=Execution(memory_budget="300K"))
    code, _, err = _cli(capsys, "select", path, "--machine", "krr", "--method", "rff",
                        "--test", path, "--final", "kernel", "--memory-budget", "300K")
    assert code == 2 and err.count("\n") == 1 and "kernelcv: error" in err
    with pytest.raises(KernelCVError, match="final exact"):
        KernelSearchCV("lssvm", method=FeatureSpace(final="kernel"),
                       execution=Execution(memory_budget="300K")).fit(
            *make_synthetic(160, 5, random_state=7))


def test_l2svm_final_model_is_the_kernelcv_l2svm(data):
    X, y = data
    search = KernelSearchCV("l2svm", {"gamma": [0.05, 0.5], "lam": [1e-2, 1e-4]},
                            method=FeatureSpace(features=20), cv=3).fit(X, y)
    assert isinstance(search.best_estimator_, L2SVMClassifier)
    p = search.best_params_
    reference = L2SVMClassifier(gamma=p["gamma"], lam=p["lam"]).fit(X, y)
    np.testing.assert_array_equal(search.predict(X), reference.predict(X))
    # l2svm fits an intercept by default (issue 14): the feature-space model has one too
    assert search.search_.config["feature_intercept"] is True
    assert search.best_estimator_.fit_intercept is True


# ------------------------------------------------------------ 4. intercepts


def test_lssvm_without_intercept_is_kept_on_the_rff_path(data, capsys, train_file):
    X, y = data
    base = LSSVMClassifier(fit_intercept=False)
    search = KernelSearchCV(base, {"gamma": [0.05, 0.5], "lam": [1e-2, 1e-4]},
                            method=FeatureSpace(features=20), cv=3).fit(X, y)
    assert search.best_estimator_.fit_intercept is False
    assert search.search_.config["feature_intercept"] is False
    free = grid_search(X, y, "lssvm", method=FeatureSpace(features=20), folds=3, **GRID)
    none = grid_search(X, y, make_machine("lssvm", fit_intercept=False),
                       method=FeatureSpace(features=20), folds=3, **GRID)
    Z = FeatureMap("rff", 20, random_state=0).fit(X).transform(X, 0.5)
    lams = sorted({c["lam"] for c in none.candidates}, reverse=True)
    path = square_path_cv(Z, y, none.fold_ids, lams, True, fit_intercept=False)
    got = [c["cv_error"] for c in none.candidates if c["gamma"] == 0.5]
    np.testing.assert_allclose(got, path.cv_error)
    assert free.config["feature_intercept"] is True
    path = final.fit_final(X, y, none, "linear")[0]
    assert path.c == 0.0


def test_square_path_without_intercept_equals_ridge_refits():
    X, y = make_synthetic(120, 5, task="regression", random_state=2)
    Z = FeatureMap("rff", 25, random_state=1).fit(X).transform(X, 0.1)
    folds = make_folds(y, 4, False, 0)
    lams = [1e-1, 1e-4]
    path = square_path_cv(Z, y, folds, lams, classifier=False, fit_intercept=False)
    for k, lam in enumerate(lams):
        for i in range(4):
            held = folds == i
            m = int((~held).sum())
            ridge = Ridge(alpha=m * lam, fit_intercept=False, solver="cholesky")
            ridge.fit(Z[~held], y[~held])
            mse = np.mean((ridge.predict(Z[held]) - y[held]) ** 2)
            np.testing.assert_allclose(path.fold_errors[k, i], mse, rtol=1e-8)


def test_squared_hinge_without_intercept_matches_lbfgs(data):
    X, y = data
    Z = FeatureMap("rff", 20, random_state=0).fit(X).transform(X, 0.2)
    lam = 1e-2
    w, c, _, converged = squared_hinge_fit(Z, y, lam, fit_intercept=False)
    assert converged and c == 0.0

    def objective(p):
        return squared_hinge_objective(Z, y, lam, p, 0.0)

    reference = minimize(objective, np.zeros(20), method="L-BFGS-B",
                         options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 50000})
    assert abs(objective(w) - reference.fun) < 1e-7


# ------------------------------------------------------------ 6/7/9. data, memory, notes


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_non_finite_features_are_refused(data, loss):
    X, y = data
    with pytest.raises(KernelCVError, match="standardize X"):
        grid_search(X * 1e300, y, "svm",
                    method=FeatureSpace(features=10, feature_map="nystroem", feature_loss=loss),
                    folds=3, **GRID)


def test_memory_estimate_counts_the_d_by_d_work_and_notes(data):
    X = np.zeros((10, 3))
    D = 500
    assert feature_memory(X, D, "rff", copies=0.0) >= 8 * 4 * (D + 1) ** 2
    X, y = data
    result = grid_search(X[:40], y[:40], "svm", method=FeatureSpace(features=50), folds=3,
                         gammas=[0.1], Cs=[1.0])
    assert any("D = 50 features > n = 40" in note for note in result.notes)
    assert not any("Nystroem" in note for note in result.notes)
    result = grid_search(X, y, "svm", method=FeatureSpace(features=20, feature_map="nystroem"),
                         folds=3, gammas=[0.1], Cs=[1.0])
    assert any("Nystroem landmarks" in note for note in result.notes)


# ------------------------------------------------------------ 8. chunked SVC prediction


def test_final_svc_predicts_sparse_test_sets_in_chunks(data, monkeypatch):
    X, y = data
    Xs = sp.csr_matrix(X)
    result = grid_search(Xs, y, "svm", method=FeatureSpace(features=10), folds=3, **GRID)
    model, kind, _ = final.fit_final(Xs, y, result, "kernel")
    assert kind == "kernel"
    model.chunk_rows = 7
    seen = []
    original = final._to_dense

    def spy(rows):
        seen.append(rows.shape[0])
        return original(rows)

    monkeypatch.setattr(final, "_to_dense", spy)
    best = result.best
    svc = SVC(C=1 / (2 * 160 * best["lam"]), gamma=best["gamma"]).fit(X, y)
    np.testing.assert_array_equal(model.predict(Xs), svc.predict(X))
    assert max(seen) == 7 and sum(seen) == 160


# ------------------------------------------------------------ 10/11. KernelSearchCV


def test_search_cv_final_model_uses_best_params(data, monkeypatch):
    X, y = data
    captured = {}
    original = final.fit_final

    def spy(*args, **kwargs):
        captured.update(kwargs["best"])
        return original(*args, **kwargs)

    monkeypatch.setattr("kernelcv.estimators.search_cv.fit_final", spy)
    search = KernelSearchCV("svm", {"lam": [1e-2, 1e-4], "gamma": [0.05, 0.5]},
                            method=FeatureSpace(features=20), cv=3).fit(X, y)
    assert captured == {"gamma": search.best_params_["gamma"],
                        "lam": search.best_params_["lam"]}


def test_feature_options_without_rff_and_final_without_test(data, train_file):
    X, y = data
    with pytest.raises(KernelCVError, match="moved into objects"):
        KernelSearchCV("svm", method="bif", features=100)
    report = run_select(train_file / "train.svm", machine="svm",
                        method=FeatureSpace(features=10, final="linear"),
                        gammas=[0.1], Cs=[1.0])
    assert any("without --test" in note for note in report["notes"])


@pytest.mark.parametrize("name", ["rbf", "laplace", "poly", "linear"])
def test_all_zero_training_columns_change_no_kernel(data, name):
    # Why the joint svmlight width is safe for every kernel kernelcv offers.
    from kernelcv.kernels import GramFactory, make_kernel

    X = data[0][:30]
    padded = np.hstack([X, np.zeros((30, 2))])
    kernel = make_kernel(name, 0.3, 3, 1.0)
    np.testing.assert_allclose(GramFactory(padded).gram(kernel), GramFactory(X).gram(kernel),
                               rtol=1e-12, atol=1e-12)


def test_an_rff_search_of_a_pipeline_predicts_and_scores():
    # issue 40: it fitted, then predict / score raised TypeError (the final SVC wrapper
    # was no estimator for the Pipeline's fitted-check)
    from sklearn.datasets import load_breast_cancer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from kernelcv import KernelSearchCV
    from kernelcv.estimators import HuberSVMClassifier

    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:200], y[:200]
    search = KernelSearchCV(make_pipeline(StandardScaler(), HuberSVMClassifier()),
                            {"hubersvmclassifier__gamma": [0.01, 0.1],
                             "hubersvmclassifier__C": [1.0, 10.0]},
                            method="rff", cv=3).fit(X, y)
    predicted = search.predict(X)
    assert set(np.unique(predicted)) <= {0, 1}
    assert search.score(X, y) == pytest.approx(np.mean(predicted == y))
    assert search.decision_function(X).shape == (200,)
    assert "Pipeline" in repr(search.best_estimator_)
