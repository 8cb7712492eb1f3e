"""Screening: spend CV work only where the optimum of the (kernel, lam) grid can be.

Strategy ``"coarse"`` (coarse to fine):

1. evaluate the coarse sub-grid: every third kernel setting (the last kept) at two lam
   values, the least regularised end and the middle (8 x 2 of the default 21 x 15 grid,
   5 % of it), less the rbf / laplace settings whose Gram matrix on the data is
   numerically the identity or near-constant
   (:func:`~kernelcv.selection.space.gamma_range.degenerate_settings`; the papers' grid on
   scaled data: glass, iris, wine 2-4 of the 8);
2. take the ``keep`` best evaluated points and evaluate every unevaluated grid point next
   to them (the 3 x 3 block around each);
3. repeat step 2 until the ``keep`` best points have no unevaluated neighbour, i.e. each
   is a local minimum of the evaluated surface on the full grid.

Strategy ``"halving"`` (for n of a few thousand, where every full-data fit is costly):

1. walk the grid coarse to fine (as ``"coarse"``) on a stratified subsample of about
   n/4 rows (n/3 or n/2 when n/4 would leave fewer than 10 rows per fold; the same folds
   restricted to it, of equal size) with lam scaled by n/m, so that
   ``C = 1/(2 n lam)`` is the same as on the full data (as HalvingGridSearchCV keeps C);
   its factorisations cost about 1/64 of a full-data fit's; a grid whose whole costs at
   most :data:`SUBSAMPLE_WHOLE_GRID_COST` all-rows candidates there is evaluated whole
   instead (a user's 8 x 8 grid on an n/4 subsample);
2. evaluate the ``keep`` best subsample points and their axis neighbours
   (:data:`FULL_WALK_SHAPE`) on the full data, with those of up to :data:`MAX_CHALLENGERS`
   other local minima of the subsample within one standard error of its best
   (:func:`challengers`: basins the subsample cannot rank apart), then walk as in step 3
   of ``"coarse"`` with axis neighbours, ending with the best point a minimum of its
   3 x 3 block.
   Only full-data evaluations are candidates; the subsample only chooses where to start.
   A subsample on which every point predicts one class (imbalanced data: the minority
   is too rare per fold) shows nothing: the walk is redone on an n/2 subsample, then
   coarse to fine on all rows.

After the coarse-to-fine walk, a **spot check** evaluates :data:`SPOT_CHECKS` grid
points drawn at random from those the walk left out (degenerate settings aside, seeded by
the search's ``random_state``): a point that ranks above the walk's best means the coarse
start missed a basin, so the walk goes on from it and a note warns; otherwise the note
says what was not evaluated and how likely a better region would have been hit
(:func:`spot_check`). With ``"halving"`` the coarse start is made on the subsample, so the
check runs there, before the subsample's best points are taken to all rows (session 29:
at a tenth of the cost; on all rows it was a third of a 5,000-row search's time).

Both walks rank a point whose held-out values all have one sign (``plateau_loss`` in its
record) after every point that predicts both classes, so that ties at the majority
class's rate never decide where a walk goes (:func:`_rank_key`).

Each round's points are grouped by kernel setting, so a setting's Gram matrix is built
once per round and its lam values are still walked in descending order with warm starts.
The evaluated candidates are a subset of the full grid with the same records, so a point
evaluated by both the screen and the full grid has the same value. What the screen can
miss is an isolated minimum more than one grid step away from every good coarse point;
the benchmark (``make bench-select``) measures whether that costs test error.

Cost: about 10-15 % of the full grid's candidates on the papers' grid (``"coarse"``; heart
36, ionosphere 32 of 315, mean of the benchmark's 5 splits); 4-7 % on all rows plus a
coarse walk on the subsample (about 70 points before session 19 left 8 out of its start;
``"halving"``; australian 23, a1a 17 of 315 on all rows).

:func:`evaluate_grid` runs what the strategy chooses through the search's task runner
(every candidate, resumable from a checkpoint, when screening is off). The strategies
are plug-in objects (:class:`SearchStrategy`: ``name``, ``enabled``,
``evaluate(grid)``): :class:`FullGrid`, :class:`CoarseWalk`, :class:`HalvingWalk`;
:class:`Screening` names them for the front doors.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..exceptions import KernelCVError
from .backends import run_tasks
from .space.gamma_range import degenerate_settings
from .tasks import evaluate_task
from .warm_starts import WarmStarts

STRATEGIES = ("off", "coarse", "halving")
# "halving" needs this many subsample rows per fold; below it "coarse" is used.
HALVING_MIN_ROWS_PER_FOLD = 10
# The subsample is n / HALVING_FACTOR rows. 4 instead of 3 (session 16): the same choices
# on all 45 (set, split) pairs of the 2,000-row a9a, w8a, ijcnn1 subsamples and the
# halving-screened small sets (5 splits each), median CPU per search (idle, best of 2)
# a9a 2.81 -> 2.20 s, w8a 4.99 -> 3.58 s, ijcnn1 2.70 -> 2.47 s, a1a 0.71 -> 0.62 s (the
# subsample walk costs ~40 % less; the all-rows walk sometimes needs a round more: ijcnn1
# split 0 2.91 -> 4.04 s, and at 5,000 rows ijcnn1 and a9a +11-12 %, w8a -36 %, see
# docs/results.md "Session 16"). 5 was slower on w8a: its
# 400-row subsample holds ~12 positives and predicts one class, so the n/2 retry ran.
HALVING_FACTOR = 4
# The smallest subsample factor tried when n/HALVING_FACTOR rows are too few.
HALVING_MIN_FACTOR = 2
# The coarse start's stride along each grid axis. Stride 3 instead of 2 starts from 48
# instead of 88 of the default 21 x 15 points; on the benchmark's 14 binary sets (svm and
# l2svm, subsample walks) the walk then settles on the same best points with a third
# fewer evaluations (see docs/model-selection.md, "Screening").
COARSE_STEP = 3
# Lam values of the coarse start per kernel setting: COARSE_LAM_POINTS spread evenly (the
# two ends and the middle: 0, 7 and 14 of the default 15), less the most regularised end
# (:func:`_coarse_lams`). The CV surface changes slowly along lam, and the walk's 3 x 3
# blocks refine it from there: replayed on the 21 stored subsample surfaces of the
# benchmark (binary svm and l2svm, one-vs-rest multiclass), every third lam (6 of 15)
# and these 3 end on the same three best points on 19 of them, and on the 9 binary sets
# with full-data grids the all-rows walk that follows ends on the same three; the walk
# evaluates a third fewer points (1,440 -> 958 over the 21 surfaces).
COARSE_LAM_POINTS = 3
# Session 19: the coarse start leaves out the most regularised lam (the default grid's
# lam = 2^11 / n, C = 2^-12), where a classifier with an intercept predicts one class at
# every kernel: ranked last, those points never steered a walk, yet a sixth to a fifth of
# a multiclass search's time went into them (glass: the cold first fit of each setting with
# the majority class on its margin). Replayed (same arguments, 5 splits each): the same
# choice on all 27 multiclass (set, split) pairs with one-vs-one and 25 with
# one-vs-rest, all 60 binary svm and 40 l2svm pairs of the benchmark, and krr and svr on
# 3 splits of housing, bodyfat, pyrim and triazines (24 pairs, default grids); 8 fewer
# all-rows candidates per coarse walk (glass 50 -> 42, heart 50 -> 42 on average).
# The walk still reaches that end, one lam step per round, when the ranking leads there.
LEAVE_OUT_MOST_REGULARISED = True
# The neighbourhoods of the all-rows walk of "halving": the 3 x 3 block of each point.
# Session 20 took the four axis neighbours (a fifth to a third fewer all-rows evaluations
# on the benchmark's binary sets, simulated); but SVMs of similar quality lie on a ridge
# along gamma C (as gamma -> 0 with gamma C fixed the SVM tends to a linear one) that runs
# diagonally through the grid, and the axis walk stopped on it: 3,000-row
# make_classification (20 features, 8 informative, 5 % flipped; 8 x 8 grid, 5 folds)
# chose CV errors 0.0663 and 0.0797 where the full grid has 0.0637 and 0.0743 (seeds 1,
# 2); with the blocks it finds those (seed 0: 0.0757 against 0.0733, within a standard
# error, either way). Measured on the 8 small sets and the 2,000-row a9a, w8a and ijcnn1
# (2 splits each, svm): the same test errors, times within the run-to-run spread (a9a
# 6.75 / 7.26 s, w8a 12.0 / 11.6 s, ijcnn1 9.59 / 9.58 s, box / axis); on the
# make_classification seeds 12.6 / 12.1, 19.7 / 17.5, 19.5 / 14.1 s (the whole grid:
# 76-80 s). Session 29: the axis neighbours of the kept points and the 3 x 3 block of the
# best one only ("plus_best_box": the walk cannot stop on the ridge beside the best point,
# whose diagonal neighbours it evaluates last). Replayed on the 10 small sets, the 2,000-
# and 5,000-row a9a, w8a, ijcnn1 subsamples (29 runs): every choice the same as the box
# walk's, 14-28 % fewer all-rows candidates (5,000 rows: 16-18 -> 13; 110.6 against
# 131.8 s); 2,250-row make_classification splits 0-2 (8 x 8, 5 folds): the box walk's
# choices (split 2 misses the whole grid's best with either shape, see docs/results.md).
FULL_WALK_SHAPE = "plus_best_box"


# Session 30: the grid is evaluated whole on the halving subsample where that costs at
# most this many all-rows candidates, counted at O(n^2) per candidate (grid size times
# (m/n)^2): the 8 x 8 grid on an n/4 subsample (4), not on an n/2 one (16; digits with 10
# folds, whose smallest one-vs-one pair needs it: 17.5 -> 23.0 s). The coarse start has
# blind spots on a short lam axis: on the 8 x 8 grid it starts at C = 64 and 4096 only,
# and the 560-row subsample of the 2,250-row make_classification, split 2, never saw
# C <= 4, where the whole grid's best lies.
SUBSAMPLE_WHOLE_GRID_COST = 8.0
# Session 30: besides its `keep` best points, the all-rows walk of "halving" starts from
# up to this many other basins of the subsample's surface: local minima of its evaluated
# points within one standard error (of the best point's fold values) of the best, outside
# the kept points' 3 x 3 blocks. The subsample cannot rank such points apart; split 2 of
# the case above ranks C = 1 at gamma = 2^-6 level with the second best (0.0857 against
# 0.0839, standard error 0.014), and the whole grid's best is its neighbour on all rows.
MAX_CHALLENGERS = 3


# Random points of the unevaluated grid a walk evaluates afterwards (its safety check):
# with 4, a better region covering a quarter of what the walk left out is hit with
# probability 1 - 0.75^4 = 68 %. Session 28, svm, default grid, 10 folds, one thread
# (heart, breast-cancer, australian, a1a, a 2,000-row a9a subsample): 6 points cost
# +5 %, +31 %, -6 % (noise), +26 %, +33 % of the search's time, no basin was missed and
# every choice was unchanged; 4 keeps the check at about two thirds of that cost.
SPOT_CHECKS = 4


#: Why a search that must see the whole grid refuses screening.
SCREENING_REFUSED = ("screening evaluates part of the grid: it combines neither with a "
                     "checkpoint nor with the random-feature method; use screen='off' there")


@dataclass(frozen=True)
class Screening:
    """Which candidates a search evaluates: all (``"off"``), a coarse-to-fine walk
    (``"coarse"``) or a walk started from a subsample's ranking (``"halving"``).

    ``keep``: how many of the best points have their neighbourhoods evaluated in each
    round of the ``"coarse"`` strategy (>= 1). ``spot_checks``: random unevaluated points
    evaluated after a walk (:func:`spot_check`; 0: none).
    """

    strategy: str = "off"
    keep: int = 3
    spot_checks: int = SPOT_CHECKS

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise KernelCVError(f"screen must be one of {', '.join(STRATEGIES)}, got "
                                f"{self.strategy!r}")
        if isinstance(self.keep, bool) or not isinstance(self.keep, int) or self.keep < 1:
            raise KernelCVError(f"screen keep must be an integer >= 1, got {self.keep!r}")
        if (isinstance(self.spot_checks, bool) or not isinstance(self.spot_checks, int)
                or self.spot_checks < 0):
            raise KernelCVError(f"screen spot_checks must be an integer >= 0, got "
                                f"{self.spot_checks!r}")

    @property
    def enabled(self) -> bool:
        return self.strategy != "off"


def _coarse(count: int) -> list[int]:
    """Every :data:`COARSE_STEP`-th index of ``range(count)``, keeping the last one."""
    indices = list(range(0, count, COARSE_STEP))
    if count and indices[-1] != count - 1:
        indices.append(count - 1)
    return indices


def _neighbourhoods(points, setting_lams, shape="box"):
    """Every grid point in the 3 x 3 blocks around ``points`` (the points included);
    with ``shape="plus"`` (or ``"plus_best_box"``, whose blocks :func:`_refine` adds for
    the best point only) only the four axis neighbours of each point (one kernel or one
    lam step), not the diagonal ones."""
    out = set()
    for i, j in points:
        for a in (i - 1, i, i + 1):
            for b in (j - 1, j, j + 1):
                if shape != "box" and a != i and b != j:
                    continue
                if 0 <= a < len(setting_lams) and 0 <= b < len(setting_lams[a]):
                    out.add((a, b))
    return out


def walk(setting_lams: list[list[float]], evaluate: Callable, start, keep: int = 3,
         max_rounds: int = 50, shape: str = "box") -> tuple[dict[int, list[dict]], int]:
    """Evaluate ``start``, then the neighbourhoods of the ``keep`` best points until they
    are local minima of the evaluated grid.

    Parameters
    ----------
    setting_lams : the lam values of each kernel setting (settings ordered along their
        parameter, lam values as the full grid has them).
    evaluate : ``evaluate({i: [lam, ...]}) -> {i: [record, ...]}``, one record (a dict
        with ``lam`` and ``score``) per requested lam.
    start : grid points ``(setting i, lam index j)`` evaluated first.
    keep : best points whose neighbourhoods are evaluated each round.
    max_rounds : refinement rounds at most.
    shape : ``"box"`` (the 3 x 3 block around each point) or ``"plus"`` (its four axis
        neighbours): the neighbourhoods evaluated, and so the sense in which the ``keep``
        best points end as local minima.

    Returns
    -------
    per_setting : ``{i: records}`` of every evaluated point, each setting's records in
        the order of its lam values.
    rounds : refinement rounds done after the start.
    """
    records, rounds = _walk(setting_lams, evaluate, start, keep, max_rounds, shape)
    return _per_setting(records), rounds


def _walk(setting_lams, evaluate, start, keep, max_rounds, shape="box", blind_stop=False):
    """:func:`walk` with the records keyed by grid point ``(i, j)``; with ``blind_stop``
    it ends after the start when every start point predicts one class only."""
    records: dict[tuple[int, int], dict] = {}
    _run_points(records, setting_lams, evaluate, set(start))
    if blind_stop and all(r.get("plateau_loss") is not None for r in records.values()):
        return records, 0
    return records, _refine(records, setting_lams, evaluate, keep, max_rounds, shape)


def _run_points(records, setting_lams, evaluate, points):
    """Evaluate the grid points ``points`` (one request, grouped by setting) into
    ``records``."""
    request: dict[int, list[int]] = {}
    for i, j in sorted(points):
        request.setdefault(i, []).append(j)
    results = evaluate({i: [setting_lams[i][j] for j in js] for i, js in request.items()})
    for i, js in request.items():
        for j, record in zip(js, results[i], strict=True):
            records[(i, j)] = record


def _refine(records, setting_lams, evaluate, keep, max_rounds, shape) -> int:
    """Evaluate the neighbourhoods of the ``keep`` best points until they are local
    minima of ``records`` (changed in place); returns the rounds done.

    ``shape="plus_best_box"``: the ``keep`` best points end as local minima of their axis
    neighbours and the best one of its 3 x 3 block (its diagonal neighbours are evaluated
    last, and the walk goes on wherever one of them leads)."""
    rounds = 0
    while rounds < max_rounds:
        ranked = sorted(records, key=lambda p: _rank_key(records, p))
        wanted = _neighbourhoods(ranked[:keep], setting_lams, shape) - set(records)
        if not wanted and shape == "plus_best_box":
            wanted = _neighbourhoods(ranked[:1], setting_lams, "box") - set(records)
        if not wanted:
            break
        _run_points(records, setting_lams, evaluate, wanted)
        rounds += 1
    return rounds


def spot_check(records, setting_lams, evaluate, count: int, seed, keep: int = 3,
               shape: str = "box", left_out=frozenset(), where: str = "") -> tuple[int, list[str]]:
    """The walk's safety check: evaluate ``count`` grid points drawn at random from those
    not in ``records`` (settings of ``left_out`` aside); if one ranks above the walk's
    best, the walk goes on from it (:func:`_refine`). ``records`` grows in place.

    Returns the refinement rounds it added and one note: what was left out and, with no
    better point found, the chance ``1 - (1 - 1/4)^count`` that a better region covering a
    quarter of it would have been hit; else a warning naming the point found. ``where``
    names the rows the walk ran on when they are not all rows (the halving subsample), so
    that the note says so.
    """
    unevaluated = [(i, j) for i, lams in enumerate(setting_lams) if i not in left_out
                   for j in range(len(lams)) if (i, j) not in records]
    total = sum(len(lams) for lams in setting_lams)
    left = total - len(records)
    if count <= 0 or not unevaluated or not records:
        return 0, []
    best_before = min(records, key=lambda p: _rank_key(records, p))
    rng = np.random.default_rng(0 if seed is None else seed)
    chosen = rng.choice(len(unevaluated), size=min(count, len(unevaluated)), replace=False)
    points = {unevaluated[k] for k in chosen}
    _run_points(records, setting_lams, evaluate, points)
    better = [p for p in points if _rank_key(records, p) < _rank_key(records, best_before)]
    on = f" on {where}" if where else ""
    if not better:
        hit = 1.0 - 0.75 ** len(points)
        return 0, [f"screen check{on}: {left} of {total} candidates were not evaluated; "
                   f"{len(points)} of them drawn at random were no better than the walk's "
                   f"best (a better region covering a quarter of them would have been hit "
                   f"with probability {hit:.0%}); --screen off evaluates them all"]
    found = min(better, key=lambda p: _rank_key(records, p))
    rounds = _refine(records, setting_lams, evaluate, keep, 50, shape)
    return rounds, [f"screen check warning{on}: a point drawn at random from the {left} "
                    f"unevaluated candidates (score {records[found]['score']:.4g}) beat "
                    f"the walk's best ({records[best_before]['score']:.4g}): the coarse "
                    "start missed a basin, and the walk went on from it; --screen off "
                    "evaluates the whole grid"]


def _per_setting(records) -> dict[int, list[dict]]:
    """``{setting i: records}`` of grid-point records, each setting's in lam order."""
    per_setting: dict[int, list[dict]] = {}
    for i, j in sorted(records):
        per_setting.setdefault(i, []).append(records[(i, j)])
    return per_setting


