"""Random-feature maps, feature-space CV (against refits on the same folds) and the search."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.linear_model import Ridge
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC, LinearSVC

from flat_options import as_objects
from kernelcv import Execution, FeatureSpace, KernelSearchCV
from kernelcv.exceptions import KernelCVError
from kernelcv.features import FeatureMap, LinearFeatureModel
from kernelcv.random_features import final
from kernelcv.random_features.linear_cv import (
    c_to_lam,
    lam_to_c,
    linear_svm_path_cv,
    paper_cs,
    paper_gammas,
    square_path_cv,
    squared_hinge_fit,
    squared_hinge_objective,
)
from kernelcv.reading.files import load_data, load_train_test, make_synthetic
from kernelcv.selection.search import grid_search
from kernelcv.validation import make_folds

LIBSVM = "/work/shared/datasets/libsvm"


@pytest.fixture(scope="module")
def data():
    X, y = make_synthetic(240, 5, random_state=3)
    return X, y


# ------------------------------------------------------------------------ feature maps


def test_rff_formula_and_reuse_across_gamma(data):
    X, _ = data
    fmap = FeatureMap("rff", 40, random_state=7).fit(X)
    base = fmap.base(X)
    for gamma in (0.01, 0.5, 3.0):
        W = np.sqrt(2 * gamma) * fmap.W0_  # w ~ N(0, 2 gamma I) from one standard draw
        expected = np.sqrt(2 / 40) * np.cos(X @ W + fmap.b_)
        np.testing.assert_allclose(fmap.features(base, gamma), expected, atol=1e-12)
    assert np.all(np.abs(fmap.b_) <= np.pi)
    again = FeatureMap("rff", 40, random_state=7).fit(X).transform(X, 0.5)
    np.testing.assert_array_equal(again, fmap.transform(X, 0.5))
    other = FeatureMap("rff", 40, random_state=8).fit(X).transform(X, 0.5)
    assert not np.allclose(other, again)


@pytest.mark.parametrize("kind", ["rff", "nystroem"])
def test_chunked_and_sparse_equal_dense(data, kind):
    X, _ = data
    whole = FeatureMap(kind, 30, random_state=1).fit(X).transform(X, 0.2)
    chunked = FeatureMap(kind, 30, random_state=1, chunk_rows=7).fit(X).transform(X, 0.2)
    np.testing.assert_allclose(chunked, whole, atol=1e-12)
    sparse = FeatureMap(kind, 30, random_state=1, chunk_rows=7).fit(
        sp.csr_matrix(X)).transform(sp.csr_matrix(X), 0.2)
    np.testing.assert_allclose(sparse, whole, atol=1e-10)


def test_rff_kernel_error_shrinks_like_one_over_sqrt_d(data):
    X, _ = data
    K = rbf_kernel(X, gamma=0.1)
    errors = []
    for D in (50, 5000):
        Z = FeatureMap("rff", D, random_state=0).fit(X).transform(X, 0.1)
        errors.append(np.abs(Z @ Z.T - K).mean())
    assert errors[1] < 0.03
    assert errors[1] < errors[0] / 4  # 100x more features: about 10x smaller error


def test_nystroem_is_exact_with_all_landmarks_and_on_landmarks(data):
    X, _ = data
    X = X[:60]
    Z = FeatureMap("nystroem", 60, random_state=0).fit(X).transform(X, 0.3)
    np.testing.assert_allclose(Z @ Z.T, rbf_kernel(X, gamma=0.3), atol=1e-8)
    fmap = FeatureMap("nystroem", 20, random_state=0).fit(X)
    Z = fmap.transform(X, 0.3)
    rows = fmap.landmark_rows_
    np.testing.assert_allclose((Z @ Z.T)[np.ix_(rows, rows)],
                               rbf_kernel(X[rows], gamma=0.3), atol=1e-8)


@pytest.mark.parametrize("D", [0, -3, 2.5, True])
def test_bad_number_of_features(data, D):
    with pytest.raises(KernelCVError, match="random features D must be an integer >= 1"):
        FeatureMap("rff", D)


def test_nystroem_needs_enough_samples(data):
    with pytest.raises(KernelCVError, match="D <= n landmarks"):
        FeatureMap("nystroem", 500).fit(data[0])


# ------------------------------------------------------------ feature-space solvers / CV


@pytest.mark.parametrize("lam", [1e-1, 1e-2])
def test_squared_hinge_newton_matches_lbfgs(data, lam):
    X, y = data
    Z = FeatureMap("rff", 30, random_state=0).fit(X).transform(X, 0.2)
    w, c, _, converged = squared_hinge_fit(Z, y, lam)
    assert converged

    def objective(p):
        return squared_hinge_objective(Z, y, lam, p[:-1], p[-1])

    def gradient(p):
        r = np.maximum(1 - y * (Z @ p[:-1] + p[-1]), 0) * y
        return np.r_[-2 / len(y) * (Z.T @ r) + 2 * lam * p[:-1], -2 / len(y) * r.sum()]

    reference = minimize(objective, np.zeros(31), jac=gradient, method="L-BFGS-B",
                         options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 50000})
    assert objective(np.r_[w, c]) <= reference.fun + 1e-10 * max(1.0, reference.fun)
    assert abs(objective(np.r_[w, c]) - reference.fun) < 1e-7


def test_squared_hinge_path_equals_cold_refits_on_same_folds(data):
    X, y = data
    Z = FeatureMap("rff", 25, random_state=2).fit(X).transform(X, 0.3)
    folds = make_folds(y, 4, True, 0)
    lams = [1e-1, 1e-3, 1e-5, 1e-7]
    path = linear_svm_path_cv(Z, y, folds, lams, tol=1e-10)
    for k, lam in enumerate(lams):
        for i in range(4):
            held = folds == i
            w, c, _, _ = squared_hinge_fit(Z[~held], y[~held], lam, tol=1e-10)
            f = Z[held] @ w + c
            assert path.fold_errors[k, i] == np.mean(np.where(f >= 0, 1, -1) != y[held])
    assert path.notes == []


def test_square_closed_form_equals_ridge_refit_for_every_lam():
    X, y = make_synthetic(150, 6, task="regression", random_state=1)
    Z = FeatureMap("rff", 35, random_state=0).fit(X).transform(X, 0.05)
    folds = make_folds(y, 5, False, 0)
    lams = np.logspace(-8, 0, 9)
    path = square_path_cv(Z, y, folds, lams, classifier=False)
    for k, lam in enumerate(lams):
        for i in range(5):
            held = folds == i
            m = int((~held).sum())
            # (1/m)||y - Zw - c||^2 + lam||w||^2  <=>  Ridge(alpha = m lam) with intercept
            ridge = Ridge(alpha=m * lam, solver="cholesky").fit(Z[~held], y[~held])
            mse = np.mean((ridge.predict(Z[held]) - y[held]) ** 2)
            np.testing.assert_allclose(path.fold_errors[k, i], mse, rtol=1e-8)
    np.testing.assert_allclose(path.cv_error, path.fold_errors @ np.bincount(folds) / 150)


def test_square_closed_form_classification_errors(data):
    X, y = data
    Z = FeatureMap("rff", 20, random_state=0).fit(X).transform(X, 0.2)
    folds = make_folds(y, 3, True, 1)
    path = square_path_cv(Z, y, folds, [1e-2, 1e-5])
    for k, lam in enumerate([1e-2, 1e-5]):
        for i in range(3):
            held = folds == i
            f = Ridge(alpha=(~held).sum() * lam).fit(Z[~held], y[~held]).predict(Z[held])
            assert path.fold_errors[k, i] == np.mean(np.where(f >= 0, 1, -1) != y[held])


def test_hinge_path_uses_c_of_the_fold_size(data):
    X, y = data
    Z = FeatureMap("rff", 20, random_state=0).fit(X).transform(X, 0.2)
    folds = make_folds(y, 3, True, 0)
    lam = 1e-2
    path = linear_svm_path_cv(Z, y, folds, [lam], loss="hinge")
    for i in range(3):
        held = folds == i
        C = 1 / (2 * (~held).sum() * lam)
        model = LinearSVC(C=C, loss="hinge", dual=True, tol=1e-4, max_iter=2000,
                          random_state=0).fit(Z[~held], y[~held])
        assert path.fold_errors[0, i] == np.mean(model.predict(Z[held]) != y[held])


def test_c_lam_mapping_is_the_svc_objective_divided_by_n_c():
    rng = np.random.default_rng(0)
    n, C = 50, 8.0
    hinge, w = rng.uniform(0, 2, n), rng.standard_normal(4)
    lam = c_to_lam(C, n)
    svc = 0.5 * w @ w + C * hinge.sum()
    ours = hinge.mean() + lam * w @ w
    np.testing.assert_allclose(svc, n * C * ours)
    np.testing.assert_allclose(lam_to_c(lam, n), C)
    assert len(paper_gammas()) == 13 and paper_gammas()[0] == 2.0**-15
    assert len(paper_cs()) == 11 and paper_cs()[-1] == 2.0**15


# --------------------------------------------------------------------------- the search


def test_rff_grid_search_defaults_and_choice(data):
    X, y = data
    result = grid_search(X, y, "svm", method=FeatureSpace(features=40, refine=False), folds=5)
    assert len(result.candidates) == 13 * 11
    assert result.refined == []
    assert {c["status"] for c in result.candidates} == {"approximate"}
    assert all(c["exact_error"] is None for c in result.candidates)
    scores = [c["score"] for c in result.candidates]
    assert result.best_index == int(np.argmin(scores))
    best = result.best
    np.testing.assert_allclose(best["C"], 1 / (2 * 240 * best["lam"]))
    # the record is exactly the feature-space CV of that (gamma, lam)
    Z = FeatureMap("rff", 40, random_state=0).fit(X).transform(X, best["gamma"])
    path = linear_svm_path_cv(Z, y, result.fold_ids, [best["lam"]])
    assert best["cv_error"] == pytest.approx(path.cv_error[0], abs=1e-12)
    assert result.to_dict()["feature_space"]["features"] == 40
    again = grid_search(X, y, "svm", method=FeatureSpace(features=40, refine=False), folds=5)
    assert [c["score"] for c in again.candidates] == scores


def test_rff_krr_uses_closed_form(data):
    X, y = make_synthetic(120, 5, task="regression", random_state=0)
    result = grid_search(X, y, "krr", method=FeatureSpace(features=20), folds=4,
                         gammas=[0.01, 0.1], Cs=[1.0, 100.0])
    assert result.config["feature_loss"] == "square"
    Z = FeatureMap("rff", 20, random_state=0).fit(X).transform(X, 0.1)
    # krr is bias-free: the feature-space ridge has no intercept either
    assert result.config["feature_intercept"] is False
    path = square_path_cv(Z, y, result.fold_ids, c_to_lam([1.0, 100.0], 120), False,
                          fit_intercept=False)
    got = [c["cv_error"] for c in result.candidates if c["gamma"] == 0.1]
    np.testing.assert_allclose(got, path.cv_error)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"features": 0}, "integer >= 1"),
    ({"gammas": [0.1, -1.0]}, "gamma grid values must be finite and > 0"),
    ({"gammas": [0.0]}, "must be finite and > 0"),
    ({"kernel": "laplace"}, "Gaussian"),
    ({"folds": "auto", "epsilon": 0.1}, "number of folds"),
    ({"feature_map": "fourier"}, "unknown feature map"),
    ({"feature_loss": "logistic"}, "unknown feature-space loss"),
    ({"lams": [0.1], "Cs": [1.0]}, "not both"),
    ({"memory_budget": "10K"}, "memory budget"),
])
def test_rff_bad_input(data, kwargs, match):
    X, y = data
    with pytest.raises(KernelCVError, match=match):
        machine, options = as_objects("svm", {"method": "rff", **kwargs})
        grid_search(X, y, machine, **options)


def test_rff_bad_machine_and_options_of_other_methods(data):
    X, y = data
    with pytest.raises(KernelCVError, match="supports the machines"):
        grid_search(X, y, "svr", method="rff")
    with pytest.raises(KernelCVError, match="classification loss"):
        grid_search(X, y, "krr", method=FeatureSpace(feature_loss="hinge"))
    with pytest.warns(FutureWarning), pytest.raises(KernelCVError,
                                                    match="belong to method='rff'"):
        grid_search(X, y, "svm", features=50)


def test_huge_sparse_dimension_refused_for_rff_but_nystroem_works():
    rng = np.random.default_rng(0)
    n, d = 80, 5_000_000  # RFF's d x D draw would be 1.2 GB
    first = rng.integers(0, 50, n)  # one informative column per row, plus 9 noise ones
    columns = np.column_stack([first, rng.integers(50, d, (n, 9))])
    columns.sort(axis=1)
    X = sp.csr_matrix((np.ones(10 * n), columns.ravel(), np.arange(0, 10 * n + 1, 10)),
                      shape=(n, d))
    y = np.where(first < 25, 1.0, -1.0)
    with pytest.raises(KernelCVError, match="nystroem"):
        grid_search(X, y, "svm", method=FeatureSpace(features=20), folds=3,
                    execution=Execution(memory_budget="200M"))
    with pytest.raises(KernelCVError, match="D = 64 .its first size"):  # adaptive RFF: d x 64
        grid_search(X, y, "svm", method=FeatureSpace(feature_map="rff"), folds=3,
                    execution=Execution(memory_budget="200M"))
    # the adaptive default (Nystroem) keeps only landmark rows
    adaptive = grid_search(X, y, "svm", method=FeatureSpace(refine=False), folds=3,
                           gammas=[0.5], Cs=[1.0], execution=Execution(memory_budget="200M"))
    assert adaptive.best["cv_error"] < 0.5
    result = grid_search(X, y, "svm", method=FeatureSpace(feature_map="nystroem", features=20),
                         folds=3, gammas=[0.5], Cs=[1.0],
                         execution=Execution(memory_budget="200M"))
    assert result.best["cv_error"] < 0.5


def test_search_cv_rff_final_models(data):
    X, y = data
    grid = {"gamma": [0.05, 0.5], "lam": [1e-2, 1e-4]}
    search = KernelSearchCV("svm", grid, method=FeatureSpace(features=30), cv=4).fit(X, y)
    assert search.final_kind_ == "kernel"
    best = search.search_.best
    assert search.best_params_ == {"gamma": best["gamma"], "lam": best["lam"]}
    svc = SVC(C=1 / (2 * 240 * best["lam"]), gamma=best["gamma"]).fit(X, y)
    np.testing.assert_array_equal(search.predict(X), svc.predict(X))
    linear = KernelSearchCV("svm", grid, method=FeatureSpace(features=30, final="linear"),
                            cv=4).fit(X, y)
    assert isinstance(linear.best_estimator_, LinearFeatureModel)
    assert linear.score(X, y) > 0.7
    assert set(np.unique(linear.predict(X))) <= {-1.0, 1.0}
    with pytest.raises(KernelCVError, match="final must be"):
        KernelSearchCV("svm", grid, method=FeatureSpace(final="exact")).fit(X, y)


def test_final_auto_keeps_linear_model_beyond_the_limit(data, monkeypatch):
    X, y = data
    result = grid_search(X, y, "svm", method=FeatureSpace(features=20), folds=3, gammas=[0.1],
                         Cs=[1.0])
    monkeypatch.setattr(final, "FINAL_KERNEL_LIMIT", 100)
    model, kind, notes = final.fit_final(X, y, result, "auto")
    assert kind == "linear" and "--final kernel" in notes[0]
    model, kind, notes = final.fit_final(X, y, result, "kernel")
    assert kind == "kernel" and not notes


# ------------------------------------------------------------------------------- data


def test_train_and_test_svmlight_read_together(tmp_path):
    train, test = tmp_path / "train.svm", tmp_path / "test.svm.gz"
    train.write_text("1 1:0.5 4:1\n-1 2:1\n")
    import gzip

    with gzip.open(test, "wt") as handle:
        handle.write("1 1:1 6:2\n-1 3:1\n")
    X, y, X_test, y_test = load_train_test(train, test)
    assert X.shape[1] == X_test.shape[1] == 6  # one-based in both, widest file wins
    assert X_test[0, 5] == 2.0 and X[0, 3] == 1.0
    # zero-based detection looks at both files: an index 0 in the test file
    (tmp_path / "test0.svm").write_text("1 0:1 2:2\n")
    X, _, X_test, _ = load_train_test(train, tmp_path / "test0.svm")
    assert X.shape[1] == X_test.shape[1] == 5 and X_test[0, 0] == 1.0 and X[0, 1] == 0.5
    (tmp_path / "bad.svm").write_text("1 3:1 2:1\n")
    with pytest.raises(KernelCVError, match="bad.svm"):
        load_train_test(train, tmp_path / "bad.svm")


@pytest.mark.skipif(not os.path.exists(f"{LIBSVM}/ijcnn1.svm.gz"), reason="no data sets")
def test_compressed_svmlight_of_fifty_thousand_rows_loads():
    X, y = load_data(f"{LIBSVM}/ijcnn1.svm.gz")
    assert X.shape == (49990, 22) and set(np.unique(y)) == {-1.0, 1.0}
    assert X.indices.dtype == np.int32


def test_edge_of_grid_note_and_parallel_workers_agree(data):
    X, y = data
    options = {"method": FeatureSpace(features=20), "folds": 3, "gammas": [1e-4, 0.1, 1.0],
               "Cs": [1.0, 8.0]}
    serial = grid_search(X, y, "svm", **options)
    threaded = grid_search(X, y, "svm", **options,
                           execution=Execution(n_jobs=2, backend="threading"))
    assert [c["score"] for c in threaded.candidates] == \
        [c["score"] for c in serial.candidates]
    best = serial.best
    on_edge = best["gamma"] in (1e-4, 1.0) or best["C"] in (1.0, 8.0)
    assert any("edge of the grid" in note for note in serial.notes) == on_edge
    inner = grid_search(X, y, "svm", method=FeatureSpace(features=20), folds=3,
                        gammas=[best["gamma"] / 4, best["gamma"], best["gamma"] * 4],
                        Cs=[best["C"] / 4, best["C"], best["C"] * 4])
    if inner.best["gamma"] == best["gamma"] and inner.best["C"] == best["C"]:
        assert not any("edge of the grid" in note for note in inner.notes)


def test_newton_system_solver_falls_back_when_not_positive_definite():
    from kernelcv.random_features.linear_cv import _solve_spd

    rng = np.random.default_rng(3)
    A = rng.standard_normal((30, 8))
    b = rng.standard_normal(8)
    spd = A.T @ A + 0.1 * np.eye(8)  # Cholesky
    np.testing.assert_allclose(_solve_spd(spd, b), np.linalg.solve(spd, b), rtol=1e-10)
    indefinite = spd - 5.0 * np.eye(8) * np.linalg.eigvalsh(spd).max()  # LU
    np.testing.assert_allclose(_solve_spd(indefinite, b), np.linalg.solve(indefinite, b),
                               rtol=1e-10)
    singular = np.zeros((8, 8))
    singular[0, 0] = 2.0  # least squares: the minimum-norm solution
    expected = np.zeros(8)
    expected[0] = b[0] / 2.0
    np.testing.assert_allclose(_solve_spd(singular, b), expected, atol=1e-12)
