"""The adaptive feature count of method='rff': the fold-sum square-loss CV (against Ridge
refits and the in-memory closed form on the same folds), nested draws, the stopping rule,
the one-standard-error choice and the search and CLI around them."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Ridge

from kernelcv import FeatureSpace, KernelSearchCV
from kernelcv.cli import main
from kernelcv.exceptions import KernelCVError
from kernelcv.features import FeatureMap
from kernelcv.random_features.growth import (
    choose_point,
    feature_sizes,
    is_stable,
    keep_settings,
    shows_signal,
)
from kernelcv.random_features.linear_cv import linear_svm_path_cv, square_path_cv
from kernelcv.random_features.sums import (
    FoldSums,
    chunk_square_errors,
    chunk_square_sums,
    held_out_values,
    path_from_errors,
    square_fold_models,
)
from kernelcv.reading.files import make_synthetic
from kernelcv.selection.after_grid.baseline import baseline_error
from kernelcv.selection.search import grid_search
from kernelcv.validation import check_data, make_folds


@pytest.fixture(scope="module")
def data():
    X, y = make_synthetic(300, 5, random_state=7)
    _, y_pm, _ = check_data(X, y, True)
    return X, y, y_pm


def _chunked_path(X, y, folds, fmap, gamma, lams, classifier, intercept, size=37):
    """The two passes over chunks of ``size`` rows (in stored order)."""
    P = fmap.projection(gamma)
    sums = None
    for a in range(0, X.shape[0], size):
        s = slice(a, a + size)
        sums = chunk_square_sums(X[s], y[s], folds[s], fmap, [gamma], [P], 4,
                                 out=None if sums is None else sums)
    models = square_fold_models(sums[0], lams, intercept, P)
    errors = None
    for a in range(0, X.shape[0], 53):
        s = slice(a, a + 53)
        errors = chunk_square_errors(X[s], y[s], folds[s], fmap, [gamma],
                                     [models.on_columns()], [models.intercept], 4,
                                     classifier, out=errors)
    return path_from_errors(errors[0], sums[0].count, lams), models


@pytest.mark.parametrize("kind", ["rff", "nystroem"])
@pytest.mark.parametrize("intercept", [True, False])
def test_fold_sums_equal_ridge_refits_and_the_closed_form(kind, intercept):
    X, y = make_synthetic(160, 6, task="regression", random_state=2)
    folds = make_folds(y, 4, False, 1)
    lams = np.logspace(-7, 0, 6)
    fmap = FeatureMap(kind, 30, random_state=3, nested=True).fit(X)
    path, models = _chunked_path(X, y, folds, fmap, 0.2, lams, False, intercept)
    Z = fmap.transform(X, 0.2)
    reference = square_path_cv(Z, y, folds, lams, classifier=False,
                               fit_intercept=intercept)
    np.testing.assert_allclose(path.fold_errors, reference.fold_errors, rtol=1e-8)
    for i in range(4):
        held = folds == i
        m = int((~held).sum())
        values = held_out_values(fmap.kernel_columns(fmap.base(X[held]), 0.2),
                                 np.full(held.sum(), i), models.on_columns(),
                                 models.intercept)
        for k, lam in enumerate(lams):
            # (1/m)||y - Zw - c||^2 + lam ||w||^2  <=>  Ridge(alpha = m lam)
            ridge = Ridge(alpha=m * lam, solver="cholesky", fit_intercept=intercept)
            ridge.fit(Z[~held], y[~held])
            np.testing.assert_allclose(values[:, k], ridge.predict(Z[held]), rtol=1e-7,
                                       atol=1e-9)


def test_fold_sums_classification_and_sparse_input(data):
    X, _, y = data
    folds = make_folds(y, 4, True, 0)
    lams = [1e-1, 1e-3, 1e-6]
    for kind in ("rff", "nystroem"):
        fmap = FeatureMap(kind, 25, random_state=0, nested=True).fit(X)
        dense, _ = _chunked_path(X, y, folds, fmap, 0.3, lams, True, True)
        reference = square_path_cv(fmap.transform(X, 0.3), y, folds, lams)
        np.testing.assert_array_equal(dense.fold_errors, reference.fold_errors)
        sparse, _ = _chunked_path(sp.csr_matrix(X), y, folds, fmap, 0.3, lams, True, True)
        np.testing.assert_allclose(sparse.cv_error, dense.cv_error, atol=1e-12)


def test_sums_add_in_any_grouping():
    rng = np.random.default_rng(0)
    parts = [FoldSums(rng.random((3, 4, 4)), rng.random((3, 4)), rng.random((3, 4)),
                      rng.integers(0, 9, 3), rng.random(3)) for _ in range(3)]
    left = (parts[0] + parts[1]) + parts[2]
    right = FoldSums.zeros(3, 4).add(parts[2]).add(parts[1]).add(parts[0])
    np.testing.assert_allclose(left.gram, right.gram)
    np.testing.assert_array_equal(left.count, right.count)


@pytest.mark.parametrize("kind", ["rff", "nystroem"])
def test_nested_draws_are_prefixes(data, kind):
    X = data[0]
    big = FeatureMap(kind, 40, random_state=5, nested=True).fit(X)
    small = big.prefix(16)
    # the same columns (RFF scales its features by sqrt(2 / D))
    scale = np.sqrt(40 / 16) if kind == "rff" else 1.0
    np.testing.assert_allclose(small.kernel_columns(small.base(X), 0.4),
                               big.kernel_columns(big.base(X), 0.4)[:, :16] * scale,
                               rtol=1e-13)
    if kind == "rff":  # the random part of a nested RFF draw does not depend on its size
        alone = FeatureMap(kind, 16, random_state=5, nested=True).fit(X)
        np.testing.assert_array_equal(alone.transform(X, 0.4), small.transform(X, 0.4))
    with pytest.raises(KernelCVError, match="prefix"):
        big.prefix(41)


def test_sizes_double_and_stop_at_n_and_the_maximum():
    assert feature_sizes(64, 2048, 50_000) == [64, 128, 256, 512, 1024, 2048]
    assert feature_sizes(64, 2048, 300) == [64, 128, 256, 300]
    assert feature_sizes(64, 100, 10_000) == [64, 100]
    assert feature_sizes(64, 2048, 40) == [40]


def test_stability_needs_both_the_level_and_the_choice():
    assert is_stable(0.050, 0.049, 0.0495, slack=0.002)
    assert not is_stable(0.073, 0.062, 0.062, slack=0.002)  # same point, level moved
    assert not is_stable(0.050, 0.049, 0.060, slack=0.002)  # level held, choice worse now
    assert is_stable(0.0, 0.0, 0.0, slack=0.0)


def _records(errors, lams, n=1000):
    return [{"lam": lam, "score": e, "cv_error": e, "fold_sizes": [n // 2, n - n // 2],
             "fold_errors": [e, e]} for e, lam in zip(errors, lams, strict=True)]


def test_one_standard_error_choice_takes_the_largest_lam_within_it():
    lams = [1e-1, 1e-2, 1e-3, 1e-4]  # decreasing lam, i.e. increasing C
    per_setting = {0: _records([0.30, 0.20, 0.105, 0.100], lams),
                   1: _records([0.25, 0.108, 0.102, 0.101], lams)}
    slack = np.sqrt(0.1 * 0.9 / 1000)  # 0.0095
    setting, position, error, best, tol = choose_point(per_setting, [0, 1], True, 1.0)
    assert (setting, position, best) == (1, 1, 0.100) and np.isclose(tol, slack)
    assert error == 0.108  # the largest lam within one standard error of the best
    strict = choose_point(per_setting, [0, 1], True, 0.0)
    assert strict[:3] == (0, 3, 0.100)  # tol 0: the argmin
    only_first = choose_point(per_setting, [0], True, 1.0)
    assert only_first[:2] == (0, 2)


def test_settings_in_play_keep_the_margin_and_the_next_larger_gamma():
    settings = [{"gamma": g} for g in (0.01, 0.1, 1.0, 10.0, 100.0)]
    lams = [1e-2]
    per_setting = {i: _records([e], lams) for i, e in enumerate([0.5, 0.11, 0.10, 0.2,
                                                                  0.12])}
    assert keep_settings(settings, per_setting, range(5)) == [1, 2, 3, 4]
    per_setting[4] = _records([0.5], lams)
    assert keep_settings(settings, per_setting, range(5)) == [1, 2, 3]


def test_adaptive_search_records_equal_the_closed_form_at_their_size(data):
    X, y, y_pm = data
    result = grid_search(X, y, "svm", method=FeatureSpace(refine=False), folds=4,
                         gammas=[0.01, 0.1, 1.0, 10.0], Cs=[0.1, 1.0, 10.0, 100.0])
    space = result.to_dict()["feature_space"]
    assert space["adaptive"] and space["feature_map"] == "nystroem"
    assert space["feature_loss"] == "square"
    assert space["features"] == space["path"][-1]["features"] == result.feature_map.n_features
    last = space["path"][-1]
    assert result.best["gamma"] == last["gamma"] and result.best["lam"] == last["lam"]
    assert result.best["features"] == last["features"]
    if space["stop"] == "stable":
        assert last["stable"]
    fmap = result.feature_map
    for gamma in last["gammas"]:
        mine = [c for c in result.candidates if c["gamma"] == gamma]
        assert {c["features"] for c in mine} == {last["features"]}
        lams = [c["lam"] for c in mine]
        ref = square_path_cv(fmap.transform(X, gamma), y_pm, result.fold_ids, lams)
        np.testing.assert_allclose([c["cv_error"] for c in mine], ref.cv_error, atol=1e-12)
    assert any("adaptive feature count: D = " in note for note in result.notes)


def test_growth_stops_at_the_maximum_and_the_time_budget(data):
    X, y, _ = data
    grid = {"gammas": [0.1, 1.0], "Cs": [1.0, 10.0], "folds": 3}
    capped = grid_search(X, y, "l2svm", method=FeatureSpace(max_features=100, refine=False),
                         **grid)
    path = capped.to_dict()["feature_space"]["path"]
    assert [p["features"] for p in path][-1] <= 100
    assert capped.to_dict()["feature_space"]["stop"] in ("stable", "max_features")
    rushed = grid_search(X, y, "l2svm", method=FeatureSpace(feature_time=1e-9, refine=False),
                         **grid)
    space = rushed.to_dict()["feature_space"]
    assert space["stop"] == "time" and [p["features"] for p in space["path"]] == [64]
    assert any("time" in note and "budget" in note for note in rushed.notes)


def test_adaptive_with_the_squared_hinge_runs_each_setting_as_a_task(data):
    X, y, y_pm = data
    result = grid_search(X, y, "l2svm",
                         method=FeatureSpace(refine=False, feature_loss="squared_hinge",
                                             feature_map="rff", max_features=128),
                         folds=3, gammas=[0.1, 1.0], Cs=[1.0, 10.0])
    fmap = result.feature_map
    assert fmap.kind == "rff" and fmap.n_features == result.best["features"]
    mine = [c for c in result.candidates if c["gamma"] == result.best["gamma"]]
    ref = linear_svm_path_cv(fmap.transform(X, result.best["gamma"]), y_pm,
                             result.fold_ids, [c["lam"] for c in mine], fit_intercept=True)
    np.testing.assert_allclose([c["cv_error"] for c in mine], ref.cv_error)


def test_growth_options_are_checked(data):
    X, y, _ = data
    for kwargs, match in [({"max_features": 0}, "integer >= 1"),
                          ({"feature_time": 0}, "feature_time must be a positive"),
                          ({"features": "many"}, "integer >= 1")]:
        with pytest.raises(KernelCVError, match=match):
            grid_search(X, y, "svm", method=FeatureSpace(**kwargs))
    with pytest.warns(FutureWarning), pytest.raises(KernelCVError,
                                                    match="belong to method='rff'"):
        grid_search(X, y, "svm", max_features=100)
    with pytest.raises(KernelCVError, match=r"write method=<method object>\(feature_time="):
        KernelSearchCV("svm", {"gamma": [0.1]}, feature_time=5)


def test_search_cv_defaults_to_the_adaptive_count(data):
    X, y, _ = data
    search = KernelSearchCV("svm", {"gamma": [0.1, 1.0], "C": [1.0, 10.0]},
                            method=FeatureSpace(refine=False, max_features=128), cv=3).fit(X, y)
    space = search.search_.to_dict()["feature_space"]
    assert space["adaptive"] and space["features"] <= 128
    assert search.score(X, y) > 0.7


def _select(capsys, *argv):
    code = main(["select", *[str(a) for a in argv], "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_default_is_adaptive_and_fixed_d_keeps_the_paper_protocol(capsys, tmp_path):
    X, y = make_synthetic(200, 4, random_state=1)
    path = tmp_path / "train.npz"
    np.savez(path, X=X, y=y)
    grid = ["--gamma-grid", "2^-3,2^-1,2^1", "--C-grid", "2^-1,2^3", "--folds", "4"]
    code, out, err = _select(capsys, path, "--machine", "svm", "--method", "rff", *grid,
                             "--max-features", "128", "--json")
    assert code == 0, err
    report = json.loads(out)
    space = report["feature_space"]
    assert space["adaptive"] and space["max_features"] == 128 and space["path"]
    assert any(n.startswith("adaptive feature count: D = ") for n in report["notes"])
    code, out, err = _select(capsys, path, "--machine", "svm", "--method", "rff", *grid,
                             "--features", "30")
    assert code == 0, err
    assert "D = 30 rff features" in out and "squared_hinge loss" in out
    for bad, message in [(["--features", "lots"], "integer >= 1 or 'auto'"),
                         (["--features", "30", "--max-features", "64"],
                          "belong to --features auto"),
                         (["--feature-time", "0"], "must be positive"),
                         (["--max-features", "0"], "at least 1")]:
        code, _, err = _select(capsys, path, "--machine", "svm", "--method", "rff", *grid,
                               *bad)
        assert code == 2 and message in err, err
    code, _, err = _select(capsys, path, "--machine", "svm", "--max-features", "64")
    assert code == 2 and "belong(s) to --method rff" in err


def test_the_signal_rule():
    assert shows_signal(0.10, 0.25, 0.02) and not shows_signal(0.24, 0.25, 0.02)
    assert not shows_signal(0.23, 0.25, 0.02)  # exactly the slack below: not yet


def test_a_surface_without_signal_is_never_stable():
    """Labels independent of X with 10 % positives: every feature count scores the
    majority class's rate, so the growth never calls a choice stable (it used to stop
    at D = 128 and choose the constant classifier, as on a 10,000-row w8a draw); it runs
    to max_features and says that the feature space showed no signal. Labels that
    depend on X stop as before."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 4))
    noise = np.where(rng.random(400) < 0.1, 1, -1)
    grid = {"gammas": [0.1, 1.0], "Cs": [0.1, 1.0, 10.0], "folds": 4}
    blind = grid_search(X, noise, "l2svm", method=FeatureSpace(max_features=256, refine=False),
                        **grid)
    space = blind.to_dict()["feature_space"]
    baseline = baseline_error(noise, blind.fold_ids, True)
    assert all(p["best_cv_error"] >= baseline - p["tolerance"] for p in space["path"])
    assert [p["features"] for p in space["path"]] == [64, 128, 256]
    assert not any(p["stable"] for p in space["path"])
    assert space["stop"] == "max_features"
    assert any("no feature count up to D = 256" in note for note in blind.notes)
    signal = np.where(X[:, 0] + 0.5 * X[:, 1] > 1.2, 1, -1)
    clear = grid_search(X, signal, "l2svm", method=FeatureSpace(max_features=256,
                                                                refine=False), **grid)
    assert clear.to_dict()["feature_space"]["stop"] in ("stable", "max_features")
    assert clear.best_cv_error < baseline_error(signal, clear.fold_ids, True) / 2
    assert not any("no feature count" in note for note in clear.notes)
