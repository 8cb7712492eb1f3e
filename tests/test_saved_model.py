"""``kernelcv select --save-model`` and ``kernelcv.load_model``: the loaded model predicts
as the in-memory refit of the choice (binary, multiclass, regression, scaled and sparse
data), and a damaged or foreign file is a one-line error, never code execution."""

from __future__ import annotations

import io
import json
import pickle
import tracemalloc
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

import kernelcv
from kernelcv.cli import main
from kernelcv.exceptions import KernelCVError
from kernelcv.kernels import Kernel
from kernelcv.machines import make_machine
from kernelcv.machines.model import KernelModel
from kernelcv.machines.saved_model import save_model
from kernelcv.reading.files import load_data, make_synthetic

GRIDS = ("--gamma-grid", "2^-5..2^-1", "--lam-grid", "2^-8..2^-4", "--folds", "4")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("saved")
    X, y = make_synthetic(130, 4, random_state=5)
    X = X * np.array([1.0, 10.0, 0.1, 3.0]) + 2.0  # unscaled features: --scale matters
    dump_svmlight_file(X[:90], y[:90], str(root / "bin.svm"))
    dump_svmlight_file(X[90:], y[90:], str(root / "bin_test.svm"))
    rng = np.random.default_rng(2)
    codes = np.arange(120) % 3
    Xm = rng.normal(scale=2.0, size=(3, 4))[codes] + rng.normal(size=(120, 4))
    labels = np.array([3, 5, 9])[codes]
    dump_svmlight_file(Xm[:90], labels[:90], str(root / "multi.svm"))
    dump_svmlight_file(Xm[90:], labels[90:], str(root / "multi_test.svm"))
    Xr, yr = make_synthetic(110, 5, task="regression", random_state=6)
    np.savez(root / "reg.npz", X=Xr[:80], y=yr[:80])
    np.savez(root / "reg_test.npz", X=Xr[80:], y=yr[80:])
    return root


