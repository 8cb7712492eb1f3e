"""The adaptive feature count of ``method="rff"`` (``features="auto"``, the default).

The feature-space CV error of a kernel setting depends on D: with few features a
narrow kernel cannot be represented, so small gamma and large C win (on ijcnn1 the
paper's D = 30 picks the grid corner). The search therefore grows D:

1. D = ``start`` (64), then doubling (128, 256, ...) up to ``max_features`` (2048) and
   at most n; every size uses the first D features of one nested draw
   (:meth:`kernelcv.features.FeatureMap.prefix`), so a larger size refines the smaller;
2. at each size the CV surface is computed for the kernel settings still in play: all
   of them at the first size; afterwards the gammas from the smallest to the largest
   whose best CV error was within ``PRUNE_MARGIN`` (25 %) of the best at the previous
   size, plus the next larger gamma (more features resolve narrower kernels, so the
   choice drifts that way);
3. at each size the choice is the **largest lam whose CV error is within one standard
   error of the best** (ties: the smaller error, then grid order; the "one-standard-error
   rule"). With D much smaller than n the linear model cannot overfit, so its CV error
   is flat in C beyond some point and the argmin along that flat part is noise, while
   the kernel machine fitted afterwards on all n rows does overfit at large C and takes
   longer to fit (ijcnn1, exact SVC: gamma 2^-1, C 2^9 / 2^13: test accuracy 0.9862 /
   0.9807, 12 / 34 s). The standard error is ``sqrt(e (1 - e) / n)`` for a 0-1 error e,
   else the standard deviation of the fold errors over sqrt(t);
4. it stops when the choice is **stable** for two consecutive sizes D/2 and D: the best
   CV error moved by at most ``tol`` standard errors (default 1) and the previous choice
   is still within ``tol`` standard errors of the best at D (the same grid point, or
   one as good). Both are needed: on ijcnn1 (RFF) D = 64 and 128 choose the same point
   (gamma 2^-7, C 2^15) with CV errors 0.073 and 0.062 -- the surface had not settled,
   and that point gives a poor kernel SVM. A classifier's surface that shows **no
   signal** -- its best 0-1 CV error within ``tol`` standard errors of the majority
   class's rate, what predicting one class everywhere scores -- is never stable: the
   features cannot tell the classes apart yet (session 31, a 10,000-row w8a draw, 3 %
   positives: every point of D = 64 and 128 scored 0.029-0.030 against the constant
   classifier's 0.0298, the growth stopped there and chose a model predicting the
   majority class, test error 0.0298; grown on, D = 512 gives test error 0.0144);
5. or when the next size would exceed the budget: ``time_budget`` seconds for the
   growth (the next size is predicted to cost (D'/D)^2 times the last one, scaled by the
   number of settings in play), the memory budget, or ``max_features``.

The choice is that of the last size; candidates of settings dropped
earlier keep the CV error of the last size they were evaluated at (their ``features``).
The path (D, the settings evaluated, the choice and its CV error, seconds) is reported.

With the square loss each size costs two passes over the rows for all settings in play
(:mod:`kernelcv.random_features.sums`, O(n D^2) per setting, no n x D matrix); other
losses evaluate one setting per task on the n x D features in memory.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass, field, replace

import numpy as np

from ..features import FeatureMap
from ..memory import memory_budget
from ..reading.rowchunks import chunk_rows_for
from ..selection.after_grid.baseline import baseline_error
from ..selection.backends import run_tasks
from ..selection.tasks import evaluate_task
from .linear_cv import lam_to_c
from .multiclass import (
    chunk_class_sums,
    chunk_scheme_errors,
    scheme_fold_models,
)
from .newton import squared_hinge_sums_path
from .sums import (
    chunk_square_errors,
    chunk_square_sums,
    path_from_errors,
    square_fold_models,
)

START_FEATURES = 64
MAX_FEATURES = 2048
TIME_BUDGET = 60.0
TOLERANCE = 1.0  # standard errors of the CV error
PRUNE_MARGIN = 0.25
#: Bytes of fold sums one pass may hold (settings are grouped into passes below it).
SUM_BYTES = 256 * 2**20


@dataclass
class Growth:
    """Outcome of :func:`grow_features`: the records of every setting, the choice
    ``(setting, lam position)``, the map of the final size, its D, the path and why the
    growth stopped."""

    per_setting: dict
    choice: tuple
    feature_map: FeatureMap
    features: int
    path: list = field(default_factory=list)
    stop: str = ""
    notes: list = field(default_factory=list)


def feature_sizes(start: int, maximum: int, n_rows: int) -> list[int]:
    """start, 2 start, 4 start, ... up to ``maximum``, capped at n (the last size is n
    when doubling would pass it)."""
    top = max(1, min(int(maximum), int(n_rows)))
    sizes, D = [], max(1, min(int(start), top))
    while D < top:
        sizes.append(D)
        D *= 2
    sizes.append(top)
    return sizes


def path_records(path, lams, n, features, setup=0.0):
    """The candidate records of one setting's :class:`PathCV` (one per lam)."""
    records = []
    for k, lam in enumerate(lams):
        errors = path.fold_errors[k]
        records.append({
            "lam": float(lam), "C": float(lam_to_c(lam, n)),
            "score": float(path.cv_error[k]), "cv_error": float(path.cv_error[k]),
            "fold_errors": [float(e) for e in errors],
            "fold_sizes": [int(c) for c in path.fold_sizes],
            "n_folds": int(path.fold_sizes.size), "order_used": None,
            "degenerate": False, "heldout_ratio": None,
            "seconds": float(path.seconds[k] + setup),
            "fit_seconds": float(path.seconds[k]), "features": int(features),
            "notes": list(path.notes) if k == 0 else [],
        })
    return records


