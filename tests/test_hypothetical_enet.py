"""Elastic-net squared-hinge SVM: solver vs an independent solver, path, criterion and LOO."""

import numpy as np
import pytest
from scipy.optimize import minimize

from kernelcv.exceptions import KernelCVError
from kernelcv.hypothetical.elastic_net import (
    enet_objective,
    enet_svm_path,
    fit_enet_svm,
    mu_max,
)


def _data(seed, n=60, p=8, informative=2, shift=1.2):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    X = rng.standard_normal((n, p))
    X[:, :informative] += shift * y[:, None]
    return X, y


def _reference(X, y, mu, C):
    """Split a = a+ - a-, bounds >= 0: a smooth problem for L-BFGS-B."""
    n, p = X.shape

    def fun(z):
        a = z[:p] - z[p:2 * p]
        xi = np.maximum(0.0, 1.0 - y * (X @ a + z[-1]))
        g = -2.0 * C * y * xi
        ga = X.T @ g + 2.0 * a
        value = a @ a + mu * z[:2 * p].sum() + C * xi @ xi
        return value, np.concatenate([ga + mu, -ga + mu, [g.sum()]])

    bounds = [(0, None)] * (2 * p) + [(None, None)]
    res = minimize(fun, np.zeros(2 * p + 1), jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 20000})
    return res.x[:p] - res.x[p:2 * p], res.x[-1], res.fun


@pytest.mark.parametrize("seed, mu, C", [(0, 0.5, 1.0), (1, 3.0, 0.5), (2, 10.0, 2.0),
                                         (3, 0.0, 1.0), (4, 1.0, 5.0)])
def test_solver_agrees_with_lbfgsb_reformulation(seed, mu, C):
    X, y = _data(seed)
    coef, b = fit_enet_svm(X, y, mu, C)
    ref_coef, ref_b, ref_obj = _reference(X, y, mu, C)
    obj = enet_objective(X, y, coef, b, mu, C)
    assert obj <= ref_obj * (1 + 1e-9)
    assert obj == pytest.approx(ref_obj, rel=1e-8)
    np.testing.assert_allclose(coef, ref_coef, atol=1e-4)
    # same relevant set: the reference's clearly non-zero coefficients
    assert set(np.flatnonzero(coef)) == set(np.flatnonzero(np.abs(ref_coef) > 1e-6))


def test_mu_max_removes_every_feature_and_is_tight():
    X, y = _data(5)
    top = mu_max(X, y, 1.0)
    assert np.count_nonzero(fit_enet_svm(X, y, top * 1.001, 1.0)[0]) == 0
    assert np.count_nonzero(fit_enet_svm(X, y, top * 0.9, 1.0)[0]) >= 1


def test_at_mu_max_exactly_no_feature_is_relevant():
    """The solution at mu = mu_max is a = 0 (strictly convex problem); the iteration must
    not leave a 1e-16 coefficient that would count the feature as relevant. Secondary RBF
    features with a large mean are where this happened (heart, before the clean-up)."""
    from kernelcv.hypothetical.relevance import rbf_similarities

    for seed in range(3):
        X, y = _data(20 + seed, n=40, p=3, informative=1)
        F = np.hstack(rbf_similarities(X, [0.1, 1.0]))
        top = mu_max(F, y, 1.0)
        assert np.count_nonzero(fit_enet_svm(F, y, top, 1.0)[0]) == 0
        assert enet_svm_path(F, y, n_mus=2)["n_relevant"][0] == 0


def test_centring_is_an_exact_reparametrisation():
    X, y = _data(12, n=40, p=4)
    X = X + 50.0  # a large feature mean: badly conditioned without centring
    coef, b = fit_enet_svm(X, y, 2.0, 1.0)
    coef0, b0 = fit_enet_svm(X, y, 2.0, 1.0, center=np.zeros(4))
    ref_coef, ref_b, ref_obj = _reference(X, y, 2.0, 1.0)
    assert enet_objective(X, y, coef, b, 2.0, 1.0) == pytest.approx(ref_obj, rel=1e-8)
    np.testing.assert_allclose(coef, coef0, atol=1e-6)
    assert b == pytest.approx(b0, abs=1e-4)