def _rank_key(records, point):
    """How the walks rank an evaluated point: a candidate that predicts one class
    everywhere (``plateau_loss`` set, see :func:`kernelcv.selection.records.majority_plateau`)
    after every other one, then by score, by that loss, by grid position."""
    plateau = records[point].get("plateau_loss")
    return (plateau is not None, records[point]["score"],
            0.0 if plateau is None else plateau, point)


def _coarse_lams(lams) -> list[int]:
    """The coarse start's lam indices of one kernel setting: :data:`COARSE_LAM_POINTS`
    indices spread evenly over the grid (both ends and the middle; all of them for a short
    grid), less the end that holds the larger lam (:data:`LEAVE_OUT_MOST_REGULARISED`)
    when at least two are left."""
    count = len(lams)
    if count <= COARSE_LAM_POINTS:
        indices = list(range(count))
    else:
        indices = sorted({int(round(k * (count - 1) / (COARSE_LAM_POINTS - 1)))
                          for k in range(COARSE_LAM_POINTS)})
    if LEAVE_OUT_MOST_REGULARISED and len(indices) > 2:
        ends = (indices[0], indices[-1])
        indices.remove(max(ends, key=lambda j: lams[j]))
    return indices


def _coarse_start(setting_lams, left_out=frozenset()):
    """Every third setting (:func:`_coarse`) but those in ``left_out`` (all of them if
    none would be left), each at the lam values of :func:`_coarse_lams`."""
    settings = [i for i in _coarse(len(setting_lams)) if i not in left_out]
    settings = settings or _coarse(len(setting_lams))
    return {(i, j) for i in settings for j in _coarse_lams(setting_lams[i])}


