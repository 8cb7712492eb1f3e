"""The spectral CV engine (one eigendecomposition per kernel, every lam and fold) against
refit cross-validation on the same folds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn.datasets import dump_svmlight_file
from sklearn.metrics.pairwise import rbf_kernel

import kernelcv
from kernelcv import KernelSearchCV
from kernelcv.cli import main
from kernelcv.criteria.evaluate import evaluate_lam
from kernelcv.criteria.spectral import SpectralCV, max_curvature, spectral_evaluations
from kernelcv.machines import make_machine
from kernelcv.machines.losses import (
    HuberHingeLoss,
    HuberInsensitiveLoss,
    SquaredHingeLoss,
    SquareLoss,
)
from kernelcv.machines.solver import fit_kernel_machine
from kernelcv.selection import Spectral
from kernelcv.selection.search import grid_search

MACHINES = ("l2svm", "svm", "svr", "lssvm", "krr")


def _problem(n, d, seed, regression):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if regression:
        y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=n)
    else:
        y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.4 * rng.normal(size=n) > 0.3, 1.0, -1.0)
        y[:2] = [1.0, -1.0]
    return X, y


def _folds(n, t, seed):
    return np.random.default_rng(seed).permutation(np.arange(n) % t)


def _refit_values(K, y, folds, lam, machine):
    return evaluate_lam(K, y, folds, lam, machine, "exact").predictions


def _assert_matches_refit(values, exact, y, machine, scale_tol=1e-5):
    scale = max(1.0, float(np.abs(exact).max()))
    assert np.max(np.abs(values - exact)) <= scale_tol * scale
    if machine.is_classifier:
        # the 0-1 error is the refit's wherever a value is not within tolerance of 0
        clear = np.abs(exact) > 10 * scale_tol * scale
        assert np.array_equal(values[clear] >= 0, exact[clear] >= 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# a fold-out SVR whose optimal intercept is an interval (no row in a band): the midpoint
@example(n=12, t=2, seed=24, name="svr", intercept=True, log_lam=-0.71875,
         log_gamma=-0.71875)
# a training part holding one class: every b >= 1 is optimal; the refits' b = 1
@example(n=15, t=2, seed=4465, name="l2svm", intercept=True, log_lam=0.7207499031975084,
         log_gamma=0.6047774459749244)
@example(n=12, t=2, seed=3034, name="svm", intercept=True, log_lam=-1.9588943122862252,
         log_gamma=-0.9573876080336885)
@given(n=st.integers(12, 40), t=st.integers(2, 5), seed=st.integers(0, 10_000),
       name=st.sampled_from(MACHINES), intercept=st.booleans(),
       log_lam=st.floats(-4, 1), log_gamma=st.floats(-1.5, 1))
def test_every_fold_and_lam_equals_refit_cv(n, t, seed, name, intercept, log_lam,
                                             log_gamma):
    machine = make_machine(name, fit_intercept=intercept if name != "krr" else None)
    X, y = _problem(n, 2, seed, regression=name in ("svr", "krr"))
    folds = _folds(n, t, seed)
    K = rbf_kernel(X, gamma=10.0**log_gamma)
    lams = [10.0**log_lam, 10.0**log_lam * 7.0]
    solution = SpectralCV(K, folds, machine.fit_intercept).solve(y, lams, machine.loss)
    for k, lam in enumerate(lams):
        _assert_matches_refit(solution.predictions[:, 0, k],
                              _refit_values(K, y, folds, lam, machine), y, machine)


@pytest.mark.parametrize("name", ["l2svm", "svm", "svr"])
def test_on_a_real_size_problem_the_cv_error_is_the_refit_error(name):
    machine = make_machine(name)
    X, y = _problem(160, 3, 5, regression=name == "svr")
    folds = _folds(160, 10, 1)
    K = rbf_kernel(X, gamma=0.4)
    lams = [2.0**i / 160 for i in range(-3, 12, 2)]
    evaluations = spectral_evaluations(K, y, folds, lams, machine, huber="mm")
    for ev, lam in zip(evaluations, lams, strict=True):
        exact = evaluate_lam(K, y, folds, lam, machine, "exact")
        _assert_matches_refit(ev.predictions, exact.predictions, y, machine)
        assert ev.cv_error == pytest.approx(exact.cv_error, rel=1e-6, abs=1e-12)
        assert np.allclose(ev.fold_errors, exact.fold_errors, rtol=1e-6, atol=1e-12)


def test_columns_left_moving_are_finished_exactly_by_newton():
    machine = make_machine("svm")
    X, y = _problem(50, 2, 3, regression=False)
    folds = _folds(50, 5, 3)
    K = rbf_kernel(X, gamma=0.5)
    solution = SpectralCV(K, folds, True).solve(y, [1e-3], machine.loss, max_steps=2)
    assert solution.refitted[0, 0] == 5
    exact = _refit_values(K, y, folds, 1e-3, machine)
    assert np.max(np.abs(solution.predictions[:, 0, 0] - exact)) < 1e-8
    ev = spectral_evaluations(K, y, folds, [1e-3], machine, max_steps=2, huber="mm")[0]
    assert any("finished by Newton refits" in note for note in ev.notes)


def test_extra_points_take_their_folds_model_and_id_minus_one_the_full_model():
    machine = make_machine("l2svm")
    X, y = _problem(40, 2, 8, regression=False)
    X_extra = np.random.default_rng(2).normal(size=(9, 2))
    folds = _folds(40, 4, 8)
    extra_folds = np.array([0, 1, 2, 3, -1, 0, -1, 3, 2])
    K = rbf_kernel(X, gamma=0.7)
    K_extra = rbf_kernel(X_extra, X, gamma=0.7)
    lam = 0.01
    solution = SpectralCV(K, folds, True).solve(y, [lam], machine.loss,
                                                extra=(K_extra, extra_folds))
    expected = np.empty(9)
    for e, i in enumerate(extra_folds):
        rows = np.arange(40) if i < 0 else np.flatnonzero(folds != i)
        fit = fit_kernel_machine(K[np.ix_(rows, rows)], y[rows], lam, machine.loss,
                                 fit_intercept=True)
        expected[e] = K_extra[e, rows] @ fit.alpha + fit.intercept
    assert np.allclose(solution.extra_predictions[:, 0, 0], expected, atol=1e-6)
    # the held-out values are unchanged by the extra column of the full model
    alone = SpectralCV(K, folds, True).solve(y, [lam], machine.loss)
    assert np.allclose(alone.predictions, solution.predictions, atol=1e-8)


def test_tiny_kernel_widths_keep_the_held_out_values_to_relative_precision():
    # K ~ I: held-out kernel sums ~1e-30; formed directly, they keep their signs.
    machine = make_machine("l2svm", fit_intercept=False)
    X, y = _problem(30, 2, 4, regression=False)
    folds = _folds(30, 3, 4)
    K = rbf_kernel(X, gamma=60.0)
    values = SpectralCV(K, folds, False).solve(y, [0.05], machine.loss).predictions[:, 0, 0]
    exact = _refit_values(K, y, folds, 0.05, machine)
    nonzero = exact != 0
    assert np.allclose(values[nonzero], exact[nonzero], rtol=1e-5, atol=0)


@pytest.mark.parametrize("strategy", ["ovo", "ovr"])
@pytest.mark.parametrize("name", ["l2svm", "svm"])
def test_multiclass_equals_refit_cv_of_the_scheme(strategy, name):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(90, 2))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=90), [-0.5, 0.5])
    lams = [1e-3, 3e-2]
    spectral = kernelcv.cross_validate_path(X, y, lams,
                                            machine=make_machine(name, multiclass=strategy),
                                            gamma=0.8, method=Spectral(huber="mm"),
                                            random_state=0, folds=5)
    exact = kernelcv.cross_validate_path(X, y, lams,
                                         machine=make_machine(name, multiclass=strategy),
                                         gamma=0.8, method="exact", random_state=0, folds=5)
    for a, b in zip(spectral, exact, strict=True):
        assert np.allclose(a.predictions, b.predictions, atol=1e-5)
        assert a.cv_error == b.cv_error
        assert np.array_equal(a.labels, b.labels)


def test_max_curvature_bounds_every_second_derivative():
    f = np.linspace(-3, 3, 2001)
    y = np.where(np.arange(f.size) % 2, 1.0, -1.0)
    for loss in (SquareLoss(), SquaredHingeLoss(), HuberHingeLoss(0.05),
                 HuberInsensitiveLoss(0.2, 0.05), HuberInsensitiveLoss(0.01, 0.05)):
        h = loss.derivatives(y, f)[1]
        assert h.max() <= max_curvature(loss) + 1e-12
        assert h.max() == pytest.approx(max_curvature(loss))  # and it is attained


def test_grid_search_spectral_scores_are_the_exact_refit_scores():
    X, y = _problem(70, 2, 12, regression=False)
    common = dict(gammas=[0.2, 1.0], lams=[1e-3, 1e-2, 1e-1], folds=5, random_state=0)
    spectral = grid_search(X, y, "svm", method=Spectral(huber="mm"), **common)
    exact = grid_search(X, y, "svm", method="exact", **common)
    a = {(c["gamma"], c["lam"]): c["cv_error"] for c in spectral.candidates}
    b = {(c["gamma"], c["lam"]): c["cv_error"] for c in exact.candidates}
    assert a == pytest.approx(b, abs=1e-12)
    assert spectral.best_params == exact.best_params
    assert not spectral.criterion.safeguarded  # exact scores: nothing to confirm


def test_kernel_search_cv_spectral_chooses_as_exact():
    X, y = _problem(80, 2, 21, regression=False)
    grid = {"gamma": [0.1, 0.5, 2.0], "C": [0.1, 1.0, 10.0, 100.0]}
    fast = KernelSearchCV("l2svm", grid, cv=4, method="spectral").fit(X, y)
    slow = KernelSearchCV("l2svm", grid, cv=4, method="exact").fit(X, y)
    assert fast.best_params_ == slow.best_params_
    assert np.allclose(fast.cv_results_["mean_test_score"],
                       slow.cv_results_["mean_test_score"], atol=1e-12)


def test_cli_select_spectral_reports_exact_errors(tmp_path, capsys):
    X, y = _problem(60, 3, 31, regression=False)
    path = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(path))
    code = main(["select", str(path), "--machine", "l2svm", "--method", "spectral",
                 "--gamma-grid", "2^-2..2^0", "--lam-grid", "2^-6..2^-3", "--folds", "5",
                 "--json"])
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)
    assert report["method"] == "spectral"
    assert report["screen"] == "off"  # the whole grid: every lam costs one eigh
    assert len(report["candidates"]) == 12 and report["confirmed"] == []
    best = report["best_params"]
    exact = kernelcv.cross_validate(X, y, machine="l2svm", gamma=best["gamma"],
                                    lam=best["lam"], folds=5, method="exact",
                                    random_state=report["seed"])
    assert report["best_cv_error"] == pytest.approx(exact.cv_error)


# ---------------------------------------------------------------- method objects at the doors


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
def test_every_front_door_takes_a_method_object_with_its_own_options():
    from kernelcv.selection import BIF, Spectral

    X, y = _problem(60, 2, 41, regression=False)
    folds = _folds(60, 4, 41)
    # order 3 is short of the series' limit here: both doors say so
    with pytest.warns(RuntimeWarning, match="not converged at order 3"):
        by_object = kernelcv.cross_validate(X, y, machine="l2svm", gamma=0.5, lam=1e-2,
                                            folds=folds, method=BIF(order=3))
    with pytest.warns(RuntimeWarning, match="not converged at order 3"):
        by_name = kernelcv.cross_validate(X, y, machine="l2svm", gamma=0.5, lam=1e-2,
                                          folds=folds, method=BIF(order=3))
    assert by_object.order == 3 and by_object.method == "bif"
    assert np.array_equal(by_object.predictions, by_name.predictions)
    loose = kernelcv.cross_validate(X, y, machine="l2svm", gamma=0.5, lam=1e-2, folds=folds,
                                    method=Spectral(tol=1e-4))
    tight = kernelcv.cross_validate(X, y, machine="l2svm", gamma=0.5, lam=1e-2, folds=folds,
                                    method=Spectral(tol=1e-12))
    exact = kernelcv.cross_validate(X, y, machine="l2svm", gamma=0.5, lam=1e-2, folds=folds,
                                    method="exact")
    assert tight.method == "spectral"
    # the object's tolerance is the one used: the tight one is closer to refit CV
    assert (np.abs(tight.predictions - exact.predictions).max()
            < np.abs(loose.predictions - exact.predictions).max())
    common = dict(gammas=[0.5], lams=[1e-2, 1e-1], folds=folds)
    searched = grid_search(X, y, "l2svm", method=Spectral(tol=1e-12), **common)
    assert searched.criterion == Spectral(tol=1e-12)
    estimator = KernelSearchCV("l2svm", {"gamma": [0.5], "lam": [1e-2, 1e-1]}, cv=4,
                               method=Spectral()).fit(X, y)
    assert estimator.search_.criterion == Spectral()
    with pytest.warns(FutureWarning), pytest.raises(kernelcv.KernelCVError, match="inside it"):
        grid_search(X, y, "l2svm", method=BIF(order=5), order=3, **common)
    with pytest.raises(kernelcv.KernelCVError, match="unknown method"):
        grid_search(X, y, "l2svm", method=3.5, **common)
    with pytest.raises(kernelcv.KernelCVError, match="unknown method"):
        kernelcv.cross_validate(X, y, machine="l2svm", gamma=0.5, folds=folds, method=object())


def test_run_select_takes_a_method_object(tmp_path):
    from kernelcv.reports.select import run_select
    from kernelcv.selection import Spectral

    X, y = _problem(50, 2, 43, regression=False)
    path = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(path))
    report = run_select(str(path), machine="l2svm", method=Spectral(tol=1e-12),
                        gammas=[0.5, 1.0], lams=[1e-2, 1e-1], folds=5)
    assert report["method"] == "spectral" and report["screen"] == "off"
    assert len(report["candidates"]) == 4


def test_huber_machines_are_refitted_by_newton_unless_mm_is_asked_for():
    X, y = _problem(60, 2, 51, regression=False)
    folds = _folds(60, 5, 51)
    K = rbf_kernel(X, gamma=0.5)
    machine = make_machine("svm")
    lams = [1e-3, 1e-2]
    newton = spectral_evaluations(K, y, folds, lams, machine)
    mm = spectral_evaluations(K, y, folds, lams, machine, huber="mm")
    for a, b, lam in zip(newton, mm, lams, strict=True):
        exact = evaluate_lam(K, y, folds, lam, machine, "exact")
        assert np.allclose(a.predictions, exact.predictions, rtol=0, atol=1e-8)  # refits
        _assert_matches_refit(b.predictions, exact.predictions, y, machine)
    with pytest.raises(kernelcv.KernelCVError, match="huber"):
        Spectral(huber="fast")


@pytest.mark.parametrize("strategy", ["ovo", "ovr"])
def test_a_multiclass_search_by_spectral_scores_as_refit_cv(strategy):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(75, 2))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=75), [-0.5, 0.5])
    common = dict(gammas=[0.3, 1.0], lams=[1e-3, 1e-1], folds=5)
    machine = make_machine("l2svm", multiclass=strategy)
    spectral = grid_search(X, y, machine, method="spectral", **common)
    exact = grid_search(X, y, machine, method="exact", **common)
    a = {(c["gamma"], c["lam"]): c["cv_error"] for c in spectral.candidates}
    b = {(c["gamma"], c["lam"]): c["cv_error"] for c in exact.candidates}
    assert a == pytest.approx(b, abs=1e-12)


def test_cli_cv_spectral_equals_exact(tmp_path, capsys):
    X, y = _problem(50, 3, 61, regression=False)
    path = tmp_path / "data.svm"
    dump_svmlight_file(X, y, str(path))
    reports = {}
    for method in ("spectral", "exact"):
        code = main(["cv", str(path), "--machine", "svm", "--gamma", "0.5", "--lam", "0.01",
                     "--folds", "5", "--method", method, "--json"])
        assert code == 0
        reports[method] = json.loads(capsys.readouterr().out)
    assert reports["spectral"]["method"] == "spectral"
    assert reports["spectral"]["cv_error"] == pytest.approx(reports["exact"]["cv_error"])


def test_held_out_values_stay_exact_at_very_small_lam():
    # alpha = -loss'/(2 m lam) multiplied the iterate's error by 1/lam: a poly kernel at
    # lam = 1e-6 was 7e-3 off (scale 24); the iterate's own held-out values are taken
    from sklearn.metrics.pairwise import polynomial_kernel

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = np.where(X[:, 0] * X[:, 1] + 0.5 * rng.normal(size=200) > 0, 1.0, -1.0)
    folds = np.random.default_rng(1).permutation(np.arange(200) % 5)
    K = polynomial_kernel(X, degree=3, coef0=1, gamma=0.5)
    machine = make_machine("l2svm")
    for lam in (1e-6, 1e-5):
        ev = spectral_evaluations(K, y, folds, [lam], machine)[0]
        exact = evaluate_lam(K, y, folds, lam, machine, "exact")
        scale = float(np.abs(exact.predictions).max())
        assert np.max(np.abs(ev.predictions - exact.predictions)) <= 1e-6 * scale