def _best(per_setting, indices):
    """(setting, lam position, cv error) of the best record among ``indices``
    (ties: grid order)."""
    return min(((i, k, r["score"]) for i in indices for k, r in enumerate(per_setting[i])),
               key=lambda item: (item[2], item[0], item[1]))


def standard_error(record, classifier: bool) -> float:
    """The standard error of a CV error: ``sqrt(e (1 - e) / n)`` for a 0-1 error, else
    the standard deviation of the fold errors over sqrt(t) (0 with one fold)."""
    if classifier:
        e, n = record["cv_error"], sum(record["fold_sizes"])
        return float(np.sqrt(max(e * (1.0 - e), 0.0) / max(n, 1)))
    folds = np.asarray(record["fold_errors"], dtype=np.float64)
    return float(folds.std(ddof=1) / np.sqrt(folds.size)) if folds.size > 1 else 0.0


def choose_point(per_setting, indices, classifier, tol=TOLERANCE):
    """The one-standard-error choice among ``indices``: the largest lam whose CV error is
    within ``tol`` standard errors of the best (ties: smaller error, grid order).

    Returns ``(setting, lam position, its error, the best error, the tolerance)``.
    """
    i, k, best = _best(per_setting, indices)
    slack = tol * standard_error(per_setting[i][k], classifier)
    within = [(s, p, r["score"], r["lam"]) for s in indices
              for p, r in enumerate(per_setting[s]) if r["score"] <= best + slack]
    s, p, error, _ = min(within, key=lambda item: (-item[3], item[2], item[0], item[1]))
    return s, p, error, best, slack
def keep_settings(settings, per_setting, evaluated, margin=PRUNE_MARGIN):
    """The settings still in play: the gammas from the smallest to the largest whose best
    CV error is within ``margin`` (relative) of the best, plus the next larger gamma."""
    best = _best(per_setting, evaluated)[2]
    by_gamma = sorted(evaluated, key=lambda i: settings[i]["gamma"])
    close = [position for position, i in enumerate(by_gamma)
             if min(r["score"] for r in per_setting[i]) <= (1.0 + margin) * best]
    return sorted(by_gamma[close[0]:close[-1] + 2])


