"""The fold-by-fold path of ``KernelSearchCV(method="exact")`` for what the kernel
criteria cannot share: a ``Pipeline`` whose preprocessing is refitted on every training
part, or a scorer that needs the fitted model (a callable, or a scorer name the held-out
decision values do not define, e.g. ``"f1"``).

Every candidate is cross-validated by scikit-learn's ``cross_validate`` on the search's
folds, so the scores are exactly ``GridSearchCV``'s on the same folds. Cost: t fits (and
t preprocessings) per candidate; no Gram matrix is shared. A default grid is widened
toward large C as on the fast path (:class:`Reserve`,
:func:`~kernelcv.selection.after_grid.extension.extend_at_edge`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import cross_validate
from sklearn.utils import _safe_indexing

from ..selection.after_grid.extension import extend_at_edge


def fold_splits(fold_ids):
    """``[(train, test), ...]`` index pairs of fold ids ``0..t-1``."""
    return [(np.flatnonzero(fold_ids != k), np.flatnonzero(fold_ids == k))
            for k in range(int(fold_ids.max()) + 1)]


@dataclass(frozen=True)
class FoldByFold:
    """GridSearchCV's options of a fold-by-fold search.

    ``error_score``, ``return_train_score`` and ``pre_dispatch`` go to scikit-learn's
    ``cross_validate`` (a failed fit's score; the training-part scores
    ``split{k}_train_score`` / ``mean_train_score`` / ``std_train_score``; the dispatch of
    parallel jobs). ``refit``: with several metrics, the name of the one that chooses
    (None: the first, or the only one). ``n_jobs`` and ``verbose`` as GridSearchCV's.
    ``fit_params``: what each fit is given besides X and y (``sample_weight``, with a
    Pipeline's step prefix), cut to the training part, as GridSearchCV's ``**params``;
    ``sample_weight``: the rows' weights, which then also weigh every score (the test
    part's, and the training part's), as GridSearchCV weighs an estimator's scores.
    """

    n_jobs: int | None = None
    verbose: int = 0
    error_score: object = "raise"
    return_train_score: bool = False
    pre_dispatch: object = "2*n_jobs"
    refit: str | None = None
    fit_params: dict | None = None
    sample_weight: np.ndarray | None = None


@dataclass(frozen=True)
class Reserve:
    """A default grid's reserve toward large C: ``lams`` below the grid, evaluated while
    the best candidate lies on its large-C edge; ``shown(params, lam)`` a candidate's
    parameters as the user sees them (``params`` a candidate of the same setting)."""

    lams: tuple
    shown: object


def refit_search(estimator, params, search_params, prefix, X, y, splits, scorer, *, lams,
                 options: FoldByFold = FoldByFold(), reserve: Reserve | None = None):
    """Cross-validate each candidate fold by fold; ``(cv_results, best_index)``.

    ``estimator``: the searched estimator or Pipeline (unfitted); ``params``: the user's
    candidates; ``search_params``: the same with lam resolved (keys of the last step,
    without the ``prefix``); ``splits``: the (train, test) pairs (:func:`fold_splits` of
    fold ids, or a ``ShuffleSplit``'s, whose test sets need not partition the rows);
    ``lams``: each candidate's lam. ``scorer`` is one scorer or a dict of named scorers
    (several metrics: GridSearchCV's ``mean_test_<name>``, ``rank_test_<name>``, ...
    columns, the best by ``options.refit``). The best candidate is the first with the best
    mean, as in GridSearchCV. With ``reserve`` (a default grid) the candidates evaluated
    toward large C join ``params`` / ``search_params`` / ``lams`` (changed in place), each
    setting's lam values ascending as in the grid.
    """
    names = list(scorer) if isinstance(scorer, dict) else ["score"]
    chooser = options.refit if options.refit is not None else names[0]
    scored = [_score_candidate(estimator, candidate, prefix, X, y, splits, scorer, names,
                               options, f"{i + 1}/{len(params)} {params[i]}")
              for i, candidate in enumerate(search_params)]
    if reserve is not None and reserve.lams:
        _widen(estimator, params, search_params, lams, scored, prefix, X, y, splits,
               scorer, names, chooser, options, reserve)
    return_train_score = options.return_train_score
    scores = {name: [s["test"][name] for s in scored] for name in names}
    train_scores = {name: [s["train"][name] for s in scored] for name in names} \
        if return_train_score else {}
    fit_times = [s["fit_time"] for s in scored]
    score_times = [s["score_time"] for s in scored]
    results: dict = {"params": params}
    for name in sorted({key for p in params for key in p}):
        column = np.ma.MaskedArray(np.empty(len(params), dtype=object), mask=True)
        for i, p in enumerate(params):
            if name in p:
                column[i] = p[name]
        results[f"param_{name}"] = column
    best = None
    for name in names:
        table = np.vstack(scores[name])
        for k in range(table.shape[1]):
            results[f"split{k}_test_{name}"] = table[:, k]
        means = np.array([np.average(row) for row in table])
        results[f"mean_test_{name}"] = means
        results[f"std_test_{name}"] = table.std(axis=1)
        finite = np.where(np.isfinite(means), means, -np.inf)
        results[f"rank_test_{name}"] = np.array(
            [int(np.sum(finite > m)) + 1 for m in finite], dtype=np.int32)
        if return_train_score:
            train = np.vstack(train_scores[name])
            for k in range(train.shape[1]):
                results[f"split{k}_train_{name}"] = train[:, k]
            results[f"mean_train_{name}"] = np.array([np.average(row) for row in train])
            results[f"std_train_{name}"] = train.std(axis=1)
        if name == chooser:
            best = (means, finite)
    means, finite = best
    results["mean_fit_time"] = np.array([np.mean(t) for t in fit_times])
    results["std_fit_time"] = np.array([np.std(t) for t in fit_times])
    results["mean_score_time"] = np.array([np.mean(t) for t in score_times])
    results["std_score_time"] = np.array([np.std(t) for t in score_times])
    results["approx_test_score"] = means.copy()
    results["exact_test_score"] = means.copy()
    results["lam"] = np.asarray(lams, dtype=np.float64)
    m = len(params)
    results["method"] = np.array(["exact"] * m, dtype=object)
    results["order_used"] = np.array([None] * m, dtype=object)
    results["n_folds"] = np.full(m, len(splits))
    results["status"] = np.array(["exact"] * m, dtype=object)
    results["degenerate"] = np.zeros(m, dtype=bool)
    return results, int(np.argmax(finite))


def _score_candidate(estimator, candidate, prefix, X, y, splits, scorer, names, options,
                     label) -> dict:
    """One candidate cross-validated fold by fold: its test (and training) scores per
    metric and its fit and score times."""
    model = clone(estimator).set_params(
        **{f"{prefix}{key}": value for key, value in candidate.items()})
    if options.sample_weight is None:
        out = cross_validate(model, X, y, cv=splits, scoring=scorer, n_jobs=options.n_jobs,
                             error_score=options.error_score,
                             return_train_score=options.return_train_score,
                             pre_dispatch=options.pre_dispatch, params=options.fit_params)
    else:
        out = weighted_cross_validate(model, X, y, splits, scorer, options)
    scored = {"test": {name: np.asarray(out[f"test_{name}"], dtype=np.float64)
                       for name in names},
              "train": {name: np.asarray(out[f"train_{name}"], dtype=np.float64)
                        for name in names} if options.return_train_score else {},
              "fit_time": out["fit_time"], "score_time": out["score_time"]}
    if options.verbose >= 2:
        print(f"[KernelSearchCV] candidate {label}: "
              f"{np.mean(scored['test'][names[0]]):.4g}", file=sys.stderr)
    return scored


def _widen(estimator, params, search_params, lams, scored, prefix, X, y, splits, scorer,
           names, chooser, options, reserve: Reserve) -> None:
    """Evaluate the reserve toward large C while the best candidate (by ``chooser``'s
    mean, higher is better) lies on its setting's large-C edge, and put the new candidates
    among the others (each setting's lam ascending); the lists change in place."""
    def setting_of(candidate):
        return tuple(sorted((k, repr(v)) for k, v in candidate.items() if k != "lam"))

    order: dict = {}
    for i, candidate in enumerate(search_params):
        order.setdefault(setting_of(candidate), []).append(i)
    settings = list(order)

    def record(i):
        mean = float(np.mean(scored[i]["test"][chooser]))
        return {"lam": float(lams[i]), "score": -mean if np.isfinite(mean) else np.inf,
                "row": i}

    per_setting = {k: sorted((record(i) for i in order[s]), key=lambda r: r["lam"])
                   for k, s in enumerate(settings)}
    setting_lams = [sorted(float(lams[i]) for i in order[s]) for s in settings]

    def evaluate(request):
        out = {}
        for k, new_lams in request.items():
            like = order[settings[k]][0]
            out[k] = []
            for lam in new_lams:
                candidate = {**search_params[like], "lam": float(lam)}
                params.append(reserve.shown(params[like], float(lam)))
                search_params.append(candidate)
                lams.append(float(lam))
                scored.append(_score_candidate(estimator, candidate, prefix, X, y, splits,
                                               scorer, names, options,
                                               f"reserve {params[-1]}"))
                out[k].append(record(len(scored) - 1))
        return out

    per_setting, notes = extend_at_edge(per_setting, setting_lams, list(reserve.lams),
                                        evaluate)
    if not notes:
        return
    if options.verbose:
        print(f"[KernelSearchCV] {notes[0]}", file=sys.stderr)
    rows = [r["row"] for k in range(len(settings)) for r in per_setting[k]]
    params[:], search_params[:], lams[:] = ([params[i] for i in rows],
                                            [search_params[i] for i in rows],
                                            [lams[i] for i in rows])
    scored[:] = [scored[i] for i in rows]


def weighted_cross_validate(model, X, y, splits, scorer, options: FoldByFold) -> dict:
    """scikit-learn's ``cross_validate`` output for one candidate, fitted with the rows'
    weights and scored with the test (and training) part's weights: each scorer is
    called as ``scorer(estimator, X, y, sample_weight=w)``, which scikit-learn's scorers
    and ``estimator.score`` take. (Its ``cross_validate`` passes weights to the scorer
    only under their plain name, never with a Pipeline's step prefix.) A fit that fails
    scores ``options.error_score`` (or raises with ``"raise"``). One fold after another;
    t fits."""
    scorers = scorer if isinstance(scorer, dict) else {"score": scorer}
    weights = np.asarray(options.sample_weight)
    out = {"fit_time": [], "score_time": []}
    for name in scorers:
        out[f"test_{name}"] = []
        if options.return_train_score:
            out[f"train_{name}"] = []
    for train, test in splits:
        fitted = clone(model)
        fit_params = {key: np.asarray(value)[train]
                      for key, value in (options.fit_params or {}).items()}
        tic = time.perf_counter()
        try:
            fitted.fit(_safe_indexing(X, train), _safe_indexing(y, train), **fit_params)
            failed = False
        except Exception:
            if isinstance(options.error_score, str) and options.error_score == "raise":
                raise
            failed = True
        out["fit_time"].append(time.perf_counter() - tic)
        tic = time.perf_counter()
        for name, function in scorers.items():
            for part, rows in (("test", test), ("train", train)):
                if part == "train" and not options.return_train_score:
                    continue
                value = options.error_score if failed else function(
                    fitted, _safe_indexing(X, rows), _safe_indexing(y, rows),
                    sample_weight=weights[rows])
                out[f"{part}_{name}"].append(value)
        out["score_time"].append(time.perf_counter() - tic)
    return {key: np.asarray(value, dtype=np.float64) for key, value in out.items()}
