"""The coarse-to-fine screen: a subset of the full grid, with the full grid's values."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification

from kernelcv import BIF, Execution, FeatureSpace, Safeguards, grid_search, make_machine
from kernelcv.exceptions import KernelCVError
from kernelcv.selection.records import majority_plateau
from kernelcv.selection.screening import (
    Screening,
    _coarse_start,
    coarse_to_fine,
    halving_start,
    halving_subsample,
)
from kernelcv.selection.screening import (
    walk as screen_walk,
)
from kernelcv.selection.space.gamma_range import degenerate_settings


def surface_evaluator(surface, calls):
    """``evaluate`` over a 2-D array of scores (rows: settings, columns: lam index)."""

    def evaluate(request):
        calls.append(request)
        return {i: [{"lam": lam, "score": float(surface[i, int(lam)])} for lam in lams]
                for i, lams in request.items()}

    return evaluate


def walk(surface, keep=3):
    lams = [[float(j) for j in range(surface.shape[1])]] * surface.shape[0]
    calls = []
    per_setting, rounds = coarse_to_fine(lams, surface_evaluator(surface, calls), keep)
    points = [(i, int(r["lam"])) for i, records in per_setting.items() for r in records]
    return points, rounds, calls


def test_walk_reaches_the_minimum_of_a_bowl_off_the_coarse_grid():
    i, j = np.meshgrid(np.arange(21), np.arange(15), indexing="ij")
    surface = (i - 13) ** 2 + 0.5 * (j - 7) ** 2  # minimum at (13, 7): odd setting index
    points, rounds, _ = walk(surface)
    best = min(points, key=lambda p: surface[p])
    assert best == (13, 7)
    assert len(points) < 0.5 * surface.size and rounds >= 1
    assert len(points) == len(set(points))  # nothing evaluated twice


def test_coarse_stage_keeps_the_last_setting_and_leaves_out_the_largest_lam():
    surface = np.zeros((5, 8))
    _, _, calls = walk(surface, keep=1)
    first = calls[0]
    assert sorted(first) == [0, 3, 4]  # every third setting, the last one kept
    # lam: the smaller end and the middle (0 and 7 of the default 15; 14 is left out)
    assert all(lams == [0.0, 4.0] for lams in first.values())
    _, _, calls = walk(np.zeros((2, 15)), keep=1)
    assert all(lams == [0.0, 7.0] for lams in calls[0].values())
    _, _, calls = walk(np.zeros((2, 3)), keep=1)
    assert all(lams == [0.0, 1.0] for lams in calls[0].values())
    _, _, calls = walk(np.zeros((2, 2)), keep=1)  # two values: both
    assert all(lams == [0.0, 1.0] for lams in calls[0].values())


def test_coarse_start_leaves_out_the_largest_lam_in_any_grid_order():
    descending = [[float(v) for v in range(14, -1, -1)]] * 4  # lam 14 first
    start = _coarse_start(descending)
    assert start == {(i, j) for i in (0, 3) for j in (7, 14)}  # lam 7 and lam 0
    assert all(descending[i][j] < 14.0 for i, j in start)


def test_coarse_start_leaves_out_the_given_settings_unless_none_would_be_left():
    lams = [[float(v) for v in range(15)]] * 21
    start = _coarse_start(lams, left_out=frozenset({0, 18, 19, 20}))
    assert {i for i, _ in start} == {3, 6, 9, 12, 15}  # 0, 18 and 20 of the coarse 8 out
    assert _coarse_start(lams[:2], left_out=frozenset({0, 1})) == _coarse_start(lams[:2])


def test_screened_search_starts_inside_the_data_range_and_chooses_as_before():
    """The papers' 21 gammas on standardised data: the identity and redundant constant
    kernels are not in the coarse start; the choice is the full grid's."""
    X, y = make_classification(n_samples=60, n_features=4, n_informative=3,
                               n_redundant=0, random_state=3)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    gammas = [2.0 ** (2 * k + 1) for k in range(-11, 10)]
    lams = [2.0**i / 60 for i in range(-3, 12)]
    grid = [{"kernel": "rbf", "gamma": g} for g in gammas]
    left_out = degenerate_settings(grid, X)
    assert {0, 20} <= left_out  # 2^-21 repeats 2^-17 at a larger lam; 2^19 is the identity
    screened = grid_search(X, y, "svm", gammas=gammas, lams=lams, screen="coarse")
    full = grid_search(X, y, "svm", gammas=gammas, lams=lams, screen="off")
    assert screened.best_params == full.best_params
    assert not any(c["setting"] in left_out for c in screened.candidates)


def test_walk_climbs_to_an_optimum_at_the_largest_lam():
    """The most regularised end is not in the start, but a walk that ranks it best gets
    there one lam step per round (the surface falls toward it from the start)."""
    i, j = np.meshgrid(np.arange(21), np.arange(15), indexing="ij")
    surface = (i - 10) ** 2 + 3.0 * (14 - j)  # minimum at (10, 14): the largest lam
    points, rounds, calls = walk(surface)
    assert min(points, key=lambda p: surface[p]) == (10, 14)
    assert all(14.0 not in lams for lams in calls[0].values())
    assert rounds >= 7  # from lam index 7 to 14