def _scaled(X, kind, X_train):
    if kind == "standard":
        scale = X_train.std(axis=0)
        return (X - X_train.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    return X


CASES = [  # train, test, machine options, scale
    ("bin.svm", "bin_test.svm", ("--machine", "l2svm"), "standard"),
    ("multi.svm", "multi_test.svm", ("--machine", "lssvm", "--multiclass", "ovr"), "none"),
    ("multi.svm", "multi_test.svm", ("--machine", "l2svm", "--multiclass", "ovo"), "none"),
    ("reg.npz", "reg_test.npz", ("--machine", "krr"), "standard"),
]


@pytest.mark.parametrize(("train", "test", "options", "scale"), CASES)
def test_loaded_model_predicts_as_the_refit_choice(capsys, data, tmp_path, train, test,
                                                   options, scale):
    path = tmp_path / "model.npz"
    code = main(["select", str(data / train), "--test", str(data / test), *options, *GRIDS,
                 "--scale", scale, "--save-model", str(path), "--json", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["saved_model"] == str(path)
    loaded = kernelcv.load_model(path)
    X, y = load_data(data / train)
    X_test, y_test = load_data(data / test)
    X, X_test = np.asarray(X.todense()) if sp.issparse(X) else X, \
        np.asarray(X_test.todense()) if sp.issparse(X_test) else X_test
    # Independent reference: refit the reported choice in memory on the scaled data.
    best = report["best_params"]
    spec = make_machine(options[1], multiclass=options[3] if len(options) > 2 else "ovr")
    reference = KernelModel(spec, Kernel(name="rbf", gamma=best["gamma"]), best["lam"]).fit(
        _scaled(X, scale, X), y)
    expected = reference.predict(_scaled(X_test, scale, X))
    predicted = loaded.predict(X_test)
    if spec.is_classifier:
        np.testing.assert_array_equal(predicted, expected)
        error = np.mean(predicted != y_test)
    else:
        np.testing.assert_allclose(predicted, expected, rtol=1e-9, atol=1e-12)
        error = np.mean((predicted - y_test) ** 2)
    assert error == pytest.approx(report["test_error"], rel=1e-9)
    np.testing.assert_allclose(loaded.decision_function(X_test),
                               reference.decision_function(_scaled(X_test, scale, X)),
                               rtol=1e-9, atol=1e-12)
    assert loaded.header["lam"] == best["lam"] and loaded.header["scaling"] == (
        None if scale == "none" else scale)


def test_sparse_training_rows_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(40, 6, density=0.4, random_state=1, format="csr")
    y = np.where(rng.normal(size=40) > 0, 1.0, -1.0)
    model = KernelModel(make_machine("l2svm"), Kernel(name="rbf", gamma=0.5), 0.01).fit(X, y)
    save_model(tmp_path / "m.npz", model)
    loaded = kernelcv.load_model(tmp_path / "m.npz")
    assert sp.issparse(loaded.model.X_fit_)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_allclose(loaded.decision_function(X.toarray()),
                               model.decision_function(X), rtol=1e-12)


def test_file_without_a_multiclass_entry_loads_as_one_vs_rest(tmp_path):
    """The default scheme is now ovo; a header lacking the entry dates from the ovr default
    and must load as ovr (4 classes: 4 ovr columns, where ovo would need 6)."""
    rng = np.random.default_rng(3)
    codes = np.arange(80) % 4
    X = rng.normal(scale=2.0, size=(4, 3))[codes] + rng.normal(size=(80, 3))
    y = np.array([2, 4, 6, 8])[codes]
    model = KernelModel(make_machine("lssvm", multiclass="ovr"), Kernel(name="rbf", gamma=0.3),
                        0.01).fit(X, y)
    save_model(tmp_path / "m.npz", model)
    with np.load(tmp_path / "m.npz") as archive:
        arrays = {k: archive[k] for k in archive.files}
    header = json.loads(str(arrays["header"][()]))
    del header["machine"]["multiclass"]
    np.savez(tmp_path / "old.npz", **{**arrays, "header": np.array(json.dumps(header))})
    loaded = kernelcv.load_model(tmp_path / "old.npz")
    assert loaded.model.machine.multiclass == "ovr"
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_allclose(loaded.decision_function(X), model.decision_function(X),
                               rtol=1e-12)


def _damaged(folder):
    X, y = make_synthetic(30, 3, random_state=0)
    model = KernelModel(make_machine("krr"), Kernel(name="rbf", gamma=0.5), 0.1).fit(X, y)
    good = folder / "good.npz"
    save_model(good, model)
    files = {"garbage.npz": b"this is not a model",
             "pickle.npz": pickle.dumps({"X": X}),
             "truncated.npz": good.read_bytes()[:200]}
    for name, content in files.items():
        (folder / name).write_bytes(content)
    with np.load(good) as archive:
        arrays = {k: archive[k] for k in archive.files}
    header = json.loads(str(arrays["header"][()]))
    np.savez(folder / "foreign.npz", X=X)  # an npz without a header
    np.savez(folder / "short_coef.npz", **{**arrays, "dual_coef": arrays["dual_coef"][:5]})
    np.savez(folder / "other_format.npz",
             **{**arrays, "header": np.array(json.dumps({**header, "format": "x"}))})
    np.savez(folder / "object_array.npz", **{**arrays, "intercept": np.array([None])},
             allow_pickle=True)
    with zipfile.ZipFile(folder / "bad_header.npz", "w") as z:
        z.writestr("header.npy", b"\x93NUMPY garbage")
    return sorted(p.name for p in folder.iterdir() if p.name != "good.npz")


def test_damaged_or_foreign_files_are_one_line_errors(tmp_path, capsys):
    names = _damaged(tmp_path)
    assert len(names) == 8
    for name in names:
        with pytest.raises(KernelCVError) as info:
            kernelcv.load_model(tmp_path / name)
        message = str(info.value)
        assert "\n" not in message and message.startswith(str(tmp_path / name)), message
    with pytest.raises(KernelCVError, match="no such file"):
        kernelcv.load_model(tmp_path / "missing.npz")
    loaded = kernelcv.load_model(tmp_path / "good.npz")
    with pytest.raises(KernelCVError, match="the model has 3"):
        loaded.predict(np.zeros((2, 4)))


def test_save_model_bad_paths_fail_before_the_search(capsys, data, tmp_path):
    for target, expected in [(tmp_path / "no" / "m.npz", "does not exist"),
                             (tmp_path, "is a folder")]:
        code = main(["select", str(data / "bin.svm"), "--machine", "krr", *GRIDS,
                     "--save-model", str(target), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err


def test_sparse_input_with_fewer_trailing_columns_is_padded(tmp_path):
    dense = sp.random(30, 5, density=0.5, random_state=3).toarray()
    dense[:, 4] = 0.0
    X = sp.csr_matrix(dense)
    y = np.arange(30) % 2
    model = KernelModel(make_machine("lssvm"), Kernel(name="rbf", gamma=0.3), 0.01).fit(X, y)
    save_model(tmp_path / "m.npz", model)
    narrow = sp.csr_matrix(X.toarray()[:, :4])
    np.testing.assert_array_equal(kernelcv.load_model(tmp_path / "m.npz").predict(narrow),
                                  model.predict(X))


def _forged_member(path, name, shape, payload=b""):
    """An .npz member whose .npy header declares ``shape`` (float64) over ``payload``."""
    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{name}.npy", buffer.getvalue() + payload)


def test_a_forged_array_header_is_refused_before_anything_is_allocated(tmp_path):
    # a 6 GiB array declared over 8 bytes: the loader allocated the 6 GiB before reading
    path = tmp_path / "forged.npz"
    np.savez(path, header=np.array("{}"))
    _forged_member(path, "dual_coef", (805_306_368,), b"\0" * 8)
    assert path.stat().st_size < 10_000
    tracemalloc.start()
    try:
        with pytest.raises(KernelCVError, match="damaged kernelcv model file .*dual_coef"):
            kernelcv.load_model(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20


def test_a_model_whose_arrays_exceed_the_memory_budget_is_refused(tmp_path):
    path = tmp_path / "big.npz"
    np.savez(path, header=np.array("{}"), dual_coef=np.zeros(200_000))
    with pytest.raises(KernelCVError, match="above the memory budget"):
        kernelcv.load_model(path, memory_budget_bytes=1_000_000)
    with pytest.raises(KernelCVError, match="no kernelcv-model header"):
        kernelcv.load_model(path, memory_budget_bytes=10_000_000)  # checked, then read


def test_a_loaded_model_scores_as_scikit_learn_does(tmp_path):
    from sklearn.metrics import accuracy_score, r2_score

    X, y = make_synthetic(60, 3, random_state=1)
    classifier = KernelModel(make_machine("l2svm"), Kernel(name="rbf", gamma=0.5),
                             0.01).fit(X, y)
    save_model(tmp_path / "c.npz", classifier)
    loaded = kernelcv.load_model(tmp_path / "c.npz")
    assert loaded.score(X, y) == pytest.approx(accuracy_score(y, loaded.predict(X)))
    Xr, yr = make_synthetic(60, 5, task="regression", random_state=2)
    regressor = KernelModel(make_machine("krr"), Kernel(name="rbf", gamma=0.5),
                            0.01).fit(Xr, yr)
    save_model(tmp_path / "r.npz", regressor)
    loaded = kernelcv.load_model(tmp_path / "r.npz")
    assert loaded.score(Xr, yr) == pytest.approx(r2_score(yr, loaded.predict(Xr)))
    with pytest.raises(KernelCVError, match="rows"):
        loaded.score(Xr, yr[:10])