def shows_signal(best, baseline, slack) -> bool:
    """Whether a classifier's best CV error ``best`` is more than ``slack`` below
    ``baseline``, the CV error of predicting each training part's majority class
    (:func:`~kernelcv.selection.after_grid.baseline.baseline_error`)."""
    return bool(best < baseline - slack)


def is_stable(previous_best, best, previous_choice_now, slack) -> bool:
    """Two consecutive sizes agree: the best CV error moved by at most ``slack`` and the
    previous choice (its error now: ``previous_choice_now``) is within ``slack`` of the
    best now."""
    return bool(abs(best - previous_best) <= slack and previous_choice_now - best <= slack)


def sums_memory(n_features, n_folds, n_settings, chunk_rows, chunk_row_bytes,
                map_bytes) -> int:
    """Bytes of one pass of the square-loss sums (an estimate): the chunk's rows and four
    c x D arrays, the fold sums of the settings of the pass, their projections and
    models, and the map's own storage (``map_bytes``)."""
    D = n_features
    chunk = chunk_rows * (chunk_row_bytes + 8 * 4 * D)
    sums = 8 * n_settings * (n_folds * (D * D + 2 * D) + 2 * D * D)
    return int(chunk + sums + map_bytes + 3 * 8 * D * D)


def _groups(indices, n_features, n_folds):
    size = max(1, SUM_BYTES // max(8 * n_folds * n_features**2, 1))
    return [indices[a:a + size] for a in range(0, len(indices), size)]


def _sums_round(rows, fmap, settings, setting_lams, indices, method, n):
    """Every setting of ``indices`` at this size by the two passes of the square loss
    (a multiclass scheme: sums per (fold, class) cell, every binary machine's models from
    them, the combined held-out classes; :mod:`kernelcv.random_features.multiclass`)."""
    D, t = fmap.n_features, rows.n_folds
    k = method.n_classes if method.is_multiclass else 1
    chunk = chunk_rows_for(D, rows.source.row_bytes)
    out = {}
    for group in _groups(indices, D, t * k):
        tic = time.perf_counter()
        gammas = [settings[i]["gamma"] for i in group]
        projections = [fmap.projection(g) for g in gammas]
        if method.is_multiclass:
            sums = rows.map_reduce(chunk_class_sums, chunk, fmap=fmap, gammas=gammas,
                                   projections=projections, n_folds=t, n_classes=k)
            schemes = [scheme_fold_models(s, setting_lams[i], t, k, method.strategy,
                                          method.feature_intercept, P)
                       for s, i, P in zip(sums, group, projections, strict=True)]
            errors = rows.map_reduce(
                chunk_scheme_errors, chunk, fmap=fmap, gammas=gammas,
                coefs=[[m.on_columns() for m in models] for models in schemes],
                intercepts=[[m.intercept for m in models] for models in schemes],
                n_folds=t, n_classes=k, strategy=method.strategy)
            counts = [rows.fold_counts()] * len(group)
        else:
            sums = rows.map_reduce(chunk_square_sums, chunk, fmap=fmap, gammas=gammas,
                                   projections=projections, n_folds=t)
            models = [square_fold_models(s, setting_lams[i], method.feature_intercept, P)
                      for s, i, P in zip(sums, group, projections, strict=True)]
            errors = rows.map_reduce(
                chunk_square_errors, chunk, fmap=fmap, gammas=gammas,
                coefs=[m.on_columns() for m in models],
                intercepts=[m.intercept for m in models], n_folds=t,
                classifier=method.classifier)
            counts = [s.count for s in sums]
        share = (time.perf_counter() - tic) / len(group)
        for i, e, c in zip(group, errors, counts, strict=True):
            lams = setting_lams[i]
            path = path_from_errors(e, c, lams, np.full(len(lams), share / len(lams)))
            out[i] = path_records(path, lams, n, D)
    return out


def _sums_pay_off(method, n: int, D: int, n_folds: int) -> bool:
    """Whether the square loss in memory goes through the fold sums: always for two
    classes; for a multiclass scheme when its machines train on at least D rows each.

    The (fold, class) cell sums cost one O(n D^2) pass and t D x D decompositions per
    machine; the per-machine path (:func:`~kernelcv.random_features.multiclass.
    multiclass_path_cv`) forms each machine's Gram on each fold, t (k - 1) n D^2 for one-vs-
    one, but decomposes the smaller of D x D and m x m, so it wins only when the machines
    have fewer rows m than features (40,000 rows, 5 classes, one-vs-rest, D = 64: 4.3 s per
    size per-machine, 2.6 s from sums read from a file; one-vs-one pairs of digits at
    D = 256: m = 162, the m x m path).
    """
    if not method.is_multiclass:
        return True
    share = 2.0 / method.n_classes if method.strategy == "ovo" else 1.0
    return n * (n_folds - 1) / n_folds * share >= D


def _newton_round(rows, fmap, settings, setting_lams, indices, method, n):
    """Every setting of ``indices`` by the squared hinge's Newton sums (rows streamed)."""
    D, t = fmap.n_features, rows.n_folds
    chunk = chunk_rows_for(D, rows.source.row_bytes)
    out = {}
    for i in indices:
        tic = time.perf_counter()
        gamma, lams = settings[i]["gamma"], setting_lams[i]
        _, unconverged, errors = squared_hinge_sums_path(
            rows, fmap, gamma, lams, chunk, method.feature_intercept,
            classifier=method.classifier)
        seconds = (time.perf_counter() - tic) / len(lams)
        path = path_from_errors(errors, rows.fold_counts(), lams, np.full(len(lams), seconds))
        if unconverged:
            path.notes.append(f"{unconverged} of {len(lams) * t} squared_hinge fits stopped "
                              "at the iteration limit")
        out[i] = path_records(path, lams, n, D)
    return out


def _task_round(X, fmap, settings, setting_lams, indices, method, shared, execution):
    """Every setting of ``indices`` at this size as one task each (features in memory)."""
    data = {"map": fmap, "base": fmap.base(X)}
    context = {**shared, "data": data, "method": replace(method, features=fmap.n_features)}
    tasks = [{"setting": settings[i], "lams": setting_lams[i]} for i in indices]
    out = {}
    with closing(run_tasks(evaluate_task, tasks, shared=context, n_jobs=execution.n_jobs,
                           backend=execution.backend,
                           scheduler=execution.scheduler)) as finished:
        for position, records in finished:
            out[indices[position]] = records
    return out


def grow_features(method, settings, setting_lams, rows, shared, execution, X=None) -> Growth:
    """Grow D until the choice is stable (module docstring); see :class:`Growth`.

    ``rows``: the training rows (:class:`~kernelcv.random_features.rowmap.LocalRows`);
    ``shared``: the search's task arguments (for losses other than the square, whose
    settings run as tasks on the features of ``X`` in memory; without ``X``, the rows
    are streamed and the squared hinge sums its Newton steps over them). A fixed D
    (``method.features`` an integer, for streamed rows) is one size, drawn as the
    in-memory search draws it.
    """
    n = rows.n_rows
    if method.adaptive:
        sizes = feature_sizes(method.min_features, method.max_features, n)
    else:
        sizes = [int(method.features)]
    draw = FeatureMap(method.feature_map, sizes[-1], method.feature_seed,
                      nested=method.adaptive)
    draw.draw(n, rows.n_dims)
    if draw.kind == "nystroem":
        draw.set_landmarks(rows.take(draw.landmark_rows_))
    limit = memory_budget(execution.memory_budget)
    # the constant classifier's error, where the ranking is by the 0-1 error
    labels = getattr(rows, "y", None)
    baseline = (baseline_error(labels, rows.fold_ids, True) if method.classifier
                and labels is not None and getattr(method, "scoring", None) is None
                else None)
    per_setting, path, notes = {}, [], []
    active = list(range(len(settings)))
    tic = time.perf_counter()
    last_seconds, last_active, stop, fmap = None, None, "max_features", None
    previous = None
    for step, D in enumerate(sizes):
        if step:
            predicted = last_seconds * (D / sizes[step - 1]) ** 2 * len(active) / last_active
            spent = time.perf_counter() - tic
            if spent + predicted > method.feature_time:
                stop = "time"
                notes.append(f"the feature count stopped at D = {fmap.n_features}: D = {D} "
                             f"was predicted to take {predicted:.0f} s, beyond the "
                             f"{method.feature_time:g} s budget of the growth "
                             f"({spent:.0f} s spent)")
                break
            cells = rows.n_folds * (method.n_classes if method.is_multiclass else 1)
            need = sums_memory(D, cells, 1, chunk_rows_for(D, rows.source.row_bytes),
                               rows.source.row_bytes, draw.prefix(D).nbytes)
            if need > limit:
                stop = "memory"
                notes.append(f"the feature count stopped at D = {fmap.n_features}: D = {D} "
                             f"would exceed the memory budget")
                break
        fmap = draw.prefix(D)
        round_tic = time.perf_counter()
        execution.report(f"features D={D}", 0, len(active))
        if method.feature_loss == "square" and (X is None or _sums_pay_off(method, n, D,
                                                                           rows.n_folds)):
            records = _sums_round(rows, fmap, settings, setting_lams, active, method, n)
        elif X is None:
            records = _newton_round(rows, fmap, settings, setting_lams, active, method, n)
        else:
            records = _task_round(X, fmap, settings, setting_lams, active, method, shared,
                                  execution)
        execution.report(f"features D={D}", len(active), len(active))
        per_setting.update(records)
        last_seconds, last_active = time.perf_counter() - round_tic, len(active)
        if method.adaptive:
            setting, position, error, best, slack = choose_point(
                per_setting, active, method.classifier, method.feature_tol)
        else:  # a fixed D chooses as the in-memory search: the best (ties: grid order)
            (setting, position, error), slack = _best(per_setting, active), 0.0
            best = error
        entry = {"features": D, "gammas": [settings[i]["gamma"] for i in active],
                 "gamma": settings[setting]["gamma"],
                 "lam": per_setting[setting][position]["lam"],
                 "C": per_setting[setting][position]["C"], "cv_error": error,
                 "best_cv_error": best, "tolerance": slack,
                 "previous_choice_error": None, "stable": False,
                 "seconds": last_seconds}
        if previous is not None:
            now = per_setting[previous[0]][previous[1]]["score"]
            entry["previous_choice_error"] = now
            entry["stable"] = is_stable(previous[2], best, now, slack)
        if baseline is not None and not shows_signal(best, baseline, slack):
            entry["stable"] = False  # nothing beyond the majority class yet: grow on
            entry["no_signal"] = True
        path.append(entry)
        choice = (setting, position)
        if entry["stable"]:
            stop = "stable"
            break
        previous = (setting, position, best)
        active = keep_settings(settings, per_setting, active)
    else:
        if sizes[-1] >= n and sizes[-1] < method.max_features:
            stop = "n"
    if path and path[-1].get("no_signal"):
        notes.append(f"no feature count up to D = {path[-1]['features']} gave a CV error "
                     f"below the majority class's rate {baseline:.4g} (the best was "
                     f"{path[-1]['best_cv_error']:.4g}): the feature space cannot tell the "
                     "classes apart here and its choice may be the constant classifier; "
                     "raise --max-features / --feature-time, or name method 'bif' where "
                     "the kernel matrix fits")
    notes.extend(getattr(rows, "notes", []))
    return Growth(per_setting, choice, fmap, fmap.n_features, path, stop, notes)
