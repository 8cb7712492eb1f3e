"""The final model of a random-feature search for large n (the chosen gamma and C fitted
in feature space with more features), and ``--save-model`` / ``kernelcv.load_model`` for
the models of ``--method rff``: the loaded model predicts raw data as the in-memory one."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file
from sklearn.linear_model import Ridge

import kernelcv
from kernelcv import FeatureSpace
from kernelcv.cli import main
from kernelcv.features import LinearFeatureModel
from kernelcv.machines.saved_model import save_model
from kernelcv.random_features import final
from kernelcv.reading.files import make_synthetic
from kernelcv.selection.search import grid_search
from kernelcv.validation import check_data

GRID = {"gammas": [0.05, 0.5], "Cs": [1.0, 16.0], "folds": 3}


@pytest.fixture(scope="module")
def data():
    X, y = make_synthetic(260, 5, random_state=4)
    return X[:200], y[:200], X[200:], y[200:]


@pytest.mark.parametrize("feature_map", ["nystroem", "rff"])
def test_above_the_limit_the_choice_is_fitted_in_feature_space(data, feature_map):
    X, y, X_test, _ = data
    result = grid_search(X, y, "svm",
                         method=FeatureSpace(refine=False, feature_map=feature_map,
                                             max_features=64),
                         **GRID)
    model, kind, notes = final.fit_final(X, y, result, "auto", kernel_limit=100)
    D = result.feature_map.n_features
    assert kind == "linear" and isinstance(model, LinearFeatureModel)
    assert model.n_features == min(2 * D, 200) if feature_map == "nystroem" else 2 * D
    assert "fitted in feature space" in notes[0] and f"used {D}" in notes[0]
    # the square-loss fit from chunk sums is feature-space ridge regression on all rows
    _, y_pm, _ = check_data(X, y, True)
    Z = model.feature_map.transform(X, model.gamma)
    ridge = Ridge(alpha=200 * result.best["lam"], solver="cholesky").fit(Z, y_pm)
    np.testing.assert_allclose(model.decision_function(X_test),
                               ridge.predict(model.feature_map.transform(X_test,
                                                                         model.gamma)),
                               rtol=1e-7, atol=1e-9)
    wider, _, _ = final.fit_final(X, y, result, "linear", final_features=48)
    assert wider.n_features == 48
    kernel, kind, notes = final.fit_final(X, y, result, "auto")  # 200 <= 100,000
    assert kind == "kernel" and not notes


def _round_trip(tmp_path, model, result, X):
    path = tmp_path / "model.npz"
    lam = result.best["lam"]
    if isinstance(model, final.ChunkedSVC):
        saved = final.svc_as_kernel_model(model, result.machine_spec, result.best["gamma"],
                                          lam)
    else:
        saved = model
    save_model(path, saved, machine=result.machine_spec, lam=lam)
    loaded = kernelcv.load_model(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_allclose(loaded.decision_function(X), model.decision_function(X),
                               rtol=1e-10, atol=1e-10)
    return loaded


@pytest.mark.parametrize("feature_map", ["nystroem", "rff"])
@pytest.mark.parametrize("sparse", [False, True])
def test_saved_final_models_predict_as_in_memory(data, tmp_path, feature_map, sparse):
    X, y, X_test, _ = data
    X = sp.csr_matrix(X) if sparse else X
    X_test = sp.csr_matrix(X_test) if sparse else X_test
    labels = np.where(y > 0, "yes", "no")
    result = grid_search(X, labels, "svm",
                         method=FeatureSpace(refine=False, feature_map=feature_map,
                                             max_features=64),
                         **GRID)
    linear, _, _ = final.fit_final(X, labels, result, "linear")
    loaded = _round_trip(tmp_path, linear, result, X_test)
    assert loaded.header["model"] == "feature_space" and set(loaded.classes_) == {"no", "yes"}
    svc, kind, _ = final.fit_final(X, labels, result, "kernel")
    assert kind == "kernel"
    loaded = _round_trip(tmp_path, svc, result, X_test)
    assert loaded.header["model"] == "kernel"


def test_saved_regression_feature_model(tmp_path):
    X, y = make_synthetic(150, 5, task="regression", random_state=1)
    result = grid_search(X, y, "krr", method=FeatureSpace(refine=False, max_features=64),
                         gammas=[0.1, 1.0], lams=[1e-3, 1e-1], folds=3)
    model, kind, _ = final.fit_final(X, y, result, "linear")
    loaded = _round_trip(tmp_path, model, result, X)
    assert loaded.classes_ is None


def test_cli_final_kernel_limit_and_save_model(capsys, data, tmp_path):
    X, y, X_test, y_test = data
    X, X_test = X * 3.0 + 1.0, X_test * 3.0 + 1.0  # raw data: the model scales it itself
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"))
    dump_svmlight_file(X_test, y_test, str(tmp_path / "test.svm"))
    target = tmp_path / "rff.npz"
    code = main(["select", str(tmp_path / "train.svm"), "--machine", "svm", "--method",
                 "rff", "--gamma-grid", "2^-4,2^-1", "--C-grid", "2^0,2^4", "--folds", "3",
                 "--max-features", "64", "--final-kernel-limit", "100", "--final-features",
                 "96", "--scale", "standard", "--test", str(tmp_path / "test.svm"),
                 "--save-model", str(target), "--json", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["final_model"] == "linear" and report["final_features"] == 96
    assert any("fitted in feature space with D = 96" in n for n in report["notes"])
    assert report["saved_model"] == str(target)
    loaded = kernelcv.load_model(target)
    error = float(np.mean(loaded.predict(X_test) != y_test))
    assert error == report["test_error"]
    for bad in (["--final-features", "0"], ["--final-kernel-limit", "0"]):
        code = main(["select", str(tmp_path / "train.svm"), "--machine", "svm", "--method",
                     "rff", *bad, "--no-progress"])
        assert code == 2 and "at least 1" in capsys.readouterr().err