def test_records_come_back_in_lam_order_per_setting():
    rng = np.random.default_rng(0)
    surface = rng.random((9, 8))
    points, _, _ = walk(surface)
    by_setting = {}
    for i, j in points:
        by_setting.setdefault(i, []).append(j)
    assert all(js == sorted(js) for js in by_setting.values())


def test_every_kept_point_is_a_local_minimum_of_the_evaluated_grid():
    rng = np.random.default_rng(1)
    surface = rng.random((21, 15))
    points, _, _ = walk(surface, keep=3)
    evaluated = set(points)
    best = sorted(points, key=lambda p: (surface[p], p))[:3]
    for i, j in best:
        for a in (i - 1, i, i + 1):
            for b in (j - 1, j, j + 1):
                if 0 <= a < 21 and 0 <= b < 15:
                    assert (a, b) in evaluated


def test_plus_walk_ends_on_axis_local_minima_with_fewer_evaluations():
    """shape="plus" (the all-rows walk of "halving" before session 24) evaluates the four
    axis neighbours of the kept points: each ends a local minimum along both axes, the
    bowl's minimum is still found, with fewer evaluations than the 3 x 3 blocks."""
    i, j = np.meshgrid(np.arange(21), np.arange(15), indexing="ij")
    rng = np.random.default_rng(3)
    lams = [[float(k) for k in range(15)]] * 21
    start = {(10, 3), (4, 12)}
    bowl = (i - 13) ** 2 + 0.5 * (j - 7) ** 2
    for surface in (bowl, rng.random((21, 15))):
        counts = {}
        for shape in ("box", "plus"):
            calls = []
            per_setting, _ = screen_walk(lams, surface_evaluator(surface, calls), start,
                                         keep=3, shape=shape)
            points = {(a, int(r["lam"])) for a, records in per_setting.items()
                      for r in records}
            counts[shape] = len(points)
            for a, b in sorted(points, key=lambda p: (surface[p], p))[:3]:
                for c, d in ((a - 1, b), (a + 1, b), (a, b - 1), (a, b + 1)):
                    if 0 <= c < 21 and 0 <= d < 15:
                        assert (c, d) in points
            if surface is bowl:
                assert min(points, key=lambda p: surface[p]) == (13, 7)
        assert counts["plus"] < counts["box"]


def assert_subset_of_full_grid(full, screened):
    """Every screened value equals the full grid's at the same point, and the screened
    choice is a local minimum of the full surface (its 3 x 3 neighbourhood)."""
    full_scores = {(c["gamma"], c["lam"]): c["score"] for c in full.candidates}
    for c in screened.candidates:
        assert c["score"] == pytest.approx(full_scores[(c["gamma"], c["lam"])], abs=1e-12)
    best = screened.best
    assert full_scores[(best["gamma"], best["lam"])] <= min(
        score for (g, lam), score in full_scores.items()
        if abs(np.log2(g / best["gamma"])) <= 1 and abs(np.log2(lam / best["lam"])) <= 1)


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(150, 5, n_informative=3, random_state=2)
    return X, 2.0 * y - 1


@pytest.mark.parametrize("machine, method", [("svm", "bif"), ("krr", "closed-form"),
                                             ("l2svm", "exact")])
def test_screened_search_is_a_subset_of_the_full_grid_with_equal_values(binary, machine,
                                                                        method):
    X, y = binary
    gammas = [2.0 ** k for k in range(-8, 3)]
    lams = [2.0 ** k / 150 for k in range(-3, 9)]
    kwargs = dict(gammas=gammas, lams=lams, method=method, folds=5,
                  safeguards=Safeguards(confirm=0))
    full = grid_search(X, y, machine, **kwargs)
    screened = grid_search(X, y, machine, screen="coarse", **kwargs)
    assert len(screened.candidates) < len(full.candidates)
    assert any("screened (coarse)" in note for note in screened.notes)
    assert_subset_of_full_grid(full, screened)


def test_screen_refuses_checkpoints_rff_and_unknown_strategies(binary, tmp_path):
    X, y = binary
    with pytest.raises(KernelCVError, match="checkpoint"):
        grid_search(X, y, "svm", gammas=[0.1, 1.0], lams=[0.01, 0.1], screen="coarse",
                    execution=Execution(checkpoint=tmp_path / "c.jsonl"))
    with pytest.raises(KernelCVError, match="random-feature"):
        grid_search(X, y, "svm", method="rff", screen="coarse")
    with pytest.raises(KernelCVError, match="screen must be one of"):
        grid_search(X, y, "svm", screen="random")
    with pytest.raises(KernelCVError, match="keep"):
        Screening("coarse", keep=0)


