"""The spectral engine on torch (device="cpu" here; "cuda" where a GPU is) against the
numpy path: the same fold-out values to 1e-8 in float64, the same MM steps, the same
choices, for every machine the engine iterates (l2svm, and svm / svr by MM), with and
without intercept, weighted, multiclass; and the device options' errors."""

import builtins

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from kernelcv import KernelSearchCV, grid_search
from kernelcv.criteria.spectral import SpectralCV, spectral_evaluations
from kernelcv.devices import resolve_device
from kernelcv.exceptions import KernelCVError
from kernelcv.machines import make_machine
from kernelcv.selection import Execution, Spectral

torch = pytest.importorskip("torch")  # the optional extra; make test installs it


def problem(n=120, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    if classes == 2:
        y = np.where(X[:, 0] + 0.6 * rng.normal(size=n) > 0, 1.0, -1.0)
    else:
        y = np.argmax(X[:, :classes] + 0.5 * rng.normal(size=(n, classes)), axis=1)
    return X, y


LAMS = np.array([3e-4, 3e-3, 3e-2, 0.3])


@pytest.mark.parametrize("name", ["l2svm", "svm", "svr"])
@pytest.mark.parametrize("intercept", [True, False])
def test_torch_spectral_equals_numpy(name, intercept):
    X, y = problem(seed=1)
    if name == "svr":
        y = X[:, 0] + 0.3 * np.sin(3 * X[:, 1])
    K = rbf_kernel(X, gamma=0.4)
    folds = np.arange(len(y)) % 5
    loss = make_machine(name, fit_intercept=intercept).loss
    expected = SpectralCV(K, folds, intercept).solve(y, LAMS, loss)
    got = SpectralCV(K, folds, intercept, device="cpu").solve(y, LAMS, loss)
    np.testing.assert_allclose(got.predictions, expected.predictions, atol=1e-8)
    np.testing.assert_allclose(got.intercepts, expected.intercepts, atol=1e-8)
    assert np.array_equal(got.steps, expected.steps)
    assert np.array_equal(got.refitted, expected.refitted)


def test_torch_spectral_takes_class_and_sample_weights():
    X, y = problem(seed=2)
    K = rbf_kernel(X, gamma=0.3)
    folds = np.arange(len(y)) % 4
    weights = np.random.default_rng(3).uniform(0.2, 3.0, len(y))
    machine = make_machine("l2svm", class_weight={-1.0: 2.0, 1.0: 0.5})
    machine = machine.for_labels({-1: -1.0, 1: 1.0}, y).with_sample_weight(weights)
    expected = SpectralCV(K, folds).solve(y, LAMS, machine.loss)
    got = SpectralCV(K, folds, device="cpu").solve(y, LAMS, machine.loss)
    np.testing.assert_allclose(got.predictions, expected.predictions, atol=1e-8)


@pytest.mark.parametrize("name, classes", [("krr", 2), ("lssvm", 2), ("lssvm", 3)])
def test_square_loss_on_torch_takes_the_mm_engine_and_equals_the_closed_form(name, classes):
    X, y = problem(n=130, seed=10, classes=classes)
    if name == "krr":
        y = X[:, 0] + 0.3 * np.sin(3 * X[:, 1])
    K = rbf_kernel(X, gamma=0.6)
    folds = np.arange(len(X)) % 5
    machine = make_machine(name, multiclass="ovr")
    if classes > 2:
        machine = machine.for_labels({0: 0, 1: 1, 2: 2}, y)
    expected = spectral_evaluations(K, y, folds, LAMS, machine)  # the closed form
    got = spectral_evaluations(K, y, folds, LAMS, machine, device="cpu")
    for a, b in zip(expected, got, strict=True):
        assert a.cv_error == pytest.approx(b.cv_error, rel=1e-8, abs=1e-12)
        if classes == 2:
            np.testing.assert_allclose(b.predictions, a.predictions, atol=1e-8)
        else:
            np.testing.assert_allclose(b.decisions, a.decisions, atol=1e-8)


@pytest.mark.parametrize("scheme", ["ovo", "ovr"])
def test_torch_multiclass_equals_numpy(scheme):
    X, y = problem(n=150, seed=4, classes=3)
    K = rbf_kernel(X, gamma=0.5)
    folds = np.arange(len(y)) % 4
    machine = make_machine("l2svm", multiclass=scheme).for_labels(
        {0: 0, 1: 1, 2: 2}, y)
    expected = spectral_evaluations(K, y, folds, LAMS, machine)
    got = spectral_evaluations(K, y, folds, LAMS, machine, device="cpu")
    for a, b in zip(expected, got, strict=True):
        assert a.cv_error == b.cv_error
        np.testing.assert_allclose(b.decisions, a.decisions, atol=1e-8)


def test_grid_search_on_the_torch_device_makes_the_numpy_choice():
    X, y = problem(n=140, seed=5)
    common = {"gammas": [0.1, 0.5, 2.0], "lams": list(LAMS), "folds": 5,
              "method": "spectral"}
    numpy_result = grid_search(X, y, "l2svm", **common)
    torch_result = grid_search(X, y, "l2svm", execution=Execution(device="cpu"), **common)
    assert torch_result.best_index == numpy_result.best_index
    np.testing.assert_allclose([c["cv_error"] for c in torch_result.candidates],
                               [c["cv_error"] for c in numpy_result.candidates], atol=1e-12)
    assert any(note.startswith("device: torch cpu") for note in torch_result.notes)
    assert torch_result.config["device"] == "torch cpu (float64)"
    assert "device" not in numpy_result.config
    # svm on a torch device runs the MM engine (huber="auto"), numpy the Newton refits:
    # both exact, so the same errors
    svm_numpy = grid_search(X, y, "svm", **common)
    svm_torch = grid_search(X, y, "svm", execution=Execution(device="cpu"), **common)
    np.testing.assert_allclose([c["cv_error"] for c in svm_torch.candidates],
                               [c["cv_error"] for c in svm_numpy.candidates], atol=1e-12)


def test_kernel_search_cv_takes_the_device_in_its_execution():
    X, y = problem(n=120, seed=6)
    grid = {"C": [0.5, 8.0, 64.0], "gamma": [0.1, 0.5]}
    plain = KernelSearchCV(SVC(), grid, cv=4, method="spectral").fit(X, y)
    on_torch = KernelSearchCV(SVC(), grid, cv=4, method="spectral",
                              execution=Execution(device="cpu")).fit(X, y)
    np.testing.assert_allclose(on_torch.cv_results_["mean_test_score"],
                               plain.cv_results_["mean_test_score"], atol=1e-12)
    assert on_torch.best_params_ == plain.best_params_
    assert on_torch.search_.config["device"].startswith("torch cpu")


def test_device_errors_are_one_line():
    X, y = problem(n=60, seed=7)
    with pytest.raises(KernelCVError, match="device must be one of"):
        Execution(device="gpu")
    with pytest.raises(KernelCVError, match="device must be one of"):
        Spectral(device="tpu")
    with pytest.raises(KernelCVError, match="method='spectral'"):
        grid_search(X, y, "l2svm", gammas=[0.5], lams=[0.01], folds=3, method="bif",
                    execution=Execution(device="cpu"))
    if not torch.cuda.is_available():
        with pytest.raises(KernelCVError, match="sees no GPU"):
            resolve_device("cuda")
        # auto: numpy where no GPU is, with no note
        result = grid_search(X, y, "l2svm", gammas=[0.5], lams=[0.01], folds=3,
                             method="bif", execution=Execution(device="auto"))
        assert not any(note.startswith("device") for note in result.notes)


def test_a_torch_device_without_torch_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch":
            raise ImportError("no torch here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(KernelCVError, match=r"kernelcv\[gpu\]"):
        resolve_device("cpu")
    assert resolve_device("auto").name == "numpy"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_equals_numpy():
    X, y = problem(n=200, seed=8)
    K = rbf_kernel(X, gamma=0.4)
    folds = np.arange(len(y)) % 5
    loss = make_machine("l2svm").loss
    expected = SpectralCV(K, folds).solve(y, LAMS, loss)
    got = SpectralCV(K, folds, device="cuda").solve(y, LAMS, loss)
    np.testing.assert_allclose(got.predictions, expected.predictions, atol=1e-8)
    # one Cholesky per lam, on the device and from a Gram matrix formed there
    expected = SpectralCV(K, folds, factorization="cholesky").solve(y, LAMS, loss)
    from kernelcv.criteria.spectral_torch import device_gram
    from kernelcv.kernels import GramFactory, make_kernel

    kernel = make_kernel("rbf", 0.4, 3, 1.0)
    on_device = device_gram(GramFactory(X).base_for(kernel), kernel,
                            resolve_device("cuda"))
    got = SpectralCV(on_device, folds, device="cuda", factorization="cholesky").solve(
        y, LAMS, loss)
    np.testing.assert_allclose(got.predictions, expected.predictions, atol=1e-8)
    # float32 steps where kappa allows: within their stated accuracy
    mixed = SpectralCV(on_device, folds, device="cuda", factorization="cholesky",
                       precision="mixed").solve(y, LAMS, loss)
    scale = max(1.0, float(np.abs(expected.predictions).max()))
    assert np.abs(mixed.predictions - expected.predictions).max() <= 5e-3 * scale


def test_command_line_device(tmp_path, capsys):
    import json

    from sklearn.datasets import dump_svmlight_file

    from kernelcv.cli import main

    X, y = problem(n=90, seed=9)
    data = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(data))
    out = tmp_path / "out"
    code = main(["select", str(data), "--machine", "l2svm", "--method", "spectral",
                 "--device", "cpu", "--gamma-grid", "2^-3,2^-1", "--lam-grid", "2^-8..2^-2:2",
                 "--folds", "3", "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads((out / "report.json").read_text())
    assert report["device"] == "torch cpu (float64)"
    code = main(["cv", str(data), "--machine", "l2svm", "--gamma", "0.5", "--lam", "0.01",
                 "--method", "spectral", "--device", "cpu", "--json"])
    captured = capsys.readouterr()
    assert code == 0 and json.loads(captured.out)["device"] == "torch cpu (float64)"
    code = main(["cv", str(data), "--machine", "l2svm", "--gamma", "0.5", "--lam", "0.01",
                 "--method", "bif", "--device", "cpu"])
    captured = capsys.readouterr()
    assert code == 2 and "--method spectral" in captured.err
    assert len(captured.err.strip().splitlines()) == 1