def coarse_to_fine(setting_lams: list[list[float]], evaluate: Callable, keep: int = 3,
                   max_rounds: int = 50, left_out=frozenset()) -> tuple[dict[int, list[dict]],
                                                                         int]:
    """Strategy ``"coarse"``: :func:`walk` from every third setting (last kept) at two
    lam values (the least regularised end and the middle, :func:`_coarse_lams`), less
    the settings of ``left_out``
    (:func:`~kernelcv.selection.space.gamma_range.degenerate_settings`)."""
    return walk(setting_lams, evaluate, _coarse_start(setting_lams, left_out), keep,
                max_rounds)


def halving_start(setting_lams: list[list[float]], evaluate_subsample: Callable,
                  keep: int = 3, shape: str = "box",
                  left_out=frozenset()) -> set[tuple[int, int]] | None:
    """Strategy ``"halving"``, step 1: walk the grid coarse to fine on the subsample and
    return the ``shape`` neighbourhoods of its ``keep`` best points and of their
    :func:`challengers` (the start of the full-data walk); None when every point of the
    walk predicts one class only (the walk then stops after its coarse start if that is
    all one class: its refinement would be blind; w8a-2000 split 1, 670 rows: all 24
    points of the coarse start of session 17).

    ``evaluate_subsample`` has the signature of ``evaluate`` in :func:`walk` and takes the
    full grid's lam values (it scales them itself); ``left_out`` as in
    :func:`coarse_to_fine`, on the subsample's rows.
    """
    return _start_from(_subsample_walk(setting_lams, evaluate_subsample, keep, left_out),
                       setting_lams, keep, shape)