def test_halving_subsample_is_a_quarter_or_third_stratified_by_fold_and_class():
    rng = np.random.default_rng(3)
    y = np.where(rng.random(900) < 0.3, 1.0, -1.0)
    fold_ids = rng.permutation(np.arange(900) % 10)
    rows = halving_subsample(y, fold_ids, 0, stratify=True, factor=3)
    assert abs(rows.size - 300) <= 20 and np.all(np.diff(rows) > 0)
    quarter = halving_subsample(y, fold_ids, 0, stratify=True)  # the default n/4
    assert abs(quarter.size - 225) <= 20
    # every fold of the subsample has the same size (the shared order-inf factorisation)
    assert len(set(np.bincount(fold_ids[rows]).tolist())) == 1
    for fold in range(10):
        in_fold = fold_ids[rows] == fold
        assert abs(in_fold.sum() - 30) <= 2
        share = np.mean(y[rows][in_fold] > 0)
        assert abs(share - np.mean(y[fold_ids == fold] > 0)) < 0.05
    assert halving_subsample(y[:300], fold_ids[:300] % 10, 0, stratify=True) is not None
    # 300 to 399 rows: n/4 leaves fewer than 10 rows per fold, an n/3 subsample is taken
    third = halving_subsample(y[:360], np.arange(360) % 10, 0, stratify=True)
    assert abs(third.size - 120) <= 12
    # 200 to 299 rows: n/3 leaves fewer than 10 rows per fold, an n/2 subsample is taken
    even = np.arange(240) % 10
    half = halving_subsample(y[:240], even, 0, stratify=True)
    assert abs(half.size - 120) <= 12
    assert np.all(np.bincount(even[half]) >= 10)
    uneven = np.arange(257) % 10  # folds of 26 and 25 rows
    sub = halving_subsample(y[:257], uneven, 0, stratify=True)
    assert len(set(np.bincount(uneven[sub]).tolist())) == 1
    assert halving_subsample(y[:190], fold_ids[:190] % 10, 0, stratify=True) is None


def test_halving_subsample_of_one_vs_one_needs_rows_in_the_smallest_pair():
    """One-vs-one: the two smallest classes must give 10 subsample rows per fold, else
    the search walks coarse to fine (and says why)."""
    y = np.repeat(np.arange(10), 90).astype(float)  # 900 rows, 10 classes
    fold_ids = np.tile(np.arange(10), 90)
    assert halving_subsample(y, fold_ids, 0, stratify=True) is not None  # one-vs-rest
    assert halving_subsample(y, fold_ids, 0, stratify=True, pairwise=True) is None
    big = np.repeat(np.arange(3), 300).astype(float)  # pairs of 600 rows: 20 per fold
    assert halving_subsample(big, fold_ids, 0, stratify=True, pairwise=True) is not None
    X, labels = make_classification(450, 5, n_informative=4, n_redundant=0, n_classes=5,
                                    n_clusters_per_class=1, random_state=2)
    result = grid_search(X, labels, make_machine("svm", multiclass="ovo"), screen="halving",
                         gammas=[0.1, 1.0], lams=[1e-3, 1e-2], folds=10, random_state=0)
    assert any("smallest one-vs-one problem" in note for note in result.notes)
    result = grid_search(X, labels, make_machine("svm", multiclass="ovr"), screen="halving",
                         gammas=[0.1, 1.0], lams=[1e-3, 1e-2], folds=10, random_state=0)
    assert any("subsample of" in note for note in result.notes)


def test_halving_walks_on_all_rows_from_the_subsample_ranking():
    X, y = make_classification(630, 6, n_informative=4, flip_y=0.05, random_state=5)
    y = 2.0 * y - 1
    gammas = [2.0 ** k for k in range(-9, 2)]
    lams = [2.0 ** k / 630 for k in range(-3, 9)]
    kwargs = dict(gammas=gammas, lams=lams, method="bif", folds=5,
                  safeguards=Safeguards(confirm=0))
    full = grid_search(X, y, "svm", **kwargs)
    halved = grid_search(X, y, "svm", screen="halving", **kwargs)
    assert len(halved.candidates) < 0.5 * len(full.candidates)
    assert any("subsample of" in note for note in halved.notes)
    # full-data values only: the subsample's are not candidates
    assert_subset_of_full_grid(full, halved)
    # the all-rows walk ends with its 3 best points local minima of the evaluated grid
    # along both axes, and the best one in its 3 x 3 block, diagonal neighbours included
    # (a ridge of SVMs along gamma C runs diagonally: with axis neighbours only, 3,000-row
    # make_classification chose CV 0.0797 where the full grid has 0.0743)
    at = {(gammas.index(c["gamma"]), lams.index(c["lam"])): c["score"]
          for c in halved.candidates}
    for rank, (i, j) in enumerate(sorted(at, key=lambda p: (at[p], p))[:3]):
        for a in (i - 1, i, i + 1):
            for b in (j - 1, j, j + 1):
                if (0 <= a < len(gammas) and 0 <= b < len(lams)
                        and (rank == 0 or a == i or b == j)):
                    assert (a, b) in at