def test_path_reports_all_removed_without_crashing():
    X, y = _data(6)
    top = mu_max(X, y, 1.0)
    path = enet_svm_path(X, y, mus=[10 * top, 0.1 * top], C=1.0)
    assert path["mus"] == [10 * top, 0.1 * top]
    assert path["all_removed"] == [True, False]
    assert path["n_relevant"][0] == 0 and path["relevant"][0] == []
    assert path["effective_dimension"][0] == pytest.approx(1.0)  # the bias alone
    assert "removed every feature" in path["notes"][0]


def test_criterion_tracks_exact_loo_over_the_mu_path():
    """Two informative of 8 features, n = 50, 8 mu values. Measured over seeds 0..7: the
    criterion's mu has LOO 0-1 error at most 0.02 above the LOO minimum (equal in 7 of 8),
    keeps both informative features, and LOO takes 18-26 times the criterion's time.
    """
    X, y = _data(7, n=50)
    path = enet_svm_path(X, y, C=1.0, loo=True, n_mus=8)
    assert path["mus"] == sorted(path["mus"], reverse=True)
    loo = np.array(path["loo_error"])
    best = path["mus"].index(path["best_mu"])
    assert loo[best] <= loo.min() + 0.04
    assert {0, 1} <= set(path["best_relevant"])
    assert path["n_relevant"][0] <= path["n_relevant"][-1]
    assert path["seconds_loo"] > 5 * path["seconds_criterion"]


@pytest.mark.parametrize("mus, match", [([-1.0], "mu must be"), ([np.inf], "mu must be"),
                                        ([], "non-empty")])
def test_bad_mu_is_reported(mus, match):
    X, y = _data(8, n=10)
    with pytest.raises(KernelCVError, match=match):
        enet_svm_path(X, y, mus=mus)


def test_bad_C_is_reported():
    X, y = _data(9, n=10)
    with pytest.raises(KernelCVError, match="C must be"):
        enet_svm_path(X, y, mus=[1.0], C=0.0)


def test_relevance_machine_selects_objects_and_validates_matrices():
    from kernelcv.hypothetical.relevance import (
        rbf_similarities,
        relevance_path,
        secondary_features,
    )

    X, y = _data(10, n=30, p=2, informative=1)
    sims = rbf_similarities(X, [0.1, 1.0])
    path = relevance_path(sims, y, C=1.0, n_mus=5)
    assert path["n_features"] == 60
    assert 0 < len(path["best_objects"]) <= 30
    assert set(path["best_kernels"]) <= {0, 1}
    with pytest.raises(KernelCVError, match="shape"):
        secondary_features([sims[0], sims[1][:, :5]])
    bad = sims[0].copy()
    bad[0, 0] = np.nan
    with pytest.raises(KernelCVError, match="NaN"):
        secondary_features([bad])
    with pytest.raises(KernelCVError, match="30 x 30"):
        relevance_path([sims[0][:, :10]], y)
    with pytest.raises(KernelCVError, match="columns"):
        secondary_features(sims, n_reference=12)


def test_cli_module_runs_renders_and_writes(tmp_path):
    import argparse
    import json

    from kernelcv.cli import hypothetical as cli

    X, y = _data(11, n=30, p=4)
    data = tmp_path / "d.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",")  # target last
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    for argv in (["--model", "enet", "--mu-grid", "0.5,2,8", "--plot"],
                 ["--model", "svm", "--C", "0.1,1"],
                 ["--model", "ridge", "--alpha-grid", "0.1,1,10"]):
        report = cli.run_command(parser.parse_args([str(data), *argv,
                                                    "--out", str(tmp_path)]), parser)
        json.dumps(report)
        text = cli.render(report)
        assert report["model"] in text and "criterion" in text
    assert (tmp_path / "hypothetical.png").stat().st_size > 0
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["model"] == "ridge" and len(saved["criterion"]) == 3
    with pytest.raises(KernelCVError, match="--mu-grid"):
        cli.run_command(parser.parse_args([str(data), "--mu-grid", "-1"]), parser)
