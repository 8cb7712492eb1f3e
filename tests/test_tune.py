"""Tests of ``SmoothLOOLSSVMClassifier`` and of ``kernelcv tune``."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from kernelcv.cli import main
from kernelcv.criteria import smooth_loo
from kernelcv.estimators import SmoothLOOTuning
from kernelcv.estimators._smooth_loo import SmoothLOOLSSVMClassifier, fixed_parameter_cv
from kernelcv.exceptions import KernelCVError
from kernelcv.reports.command_files import DataFiles, Outputs
from kernelcv.reports.tune import run_tune

FAST = dict(betas=(0.1, 1.0, 10.0), n_restarts=1, max_iter=15, random_state=0)


def three_classes(n_per_class=14, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [1.5, 0.3], [0.4, 1.6]])
    X = np.vstack([c + 0.6 * rng.normal(size=(n_per_class, 2)) for c in centres])
    y = np.repeat(np.array(["a", "b", "c"]), n_per_class)
    return X, y


@parametrize_with_checks([SmoothLOOLSSVMClassifier(kernels="gaussian", **FAST)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("multiclass", ["ovo", "ovr"])
def test_loo_error_equals_refit_loo_of_whole_classifier(multiclass):
    """loo_error_ (closed form + ordinary decisions of the other machines) against n refits
    of the multiclass classifier with the tuned parameters, each predicting its left-out
    sample."""
    X, y = three_classes()
    model = SmoothLOOLSSVMClassifier(multiclass=multiclass, **FAST).fit(X, y)
    refit, _ = fixed_parameter_cv(model, X, y, np.arange(y.size))
    assert model.loo_error_ == pytest.approx(refit, abs=1e-12)
    n_machines = 3
    assert model.theta_.shape == (n_machines, 6)
    assert len(model.history_) == n_machines
    assert model.decision_function(X).shape == (y.size, 3)
    assert model.score(X, y) > 0.8


def test_binary_attributes_and_tuning_lowers_smooth_loo():
    X, y = three_classes()
    keep = y != "c"
    X, y = X[keep], y[keep]
    model = SmoothLOOLSSVMClassifier(**{**FAST, "max_iter": 30}).fit(X, y)
    assert model.theta_.shape == (6,)
    assert isinstance(model.C_, float) and model.C_ == 1.0
    history = model.history_
    assert history[-1] <= history[0]
    assert model.smooth_loo_error_ <= history[-1] + 1e-12
    refit, _ = fixed_parameter_cv(model, X, y, np.arange(y.size))
    assert model.loo_error_ == pytest.approx(refit)
    assert model.decision_function(X).shape == (y.size,)
    params = model.tuned_parameters()
    assert params[0]["classes"] == ["b", "a"]
    assert set(params[0]["theta"]) == set(model.weight_names_)


def test_ard_and_free_c():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(50, 3))
    y = np.where(X[:, 0] > 0, 1, -1)  # only feature 0 matters
    model = SmoothLOOLSSVMClassifier(kernels=(), ard=True, tune_C=True, n_restarts=1,
                                     max_iter=40, random_state=0).fit(X, y)
    assert model.ard_widths_.shape == (3,)
    # the relevant feature ends with the smallest width (largest weight in the distance)
    assert np.argmin(model.ard_widths_) == 0
    assert model.C_ != 1.0
    assert model.score(X, y) > 0.9


def test_pipeline_and_gridsearch():
    X, y = load_iris(return_X_y=True)
    pipe = make_pipeline(MinMaxScaler((-1, 1)),
                         SmoothLOOLSSVMClassifier(kernels="gaussian", **FAST))
    search = GridSearchCV(pipe, {"smoothloolssvmclassifier__gamma_s": [3.0, 10.0]}, cv=3)
    search.fit(X, y)
    assert search.best_score_ > 0.85


def test_one_sample_class_is_refused():
    X, y = three_classes()
    y = y.copy()
    y[0] = "lonely"
    with pytest.raises(KernelCVError, match="only one sample; one-against-one"):
        SmoothLOOLSSVMClassifier(**FAST).fit(X, y)


@pytest.mark.parametrize("kwargs, match", [
    (dict(kernels=()), "kernel list is empty"),
    (dict(betas=(0.0, 1.0)), "positive"),
    (dict(C=0.0), "C must be a positive"),
    (dict(C=-1.0), "C must be a positive"),
    (dict(gamma_s=0.0), "gamma_s"),
    (dict(multiclass="ecoc"), "multiclass"),
    (dict(optimizer="bfgs"), "optimizer"),
    (dict(n_restarts=0), "n_restarts"),
])
def test_bad_parameters(kwargs, match):
    X, y = three_classes()
    with pytest.raises(KernelCVError, match=match):
        SmoothLOOLSSVMClassifier(**{**FAST, **kwargs}).fit(X, y)


def test_optimiser_failure_warns_and_keeps_best_point(monkeypatch):
    original = smooth_loo.SmoothLOOObjective.__call__
    calls = {"n": 0}

    def flaky(self, params):
        calls["n"] += 1
        if calls["n"] > 4:
            raise np.linalg.LinAlgError("matrix not positive definite")
        return original(self, params)

    monkeypatch.setattr(smooth_loo.SmoothLOOObjective, "__call__", flaky)
    X, y = three_classes()
    keep = y != "c"
    with pytest.warns(ConvergenceWarning, match="best point seen"):
        model = SmoothLOOLSSVMClassifier(**FAST).fit(X[keep], y[keep])
    assert model.tuning_[0]["restarts"][0]["status"] == "failed"
    assert model.score(X[keep], y[keep]) > 0.7


# ------------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tune")
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(70, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.1, 1, -1)
    paths = {"train": folder / "train.svm", "test": folder / "test.svm",
             "lonely": folder / "lonely.svm", "wide": folder / "wide.svm"}
    dump_svmlight_file(X[:50], y[:50], str(paths["train"]))
    dump_svmlight_file(X[50:], y[50:], str(paths["test"]))
    X3, y3 = three_classes(8)
    y3 = np.searchsorted(["a", "b", "c"], y3)
    y3[0] = 7
    dump_svmlight_file(X3, y3, str(paths["lonely"]))
    dump_svmlight_file(np.hstack([X[50:], np.ones((20, 2))]), y[50:], str(paths["wide"]))
    return paths


FAST_ARGS = ["--betas", "0.1,1,10", "--restarts", "1", "--max-iter", "10"]


def test_cli_json_report(files, capsys, tmp_path):
    out = tmp_path / "res"
    code = main(["tune", str(files["train"]), *FAST_ARGS, "--test", str(files["test"]),
                 "--json", "--out", str(out), "--folds", "5"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    for key in ("machines", "loo_error", "cv_error", "fold_errors", "test_error", "timings"):
        assert key in report
    assert len(report["fold_errors"]) == 5
    assert 0 <= report["test_error"] <= 0.5
    assert len(report["machines"][0]["theta"]) == 6
    assert report["timings"]["seconds_per_iteration"] > 0
    written = json.loads((out / "report.json").read_text())
    assert written["cv_error"] == report["cv_error"]
    assert "optimistic" in written["cv_protocol"]
    assert [p.name for p in out.iterdir()] == ["report.json"]


def test_cli_rbf_is_the_gaussian_kernel(files, capsys):
    """--kernels takes rbf, the other commands' name of the Gaussian kernel."""
    reports = []
    for name in ("rbf", "gaussian"):
        assert main(["tune", str(files["train"]), *FAST_ARGS, "--kernels", name,
                     "--json"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    assert reports[0]["kernels"] == reports[1]["kernels"] == ["gaussian"]
    assert reports[0]["cv_error"] == reports[1]["cv_error"]


def test_cli_summary_with_ard(files, capsys):
    assert main(["tune", str(files["train"]), *FAST_ARGS, "--kernels", "gaussian",
                 "--ard", "--optimizer", "lbfgs"]) == 0
    text = capsys.readouterr().out
    assert "ARD widths" in text and "10-fold CV" in text


@pytest.mark.parametrize("extra, match", [
    (["--kernels", ","], "kernel list is empty"),
    (["--kernels", "cosine"], "unknown kernel"),
    (["--betas", "0,1"], "--betas"),
    (["--C", "0"], "C must be a positive"),
    (["--C", "-2"], "C must be a positive"),
    (["--folds", "500"], "cannot make 500 folds"),
    (["--test", "WIDE"], "features"),
    (["--memory-budget", "1K"], "memory budget"),
])
def test_cli_bad_input_exit_2_no_files(files, capsys, tmp_path, extra, match):
    extra = [str(files["wide"]) if e == "WIDE" else e for e in extra]
    out = tmp_path / "never"
    code = main(["tune", str(files["train"]), *FAST_ARGS, "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert match in err
    assert err.count("kernelcv: error:") == 1
    assert not os.path.exists(out)


def test_cli_one_sample_class(files, capsys):
    assert main(["tune", str(files["lonely"]), *FAST_ARGS]) == 2
    assert "only one sample; one-against-one" in capsys.readouterr().err


def test_cli_optimiser_failure_is_a_one_line_warning(files, capsys, monkeypatch):
    original = smooth_loo.SmoothLOOObjective.__call__
    calls = {"n": 0}

    def flaky(self, params):
        calls["n"] += 1
        if calls["n"] > 3:
            raise np.linalg.LinAlgError("matrix not positive definite")
        return original(self, params)

    monkeypatch.setattr(smooth_loo.SmoothLOOObjective, "__call__", flaky)
    assert main(["tune", str(files["train"]), *FAST_ARGS, "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["failures"] and "best point seen" in report["failures"][0]
    warnings_ = [line for line in captured.err.splitlines() if "kernelcv: warning:" in line]
    assert len(warnings_) == 1 and "linear algebra failed" in warnings_[0]


# ------------------------------------------------------------------ the library front door


@pytest.mark.parametrize("kwargs, message", [
    (dict(kernels=("gaussian", "cosine")), "unknown kernel 'cosine' for tuning"),
    (dict(kernels="laplace,laplace"), "names a kernel twice"),
    (dict(kernels=(), ard=False), "kernel list is empty"),
    (dict(betas=()), "the list of betas is empty"),
    (dict(betas=(1.0, -1.0)), "must be positive and finite, got -1.0"),
    (dict(C=0.0), "C must be a positive finite number, got 0.0"),
    (dict(C=True), "C must be a positive finite number, got True"),
    (dict(gamma_s=float("inf")), "gamma_s must be a positive finite number"),
    (dict(optimizer="bfgs"), "optimizer must be 'cg' or 'lbfgs', got 'bfgs'"),
    (dict(n_restarts=0), "n_restarts must be an integer >= 1, got 0"),
    (dict(max_iter=2.5), "max_iter must be an integer >= 1, got 2.5"),
])
def test_tuning_options_refuse_bad_values(kwargs, message):
    with pytest.raises(KernelCVError) as caught:
        SmoothLOOTuning(**kwargs)
    assert message in str(caught.value)


def test_tuning_options_are_normalised_and_fit_the_estimator():
    tuning = SmoothLOOTuning(kernels="Gaussian", betas=[1, 10], n_restarts=1, max_iter=5)
    assert tuning.kernels == ("gaussian",) and tuning.betas == (1.0, 10.0)
    assert tuning.spec.weight_names() == ["gaussian(beta=1)", "gaussian(beta=10)"]
    model = SmoothLOOLSSVMClassifier(**tuning.estimator_params())
    assert model.get_params()["betas"] == (1.0, 10.0) and model.get_params()["max_iter"] == 5


@pytest.mark.parametrize("data_kw, out_kw, message", [
    (dict(fold_ids="folds.txt"), {}, "run_tune takes no fold_ids (it was 'folds.txt')"),
    (dict(scale="standard"), {}, "run_tune takes no scale"),
    (dict(stream=True), {}, "run_tune takes no stream"),
    ({}, dict(save_model="model.npz"), "run_tune takes no save_model"),
    ({}, dict(plot=True), "run_tune takes no plot"),
])
def test_run_tune_refuses_what_it_does_not_use(files, tmp_path, data_kw, out_kw, message):
    out = tmp_path / "never"
    with pytest.raises(KernelCVError) as caught:
        run_tune(DataFiles(files["train"], **data_kw), SmoothLOOTuning(),
                 outputs=Outputs(out=out, **out_kw))
    assert message in str(caught.value)
    assert not out.exists()


def test_run_tune_takes_objects_as_the_cli_builds_them(files, capsys):
    tuning = SmoothLOOTuning(betas=(0.1, 1.0, 10.0), n_restarts=1, max_iter=10)
    report = run_tune(DataFiles(files["train"], test=files["test"]), tuning, folds=5)
    assert main(["tune", str(files["train"]), *FAST_ARGS, "--test", str(files["test"]),
                 "--folds", "5", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    for key in ("cv_error", "fold_errors", "loo_error", "test_error", "kernels", "betas"):
        assert report[key] == cli[key], key
    assert [m["theta"] for m in report["machines"]] == [m["theta"] for m in cli["machines"]]
    assert run_tune(files["train"], tuning, folds=5)["cv_error"] == report["cv_error"]
    with pytest.raises(KernelCVError, match="as a SmoothLOOTuning, got dict"):
        run_tune(DataFiles(files["train"]), {"C": 2.0})