def test_halving_falls_back_to_coarse_on_small_data(binary):
    X, y = binary
    result = grid_search(X, y, "svm", gammas=[0.1, 1.0, 10.0], lams=[0.01, 0.1, 1.0],
                         screen="halving", folds=10, safeguards=Safeguards(confirm=0))
    assert any("coarse to fine instead" in note for note in result.notes)


def test_select_resolves_auto_screening_by_size_method_and_checkpoint():
    from kernelcv.reports.select import HALVING_AUTO_FROM, resolve_screen

    assert resolve_screen("auto", HALVING_AUTO_FROM, BIF(), None) == "halving"
    assert resolve_screen("auto", HALVING_AUTO_FROM - 1, BIF(), None) == "coarse"
    assert resolve_screen("auto", 10**6, FeatureSpace(), None) == "off"
    assert resolve_screen("auto", 500, BIF(), "search.ckpt") == "off"
    assert resolve_screen("coarse", 10**6, BIF(), None) == "coarse"


# --- majority-class plateaus ------------------------------------------------------------


def plateau_evaluator(score, plateau, calls):
    """``evaluate`` over score and plateau-loss arrays (NaN plateau: predicts both classes)."""

    def evaluate(request):
        calls.append(request)
        return {i: [{"lam": lam, "score": float(score[i, int(lam)]),
                     "plateau_loss": (None if np.isnan(plateau[i, int(lam)])
                                      else float(plateau[i, int(lam)]))}
                     for lam in lams] for i, lams in request.items()}

    return evaluate


def test_majority_plateau_is_the_hinge_loss_of_one_sided_predictions_only():
    y = np.array([1.0, -1.0, -1.0, 1.0, -1.0])
    one_sided = np.array([-0.2, -1.3, -0.9, -0.5, -1.0])
    expected = np.mean([1.2, 0.0, 0.1, 1.5, 0.0])
    assert majority_plateau(y, one_sided) == pytest.approx(expected, rel=1e-14)
    assert majority_plateau(y, -one_sided) == pytest.approx(
        np.mean(np.maximum(0.0, 1.0 + y * one_sided)), rel=1e-14)
    assert majority_plateau(y, np.array([0.3, -1.3, -0.9, -0.5, -1.0])) is None
    # class codes of a multiclass scheme, and regression targets: no plateau loss
    assert majority_plateau(np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.0, 0.0])) is None
    assert majority_plateau(np.array([0.5, 1.5]), np.array([-1.0, -2.0])) is None


def test_walk_ranks_one_class_points_last_and_finds_the_basin_behind_them():
    # german.numer, split 1: on the 170-row subsample 39 of 41 coarse points predict the
    # majority class and tie at its rate; the two that do not are worse but lie next to
    # the basin. With the grid order as the only tie-break the walk stayed on the plateau.
    score = np.full((21, 15), 0.30)
    plateau = np.full((21, 15), 0.60)
    basin = (8, 1)
    for i in range(7, 11):
        for j in range(0, 3):
            score[i, j], plateau[i, j] = 0.32, np.nan
    score[basin] = 0.24
    calls = []
    lams = [[float(j) for j in range(15)]] * 21
    per_setting, _ = coarse_to_fine(lams, plateau_evaluator(score, plateau, calls), 3)
    points = [(i, int(r["lam"])) for i, records in per_setting.items() for r in records]
    assert basin in points
    assert min(points, key=lambda p: (score[p], p)) == basin


def test_halving_start_gives_up_on_a_subsample_that_predicts_one_class_everywhere():
    lams = [[float(j) for j in range(6)]] * 7
    calls = []
    flat = np.full((7, 6), 0.05)
    assert halving_start(lams, plateau_evaluator(flat, np.full((7, 6), 0.1), calls)) is None
    assert len(calls) == 1  # the coarse start only: refining it would be blind
    mixed = np.full((7, 6), 0.1)
    mixed[3, 2] = np.nan
    start = halving_start(lams, plateau_evaluator(flat, mixed, []))
    assert start is not None and (3, 2) in start


@pytest.mark.parametrize("seed, smallest, note", [
    (1, -3, "on subsamples of 150 rows every point predicted one class only"),
    (0, 1, "on subsamples of 150 and 300 rows every point predicted one class only; walked "
           "coarse to fine on all rows instead")])
def test_halving_retries_a_larger_subsample_then_all_rows_when_one_class_wins(seed, smallest,
                                                                              note):
    # 4 % positives and labels independent of X: the subsamples' folds see a few positives
    # at most, so every evaluated point may predict the negative class.
    rng = np.random.default_rng(seed)
    n = 600
    X = rng.normal(size=(n, 5))
    y = np.where(rng.random(n) < 0.04, 1.0, -1.0)
    kwargs = dict(gammas=[2.0 ** k for k in range(-9, 4, 2)],
                  lams=[2.0 ** k / n for k in range(smallest, 12, 2)], folds=10,
                  random_state=seed, safeguards=Safeguards(confirm=0))
    halved = grid_search(X, y, "svm", screen="halving", **kwargs)
    assert any(note in text for text in halved.notes)
    assert_subset_of_full_grid(grid_search(X, y, "svm", **kwargs), halved)


