"""Method 'rff' on multiclass data: feature-space CV of one-vs-one / one-vs-rest schemes.

The oracle is scikit-learn's ``OneVsOneClassifier`` / ``OneVsRestClassifier`` refit on each
fold's training part, around scikit-learn's own binary solvers (``Ridge``, ``LinearSVC``)
with kernelcv's lam convention on each machine's m training rows (alpha = m lam,
C = 1 / (2 m lam)).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import dump_svmlight_file
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Ridge
from sklearn.svm import LinearSVC

import kernelcv as kc
from kernelcv import Execution, FeatureSpace
from kernelcv.cli import main
from kernelcv.estimators import HuberSVMClassifier, LSSVMClassifier
from kernelcv.features import FeatureMap
from kernelcv.machines import make_machine
from kernelcv.machines.saved_model import load_model, save_model
from kernelcv.random_features.final import fit_final
from kernelcv.random_features.multiclass import (
    chunk_class_sums,
    chunk_scheme_errors,
    fit_multiclass_linear,
    multiclass_path_cv,
    ridge_heldout_values,
    scheme_fold_models,
    scheme_full_models,
)
from kernelcv.random_features.rowmap import LocalRows
from kernelcv.reading.rowchunks import ArraySource, open_rows
from kernelcv.validation import make_folds
from test_multiclass import WRAPPERS, blobs  # the tests folder is on sys.path


class LamLinear(ClassifierMixin, BaseEstimator):
    """A binary linear machine of scikit-learn with kernelcv's per-row penalty lam."""

    def __init__(self, loss="square", lam=0.1, fit_intercept=True):
        self.loss = loss
        self.lam = lam
        self.fit_intercept = fit_intercept

    def fit(self, Z, y):
        self.classes_ = np.unique(y)
        target = np.where(y == self.classes_[1], 1.0, -1.0)
        m = target.size
        if self.loss == "square":
            self.model_ = Ridge(alpha=m * self.lam, fit_intercept=self.fit_intercept,
                                solver="cholesky").fit(Z, target)
        elif self.loss == "hinge":  # kernelcv's settings; its path notes a missed limit
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                self.model_ = LinearSVC(C=1 / (2 * m * self.lam), loss="hinge", dual=True,
                                        tol=1e-4, max_iter=2000, random_state=0,
                                        fit_intercept=self.fit_intercept).fit(Z, target)
        else:
            self.model_ = LinearSVC(C=1 / (2 * m * self.lam), loss="squared_hinge",
                                    dual=True, tol=1e-10, max_iter=1_000_000,
                                    fit_intercept=False).fit(Z, target)
        return self

    def decision_function(self, Z):
        if self.loss == "square":
            return self.model_.predict(Z)
        return self.model_.decision_function(Z)

    def predict(self, Z):
        return self.classes_[(self.decision_function(Z) > 0).astype(int)]


def oracle_fold_errors(Z, codes, folds, strategy, loss, lam, fit_intercept=True):
    """Per-fold multiclass errors of the wrapper refit on each fold's training part."""
    t = int(folds.max()) + 1
    errors = np.empty(t)
    for i in range(t):
        test = folds == i
        model = WRAPPERS[strategy](LamLinear(loss, lam, fit_intercept))
        model.fit(Z[~test], codes[~test])
        errors[i] = np.mean(model.predict(Z[test]) != codes[test])
    return errors


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), k=st.integers(3, 4), t=st.integers(2, 5),
       D=st.sampled_from([3, 17, 80]), strategy=st.sampled_from(["ovo", "ovr"]),
       intercept=st.booleans(), lam=st.sampled_from([1e-7, 1e-3, 0.1, 30.0]))