def _subsample_walk(setting_lams, evaluate_subsample, keep, left_out) -> dict:
    """The records of :func:`halving_start`'s coarse-to-fine walk on the subsample."""
    records, _ = _walk(setting_lams, evaluate_subsample, _coarse_start(setting_lams, left_out),
                       keep, 50, blind_stop=True)
    return records


def _whole_subsample(setting_lams, evaluate_subsample, left_out) -> dict:
    """Every grid point on the subsample (settings of ``left_out`` aside), the coarse
    start first: when all of it predicts one class the subsample is blind, as for
    :func:`_subsample_walk`, and the rest is not evaluated."""
    records: dict[tuple[int, int], dict] = {}
    start = _coarse_start(setting_lams, left_out)
    _run_points(records, setting_lams, evaluate_subsample, start)
    if all(r.get("plateau_loss") is not None for r in records.values()):
        return records
    settings = [i for i in range(len(setting_lams)) if i not in left_out] or list(
        range(len(setting_lams)))
    _run_points(records, setting_lams, evaluate_subsample,
                {(i, j) for i in settings for j in range(len(setting_lams[i]))} - start)
    return records


def _start_points(records, keep):
    """``(best, others)``: the ``keep`` best subsample points and their
    :func:`challengers`, or None when the best all predict one class only."""
    best = sorted(records, key=lambda p: _rank_key(records, p))[:keep]
    if all(records[p].get("plateau_loss") is not None for p in best):
        return None  # the subsample shows nothing but the majority class
    return best, challengers(records, best)