def test_halving_leaves_the_majority_class_for_the_full_grids_best():
    # Imbalanced data whose n/3 subsample predicts the majority class nearly everywhere:
    # before plateaus ranked last the walk settled there (exact CV error 0.151, the
    # positives' rate); the full grid's choice is 0.124.
    X, y = make_classification(450, 8, n_informative=3, weights=[0.85], flip_y=0.02,
                               class_sep=0.6, random_state=1)
    y = 2.0 * y - 1
    X = (X - X.mean(0)) / X.std(0)
    kwargs = dict(gammas=[2.0 ** k for k in range(-9, 6, 2)],
                  lams=[2.0 ** k / 450 for k in range(-3, 12)], folds=10, random_state=1)
    full = grid_search(X, y, "svm", **kwargs)
    halved = grid_search(X, y, "svm", screen="halving", **kwargs)
    chosen = halved.candidates[halved.best_index]["exact_error"]
    assert chosen < np.mean(y > 0) - 0.02
    assert chosen == pytest.approx(full.candidates[full.best_index]["exact_error"], abs=1e-12)


def test_a_screened_search_s_progress_ends_complete():
    # issue 40: the bar ended at 19/195 (the walk's done against the whole grid)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    calls = []
    grid_search(X, y, "l2svm", gammas=[2.0**k for k in range(-6, 3)],
                lams=[2.0**i / 60 for i in range(-3, 12)], folds=4, screen="coarse",
                execution=Execution(
                    progress=lambda stage, done, total: calls.append((stage, done, total))))
    screen = [call for call in calls if call[0] == "screen"]
    assert screen and screen[-1][1] == screen[-1][2] < 9 * 15


def test_a_search_strategy_of_ones_own_plugs_into_run_search(binary):
    """Issue 39: a strategy is an object with one small protocol (name, enabled,
    evaluate); run_search takes it as it takes the built-in ones."""
    from kernelcv.selection import SearchSpace, run_search
    from kernelcv.selection.methods import ExactRefit
    from kernelcv.selection.screening import (
        CoarseWalk,
        FullGrid,
        HalvingWalk,
        Screening,
        SearchStrategy,
        plan,
    )

    class FirstSetting(SearchStrategy):
        name = "first-setting"

        def evaluate(self, grid):
            records = grid.runner()({0: grid.setting_lams[0]})
            return records, 0, ["the first kernel setting only"]

    X, y = binary
    gammas, lams = [0.1, 1.0, 10.0], [1e-3, 1e-2, 1e-1]
    space = SearchSpace.grid("rbf", gammas, lams=lams)
    mine = run_search(X, y, make_machine("l2svm"), ExactRefit(), space, folds=5,
                      screening=FirstSetting())
    full = grid_search(X, y, "l2svm", gammas=gammas, lams=lams, method="exact", folds=5)
    assert [c["gamma"] for c in mine.candidates] == [0.1] * 3
    assert [c["cv_error"] for c in mine.candidates] == \
        [c["cv_error"] for c in full.candidates if c["gamma"] == 0.1]
    assert "the first kernel setting only" in mine.notes
    assert any(note.startswith("screened (first-setting): 3 of 9") for note in mine.notes)
    with pytest.raises(KernelCVError, match="checkpoint"):
        run_search(X, y, make_machine("l2svm"), ExactRefit(), space, folds=5,
                   screening=FirstSetting(), execution=Execution(checkpoint="x.jsonl"))
    assert plan(Screening("coarse", keep=2)) == CoarseWalk(keep=2)
    assert plan(Screening("halving")) == HalvingWalk(keep=3)
    assert isinstance(plan(Screening()), FullGrid) and not plan(Screening()).enabled


def test_the_method_owns_the_step_after_the_grid(binary):
    """Issue 39: what follows the grid is the method's hook (refine_choice), not a flag
    the driver reads."""
    from dataclasses import dataclass

    from kernelcv.selection import SearchSpace, run_search
    from kernelcv.selection.methods import ExactRefit

    @dataclass(frozen=True)
    class LastIsBest(ExactRefit):
        def refine_choice(self, candidates, best_index, run):
            last = len(candidates) - 1
            return last, [last], [f"moved from {best_index} to {last}"]

    X, y = binary
    space = SearchSpace.grid("rbf", [0.1, 1.0], lams=[1e-2, 1e-1])
    plain = run_search(X, y, make_machine("l2svm"), ExactRefit(), space, folds=5)
    moved = run_search(X, y, make_machine("l2svm"), LastIsBest(), space, folds=5)
    assert moved.best_index == 3 and moved.refined == [3]
    assert f"moved from {plain.best_index} to 3" in moved.notes


