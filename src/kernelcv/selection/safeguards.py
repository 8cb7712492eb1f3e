"""Safeguards of an approximate search: exact refits where the approximation may mislead.

1. Candidates whose held-out predictions are degenerate (tiny kernel width; every
   "full fit + correction" formula then returns rounding noise) are re-evaluated by exact
   refit CV.
2. The best ``confirm`` candidates are re-evaluated by exact refit CV, and confirmation
   goes on down the ranking while the next approximate score is still below the best
   exact error found (at most ``CONFIRM_LIMIT * confirm`` candidates); the chosen
   candidate is the best confirmed one by exact error.

Cost: one exact refit CV (t fits) per rechecked or confirmed candidate.
"""

from __future__ import annotations

from contextlib import closing

import numpy as np

from .backends import run_tasks
from .tasks import exact_candidate

# Methods whose scores are approximations and get the safeguards.
APPROXIMATE = ("bif", "gacv")
# Confirmation may extend to this many times ``confirm`` candidates (see safeguards).
CONFIRM_LIMIT = 5


def _report(progress, stage, done, total):
    if progress is not None:
        progress(stage, done, total)


def candidate_error(candidate: dict, average: str):
    """A candidate's CV error: pooled over samples, or the mean of the fold errors."""
    if candidate["fold_errors"] is None:
        return None
    if average == "folds":
        return float(np.mean(candidate["fold_errors"]))
    return candidate["cv_error"]


def _exact_value(result: dict, average: str) -> float:
    """The same for the result of an exact refit CV."""
    if average == "folds":
        return float(np.mean(result["fold_errors"]))
    return float(result["cv_error"])


def safeguards(candidates, method, confirm, recheck_degenerate, average, shared, config,
                store, n_jobs, backend, scheduler, progress):
    """Exact refits of degenerate candidates, then of the best ``confirm`` candidates."""
    if method not in APPROXIMATE:
        return [], []
    done = dict(store.confirmations) if store else {}

    def run_exact(indices, stage):
        todo = [i for i in indices if i not in done]
        tasks = []
        for i in todo:
            candidate = candidates[i]
            task_config = {**config, "n_folds": candidate["n_folds"]}
            setting = {key: candidate[key] for key in ("kernel", "gamma", "degree", "coef0")
                       if key in candidate}
            tasks.append({"setting": setting, "lam": candidate["lam"],
                          "config": task_config})
        _report(progress, stage, len(indices) - len(todo), len(indices))
        finished = len(indices) - len(todo)
        shared_exact = {k: v for k, v in shared.items() if k != "config"}
        with closing(run_tasks(exact_candidate, tasks, shared=shared_exact, n_jobs=n_jobs,
                               backend=backend, scheduler=scheduler)) as results:
            for position, result in results:
                done[todo[position]] = result
                if store is not None:
                    store.add_confirmation(todo[position], result)
                finished += 1
                _report(progress, stage, finished, len(indices))
        for i in indices:
            candidates[i]["exact_error"] = _exact_value(done[i], average)
            candidates[i]["exact_seconds"] = done[i]["seconds"]

    rechecked = []
    if recheck_degenerate:
        rechecked = [i for i, c in enumerate(candidates) if c["degenerate"]]
        if rechecked:
            run_exact(rechecked, "recheck")
            for i in rechecked:
                candidates[i]["status"] = "rechecked"
                if method != "gacv":
                    candidates[i]["score"] = candidates[i]["exact_error"]
    confirmed = []
    if confirm > 0:
        pool = [i for i in range(len(candidates))
                if method != "gacv" or candidates[i]["status"] != "rechecked"]
        pool.sort(key=lambda i: (candidates[i]["score"], i))
        confirmed = pool[:confirm]
        run_exact(confirmed, "confirm")
        # Approximate scores are optimistic where the kernel is nearly degenerate, so the
        # best few may all be mirages: go on down the ranking while the next approximate
        # score still beats the best exact error found (CV methods only; GACV's scale
        # differs), up to CONFIRM_LIMIT times ``confirm``.
        limit = min(len(pool), CONFIRM_LIMIT * confirm)
        while method != "gacv" and len(confirmed) < limit:
            best_exact = min(candidates[i]["exact_error"] for i in confirmed)
            following = pool[len(confirmed)]
            if not candidates[following]["score"] < best_exact:
                break
            confirmed.append(following)
            run_exact([following], "confirm")
        confirmed.sort()
        for i in confirmed:
            candidates[i]["status"] = "confirmed"
    return rechecked, confirmed


def choose(candidates, method, confirmed, rechecked) -> int:
    """Best candidate: by exact error among the refit pool, else by score (ties: grid order)."""
    if method in APPROXIMATE and confirmed:
        pool = set(confirmed)
        if method == "gacv":
            pool |= set(rechecked)
        return min(pool, key=lambda i: (candidates[i]["exact_error"], i))
    return min(range(len(candidates)), key=lambda i: (candidates[i]["score"], i))


def rank(candidates):
    """``rank`` 1 = best score (ties share the smallest rank, as in GridSearchCV)."""
    scores = np.array([c["score"] for c in candidates], dtype=np.float64)
    for c, score in zip(candidates, scores, strict=True):
        c["rank"] = int(np.sum(scores < score)) + 1