def _start_from(records, setting_lams, keep, shape) -> set[tuple[int, int]] | None:
    """The ``shape`` neighbourhoods of :func:`_start_points`, or None where it is."""
    points = _start_points(records, keep)
    return None if points is None else _neighbourhoods(points[0] + points[1],
                                                       setting_lams, shape)


def standard_error(record) -> float:
    """The standard error of a record's score from its fold values (0 with one fold or
    none recorded)."""
    values = np.asarray(record.get("fold_errors") or [], dtype=np.float64)
    if values.size < 2:
        return 0.0
    return float(np.std(values, ddof=1) / np.sqrt(values.size))


def challengers(records, kept, limit: int = MAX_CHALLENGERS) -> list[tuple[int, int]]:
    """Other basins the subsample cannot rank below its best: up to ``limit`` evaluated
    points, best first, that are within one :func:`standard_error` of the best point's
    score, predict both classes, are no worse than any evaluated point of their 3 x 3
    block (a local minimum of what was evaluated) and lie outside the 3 x 3 blocks of
    ``kept`` and of the challengers before them. O(|records| log |records|)."""
    if not kept:
        return []
    threshold = records[kept[0]]["score"] + standard_error(records[kept[0]])
    covered = _blocks(kept)
    out = []
    for point in sorted(records, key=lambda p: _rank_key(records, p)):
        if len(out) >= limit or records[point]["score"] > threshold:
            break
        if point in covered or records[point].get("plateau_loss") is not None:
            continue
        block = _blocks([point]) - {point}
        if any(_rank_key(records, q) < _rank_key(records, point)
               for q in block if q in records):
            continue
        out.append(point)
        covered |= _blocks([point])
    return out