def _walked_records(surface, keep=3):
    from kernelcv.selection.screening import _coarse_start, _walk

    lams = [[float(j) for j in range(surface.shape[1])]] * surface.shape[0]
    calls = []
    evaluate = surface_evaluator(surface, calls)
    records, _ = _walk(lams, evaluate, _coarse_start(lams), keep, 50)
    return lams, evaluate, records


def test_spot_check_finds_a_basin_the_walk_missed_and_walks_on_from_it():
    from kernelcv.selection.screening import spot_check

    i, j = np.meshgrid(np.arange(21), np.arange(15), indexing="ij")
    surface = 1.0 + 0.01 * ((i - 3) ** 2 + (j - 7) ** 2)  # a bowl the walk settles in
    basin = (abs(i - 17) <= 2) & (abs(j - 11) <= 2)  # a better 5 x 5 basin, far from it
    surface[basin] = 0.5 + 0.05 * ((i - 17) ** 2 + (j - 11) ** 2)[basin]
    for seed in range(4):
        lams, evaluate, records = _walked_records(surface)
        assert min(surface[p] for p in records) > 0.5  # the walk alone missed it
        rounds, notes = spot_check(records, lams, evaluate, 20, seed=seed)
        # 20 draws of ~270 hit the basin's 25 points; the walk goes on to its bottom
        assert rounds >= 1 and min(records, key=lambda p: surface[p]) == (17, 11)
        assert len(notes) == 1 and notes[0].startswith("screen check warning")


def test_spot_check_says_what_was_left_out_when_nothing_better_turns_up():
    from kernelcv.selection.screening import spot_check

    i, j = np.meshgrid(np.arange(21), np.arange(15), indexing="ij")
    surface = (i - 13) ** 2 + 0.5 * (j - 7) ** 2
    lams, evaluate, records = _walked_records(surface)
    before = len(records)
    rounds, notes = spot_check(records, lams, evaluate, 6, seed=3)
    assert rounds == 0 and len(records) == before + 6
    assert f"{surface.size - before} of {surface.size} candidates were not evaluated" in notes[0]
    assert "probability 82%" in notes[0]
    # the same seed draws the same points; none when asked for none
    again = _walked_records(surface)[2]
    spot_check(again, lams, evaluate, 6, seed=3)
    assert set(again) == set(records)
    assert spot_check(_walked_records(surface)[2], lams, evaluate, 0, seed=3) == (0, [])


def test_a_screened_search_reports_its_spot_check(binary):
    X, y = binary
    screened = grid_search(X, y, "l2svm", gammas=[2.0**k for k in range(-6, 3)],
                           lams=[2.0**k / len(y) for k in range(-3, 9)], folds=5,
                           screen=Screening("coarse"))
    assert any(note.startswith("screen check") for note in screened.notes)
    quiet = grid_search(X, y, "l2svm", gammas=[2.0**k for k in range(-6, 3)],
                        lams=[2.0**k / len(y) for k in range(-3, 9)], folds=5,
                        screen=Screening("coarse", spot_checks=0))
    assert not any(note.startswith("screen check") for note in quiet.notes)
    assert len(quiet.candidates) < len(screened.candidates)
    with pytest.raises(KernelCVError, match="spot_checks must be an integer >= 0"):
        Screening("coarse", spot_checks=-1)


class _SurfaceGrid:
    """A stand-in for :class:`~kernelcv.selection.screening.GridTasks` whose runner scores
    grid points from a 2-D surface per stage (``"subsample"`` or all rows), recording
    which points each stage evaluated."""

    def __init__(self, sub_surface, full_surface, n=400, spread=0.0):
        from types import SimpleNamespace

        self.spread = spread  # fold values score + spread * (-2, -1, 0, 1, 2)

        from kernelcv.selection.screening import GridTasks

        self.surfaces = {"subsample": sub_surface, "screen": full_surface}
        self.seen = {"subsample": [], "screen": []}
        rows, cols = full_surface.shape
        y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
        method = SimpleNamespace(prepare=lambda X, budget, parallel: None,
                                 for_subsample=lambda: "subsample's method")
        shared = {"y": y, "fold_ids": np.arange(n) % 5, "memory_budget": None,
                  "machine": SimpleNamespace(take=lambda rows: None), "method": method}
        self.tasks = GridTasks([{"kernel": "linear"}] * rows,
                               [[float(j) for j in range(cols)]] * rows, shared,
                               SimpleNamespace(parallel=None),
                               subsample=(np.zeros((n, 1)), method, True, 0, False))
        self.tasks.runner = self.runner

    def runner(self, context=None, stage="screen", scale=1.0):
        surface, seen = self.surfaces[stage], self.seen[stage]

        def evaluate(request):
            seen.extend((i, int(lam)) for i, lams in request.items() for lam in lams)
            return {i: [{"lam": lam, "score": float(surface[i, int(lam)]),
                         "fold_errors": list(float(surface[i, int(lam)])
                                             + self.spread * np.arange(-2.0, 3.0))}
                        for lam in lams] for i, lams in request.items()}
        return evaluate


