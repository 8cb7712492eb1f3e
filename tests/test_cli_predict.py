"""``kernelcv predict``: a saved model's predictions on a file, as LIBSVM's svm-predict.
The oracle is the loaded model's own ``predict`` / ``decision_function`` in Python."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

import kernelcv
from kernelcv.cli import main
from kernelcv.reading.files import load_data


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
                 "--folds", "4", "--save-model", str(folder / "model.npz"), "--out",
                 str(folder), "--json"])
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


# ---------------------------------------------------------------- probabilities (issue 40)


def _calibration_oracle(folder, machine, **options):
    """The scale refitted independently: exact refit CV of the saved choice on the
    select run's folds (scaled rows), then the maximum-likelihood scale."""
    from kernelcv.machines.calibration import fit_pair_scale, fit_score_scale
    from kernelcv.validation import make_folds

    report = json.loads((folder / "report.json").read_text())
    model = kernelcv.load_model(folder / "model.npz")
    X, y = load_data(folder / "train.svm")
    X = X.toarray() if hasattr(X, "toarray") else X
    X = (X - (0.0 if model.shift is None else model.shift)) / model.scale
    codes = np.unique(y, return_inverse=True)[1]
    folds = make_folds(codes, report["folds"], True, report["seed"])
    best = report["best_params"]
    exact = kernelcv.cross_validate(X, y, machine, gamma=best["gamma"], lam=best["lam"],
                                    folds=folds, method="exact", **options)
    if exact.predictions.ndim == 2 and options.get("multiclass", "ovo") == "ovo":
        return model, fit_pair_scale(exact.predictions, codes, np.unique(y).size)
    return model, fit_score_scale(exact.predictions, codes)


def test_proba_is_the_calibration_of_the_choices_out_of_fold_values(saved, capsys):
    capsys.readouterr()
    code = main(["predict", str(saved / "model.npz"), str(saved / "test.svm"), "--proba",
                 "--json"])
    report = json.loads(capsys.readouterr().out)
    model, oracle = _calibration_oracle(saved, "l2svm")
    assert code == 0
    assert model.calibration.scale == pytest.approx(oracle.scale, rel=1e-6)
    X, y = load_data(saved / "test.svm")
    p = model.predict_proba(X)
    lines = report["predictions"]
    assert lines[0] == "labels 2 7"
    printed = np.array([[float(v) for v in line.split()] for line in lines[1:]])
    assert np.array_equal(printed[:, 0], model.predict(X))
    assert np.allclose(printed[:, 1:], p, rtol=1e-5, atol=1e-6)
    assert np.allclose(p.sum(axis=1), 1.0)
    assert np.array_equal(np.array([2, 7])[np.argmax(p, axis=1)], model.predict(X))
    assert np.allclose(p, oracle.probabilities(model.decision_function(X)), atol=1e-6)
    expected = -np.mean(np.log(p[np.arange(y.size), (y == 7).astype(int)]))
    assert report["log_loss"] == pytest.approx(expected)


@pytest.mark.parametrize("scheme", ["ovo", "ovr"])
def test_proba_of_three_classes_follows_the_scheme(tmp_path, capsys, scheme):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(150, 2)) + np.repeat(np.eye(3, 2) * 2.5, 50, axis=0)
    y = np.repeat(["a", "b", "c"], 50)
    order = rng.permutation(150)
    X, y = X[order], y[order]
    np.savez(tmp_path / "train.npz", X=X[:100], y=y[:100])
    np.savez(tmp_path / "test.npz", X=X[100:], y=y[100:])
    dump_svmlight_file(X[:100], np.unique(y[:100], return_inverse=True)[1],
                       str(tmp_path / "train.svm"))
    assert main(["select", str(tmp_path / "train.npz"), "--machine", "lssvm",
                 "--multiclass", scheme, "--gamma-grid", "2^-2..2^0", "--lam-grid",
                 "2^-6..2^-4", "--folds", "4", "--save-model", str(tmp_path / "model.npz"),
                 "--out", str(tmp_path), "--json"]) == 0
    capsys.readouterr()
    model = kernelcv.load_model(tmp_path / "model.npz")
    p = model.predict_proba(X[100:])
    assert p.shape == (50, 3) and np.allclose(p.sum(axis=1), 1.0)
    assert np.array_equal(np.array(["a", "b", "c"])[np.argmax(p, axis=1)],
                          model.predict(X[100:]))
    kind = "pair" if scheme == "ovo" else "score"
    assert model.header["calibration"]["kind"] == kind


def test_proba_of_a_model_without_calibration_is_one_line(tmp_path, capsys):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2))
    np.savez(tmp_path / "train.npz", X=X, y=X[:, 0] + 0.1 * rng.normal(size=60))
    assert main(["select", str(tmp_path / "train.npz"), "--machine", "krr",
                 "--gamma-grid", "2^-1..2^0", "--lam-grid", "2^-6..2^-5", "--folds", "3",
                 "--save-model", str(tmp_path / "model.npz"), "--json"]) == 0
    capsys.readouterr()
    code = main(["predict", str(tmp_path / "model.npz"), str(tmp_path / "train.npz"),
                 "--proba"])
    captured = capsys.readouterr()
    assert code == 2 and "no class probabilities" in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_a_damaged_calibration_entry_is_refused_on_loading(saved, tmp_path):
    import zipfile

    with np.load(saved / "model.npz", allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    header = json.loads(str(arrays["header"][()]))
    header["calibration"] = {"kind": "score", "scale": -1.0, "log_loss": 0.1}
    arrays["header"] = np.array(json.dumps(header))
    np.savez(tmp_path / "damaged.npz", **arrays)
    assert zipfile.is_zipfile(tmp_path / "damaged.npz")
    with pytest.raises(kernelcv.KernelCVError, match="calibration"):
        kernelcv.load_model(tmp_path / "damaged.npz")