def test_square_loss_cv_equals_the_wrappers_ridge_refits(seed, k, t, D, strategy, intercept,
                                                         lam):
    """Primal (D <= m) and dual (m < D) eigendecompositions, with and without intercept,
    lam from nearly unregularised to nearly constant: the same held-out classes."""
    X, codes = blobs(seed, 12 * k, k)
    Z = FeatureMap("rff", D, random_state=seed).fit(X).transform(X, 0.4)
    folds = make_folds(codes.astype(float), t, True, seed)
    path = multiclass_path_cv(Z, codes, folds, [lam], "square", k, strategy,
                              fit_intercept=intercept)
    expected = oracle_fold_errors(Z, codes, folds, strategy, "square", lam, intercept)
    np.testing.assert_array_equal(path.fold_errors[0], expected)
    np.testing.assert_allclose(path.cv_error[0], expected @ np.bincount(folds) / codes.size)


@pytest.mark.parametrize("D", [5, 60])
def test_ridge_values_primal_and_dual_equal_ridge(D):
    rng = np.random.default_rng(D)
    Zt, Zs = rng.normal(size=(30, D)), rng.normal(size=(7, D))
    Y = rng.choice([-1.0, 1.0], size=(30, 3))
    lams = [1e-5, 0.01, 2.0]
    values = ridge_heldout_values(Zt, Y, Zs, lams)
    for j in range(3):
        for k, lam in enumerate(lams):
            ridge = Ridge(alpha=30 * lam, solver="svd").fit(Zt, Y[:, j])
            np.testing.assert_allclose(values[:, j, k], ridge.predict(Zs), atol=1e-8)


@pytest.mark.parametrize("strategy", ["ovo", "ovr"])
def test_hinge_losses_equal_the_wrappers_liblinear_refits(strategy):
    """LIBLINEAR's hinge (same solver: the same fits) and the squared hinge without
    intercept (our Newton path against LIBLINEAR's dual at a tight tolerance)."""
    X, codes = blobs(3, 48, 3)
    Z = FeatureMap("nystroem", 20, random_state=1).fit(X).transform(X, 0.5)
    folds = make_folds(codes.astype(float), 4, True, 2)
    lams = [0.1, 1e-3]
    hinge = multiclass_path_cv(Z, codes, folds, lams, "hinge", 3, strategy)
    squared = multiclass_path_cv(Z, codes, folds, lams, "squared_hinge", 3, strategy,
                                 fit_intercept=False, tol=1e-12)
    for k, lam in enumerate(lams):
        np.testing.assert_array_equal(
            hinge.fold_errors[k], oracle_fold_errors(Z, codes, folds, strategy, "hinge", lam))
        np.testing.assert_array_equal(
            squared.fold_errors[k],
            oracle_fold_errors(Z, codes, folds, strategy, "squared_hinge", lam, False))
    W, c = fit_multiclass_linear(Z, codes, 1e-3, "squared_hinge", 3, strategy,
                                 fit_intercept=False)
    reference = WRAPPERS[strategy](LamLinear("squared_hinge", 1e-3, False)).fit(Z, codes)
    values = np.column_stack([e.decision_function(Z) for e in reference.estimators_])
    np.testing.assert_allclose(Z @ W + c, values, atol=1e-6)


@pytest.mark.parametrize("strategy", ["ovo", "ovr"])
def test_search_values_are_the_feature_space_cv_of_the_final_size(strategy):
    """features='auto' on three classes: the candidates evaluated at the last size D have
    the multiclass feature-space CV error of the search's map at D; the refinement's
    exact errors are the refit CV of the kernel machine's wrapper on the same folds."""
    X, codes = blobs(5, 60, 3, spread=1.0)
    labels = np.array(["b", "a", "c"])[codes]
    result = kc.grid_search(X, labels, make_machine("lssvm", multiclass=strategy),
                            method=FeatureSpace(refine=True, refine_evals=6), folds=4,
                            random_state=1, gammas=[0.05, 0.2, 0.8],
                            lams=[1e-4, 1e-3, 1e-2, 0.1])
    fmap = result.feature_map
    y = np.unique(labels, return_inverse=True)[1]
    last = [c for c in result.candidates if c["features"] == fmap.n_features]
    assert last and result.criterion.growth.path[-1]["features"] == fmap.n_features
    for gamma in {c["gamma"] for c in last}:
        mine = sorted((c for c in last if c["gamma"] == gamma), key=lambda c: c["lam"])
        path = multiclass_path_cv(fmap.transform(X, gamma), y, result.fold_ids,
                                  [c["lam"] for c in mine], "square", 3, strategy)
        np.testing.assert_allclose([c["cv_error"] for c in mine], path.cv_error, atol=1e-12)
    refined = [c for c in result.candidates if c["status"] == "refined"]
    assert 1 <= len(refined) <= 6
    for c in refined:
        wrong = 0
        for i in range(4):
            test = result.fold_ids == i
            model = WRAPPERS[strategy](LSSVMClassifier(gamma=c["gamma"], lam=c["lam"]))
            wrong += np.sum(model.fit(X[~test], labels[~test]).predict(X[test])
                            != labels[test])
        assert c["exact_error"] == pytest.approx(wrong / labels.size, abs=1e-12)
    assert any("one-vs-" in note and "refined" in note for note in result.notes)