def test_halving_runs_its_spot_check_on_the_subsample_and_walks_to_a_missed_basin():
    from kernelcv.selection.screening import HalvingWalk

    i, j = np.meshgrid(np.arange(21), np.arange(15), indexing="ij")
    surface = 1.0 + 0.01 * ((i - 3) ** 2 + (j - 7) ** 2)
    basin = (abs(i - 17) <= 2) & (abs(j - 11) <= 2)
    surface[basin] = 0.5 + 0.05 * ((i - 17) ** 2 + (j - 11) ** 2)[basin]
    grid = _SurfaceGrid(surface, surface)
    per_setting, _, notes = HalvingWalk(spot_checks=20).evaluate(grid.tasks)
    full = [(i, int(r["lam"])) for i, records in per_setting.items() for r in records]
    assert min(full, key=lambda p: surface[p]) == (17, 11)  # found through the subsample
    assert sorted(full) == sorted(set(grid.seen["screen"]))  # all-rows points: the walk's
    assert any(n.startswith("screen check warning on the 100-row subsample") for n in notes), notes
    # without the check the walk stays in the first bowl
    quiet = _SurfaceGrid(surface, surface)
    per_setting, _, notes = HalvingWalk(spot_checks=0).evaluate(quiet.tasks)
    assert min(surface[i, int(r["lam"])] for i, records in per_setting.items()
               for r in records) > 0.5
    assert not any(n.startswith("screen check") for n in notes)


def test_halving_spot_check_costs_subsample_points_only():
    from kernelcv.selection.screening import HalvingWalk

    i, j = np.meshgrid(np.arange(21), np.arange(15), indexing="ij")
    bowl = (i - 13) ** 2 + 0.5 * (j - 7) ** 2
    checked, quiet = _SurfaceGrid(bowl, bowl), _SurfaceGrid(bowl, bowl)
    _, _, notes = HalvingWalk(spot_checks=4).evaluate(checked.tasks)
    HalvingWalk(spot_checks=0).evaluate(quiet.tasks)
    assert len(checked.seen["subsample"]) == len(quiet.seen["subsample"]) + 4
    assert checked.seen["screen"] == quiet.seen["screen"]
    assert any(n.startswith("screen check on the 100-row subsample: ") for n in notes), notes


def test_plus_best_box_walk_follows_a_diagonal_ridge_the_axis_walk_stops_on():
    """FULL_WALK_SHAPE (session 29): axis neighbours for the kept points, the 3 x 3 block
    for the best one. On a valley along the diagonal (SVMs of equal quality along gamma C)
    the axis walk stops part way; this one reaches the bottom, with fewer evaluations
    than the blocks on a bowl."""
    from kernelcv.selection.screening import FULL_WALK_SHAPE

    assert FULL_WALK_SHAPE == "plus_best_box"
    i, j = np.meshgrid(np.arange(21), np.arange(15), indexing="ij")
    lams = [[float(k) for k in range(15)]] * 21
    # a narrow valley along i = j, falling toward (12, 12); off it the surface rises fast
    valley = 10.0 * np.abs(i - j) + 0.1 * (i - 12) ** 2
    start = {(3, 3)}
    found, counts = {}, {}
    for shape in ("plus", "plus_best_box", "box"):
        per_setting, _ = screen_walk(lams, surface_evaluator(valley, []), start, keep=3,
                                     shape=shape)
        points = {(a, int(r["lam"])) for a, records in per_setting.items() for r in records}
        found[shape] = min(points, key=lambda p: valley[p])
        if shape == "plus_best_box":  # the best point is a minimum of its 3 x 3 block
            a, b = found[shape]
            assert all((c, d) in points for c in (a - 1, a, a + 1) for d in (b - 1, b, b + 1)
                       if 0 <= c < 21 and 0 <= d < 15)
    assert found["plus"] != (12, 12)  # the axis walk stopped on the ridge
    assert found["plus_best_box"] == found["box"] == (12, 12)
    bowl = (i - 13) ** 2 + 0.5 * (j - 7) ** 2
    for shape in ("plus_best_box", "box"):
        per_setting, _ = screen_walk(lams, surface_evaluator(bowl, []), {(10, 3), (4, 12)},
                                     keep=3, shape=shape)
        counts[shape] = sum(len(records) for records in per_setting.values())
    assert counts["plus_best_box"] < counts["box"]