def _blocks(points) -> set[tuple[int, int]]:
    """The 3 x 3 blocks around ``points`` (grid bounds ignored: only membership is
    asked)."""
    return {(i + a, j + b) for i, j in points for a in (-1, 0, 1) for b in (-1, 0, 1)}


def halving_subsample(y, fold_ids, random_state, stratify: bool,
                      factor: int = HALVING_FACTOR, pairwise: bool = False):
    """Rows of the ``"halving"`` subsample: about n/factor, stratified by fold (and class),
    with folds of equal size.

    Returns the sorted row indices, or None when the subsample would have fewer than
    :data:`HALVING_MIN_ROWS_PER_FOLD` rows per fold (then ``"coarse"`` is used). When
    n/factor is too small the factor drops toward :data:`HALVING_MIN_FACTOR` (an n/2
    subsample: fits cost about 1/8 of a full one instead of 1/27; vowel, 264 rows and 11
    classes one-vs-rest: search 8.5 -> 4.6 s, same choice). With
    ``pairwise`` (one-vs-one multiclass, ``y`` class codes) the rule applies to the
    smallest binary problem, the two smallest classes: pair problems of a few rows per
    fold rank the grid by noise (digits, 898 rows, 10 classes: 60-row pairs chose
    gamma = 128, test error 0.70).
    """
    n = y.shape[0]
    t = int(fold_ids.max()) + 1
    smallest = n
    if pairwise:
        counts = np.sort(np.unique(y, return_counts=True)[1])
        smallest = int(counts[:2].sum())
    while smallest // factor < HALVING_MIN_ROWS_PER_FOLD * t:
        if factor <= HALVING_MIN_FACTOR:
            return None
        factor -= 1
    rng = np.random.default_rng(0 if random_state is None else random_state)
    if stratify:  # one group per fold and class (+-1 labels or class codes)
        _, classes = np.unique(y, return_inverse=True)
        groups = fold_ids * (int(classes.max()) + 1) + classes
    else:
        groups = fold_ids
    chosen = []
    for group in np.unique(groups):
        rows = np.flatnonzero(groups == group)
        take = max(1, int(round(rows.size / factor)))
        chosen.append(rng.choice(rows, size=take, replace=False))
    return _equal_folds(np.sort(np.concatenate(chosen)), y, fold_ids, rng)


def _equal_folds(rows, y, fold_ids, rng):
    """Drop rows until every fold of the subsample has the same size.

    Rounding per (fold, class) group leaves folds one or two rows apart; with equal folds
    the order-inf step factors the full active system once for all folds instead of each
    fold separately (:class:`kernelcv.criteria.fold_out.FoldOutSolver`). A fold loses
    rows of its most represented class first, so the class shares move by at most a row.
    """
    sizes = np.bincount(fold_ids[rows])
    smallest = int(sizes[sizes > 0].min())
    keep = np.ones(rows.size, dtype=bool)
    for fold in np.flatnonzero(sizes > smallest):
        for _ in range(int(sizes[fold]) - smallest):
            members = np.flatnonzero(keep & (fold_ids[rows] == fold))
            labels, counts = np.unique(y[rows[members]], return_counts=True)
            largest = members[y[rows[members]] == labels[np.argmax(counts)]]
            keep[rng.choice(largest)] = False
    return rows[keep]