@pytest.mark.parametrize("strategy", ["ovo", "ovr"])
def test_final_models_equal_the_wrappers_and_round_trip(strategy, tmp_path):
    X, codes = blobs(8, 45, 3)
    labels = np.array([7, 2, 11])[codes]
    result = kc.grid_search(X, labels, make_machine("svm", multiclass=strategy),
                            method=FeatureSpace(features=30, feature_loss="square", refine=False),
                            gammas=[0.1, 0.5], lams=[1e-3, 1e-2])
    gamma, lam = result.best["gamma"], result.best["lam"]
    kernel, kind, _ = fit_final(X, labels, result, "kernel")
    assert kind == "kernel"
    reference = WRAPPERS[strategy](HuberSVMClassifier(gamma=gamma, lam=lam)).fit(X, labels)
    np.testing.assert_array_equal(kernel.predict(X), reference.predict(X))
    linear, kind, _ = fit_final(X, labels, result, "linear", final_features=40)
    assert kind == "linear" and linear.n_features == 40 and linear.strategy == strategy
    Z = linear.feature_map.transform(X, gamma)
    ridge = WRAPPERS[strategy](LamLinear("square", lam)).fit(Z, labels)
    np.testing.assert_array_equal(linear.predict(X), ridge.predict(Z))
    path = tmp_path / "model.npz"
    save_model(path, linear, machine=make_machine("svm"), lam=lam)  # the model's scheme wins
    loaded = load_model(path)
    assert loaded.model.strategy == strategy
    np.testing.assert_array_equal(loaded.predict(X), linear.predict(X))
    np.testing.assert_allclose(loaded.decision_function(X), linear.decision_function(X))
    assert set(loaded.predict(X)) <= {2, 7, 11}


def test_damaged_multiclass_feature_model_is_refused(tmp_path):
    X, codes = blobs(9, 30, 3)
    result = kc.grid_search(X, codes, "lssvm", method=FeatureSpace(features=12, refine=False),
                            gammas=[0.3], lams=[1e-2])
    model, _, _ = fit_final(X, codes, result, "linear")
    path = tmp_path / "model.npz"
    save_model(path, model, machine=result.machine_spec, lam=1e-2)
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["intercept"] = arrays["intercept"][:2]
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(kc.KernelCVError, match="do not fit"):
        load_model(tmp_path / "bad.npz")


def test_kernel_search_cv_with_rff_on_three_classes():
    X, codes = blobs(4, 60, 3)
    labels = np.array(["x", "y", "z"])[codes]
    search = kc.KernelSearchCV(LSSVMClassifier(multiclass="ovr"),
                               method=kc.FeatureSpace(final="linear"),
                               param_grid={"gamma": [0.1, 0.4],
                                           "lam": [1e-3, 1e-2]}).fit(X, labels)
    assert search.final_kind_ == "linear"
    assert set(search.predict(X)) <= {"x", "y", "z"}
    assert search.best_estimator_.strategy == "ovr"
    assert {"mean_test_score", "rank_test_score", "params"} <= set(search.cv_results_)


