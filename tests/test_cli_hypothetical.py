"""`kernelcv hypothetical`: mu = 0, bad input (exit 2, one line, no files), relevance model."""

import json

import numpy as np
import pytest

from kernelcv.cli import main


def _write(tmp_path, seed=0, n=30, p=3):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    X = rng.standard_normal((n, p))
    X[:, 0] += 1.5 * y
    path = tmp_path / "d.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",")
    return path, X, y


def _run(argv, capsys):
    code = main(["hypothetical", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_mu_zero_is_accepted_and_matches_the_library(tmp_path, capsys):
    from kernelcv.hypothetical import enet_svm_path

    data, X, y = _write(tmp_path)
    code, out, err = _run([data, "--mu-grid", "0,2^-2..2^0", "--no-loo", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["mus"] == [1.0, 0.5, 0.25, 0.0]
    assert report["n_relevant"][-1] == 3  # no L1 penalty: every feature is kept
    direct = enet_svm_path(X, y, mus=[0.0, 0.25, 0.5, 1.0])
    np.testing.assert_allclose(report["criterion"], direct["criterion"], rtol=1e-8)


@pytest.mark.parametrize("argv, message", [
    (["--mu-grid", "-1"], "mu must be >= 0"),
    (["--mu-grid", "0,-2^-3"], "mu must be >= 0"),
    (["--mu-grid", "1,nan"], "mu grid"),
    (["--C", "0"], "C grid values must be finite and > 0"),
    (["--C", "-1"], "C grid values must be finite and > 0"),
    (["--kernels", "rbf"], "need --model relevance"),
    (["--model", "relevance", "--kernels", "cosine"], "unknown kernel"),
    (["--model", "relevance", "--kernels", "poly:1.5"], "whole number"),
    (["--model", "relevance", "--gammas", "0"], "gamma grid values"),
])
def test_bad_options_exit_2_with_one_line_and_no_files(tmp_path, capsys, argv, message):
    data, _, _ = _write(tmp_path)
    out_dir = tmp_path / "out"
    code, out, err = _run([data, *argv, "--no-loo", "--out", out_dir], capsys)
    assert code == 2
    assert err.startswith("kernelcv: error:") and message in err
    assert len(err.strip().splitlines()) == 1 and out == ""
    assert not out_dir.exists()


def test_relevance_with_precomputed_matrices(tmp_path, capsys):
    from kernelcv.hypothetical import relevance_path
    from kernelcv.hypothetical.relevance import make_kernels

    data, X, y = _write(tmp_path, seed=1)
    kernels = make_kernels(["rbf:0.5", "laplace:0.3"], X.shape[1])
    files = []
    for k, kernel in enumerate(kernels):
        files.append(tmp_path / f"S{k}.npy")
        np.save(files[-1], kernel(X, X))
    mus = "0.5,2,8"
    code, out, err = _run([data, "--model", "relevance", "--similarity",
                           ",".join(map(str, files)), "--mu-grid", mus, "--no-loo",
                           "--json"], capsys)
    assert code == 0, err
    from_files = json.loads(out)
    code, out, err = _run([data, "--model", "relevance", "--kernels", "rbf:0.5,laplace:0.3",
                           "--mu-grid", mus, "--no-loo", "--json"], capsys)
    assert code == 0, err
    from_kernels = json.loads(out)
    direct = relevance_path([k(X, X) for k in kernels], y, mus=[0.5, 2.0, 8.0])
    for report in (from_files, from_kernels):
        np.testing.assert_allclose(report["criterion"], direct["criterion"], rtol=1e-8)
        assert report["best_objects"] == direct["best_objects"]
    assert from_files["kernels"][0] == {"kernel": "precomputed", "matrix": 0}
    assert from_kernels["kernels"][1] == {"kernel": "laplace", "gamma": 0.3}


def test_relevance_text_summary_and_plot_with_mu_zero(tmp_path, capsys):
    data, _, _ = _write(tmp_path, seed=2, n=20)
    out_dir = tmp_path / "out"
    code, out, err = _run([data, "--model", "relevance", "--gammas", "0.1,1",
                           "--kernels", "poly:2", "--mu-grid", "0,1,4", "--out", out_dir,
                           "--plot", "--loo"], capsys)
    assert code == 0, err
    assert "relevant (kernel, object) pairs" in out and "of 3 kernels" in out
    report = json.loads((out_dir / "report.json").read_text())
    assert len(report["loo_error"]) == 3 and report["model"] == "relevance"
    assert (out_dir / "hypothetical.png").stat().st_size > 0


def _bad_matrix(tmp_path, kind, n):
    path = tmp_path / "bad.npy"
    if kind == "shape":
        np.save(path, np.ones((n, n + 2)))
    elif kind == "nan":
        matrix = np.eye(n)
        matrix[0, 1] = np.nan
        np.save(path, matrix)
    elif kind == "3d":
        np.save(path, np.ones((n, n, 1)))
    else:
        path.write_text("not a matrix")
    return path


@pytest.mark.parametrize("kind, message", [("shape", "30 x 30"), ("nan", "NaN"),
                                           ("3d", "2-D"), ("text", "cannot read")])
def test_bad_similarity_matrices_exit_2(tmp_path, capsys, kind, message):
    data, _, _ = _write(tmp_path)
    code, out, err = _run([data, "--model", "relevance", "--similarity",
                           _bad_matrix(tmp_path, kind, 30), "--no-loo"], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_large_mu_removing_every_feature_is_reported(tmp_path, capsys):
    data, _, _ = _write(tmp_path)
    code, out, err = _run([data, "--mu-grid", "1e6,1", "--no-loo"], capsys)
    assert code == 0
    assert "removed every feature" in err + out
    code, out, err = _run([data, "--mu-grid", "1e6", "--no-loo", "--json"], capsys)
    report = json.loads(out)
    assert report["all_removed"] == [True] and report["best_relevant"] == []


def _write_regression(tmp_path, seed=3, n=40, p=4, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = scale * (X @ np.array([1.0, -0.5, 0.0, 0.25]) + 5.0 + rng.standard_normal(n))
    path = tmp_path / "reg.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",")
    return path, X, y


@pytest.mark.parametrize("noise", [None, "0.5"])
def test_ridge_uses_the_estimators_model_with_a_free_intercept(tmp_path, capsys, noise):
    from kernelcv.estimators import HypotheticalRidgeCV

    data, X, y = _write_regression(tmp_path)
    lams = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    extra = [] if noise is None else ["--noise-var", noise]
    code, out, err = _run([data, "--model", "ridge", "--alpha-grid", ",".join(map(str, lams)),
                           *extra, "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    est = HypotheticalRidgeCV(lams=lams, noise_var="auto" if noise is None else 0.5)
    est.fit(X, y)
    assert report["best_lam"] == est.lam_
    np.testing.assert_allclose(report["loo_mse"], est.loo_path_, rtol=1e-10)
    np.testing.assert_allclose(report["criterion"], est.criterion_path_, rtol=1e-10)
    assert report["noise_var"] == pytest.approx(est.noise_var_, rel=1e-12)
    # the intercept (mean 5) is free: at a huge lam the fit is the mean, not zero
    assert report["rss"][-1] < np.sum(y ** 2) / 4
    code, out, err = _run([data, "--model", "ridge", "--alpha-grid", "0.1,10"], capsys)
    assert code == 0 and "free intercept" in out


def test_ridge_default_noise_var_is_auto_and_scale_invariant(tmp_path, capsys):
    picks = []
    for scale in (1.0, 100.0):
        data, _, _ = _write_regression(tmp_path, seed=4, scale=scale)
        code, out, err = _run([data, "--model", "ridge", "--json"], capsys)
        assert code == 0, err
        picks.append(json.loads(out)["best_lam"])
    assert picks[0] == picks[1]
    code, out, err = _run([data, "--model", "ridge", "--noise-var", "auto", "--json"], capsys)
    assert json.loads(out)["best_lam"] == picks[0]


@pytest.mark.parametrize("argv, message", [
    (["--model", "enet", "--noise-var", "auto"], "'auto' is for --model ridge"),
    (["--model", "ridge", "--noise-var", "0"], "--noise-var"),
    (["--model", "ridge", "--noise-var", "cp"], "--noise-var"),
])
def test_bad_noise_var_exits_2(tmp_path, capsys, argv, message):
    data, _, _ = _write_regression(tmp_path)
    code, out, err = _run([data, *argv, "--no-loo"], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_relevance_without_kernels_defaults_to_rbf(tmp_path, capsys):
    data, X, _ = _write(tmp_path, seed=4, n=20)
    code, out, err = _run([data, "--model", "relevance", "--mu-grid", "1,4", "--no-loo",
                           "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["kernels"] == [{"kernel": "rbf", "gamma": 1.0 / X.shape[1]}]


def _bad_out(tmp_path, kind):
    if kind == "file":
        target = tmp_path / "taken"
        target.write_text("x")
        return target, "not a folder"
    if kind == "under-file":
        (tmp_path / "f").write_text("x")
        return tmp_path / "f" / "out", "is a file"
    return tmp_path / "missing" / "out", "does not exist"


@pytest.mark.parametrize("kind", ["file", "under-file", "missing-parent"])
def test_bad_out_is_refused_before_the_data_is_read(tmp_path, capsys, kind):
    out_dir, message = _bad_out(tmp_path, kind)
    # the data file does not exist: the --out error must come first, before any work
    code, out, err = _run([tmp_path / "absent.csv", "--model", "ridge", "--out", out_dir],
                          capsys)
    assert code == 2 and out == ""
    assert err.startswith("kernelcv: error: --out") and message in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {"file": ["taken"], "under-file": ["f"], "missing-parent": []}[kind])


def test_plot_with_svm_is_refused_before_the_data_is_read(tmp_path, capsys):
    out_dir = tmp_path / "out"
    code, out, err = _run([tmp_path / "absent.csv", "--model", "svm", "--out", out_dir,
                           "--plot"], capsys)
    assert code == 2 and out == "" and "--plot" in err and "svm" in err
    assert len(err.strip().splitlines()) == 1
    assert not out_dir.exists()


def test_report_json_is_strict_and_written_with_the_figure(tmp_path, capsys, monkeypatch):
    import kernelcv.reports.hypothetical as report_module

    original = report_module.ridge_path

    def with_non_finite(*args, **kwargs):
        path = original(*args, **kwargs)
        path["gcv"][0] = np.inf
        path["loo_mse"][1] = np.nan
        return path

    monkeypatch.setattr(report_module, "ridge_path", with_non_finite)
    data, _, _ = _write_regression(tmp_path)
    out_dir = tmp_path / "out"
    code, out, err = _run([data, "--model", "ridge", "--alpha-grid", "0.1,1,10",
                           "--out", out_dir, "--plot"], capsys)
    assert code == 0, err

    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    report = json.loads((out_dir / "report.json").read_text(), parse_constant=refuse)
    assert report["gcv"][0] is None and report["loo_mse"][1] is None
    assert sorted(p.name for p in out_dir.iterdir()) == ["hypothetical.png", "report.json"]
    assert report["files"] == [str(out_dir / "hypothetical.png"), str(out_dir / "report.json")]
    assert (out_dir / "hypothetical.png").read_bytes()[:4] == b"\x89PNG"


def test_a_failing_figure_leaves_no_files(tmp_path, capsys, monkeypatch):
    import kernelcv.reports.hypothetical as report_module
    from kernelcv.exceptions import KernelCVError

    def broken(report):
        raise KernelCVError("figure failed")

    monkeypatch.setattr(report_module, "path_figure", broken)
    data, _, _ = _write_regression(tmp_path)
    out_dir = tmp_path / "out"
    code, out, err = _run([data, "--model", "ridge", "--out", out_dir, "--plot"], capsys)
    assert code == 2 and "figure failed" in err
    assert not out_dir.exists()


def test_unwritable_out_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    import kernelcv.reports.hypothetical as report_module
    import kernelcv.reports.io as reports_io

    monkeypatch.setattr(reports_io.os, "access", lambda path, mode: False)
    called = []
    monkeypatch.setattr(report_module, "ridge_path", lambda *a, **k: called.append(1))
    data, _, _ = _write_regression(tmp_path)
    out_dir = tmp_path / "out"
    code, out, err = _run([data, "--model", "ridge", "--out", out_dir], capsys)
    assert code == 2 and "not writable" in err and len(err.strip().splitlines()) == 1
    assert not called and not out_dir.exists()


def test_the_exact_loo_reference_is_asked_for_not_the_default(tmp_path, capsys):
    # issue 40: the n-refit reference ran 10 minutes by default on 426 rows
    data, _, _ = _write(tmp_path, seed=4, n=24)
    code, out, err = _run([data, "--mu-grid", "0,1", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["loo_error"] is None and report["best_mu_loo"] is None
    code, out, err = _run([data, "--mu-grid", "0,1", "--loo", "--json"], capsys)
    assert code == 0, err
    assert len(json.loads(out)["loo_error"]) == 2
    code, out, err = _run([data, "--mu-grid", "0,1"], capsys)
    assert code == 0 and "LOO choice" not in out
    code, out, err = _run([data, "--loo", "--no-loo"], capsys)
    assert code == 2 and "not allowed with" in err