@dataclass
class GridTasks:
    """The grid a search strategy chooses from, and the way to evaluate part of it.

    ``settings`` and ``setting_lams`` are the grid; ``shared`` holds the arguments of
    :func:`kernelcv.selection.tasks.evaluate_task` common to all tasks; ``store`` an
    optional checkpoint (full grid only); ``subsample`` ``(X, method, is_classifier,
    random_state, pairwise)`` (the walks leave out the settings that are degenerate on
    X's rows; ``"halving"`` draws its subsample from them; ``pairwise``: a one-vs-one
    multiclass machine). ``done`` counts the records evaluated, for the progress.
    """

    settings: list
    setting_lams: list
    shared: dict
    execution: object
    store: object = None
    subsample: tuple | None = None
    done: int = 0

    @property
    def size(self) -> int:
        return sum(len(lams) for lams in self.setting_lams)

    def runner(self, context=None, stage="screen", scale=1.0) -> Callable[[dict], dict]:
        """``evaluate(request)``: the records of ``{setting index: [lam, ...]}``, one task
        per setting (its lam values scaled by ``scale``), with ``context`` instead of the
        shared task arguments (a subsample's), progress reported as ``stage``."""
        context = self.shared if context is None else context
        execution = self.execution

        def evaluate(request):
            order = list(request)
            tasks = [{"setting": self.settings[i],
                      "lams": [lam * scale for lam in request[i]]} for i in order]
            results = {}
            with closing(run_tasks(evaluate_task, tasks, shared=context,
                                   n_jobs=execution.n_jobs, backend=execution.backend,
                                   scheduler=execution.scheduler)) as finished:
                for position, records in finished:
                    results[order[position]] = records
                    self.done += len(records)
                    execution.report(stage, self.done, self.size)
            return results
        return evaluate


class SearchStrategy:
    """Which candidates of the grid a search evaluates: the plug-in protocol.

    ``name`` (reports and notes), ``enabled`` (True: part of the grid only, which a
    checkpoint cannot resume) and :meth:`evaluate`. A new strategy is a subclass given to
    :func:`~kernelcv.selection.search.run_search` as ``screening=``; ``screen=`` names
    the built-in ones (:class:`Screening`).
    """

    name: ClassVar[str] = ""
    enabled: ClassVar[bool] = True

    def evaluate(self, grid: GridTasks) -> tuple[dict[int, list[dict]], int, list[str]]:
        """``(records per setting index, refinement rounds, notes)`` of what it chose
        from ``grid`` (``grid.runner()`` evaluates a request)."""
        raise NotImplementedError


class FullGrid(SearchStrategy):
    """Every kernel setting with all its lam values; resumable from a checkpoint."""

    name = "off"
    enabled = False

    def evaluate(self, grid):
        settings, store, execution = grid.settings, grid.store, grid.execution
        per_setting: dict[int, list[dict]] = dict(store.settings) if store else {}
        todo = [i for i in range(len(settings)) if i not in per_setting]
        tasks = [{"setting": settings[i], "lams": grid.setting_lams[i]} for i in todo]
        execution.report("search", len(per_setting), len(settings))
        with closing(run_tasks(evaluate_task, tasks, shared=grid.shared,
                               n_jobs=execution.n_jobs, backend=execution.backend,
                               scheduler=execution.scheduler)) as finished:
            for position, records in finished:
                index = todo[position]
                per_setting[index] = records
                if store is not None:
                    store.add_setting(index, records)
                execution.report("search", len(per_setting), len(settings))
        return per_setting, 0, []


@dataclass(frozen=True)
class CoarseWalk(SearchStrategy):
    """The coarse-to-fine walk (strategy ``"coarse"`` of the module notes)."""

    name: ClassVar[str] = "coarse"
    keep: int = 3
    spot_checks: int = SPOT_CHECKS

    def evaluate(self, grid):
        left_out = degenerate_settings(grid.settings, grid.subsample[0])
        evaluate = grid.runner()
        records, rounds = _walk(grid.setting_lams, evaluate,
                                _coarse_start(grid.setting_lams, left_out), self.keep, 50)
        return self._checked(records, rounds, grid, evaluate, left_out, "box", [])

    def _checked(self, records, rounds, grid, evaluate, left_out, shape, notes):
        """The walk's records after :func:`spot_check`, as ``evaluate`` returns them."""
        more, check = spot_check(records, grid.setting_lams, evaluate, self.spot_checks,
                                 grid.subsample[3], self.keep, shape, left_out)
        return _per_setting(records), rounds + more, notes + check