@pytest.mark.parametrize("strategy", ["ovo", "ovr"])
@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("small_classes", [False, True])
def test_cell_sums_over_chunks_equal_the_in_memory_cv(strategy, intercept, small_classes):
    """The square loss from (fold, class) cell sums over row chunks (rows read from a file
    or on a cluster) gives the in-memory CV's fold errors; the full models from the cells
    equal the in-memory fits. With classes smaller than t some folds hold no row of a
    pair: its model there is the one of all its rows (not zero), as in memory."""
    X, codes = blobs(11, 84, 4)
    t = 3
    if small_classes:  # classes 0 and 1 with 2 rows each, 6 folds
        codes = np.where(np.arange(84) < 2, 0, np.where(np.arange(84) < 4, 1, codes % 2 + 2))
        t = 6
    fmap = FeatureMap("nystroem", 24, random_state=0).fit(X)
    gammas, lams = [0.1, 0.7], [1e-6, 1e-3, 0.1]
    folds = make_folds(codes.astype(float), t, True, 0)
    rows = LocalRows(ArraySource(X, codes.astype(float)), codes.astype(float), folds,
                     fold_major=False)
    projections = [fmap.projection(g) for g in gammas]
    cells = rows.map_reduce(chunk_class_sums, 10, fmap=fmap, gammas=gammas,
                            projections=projections, n_folds=t, n_classes=4)
    schemes = [scheme_fold_models(c, lams, t, 4, strategy, intercept, P)
               for c, P in zip(cells, projections, strict=True)]
    errors = rows.map_reduce(chunk_scheme_errors, 10, fmap=fmap, gammas=gammas,
                             coefs=[[m.on_columns() for m in s] for s in schemes],
                             intercepts=[[m.intercept for m in s] for s in schemes],
                             n_folds=t, n_classes=4, strategy=strategy)
    for g, gamma in enumerate(gammas):
        Z = fmap.transform(X, gamma)
        expected = multiclass_path_cv(Z, codes, folds, lams, "square", 4, strategy,
                                      fit_intercept=intercept)
        np.testing.assert_array_equal(errors[g].T / np.bincount(folds),
                                      expected.fold_errors)
        W, c = scheme_full_models(cells[g], lams[1], 4, strategy, intercept)
        W0, c0 = fit_multiclass_linear(Z, codes, lams[1], "square", 4, strategy,
                                       fit_intercept=intercept)
        np.testing.assert_allclose(fmap.kernel_columns(fmap.base(X), gamma) @ (
            W if projections[g] is None else projections[g] @ W) + c, Z @ W0 + c0,
            atol=1e-8)


def test_streamed_file_search_equals_the_in_memory_search(tmp_path):
    X, codes = blobs(2, 150, 3, spread=1.0)
    labels = np.array([10, 20, 30])[codes]
    dump_svmlight_file(X, labels, str(tmp_path / "train.svm"))
    options = {"method": FeatureSpace(refine=False, max_features=64),
               "gammas": [0.05, 0.3, 1.0], "lams": [1e-4, 1e-2], "folds": 5}
    streamed = kc.grid_search(open_rows(str(tmp_path / "train.svm")), None, "svm", **options)
    in_memory = kc.grid_search(X, labels, "svm", **options)
    assert [c["cv_error"] for c in streamed.candidates] == pytest.approx(
        [c["cv_error"] for c in in_memory.candidates], abs=1e-12)
    assert streamed.best_index == in_memory.best_index
    # the cell sums against the per-machine decompositions, on the last size's map
    fmap = streamed.feature_map
    last = [c for c in streamed.candidates if c["features"] == fmap.n_features]
    assert last
    for gamma in {c["gamma"] for c in last}:
        mine = [c for c in last if c["gamma"] == gamma]
        path = multiclass_path_cv(fmap.transform(X, gamma), codes, streamed.fold_ids,
                                  [c["lam"] for c in mine], "square", 3, "ovo")
        np.testing.assert_allclose([c["cv_error"] for c in mine], path.cv_error, atol=1e-12)
    with pytest.raises(kc.KernelCVError, match="feature_loss 'square'"):
        kc.grid_search(open_rows(str(tmp_path / "train.svm")), None, "svm",
                       **{**options, "method": FeatureSpace(refine=False, max_features=64,
                                                            feature_loss="squared_hinge")})


