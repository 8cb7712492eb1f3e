"""Exact refinement of a random-feature search: refit CV against scikit-learn, the walk,
the search's choice, the estimator and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.model_selection import PredefinedSplit, cross_val_score
from sklearn.svm import SVC

from kernelcv import Execution, FeatureSpace, KernelSearchCV, cross_validate
from kernelcv.cli import main
from kernelcv.exceptions import KernelCVError
from kernelcv.kernels import GramFactory, make_kernel
from kernelcv.machines import make_machine
from kernelcv.random_features import refine as refine_module
from kernelcv.random_features.kernel_refit import machine_refit_cv, svc_refit_cv
from kernelcv.random_features.linear_cv import c_to_lam
from kernelcv.random_features.refine import neighbours, refine_walk
from kernelcv.reading.files import make_synthetic
from kernelcv.selection.search import grid_search
from kernelcv.validation import make_folds

GAMMAS = [2.0**k for k in (-7, -5, -3, -1, 1)]
CS = [2.0**k for k in (-3, -1, 1, 3, 5)]


@pytest.fixture(scope="module")
def data():
    X, y = make_synthetic(200, 5, random_state=11)  # 200 = 5 folds of 40: equal fold sizes
    return X, y, make_folds(y, 5, True, 0)


# ------------------------------------------------------------------ exact refit CV


def test_svc_refit_cv_equals_sklearn_cross_val_score(data):
    X, y, folds = data
    gamma, lams = 0.2, [1e-3, 1e-2]
    K = GramFactory(X).gram(make_kernel("rbf", gamma))
    with_gram = svc_refit_cv(X, y, folds, gamma, lams, K)
    with_rows = svc_refit_cv(X, y, folds, gamma, lams, None)
    m = int(np.sum(folds != 0))  # equal folds: one C for every fold
    for lam, a, b in zip(lams, with_gram, with_rows, strict=True):
        accuracy = cross_val_score(SVC(C=1 / (2 * m * lam), gamma=gamma), X, y,
                                   cv=PredefinedSplit(folds))
        np.testing.assert_allclose(a["fold_errors"], 1 - accuracy, atol=1e-12)
        np.testing.assert_allclose(b["fold_errors"], 1 - accuracy, atol=1e-12)
        assert a["cv_error"] == pytest.approx(np.mean(1 - accuracy))


def test_svc_refit_cv_keeps_lam_per_fold_with_unequal_folds():
    X, y = make_synthetic(103, 4, random_state=2)
    folds = make_folds(y, 4, True, 1)
    gamma, lam = 0.3, 2e-3
    record = svc_refit_cv(X, y, folds, gamma, [lam])[0]
    expected = []
    for fold in range(4):
        train = folds != fold
        svc = SVC(C=1 / (2 * train.sum() * lam), gamma=gamma).fit(X[train], y[train])
        expected.append(np.mean(svc.predict(X[~train]) != y[~train]))
    np.testing.assert_allclose(record["fold_errors"], expected)
    sizes = np.bincount(folds)
    assert record["cv_error"] == pytest.approx(np.dot(expected, sizes) / 103)


@pytest.mark.parametrize("average", ["pooled", "folds"])
def test_svc_refit_cv_stops_early_only_above_the_bound(average):
    X, y = make_synthetic(103, 4, random_state=2)  # unequal folds: the averages differ
    folds = make_folds(y, 4, True, 1)
    gamma, lam = 0.3, 1e-1  # a large lam: a poor fit with errors in every fold
    full = svc_refit_cv(X, y, folds, gamma, [lam])[0]
    errors = np.asarray(full["fold_errors"])
    weights = np.bincount(folds) / 103 if average == "pooled" else np.full(4, 0.25)
    exact = float(errors @ weights)
    assert np.all(errors > 0)
    partial = np.cumsum(errors * weights)
    # a bound just under the error after the first fold: stop after that fold
    stopped = svc_refit_cv(X, y, folds, gamma, [lam], stop_above=partial[0] * 0.999,
                           average=average)[0]
    assert stopped["pruned"] and stopped["cv_error"] is None
    assert stopped["fold_errors"] == full["fold_errors"][:1]
    assert stopped["error_at_least"] == pytest.approx(partial[0])
    assert stopped["error_at_least"] <= exact
    # a bound at the exact error never stops (ties are kept), nor does one above it
    for bound in (exact, exact + 0.1):
        kept = svc_refit_cv(X, y, folds, gamma, [lam], stop_above=bound, average=average)[0]
        assert "pruned" not in kept and kept["fold_errors"] == full["fold_errors"]


@pytest.mark.parametrize("machine", ["krr", "l2svm", "lssvm"])
def test_machine_refit_cv_equals_kernelcv_exact_cv(machine):
    task = "regression" if machine == "krr" else "classification"
    X, y = make_synthetic(90, 5, task=task, random_state=4)
    folds = make_folds(y, 3, task == "classification", 0)
    K = GramFactory(X).gram(make_kernel("rbf", 0.5))
    records = machine_refit_cv(K, y, folds, [1e-3, 1e-1], make_machine(machine))
    for lam, record in zip([1e-3, 1e-1], records, strict=True):
        exact = cross_validate(X, y, machine=machine, kernel="rbf", gamma=0.5, lam=lam,
                               folds=folds, method="exact")
        assert record["cv_error"] == pytest.approx(exact.cv_error, rel=1e-10)


# ------------------------------------------------------------------ the walk


def _grid_candidates(scores):
    return [{"gamma": 2.0**g, "lam": 10.0**-k, "score": float(scores[g, k]),
             "status": "approximate", "exact_error": None}
            for g in range(scores.shape[0]) for k in range(scores.shape[1])]


def _surface_evaluator(surface, calls):
    def evaluate(gamma, lams, stop_above=None):
        g = int(round(np.log2(gamma)))
        calls.append((g, len(lams)))
        return [{"error": float(surface[g, int(round(-np.log10(lam)))]), "seconds": 0.0}
                for lam in lams]
    return evaluate


def test_neighbours_are_one_step_in_gamma_or_lam():
    candidates = _grid_candidates(np.zeros((3, 3)))
    around = neighbours(candidates)
    assert sorted(around[4]) == [1, 3, 5, 7]  # the centre: no diagonal steps
    assert sorted(around[0]) == [1, 3]


def test_ridge_start_is_one_step_to_larger_gamma_and_smaller_c():
    candidates = _grid_candidates(np.zeros((3, 4)))  # gamma 2^g, lam 10^-k: index 4 g + k
    # larger gamma (g + 1) and larger lam (k - 1, i.e. smaller C)
    assert refine_module.ridge_start(candidates, 0 * 4 + 2) == 1 * 4 + 1
    # at the largest gamma only lam moves; at the largest lam only gamma moves
    assert refine_module.ridge_start(candidates, 2 * 4 + 3) == 2 * 4 + 2
    assert refine_module.ridge_start(candidates, 1 * 4 + 0) == 2 * 4 + 0
    assert refine_module.ridge_start(candidates, 2 * 4 + 0) == 2 * 4 + 0  # the corner
    # a ragged grid: the nearest lam (log scale) at the next gamma, then one step larger
    ragged = [{"gamma": 1.0, "lam": 0.01}, {"gamma": 2.0, "lam": 0.008},
              {"gamma": 2.0, "lam": 0.1}, {"gamma": 2.0, "lam": 1.0}]
    assert refine_module.ridge_start(ragged, 0) == 2


def test_walk_reaches_the_minimum_of_a_bowl_and_stops_at_a_local_minimum():
    g, k = np.meshgrid(np.arange(9), np.arange(8), indexing="ij")
    surface = (g - 6.0) ** 2 + 0.5 * (k - 2.0) ** 2  # exact error: minimum at (6, 2)
    scores = (g - 1.0) ** 2 + (k - 6.0) ** 2  # feature-space winner at (1, 6)
    candidates = _grid_candidates(scores)
    calls = []
    best, visited = refine_walk(candidates, 1 * 8 + 6, _surface_evaluator(surface, calls),
                                max_evals=100)
    assert (best // 8, best % 8) == (6, 2)
    assert visited[0] == 1 * 8 + 6  # the start is evaluated first
    assert len(set(visited)) == len(visited) < 72  # each point once, not the whole grid
    for i in visited:
        assert candidates[i]["status"] == "refined"
        assert candidates[i]["exact_error"] == surface[i // 8, i % 8]
    # the end is a local minimum: all its neighbours were evaluated and are not better
    for j in neighbours(candidates)[best]:
        assert j in visited and candidates[j]["exact_error"] >= candidates[best]["exact_error"]
    assert len(calls) == len(visited)  # one point per call: each gets the current bound


def test_walk_respects_the_budget_and_breaks_ties_by_score():
    scores = np.arange(20.0).reshape(4, 5)
    candidates = _grid_candidates(scores)
    flat = np.zeros((4, 5))  # every exact error ties: the best score wins
    best, visited = refine_walk(candidates, 0, _surface_evaluator(flat, []), max_evals=30)
    assert best == 0 and sorted(visited) == [0, 1, 5]  # the start and its 2 neighbours
    candidates = _grid_candidates(scores)
    g, k = np.meshgrid(np.arange(4), np.arange(5), indexing="ij")
    best, visited = refine_walk(candidates, 0, _surface_evaluator(-(g + k) * 1.0, []),
                                max_evals=5)
    assert len(visited) == 5
    assert candidates[best]["exact_error"] == min(candidates[i]["exact_error"]
                                                  for i in visited)


def test_walk_restarts_from_a_plateau_far_above_the_feature_space_estimate():
    # SVC at a tiny C predicts by its intercept: exact 0.5 over the large-lam half, where
    # the squared-hinge features still score well; the kernel machine's bowl is elsewhere.
    g, k = np.meshgrid(np.arange(4), np.arange(10), indexing="ij")
    surface = np.where(k < 5, 0.5, 0.1 + 0.01 * (k - 7.0) ** 2)  # k: -log10(lam)
    scores = 0.12 + 0.001 * (k - 3.0) ** 2  # the feature-space winner on the plateau
    candidates = _grid_candidates(scores)
    for c in candidates:
        c["fold_errors"] = [c["score"]] * 5  # no spread: expected = the winner's score
    winner = int(np.argmin(scores))
    best, visited = refine_walk(candidates, winner, _surface_evaluator(surface, []),
                                max_evals=60)
    assert surface[best // 10, best % 10] == surface.min()
    assert candidates[best]["exact_error"] == pytest.approx(0.1)
    # a local minimum within the estimate ends the walk as before
    calm = np.where(k < 5, 0.11, 0.5)
    candidates = _grid_candidates(scores)
    for c in candidates:
        c["fold_errors"] = [c["score"]] * 5
    best, visited = refine_walk(candidates, winner, _surface_evaluator(calm, []),
                                max_evals=60)
    assert candidates[best]["exact_error"] == 0.11 and len(visited) <= 5


def _clusters(n, p, seed):
    """TorchKM's simulated data: 5 Gaussian clusters per class, shifted on half the
    features, standardized."""
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((10, p))
    means[:5, :p // 2] += 2.0
    means[5:, p // 2:] += 2.0
    y = np.where(rng.random(n) < 0.5, 1, -1)
    cluster = np.where(y > 0, rng.integers(5, 10, n), rng.integers(0, 5, n))
    X = rng.standard_normal((n, p)) * 3.0 + means[cluster]
    return (X - X.mean(0)) / X.std(0), y


def test_refined_svc_leaves_the_intercept_plateau_of_tiny_c():
    # TorchKM's C grid (lam 1e3 .. 1e-3): the feature-space winner lies where SVC
    # predicts by its intercept (exact 0.54 there; the walk used to stop at it)
    X, y = _clusters(300, 10, 1)
    folds = make_folds(y, 5, True, 0)
    Cs = list(1.0 / (2 * 300 * np.logspace(3, -3, 25)))
    search = KernelSearchCV("svm", {"gamma": [0.13], "C": Cs}, cv=PredefinedSplit(folds),
                            method=FeatureSpace(features=64, refine=True)).fit(X, y)
    # kernelcv keeps lam per fold: each fold's SVC has C n / m (m = 240 training rows)
    exact = [cross_val_score(SVC(C=C * 300 / 240, gamma=0.13), X, y,
                             cv=PredefinedSplit(folds)).mean() for C in Cs]
    winner = min(range(len(Cs)), key=lambda i: search.search_.candidates[i]["score"])
    assert exact[winner] < 0.6  # the plateau under the feature-space winner
    assert search.best_score_ == pytest.approx(max(exact), abs=1e-12)


def _fold_surface_evaluator(fold_errors, calls, honour_bound):
    """Per-fold errors (g, k, fold); stops early like svc_refit_cv when honour_bound."""
    def evaluate(gamma, lams, stop_above=None):
        records = []
        for lam in lams:
            errors = fold_errors[int(round(np.log2(gamma))), int(round(-np.log10(lam)))]
            bound, done = 0.0, 0
            for e in errors:
                bound, done = bound + e / errors.size, done + 1
                if (honour_bound and stop_above is not None and done < errors.size
                        and bound > stop_above + 1e-12):
                    break
            calls.append(done)
            if done < errors.size:
                records.append({"error": None, "seconds": 0.0, "pruned": True,
                                "error_at_least": bound})
            else:
                records.append({"error": float(errors.mean()), "seconds": 0.0})
        return records
    return evaluate


@pytest.mark.parametrize("seed", range(8))
def test_pruning_skips_folds_but_not_the_walk_or_its_choice(seed):
    rng = np.random.default_rng(seed)
    g, k = np.meshgrid(np.arange(7), np.arange(6), indexing="ij")
    bowl = 0.02 * ((g - rng.integers(7)) ** 2 + (k - rng.integers(6)) ** 2)
    # rounded per-fold errors: exact ties are common, as with 0-1 errors
    fold_errors = np.round(bowl[..., None] + rng.uniform(0, 0.3, (7, 6, 5)), 1)
    scores = rng.uniform(size=(7, 6))
    start = int(np.argmin(scores))
    plain, pruned = _grid_candidates(scores), _grid_candidates(scores)
    plain_calls, pruned_calls = [], []
    best_plain, visited_plain = refine_walk(
        plain, start, _fold_surface_evaluator(fold_errors, plain_calls, False), 42)
    best, visited = refine_walk(
        pruned, start, _fold_surface_evaluator(fold_errors, pruned_calls, True), 42)
    assert best == best_plain and visited == visited_plain
    assert pruned[best]["exact_error"] == plain[best]["exact_error"]
    for i in visited:
        if pruned[i]["status"] == "pruned":
            assert pruned[i]["exact_error"] is None
            assert (plain[best]["exact_error"] < pruned[i]["exact_error_at_least"]
                    <= plain[i]["exact_error"] + 1e-12)
        else:
            assert pruned[i]["status"] == "refined"
            assert pruned[i]["exact_error"] == plain[i]["exact_error"]
    # a point pruned by the first walk and met again after a restart is refitted in full
    reruns = len(pruned_calls) - len(visited)
    assert len(plain_calls) == len(visited_plain)
    assert sum(pruned_calls) <= sum(plain_calls) + 5 * reruns
    if seed == 0:
        assert min(pruned_calls) < 5  # this surface does prune


def test_neighbours_on_a_ragged_grid_stay_connected():
    # gamma 1 has lam 0.1, 0.01, 0.001; gamma 2 has 0.05, 0.005 (interleaved lists)
    candidates = [{"gamma": 1.0, "lam": 0.1}, {"gamma": 1.0, "lam": 0.01},
                  {"gamma": 1.0, "lam": 0.001}, {"gamma": 2.0, "lam": 0.05},
                  {"gamma": 2.0, "lam": 0.005}]
    around = neighbours(candidates)
    assert around[0] == [1, 3]  # next lam of gamma 1; nearest lam (log scale) of gamma 2
    assert around[1] == [2, 0, 4]  # 0.05 and 0.005 tie in log distance: the smaller lam
    assert around[3] == [4, 0]
    assert around[4] == [3, 1]
    for c, score in zip(candidates, [4, 3, 2, 1, 0], strict=True):
        c.update(score=float(score), status="approximate", exact_error=None)
    errors = {0.1: 0.5, 0.01: 0.4, 0.001: 0.05, 0.05: 0.45, 0.005: 0.3}

    def evaluate(gamma, lams, stop_above=None):
        return [{"error": errors[lam], "seconds": 0.0} for lam in lams]

    best, visited = refine_walk(candidates, 0, evaluate)
    assert best == 2 and set(visited) == {0, 1, 2, 3, 4}


# ------------------------------------------------------------------ the search


def test_refined_search_chooses_the_best_visited_svc_by_exact_refit_cv(data):
    X, y, folds = data
    lams = [float(v) for v in c_to_lam(CS, 200)]
    plain = grid_search(X, y, "svm", method=FeatureSpace(features=20, refine=False),
                        folds=folds, gammas=GAMMAS, lams=lams)
    result = grid_search(X, y, "svm", method=FeatureSpace(features=20, refine=True),
                         folds=folds, gammas=GAMMAS, lams=lams)
    # same feature-space scores; the walk starts one ridge step from the winner
    assert [c["score"] for c in result.candidates] == [c["score"] for c in plain.candidates]
    assert result.refined[0] == refine_module.ridge_start(result.candidates,
                                                          plain.best_index)
    assert result.best_index in result.refined
    visited = [result.candidates[i] for i in result.refined]
    refined = [c for c in visited if c["status"] == "refined"]
    pruned = [c for c in visited if c["status"] == "pruned"]
    assert len(refined) + len(pruned) == len(visited)
    assert result.best["exact_error"] == min(c["exact_error"] for c in refined)
    assert result.best_cv_error == result.best["exact_error"]
    # the exact errors are those of SVC refits with C = 1 / (2 m lam) on the same folds;
    # a pruned point's bound lies between the chosen error and its own full CV error
    m = int(np.sum(folds != 0))
    for c in refined[:4] + pruned:
        accuracy = cross_val_score(SVC(C=1 / (2 * m * c["lam"]), gamma=c["gamma"]), X, y,
                                   cv=PredefinedSplit(folds))
        if c["status"] == "refined":
            assert c["exact_error"] == pytest.approx(np.mean(1 - accuracy))
        else:
            assert c["exact_error"] is None
            assert (result.best["exact_error"] < c["exact_error_at_least"]
                    <= np.mean(1 - accuracy) + 1e-12)
    # no unvisited neighbour of the choice can be better (it was all evaluated)
    around = refine_module.neighbours(result.candidates)[result.best_index]
    assert set(around) <= set(result.refined)
    assert result.timings["refine_seconds"] > 0
    assert any("refined by exact refit CV of the final SVC" in note for note in result.notes)
    assert result.to_dict()["refined"] == result.refined


def test_pruned_refits_leave_the_refined_choice_unchanged(data, monkeypatch):
    X, y, folds = data
    options = dict(method=FeatureSpace(features=10, refine=True), folds=folds, gammas=GAMMAS,
                   Cs=CS)
    with_pruning = grid_search(X, y, "svm", **options)
    from kernelcv.random_features import kernel_refit

    full_refits = kernel_refit.svc_refit_cv

    def never_stop(*args, stop_above=None, **kwargs):
        return full_refits(*args, **kwargs)

    monkeypatch.setattr(kernel_refit, "svc_refit_cv", never_stop)
    without = grid_search(X, y, "svm", **options)
    assert any(with_pruning.candidates[i]["status"] == "pruned"
               for i in with_pruning.refined)  # this data set does prune
    assert with_pruning.best_index == without.best_index
    assert with_pruning.refined == without.refined
    assert all(without.candidates[i]["status"] == "refined" for i in without.refined)
    assert with_pruning.best_cv_error == without.best_cv_error


def test_refinement_without_room_for_the_gram_matrix_gives_the_same_choice(data, monkeypatch):
    X, y, folds = data
    options = dict(method=FeatureSpace(features=20, refine=True), folds=folds,
                   gammas=GAMMAS[1:4], Cs=CS[1:4])
    with_gram = grid_search(X, y, "svm", **options)
    # 200 x 200 doubles = 320 kB: a 500 kB budget has room for the features, not the Gram
    # matrices, so LIBSVM computes the kernel rows itself
    without = grid_search(X, y, "svm", **options, execution=Execution(memory_budget=500_000))
    assert without.best_index == with_gram.best_index
    assert ([c["exact_error"] for c in without.candidates]
            == [c["exact_error"] for c in with_gram.candidates])


def test_refine_auto_limit_and_note(data, monkeypatch):
    X, y, folds = data
    monkeypatch.setattr(refine_module, "REFINE_AUTO_LIMIT", 100)
    result = grid_search(X, y, "svm", method=FeatureSpace(features=20), folds=folds,
                         gammas=GAMMAS[:3], Cs=CS[:3])
    assert result.refined == [] and result.best["exact_error"] is None
    assert any("not refined" in note and "> 100" in note for note in result.notes)
    monkeypatch.setattr(refine_module, "REFINE_AUTO_LIMIT", 5000)
    result = grid_search(X, y, "svm", method=FeatureSpace(features=20), folds=folds,
                         gammas=GAMMAS[:3], Cs=CS[:3])
    assert result.refined


def test_refined_krr_matches_kernelcv_exact_cv():
    X, y = make_synthetic(80, 5, task="regression", random_state=6)
    result = grid_search(X, y, "krr", method=FeatureSpace(features=30, refine=True), folds=4,
                         gammas=[0.1, 0.5, 2.0], lams=[1e-3, 1e-2, 1e-1])
    assert result.refined
    for i in result.refined:
        c = result.candidates[i]
        exact = cross_validate(X, y, machine="krr", kernel="rbf", gamma=c["gamma"],
                               lam=c["lam"], folds=result.fold_ids, method="exact")
        assert c["exact_error"] == pytest.approx(exact.cv_error, rel=1e-10)


@pytest.mark.parametrize("options, message", [
    ({"refine": "yes"}, "refine must be"),
    ({"refine_evals": 0}, "refine_evals must be"),
    ({"refine_evals": 2.5}, "refine_evals must be"),
])
def test_bad_refine_options(data, options, message):
    X, y, folds = data
    with pytest.raises(KernelCVError, match=message):
        grid_search(X, y, "svm", method=FeatureSpace(features=10, **options), folds=folds)


@pytest.mark.parametrize("value", [1, 0.0, np.True_, "on"])
def test_refine_must_be_auto_or_a_python_bool(data, value):
    X, y, folds = data
    with pytest.raises(KernelCVError, match="refine must be"):
        grid_search(X, y, "svm", method=FeatureSpace(features=10, refine=value), folds=folds)


def test_linear_final_model_is_not_refined(data):
    X, y, folds = data
    grid = {"gamma": GAMMAS[:2], "lam": [1e-3, 1e-2]}
    search = KernelSearchCV("svm", grid, method=FeatureSpace(features=10, final="linear"),
                            cv=folds).fit(X, y)
    assert search.search_.refined == [] and search.final_kind_ == "linear"
    with pytest.raises(KernelCVError, match="final='linear'"):
        KernelSearchCV("svm", grid, method=FeatureSpace(features=10, final="linear", refine=True),
                       cv=folds).fit(X, y)


def test_failed_refits_count_as_worst_and_are_noted(data, monkeypatch):
    from kernelcv.criteria import evaluate as evaluate_module

    X, y, folds = data
    real = evaluate_module.evaluate_lam
    first = {}

    def flaky(K, y, fold_ids, lam, machine, method, **options):
        first.setdefault("lam", lam)
        if lam == first["lam"]:
            raise KernelCVError("non-finite predictions")
        return real(K, y, fold_ids, lam, machine, method, **options)

    monkeypatch.setattr(evaluate_module, "evaluate_lam", flaky)
    result = grid_search(X, y, "l2svm", method=FeatureSpace(features=10, refine=True),
                         folds=folds, gammas=GAMMAS[1:4], Cs=CS[1:4])
    failed = [i for i in result.refined if result.candidates[i]["exact_error"] is None]
    assert failed and result.best_index not in failed
    assert result.best["exact_error"] is not None
    assert any("exact refits failed" in note for note in result.notes)


def test_refine_options_belong_to_rff(data, tmp_path):
    X, y, folds = data
    with pytest.warns(FutureWarning), pytest.raises(KernelCVError,
                                                    match="belong to method='rff'"):
        grid_search(X, y, "l2svm", method="bif", folds=folds, refine=True)
    with pytest.raises(KernelCVError, match=r"FeatureSpace\(features=200\)"):
        KernelSearchCV("l2svm", {"gamma": [0.1], "lam": [0.01]}, method="bif",
                       refine_evals=3)
    from sklearn.datasets import dump_svmlight_file

    from kernelcv.selection.report import run_select

    path = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(path))
    with pytest.raises(KernelCVError, match="refine=True"):
        run_select(path, machine="svm", method=FeatureSpace(refine=True, final="linear"))


def test_refine_on_is_refused_before_the_search_when_dense_refits_do_not_fit(data):
    X, y, folds = data
    with pytest.raises(KernelCVError, match="refine=True"):
        grid_search(X, y, "l2svm", method=FeatureSpace(features=10, refine=True), folds=folds,
                    execution=Execution(memory_budget=600_000))
    # auto skips with a note instead
    result = grid_search(X, y, "l2svm", method=FeatureSpace(features=10), folds=folds,
                         gammas=GAMMAS[:2], Cs=CS[:2],
                         execution=Execution(memory_budget=600_000))
    assert result.refined == []
    assert any("beyond the memory budget" in note for note in result.notes)


def test_kernel_search_cv_uses_the_refined_choice(data):
    X, y, folds = data
    grid = {"gamma": GAMMAS, "lam": [float(v) for v in c_to_lam(CS, 200)]}
    search = KernelSearchCV("svm", grid,
                            method=FeatureSpace(features=20, refine=True, refine_evals=12),
                            cv=folds).fit(X, y)
    result = search.search_
    assert 0 < len(result.refined) <= 12
    exact = search.cv_results_["exact_test_score"]
    complete = [i for i in result.refined if result.candidates[i]["status"] == "refined"]
    assert np.flatnonzero(np.isfinite(exact)).tolist() == sorted(complete)
    # a pruned point has no exact score (nan) and its status says why
    for i in set(result.refined) - set(complete):
        assert search.cv_results_["status"][i] == "pruned" and np.isnan(exact[i])
    assert exact[search.best_index_] == np.nanmax(exact)
    assert search.best_params_["gamma"] == result.best["gamma"]
    assert search.best_score_ == pytest.approx(exact[search.best_index_])


# ------------------------------------------------------------------ command line


def test_cli_refine_report_and_errors(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    X, y = make_synthetic(120, 4, random_state=8)
    path = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(path))
    grid = ["--gamma-grid", "2^-5,2^-3,2^-1", "--C-grid", "2^-1,2^3,2^7"]
    code = main(["select", str(path), "--machine", "svm", "--method", "rff", "--features",
                 "20", "--folds", "4", *grid, "--refine", "on", "--refine-evals", "5",
                 "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0 and "candidates by exact refit CV" in out
    assert "refinement)" in out and "safeguards" not in out  # rff has no safeguards
    code = main(["select", str(path), "--machine", "svm", "--method", "rff", "--features",
                 "20", "--folds", "4", *grid, "--refine", "on", "--no-progress", "--json"])
    report = json.loads(capsys.readouterr().out)
    statuses = [report["candidates"][i]["status"] for i in report["refined"]]
    assert code == 0 and set(statuses) <= {"refined", "pruned"}
    for i in report["refined"]:  # the JSON report carries the bound of a pruned point
        c = report["candidates"][i]
        assert (c["exact_error"] is None) == (c["status"] == "pruned")
        if c["status"] == "pruned":
            assert c["exact_error_at_least"] > report["best_cv_error"]
    code = main(["select", str(path), "--machine", "svm", "--method", "rff", "--features",
                 "20", "--folds", "4", *grid, "--refine", "on", "--refine-evals", "2",
                 "--no-progress", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and len(report["refined"]) == 2
    assert report["feature_space"]["refine"] is True
    assert report["feature_space"]["refine_evals"] == 2
    chosen = report["candidates"][report["best_index"]]
    assert chosen["status"] == "refined" and report["best_cv_error"] == chosen["exact_error"]
    for argv, message in [
        (["--method", "bif", "--refine", "on"], "--refine belong(s) to --method rff"),
        (["--method", "rff", "--refine-evals", "0"], "--refine-evals: must be at least 1"),
    ]:
        code = main(["select", str(path), "--machine", "svm", *argv, *grid,
                     "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_edge_note_blames_the_features_only_before_an_exact_check():
    from kernelcv.random_features.notes import edge_notes

    candidates = _grid_candidates(np.arange(9.0).reshape(3, 3))  # best: smallest gamma
    (note,) = edge_notes(candidates, 0, 30)
    assert "cannot resolve" in note and "D = 30" in note
    candidates[0].update(status="refined", exact_error=0.1)
    (note,) = edge_notes(candidates, 0, 30)
    assert "cannot resolve" not in note and "exact refit CV" in note
    assert edge_notes(candidates, 4, 30) == []  # the centre of the grid


@pytest.mark.parametrize("with_gram", [True, False])
def test_threaded_folds_give_the_same_refit_cv_and_bound(data, with_gram):
    X, y, folds = data
    gamma, lams = 0.2, [1e-3, 3e-2]
    K = GramFactory(X).gram(make_kernel("rbf", gamma)) if with_gram else None
    serial = svc_refit_cv(X, y, folds, gamma, lams, K)
    threaded = svc_refit_cv(X, y, folds, gamma, lams, K, n_jobs=2)
    assert threaded == [{**a, "seconds": b["seconds"]}
                        for a, b in zip(serial, threaded, strict=True)]
    # the early stop is checked after each chunk of 2 folds: all folds of a chunk count
    errors = np.asarray(serial[1]["fold_errors"])
    assert np.all(errors[:2] > 0)
    stopped = svc_refit_cv(X, y, folds, gamma, lams[1:], K, stop_above=errors[0] / 5 / 2,
                           n_jobs=2)[0]
    assert stopped["pruned"] and stopped["fold_errors"] == list(errors[:2])
    assert stopped["error_at_least"] == pytest.approx(errors[:2].sum() / 5)


def test_search_with_n_jobs_refines_the_same_way(data):
    X, y, folds = data
    options = dict(method=FeatureSpace(features=10, refine=True), folds=folds, gammas=GAMMAS,
                   Cs=CS)
    serial = grid_search(X, y, "svm", **options)
    threaded = grid_search(X, y, "svm", **options,
                           execution=Execution(n_jobs=2, backend="threading"))
    assert threaded.best_index == serial.best_index
    assert threaded.refined == serial.refined  # the walk does not depend on the chunks
    assert threaded.best["exact_error"] == serial.best["exact_error"]


def test_refit_threads_are_capped_at_the_folds_and_the_table_shows_bounds(data):
    from kernelcv.cli.select import _exact
    from kernelcv.random_features.refine import RefitEvaluator

    X, y, folds = data  # 200 samples, 5 folds
    budget = 200 * 200 * 8 * 7.5  # room for 7 n x n
    evaluator = RefitEvaluator(X, y, folds, make_machine("svm"), workers=16,
                               memory_budget=budget)
    assert evaluator.workers == 5  # 16 threads would never run: 5 folds
    assert evaluator.factory is not None  # 2 + 5 matrices fit the budget, 18 would not
    assert _exact({"exact_error": None, "exact_error_at_least": 0.25}) == ">=0.25"
    assert _exact({"exact_error": 0.125}) == _exact({"exact_error": 0.125,
                                                     "exact_error_at_least": None})