@dataclass(frozen=True)
class HalvingWalk(CoarseWalk):
    """The walk started from a subsample's ranking (strategy ``"halving"``)."""

    name: ClassVar[str] = "halving"

    def evaluate(self, grid):
        X, method, is_classifier, random_state, pairwise = grid.subsample
        shared, settings, setting_lams = grid.shared, grid.settings, grid.setting_lams
        y, fold_ids = shared["y"], shared["fold_ids"]
        evaluate = grid.runner()
        tried = []
        for factor in (HALVING_FACTOR, HALVING_MIN_FACTOR):
            rows = halving_subsample(y, fold_ids, random_state, stratify=is_classifier,
                                     factor=factor, pairwise=pairwise)
            if rows is None or rows.size in tried:
                break
            context = {**shared, "method": shared["method"].for_subsample(),
                       "y": y[rows], "fold_ids": fold_ids[rows],
                       "machine": shared["machine"].take(rows),
                       "data": method.prepare(X[rows], shared["memory_budget"],
                                              grid.execution.parallel),
                       "warm_starts": WarmStarts()}
            on_subsample = grid.runner(context, "subsample", y.shape[0] / rows.size)
            left_out = degenerate_settings(settings, X[rows])
            if grid.size * (rows.size / y.shape[0]) ** 2 <= SUBSAMPLE_WHOLE_GRID_COST:
                sub_records = _whole_subsample(setting_lams, on_subsample, left_out)
                walked = f"evaluated whole on a subsample of {rows.size} rows"
            else:
                sub_records = _subsample_walk(setting_lams, on_subsample, self.keep,
                                              left_out)
                walked = f"walked coarse to fine on a subsample of {rows.size} rows"
            points = _start_points(sub_records, self.keep)
            if points is not None:
                # The spot check runs where the start was chosen: a basin the coarse
                # start missed shows on the subsample at a tenth of a full-data point's
                # cost (see the module notes).
                _, check = spot_check(sub_records, setting_lams, on_subsample,
                                      self.spot_checks, random_state, self.keep, "box",
                                      left_out, where=f"the {rows.size}-row subsample")
                points = _start_points(sub_records, self.keep)
            grid.done = 0
            if points is not None:
                best, others = points
                start = _neighbourhoods(best + others, setting_lams, FULL_WALK_SHAPE)
                records, rounds = _walk(setting_lams, evaluate, start, self.keep, 50,
                                        FULL_WALK_SHAPE)
                more = len(others)
                return _per_setting(records), rounds, [_plateau_note(tried)] * bool(tried) + [
                    f"halving: the grid {walked} (lam scaled by "
                    f"{y.shape[0] / rows.size:.3g}, the same C), the walk started from its "
                    f"{len(best)} best points" + (
                        f" and {more} other local minimum{'s' if more > 1 else ''} within "
                        "one standard error of the best" if more else "")] + check
            tried.append(rows.size)
        left_out = degenerate_settings(settings, X)
        records, rounds = _walk(setting_lams, evaluate, _coarse_start(setting_lams, left_out),
                                self.keep, 50)
        if tried:
            notes = [_plateau_note(tried) + "; walked coarse to fine on all rows instead"]
        else:
            problem = ("its smallest one-vs-one problem" if pairwise
                       else f"a subsample of n/{HALVING_MIN_FACTOR}")
            notes = [f"halving: too few rows for {problem} with "
                     f"{HALVING_MIN_ROWS_PER_FOLD} rows per fold; walked coarse to fine "
                     "instead"]
        return self._checked(records, rounds, grid, evaluate, left_out, "box", notes)


#: The built-in strategies by their ``screen=`` name.
STRATEGY_CLASSES = {cls.name: cls for cls in (FullGrid, CoarseWalk, HalvingWalk)}


def plan(screening) -> SearchStrategy:
    """The strategy object of a :class:`Screening` (or a strategy object, as given)."""
    if isinstance(screening, SearchStrategy):
        return screening
    if not isinstance(screening, Screening):
        raise KernelCVError(f"screening must be a Screening or a SearchStrategy, got "
                            f"{screening!r}")
    if screening.strategy == FullGrid.name:
        return FullGrid()
    return STRATEGY_CLASSES[screening.strategy](keep=screening.keep,
                                                spot_checks=screening.spot_checks)


def evaluate_grid(settings, setting_lams, shared, execution, screening, store, subsample):
    """The records of the candidates the strategy chooses, one task per setting and round.

    ``screening`` is a :class:`Screening` or a :class:`SearchStrategy`; the other
    arguments are :class:`GridTasks`'. Returns the records per setting, the refinement
    rounds of a walk (0 for the full grid) and notes.
    """
    strategy = plan(screening)
    grid = GridTasks(settings, setting_lams, shared, execution, store, subsample)
    per_setting, rounds, notes = strategy.evaluate(grid)
    if strategy.enabled:
        # the walk's total was the grid's, which it never meant to reach: the progress
        # ends at what was evaluated (it showed 19/195 when done)
        evaluated = sum(len(records) for records in per_setting.values())
        execution.report("screen", evaluated, evaluated)
    return per_setting, rounds, notes


def _plateau_note(sizes) -> str:
    return (f"halving: on subsamples of {' and '.join(map(str, sizes))} rows every point "
            "predicted one class only")