def test_cli_select_rff_reports_confusion_and_saves_a_multiclass_model(capsys, tmp_path):
    X, codes = blobs(6, 120, 3, d=4, spread=1.5)
    labels = np.array([3, 5, 9])[codes]
    dump_svmlight_file(X[:90], labels[:90], str(tmp_path / "train.svm"))
    dump_svmlight_file(X[90:], labels[90:], str(tmp_path / "test.svm"))
    for final, extra in (("kernel", []), ("linear", []), ("linear", ["--stream"])):
        model_path = tmp_path / f"{final}{len(extra)}.npz"
        code = main(["select", str(tmp_path / "train.svm"), "--machine", "svm", "--method",
                     "rff", "--test", str(tmp_path / "test.svm"), "--final", final,
                     "--save-model", str(model_path), "--json", "--no-progress", *extra])
        out, err = capsys.readouterr()
        assert code == 0, err
        report = json.loads(out[out.index("{"):])
        assert report["final_model"] == final
        if extra:  # rows in chunks: no exact CV confusion, and a note says so
            assert report["multiclass"]["cv"] is None
            assert any("multiclass.cv" in note for note in report["notes"])
            predicted = load_model(model_path).predict(X[90:])
            assert np.mean(predicted != labels[90:]) == pytest.approx(report["test_error"])
            confusion = np.asarray(report["multiclass"]["test"]["confusion"])
            assert 1 - np.trace(confusion) / 30 == pytest.approx(report["test_error"])
            continue
        entry = report["multiclass"]
        assert entry["strategy"] == "ovo" and entry["classes"] == [3.0, 5.0, 9.0]
        confusion = np.asarray(entry["test"]["confusion"])
        assert confusion.sum() == 30
        assert 1 - np.trace(confusion) / 30 == pytest.approx(report["test_error"])
        predicted = load_model(model_path).predict(X[90:])
        assert np.mean(predicted != labels[90:]) == pytest.approx(report["test_error"])
        cv = np.asarray(entry["cv"]["confusion"])
        assert cv.sum() == 90


def test_large_rff_search_skips_the_exact_confusion(capsys, tmp_path, monkeypatch):
    """Above the refinement's automatic limit a multiclass rff report has no exact CV
    confusion (its t kernel fits are what rff avoids), says why, and still succeeds."""
    from kernelcv.random_features import refine
    from kernelcv.reports import multiclass as multiclass_report

    monkeypatch.setattr(refine, "REFINE_AUTO_LIMIT", 50)
    monkeypatch.setattr(multiclass_report, "REFINE_AUTO_LIMIT", 50)
    X, codes = blobs(7, 90, 3)
    dump_svmlight_file(X, codes, str(tmp_path / "train.svm"))
    code = main(["select", str(tmp_path / "train.svm"), "--machine", "svm", "--method", "rff",
                 "--json", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out[out.index("{"):])
    assert report["multiclass"]["cv"] is None and report["refined"] == []
    assert any("n = 90 > 50" in note for note in report["notes"])
    code = main(["select", str(tmp_path / "train.svm"), "--machine", "svm", "--method", "rff",
                 "--refine", "on", "--refine-evals", "2", "--json", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out[out.index("{"):])  # kernel fits asked for: the confusion too
    assert len(report["refined"]) == 2 and np.sum(report["multiclass"]["cv"]["confusion"]) == 90


def test_multiclass_rff_memory_estimate_counts_the_features():
    """Multiclass 'rff' in memory with a fixed D holds the n x D features: its estimate
    is the feature matrix's, refused above the budget with a readable error."""
    X, codes = blobs(1, 300, 3)
    with pytest.raises(kc.KernelCVError, match="memory budget"):
        kc.grid_search(X, codes, "lssvm", method=FeatureSpace(features=4000, refine=False),
                       gammas=[0.3], lams=[1e-2], execution=Execution(memory_budget="1M"))
    result = kc.grid_search(X, codes, "lssvm", method=FeatureSpace(features=16, refine=False),
                            gammas=[0.3], lams=[1e-2])
    assert result.config["memory_estimate"] >= 300 * 16 * 8
