"""``kernelcv predict``: a saved model's predictions on a file, as LIBSVM's svm-predict.
The oracle is the loaded model's own ``predict`` / ``decision_function`` in Python."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

import kernelcv
from kernelcv.cli import main
from kernelcv.datasets import load_data


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("predict")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3, 2, 7)  # labels 2 and 7
    dump_svmlight_file(X[:80], y[:80], str(folder / "train.svm"))
    dump_svmlight_file(X[80:], y[80:], str(folder / "test.svm"))
    code = main(["select", str(folder / "train.svm"), "--machine", "l2svm", "--scale",
                 "standard", "--gamma-grid", "2^-2..2^0", "--lam-grid", "2^-6..2^-4",
                 "--folds", "4", "--save-model", str(folder / "model.npz"), "--json"])
    assert code == 0
    return folder


def test_accuracy_and_labels_are_the_loaded_models(saved, capsys, tmp_path):
    capsys.readouterr()
    out = tmp_path / "predictions.txt"
    code = main(["predict", str(saved / "model.npz"), str(saved / "test.svm"), "--output",
                 str(out), "--json"])
    report = json.loads(capsys.readouterr().out)
    model = kernelcv.load_model(saved / "model.npz")
    X, y = load_data(saved / "test.svm")
    expected = model.predict(X)
    assert code == 0
    assert report["accuracy"] == pytest.approx(float(np.mean(expected == y)))
    written = np.array([float(line) for line in out.read_text().splitlines()])
    assert np.array_equal(written, expected)
    assert set(np.unique(written)) <= {2.0, 7.0}


def test_values_are_the_decision_function_and_print_without_out(saved, capsys):
    capsys.readouterr()
    code = main(["predict", str(saved / "model.npz"), str(saved / "test.svm"), "--values"])
    lines = capsys.readouterr().out.strip().splitlines()
    model = kernelcv.load_model(saved / "model.npz")
    X, _ = load_data(saved / "test.svm")
    assert code == 0 and lines[-1].startswith("accuracy ")
    printed = np.array([float(line) for line in lines[:-1]])
    assert np.allclose(printed, model.decision_function(X), rtol=1e-15, atol=0)


@pytest.mark.parametrize("case", ["out is the model", "out is the data", "model is data"])
def test_refusals_are_one_line_and_touch_nothing(saved, capsys, case):
    model, data = saved / "model.npz", saved / "test.svm"
    before = model.read_bytes(), data.read_bytes()
    argv = {"out is the model": [model, data, "--output", model],
            "out is the data": [model, data, "--output", data],
            "model is data": [data, data]}[case]
    capsys.readouterr()
    code = main(["predict", *map(str, argv)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("kernelcv: error: ")
    assert (model.read_bytes(), data.read_bytes()) == before