def test_challengers_are_other_local_minima_within_one_standard_error():
    from kernelcv.selection.screening import challengers, standard_error

    def record(score, spread=0.01):
        return {"score": score, "fold_errors": list(score + spread * np.arange(-2.0, 3.0))}

    records = {(1, 4): record(0.080), (1, 5): record(0.083), (0, 7): record(0.084),
               (0, 6): record(0.090), (3, 1): record(0.086), (3, 2): record(0.091),
               (6, 6): record(0.087), (6, 5): record(0.0865), (5, 0): record(0.200)}
    se = standard_error(records[(1, 4)])
    assert se == pytest.approx(0.01 * np.sqrt(2.5) / np.sqrt(5))
    kept = [(1, 4), (1, 5)]
    # (0, 7) and (3, 1) are local minima outside the kept blocks within 0.080 + se;
    # (6, 6) is beaten by its neighbour (6, 5), which is 0.0865 <= 0.0871: taken instead
    assert challengers(records, kept) == [(0, 7), (3, 1), (6, 5)]
    assert challengers(records, kept, limit=1) == [(0, 7)]
    # with tight folds nothing is within reach of the best
    tight = {p: record(r["score"], spread=0.0001) for p, r in records.items()}
    assert challengers(tight, kept) == []
    # a point beside a kept one belongs to its basin
    assert (0, 5) not in challengers({**records, (0, 5): record(0.0805)}, kept)
    # a plateau point (one class predicted) is never a challenger
    plateau = {**records, (0, 7): {**record(0.084), "plateau_loss": 1.0}}
    assert (0, 7) not in challengers(plateau, kept)


def test_halving_evaluates_a_small_grid_whole_on_the_subsample_and_starts_other_basins():
    """Session 30: an 8 x 8 grid is evaluated whole on the subsample (the coarse start sees
    C indices 4 and 7 only), and a second basin within a standard error of the best is
    started on all rows too, where it is the better one."""
    from kernelcv.selection.screening import HalvingWalk

    i, j = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    first = 0.080 + 0.004 * ((i - 1) ** 2 + (j - 5) ** 2)
    second = 0.085 + 0.004 * ((i - 4) ** 2 + (j - 1) ** 2)
    sub = np.minimum(first, second)
    full = np.minimum(first, second - 0.015)  # on all rows the second basin wins
    grid = _SurfaceGrid(sub, full, spread=0.01)
    per_setting, _, notes = HalvingWalk(spot_checks=0).evaluate(grid.tasks)
    assert len(set(grid.seen["subsample"])) == 64
    evaluated = {(a, int(r["lam"])) for a, records in per_setting.items() for r in records}
    assert min(evaluated, key=lambda p: full[p]) == (4, 1)
    assert any("evaluated whole on a subsample" in n and "1 other local minimum" in n
               for n in notes), notes
    # with folds that agree closely the subsample ranks the basins apart: no challenger,
    # and the walk stays in the first basin
    tight = _SurfaceGrid(sub, full, spread=0.0001)
    per_setting, _, _ = HalvingWalk(spot_checks=0).evaluate(tight.tasks)
    evaluated = {(a, int(r["lam"])) for a, records in per_setting.items() for r in records}
    assert (4, 1) not in evaluated


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), density=st.floats(0.2, 1.0),
       spread=st.floats(0.0, 0.05), limit=st.integers(0, 4))
def test_challengers_invariants_on_random_surfaces(seed, density, spread, limit):
    """On random partly evaluated surfaces every challenger is within one standard error
    of the best, a local minimum of the evaluated points of its 3 x 3 block, outside the
    kept points' blocks and the earlier challengers', predicts both classes, and there
    are at most ``limit``; a skipped qualifying point would have been blocked by one."""
    from kernelcv.selection.screening import _rank_key, challengers, standard_error

    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(2, 9), rng.integers(2, 9)
    records = {}
    for i in range(rows):
        for j in range(cols):
            if rng.random() < density:
                score = float(rng.uniform(0.05, 0.2))
                records[(i, j)] = {"score": score,
                                   "fold_errors": list(score + spread * rng.normal(size=5)),
                                   "plateau_loss": 1.0 if rng.random() < 0.1 else None}
    if not records:
        return
    ranked = sorted(records, key=lambda p: _rank_key(records, p))
    kept = ranked[:3]
    found = challengers(records, kept, limit=limit)
    threshold = records[kept[0]]["score"] + standard_error(records[kept[0]])
    assert len(found) <= limit
    blocked = {(i + a, j + b) for i, j in kept for a in (-1, 0, 1) for b in (-1, 0, 1)}
    for point in found:
        assert point not in kept and point not in blocked
        assert records[point]["score"] <= threshold
        assert records[point].get("plateau_loss") is None
        i, j = point
        assert all(_rank_key(records, point) <= _rank_key(records, (i + a, j + b))
                   for a in (-1, 0, 1) for b in (-1, 0, 1) if (i + a, j + b) in records)
        blocked |= {(i + a, j + b) for a in (-1, 0, 1) for b in (-1, 0, 1)}
    if len(found) < limit:  # nothing that qualifies was left out
        for point in records:
            i, j = point
            qualifies = (point not in blocked and records[point]["score"] <= threshold
                         and records[point].get("plateau_loss") is None
                         and all(_rank_key(records, point) <= _rank_key(records, (i + a, j + b))
                                 for a in (-1, 0, 1) for b in (-1, 0, 1)
                                 if (i + a, j + b) in records))
            assert not qualifies, point
