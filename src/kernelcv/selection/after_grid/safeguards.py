"""Safeguards of an approximate search: exact refits where the approximation may mislead.

1. Candidates whose held-out predictions are degenerate (tiny kernel width; every
   "full fit + correction" formula then returns rounding noise) are re-evaluated by exact
   refit CV.
2. The best ``confirm`` candidates are re-evaluated by exact refit CV, and confirmation
   goes on down the ranking while the next approximate score is still below the best
   exact error found, or equal to it when that error is not 0 (at most
   ``CONFIRM_LIMIT * confirm`` candidates; order inf is often one held-out point off
   either way: on breast-cancer split 2 six candidates tied at 11/341, the confirmed
   three were exactly 11/341 too, and a fourth, exactly 10/341, was GridSearchCV's
   choice and the better model on the test half, 0.029 -> 0.023); the chosen
   candidate is the best confirmed one by exact error. A candidate that ties one
   already taken in the same kernel setting (same approximate score: the same model to
   the approximation's precision, typically neighbouring lam on a plateau) is passed
   over for the first ``confirm`` places, so that they reach other kernel settings. When
   the first confirmation's exact error is 0 (CV errors, one worker), the candidates
   after it in grid order are not confirmed: they could only tie, and ties go to the
   smaller index.

Cost: one exact refit CV (t fits) per rechecked or confirmed candidate.
"""

from __future__ import annotations

from contextlib import closing

import numpy as np

from ..backends import run_tasks
from ..checkpointing.record_checks import BIF_FLAGS
from ..tasks import exact_task

# Names of the safeguarded methods (kept for reports written against the old names).
APPROXIMATE = ("bif", "gacv")
# Confirmation may extend to this many times ``confirm`` candidates (see safeguards).
CONFIRM_LIMIT = 5


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


def _spread_ties(pool, candidates, count):
    """The ranked ``pool`` with its first ``count`` places free of repeated (kernel
    setting, approximate score) pairs; the passed-over candidates follow in rank order.

    On vowel's one-vs-one pairs the three best order-inf scores were one kernel column's
    three smallest lam, all equal, while the exactly best kernel ranked fourth. O(|pool|).
    """
    first, later, seen = [], [], set()
    for i in pool:
        key = (candidates[i].get("setting"), candidates[i]["score"])
        if len(first) < count and key not in seen:
            seen.add(key)
            first.append(i)
        else:
            later.append(i)
    return first + later


def run_safeguards(candidates, method, options, average, shared, store, execution,
                   heldout=None, values=None):
    """Exact refits of degenerate candidates, then of the best ``options.confirm`` ones.

    ``method`` is the search's CV method object; its ``score_is_error`` says whether
    scores are CV errors (GACV's are not: its rechecked candidates keep their value, are
    not confirmed again and the confirmation does not extend down the ranking).
    ``shared`` holds the arguments of :func:`kernelcv.selection.tasks.exact_task` common
    to all candidates; ``store`` an optional checkpoint; ``execution`` the workers.
    Returns the rechecked and the confirmed indices. ``heldout``, a dict, receives the
    multiclass held-out class codes of each refit candidate (index -> (n,) codes);
    ``values``, a dict, a classifier's held-out decision values (index -> (n,), or
    (n, m) machine values for m binary machines).
    """
    done = dict(store.confirmations) if store else {}
    confirm = options.confirm
    is_error = method.score_is_error

    def run_exact(indices, stage):
        todo = [i for i in indices if i not in done]
        tasks = []
        for i in todo:
            candidate = candidates[i]
            setting = {key: candidate[key] for key in ("kernel", "gamma", "degree", "coef0")
                       if key in candidate}
            tasks.append({"setting": setting, "lam": candidate["lam"],
                          "n_folds": candidate["n_folds"]})
        execution.report(stage, len(indices) - len(todo), len(indices))
        finished = len(indices) - len(todo)
        with closing(run_tasks(exact_task, tasks, shared=shared, n_jobs=execution.n_jobs,
                               backend=execution.backend,
                               scheduler=execution.scheduler)) as results:
            for position, result in results:
                done[todo[position]] = result
                if store is not None:
                    store.add_confirmation(todo[position], result)
                finished += 1
                execution.report(stage, finished, len(indices))
        for i in indices:
            candidates[i]["exact_error"] = _exact_value(done[i], average)
            candidates[i]["exact_fold_errors"] = list(done[i]["fold_errors"])
            candidates[i]["exact_seconds"] = done[i]["seconds"]
            if heldout is not None and done[i].get("heldout_codes") is not None:
                heldout[i] = np.asarray(done[i]["heldout_codes"], dtype=np.intp)
            if values is not None and done[i].get("heldout_values") is not None:
                values[i] = np.asarray(done[i]["heldout_values"], dtype=np.float64)

    rechecked = []
    if options.recheck_degenerate:
        rechecked = [i for i, c in enumerate(candidates) if c["degenerate"]]
        if rechecked:
            run_exact(rechecked, "recheck")
            for i in rechecked:
                candidates[i]["status"] = "rechecked"
                if is_error:
                    candidates[i]["approx_score"] = candidates[i]["score"]
                    candidates[i]["score"] = candidates[i]["exact_error"]
    confirmed = []
    if confirm > 0:
        pool = [i for i in range(len(candidates))
                if is_error or candidates[i]["status"] != "rechecked"]
        pool.sort(key=lambda i: (candidates[i]["score"], i))
        pool = _spread_ties(pool, candidates, confirm)
        confirmed = pool[:confirm]
        if is_error and len(confirmed) > 1 and not execution.parallel:
            # An exact CV error of 0 can only be tied, and ties go to the smaller index:
            # once the first confirmation finds 0, the candidates after it in grid order
            # cannot be chosen and are not refit (fourclass split 0: 3 -> 2 confirmations).
            run_exact(confirmed[:1], "confirm")
            if candidates[confirmed[0]]["exact_error"] == 0:
                confirmed = [i for i in confirmed if i <= confirmed[0]]
        run_exact(confirmed, "confirm")
        # Approximate scores are optimistic where the kernel is nearly degenerate, so the
        # best few may all be mirages: go on down the ranking while the next approximate
        # score still beats the best exact error found (CV errors only; GACV's scale
        # differs), up to CONFIRM_LIMIT times ``confirm``.
        limit = min(len(pool), CONFIRM_LIMIT * confirm)
        while is_error and len(confirmed) < limit:
            best_exact = min(candidates[i]["exact_error"] for i in confirmed)
            following = pool[len(confirmed)]
            score = candidates[following]["score"]
            # A tie with the best exact error is confirmed too (the approximation may be
            # a point off either way), unless that error is 0, which only ties.
            if not (score < best_exact or (score == best_exact and best_exact > 0)):
                break
            confirmed.append(following)
            run_exact([following], "confirm")
        confirmed.sort()
        for i in confirmed:
            candidates[i]["status"] = "confirmed"
    return rechecked, confirmed


def choose(candidates, safeguarded, score_is_error, confirmed, rechecked,
           chosen=None, interior=None) -> int:
    """Best candidate: by exact error among the refit pool, else by score (ties: grid
    order, as GridSearchCV; with ``interior``, the candidate farthest from the grid's
    edges first).

    The refit pool of a safeguarded method is every candidate with an exact error: the
    confirmed ones and the rechecked (degenerate) ones, so no candidate with a better
    exact error than the choice is left behind. ``chosen`` = ``(setting, lam position)``:
    a method that walked the grid itself made the choice (the rff feature growth).
    ``interior(index)``: a candidate's distance in grid steps from the nearest edge
    (:func:`~kernelcv.selection.after_grid.edges.edge_distance`), for default grids.
    """
    if chosen is not None:
        return [i for i, c in enumerate(candidates) if c["setting"] == chosen[0]][chosen[1]]

    def inward(i):
        return 0 if interior is None else -interior(i)

    if safeguarded and confirmed:
        pool = set(confirmed) | set(rechecked)
        return min(pool, key=lambda i: (candidates[i]["exact_error"], inward(i), i))
    return min(range(len(candidates)), key=lambda i: (candidates[i]["score"], inward(i), i))


def none_finite(candidates) -> bool:
    """Whether no candidate has a finite score or exact error (every one inf or NaN).

    The "best" of such a search is only the first in grid order: nothing was compared.
    """
    values = [c["score"] for c in candidates]
    values += [c["exact_error"] for c in candidates if c.get("exact_error") is not None]
    return not any(np.isfinite(v) for v in values if v is not None)


def flagged_counts(candidates) -> dict:
    """How many candidates' BIF values are flagged: ``{"unconverged": k, "ill_conditioned":
    m, "uncertified": u}`` (truncation, rounding error, certified bound above tolerance; 0
    for the other criteria)."""
    return {flag: sum(bool(c.get(flag)) for c in candidates) for flag in BIF_FLAGS}


def flagged_note(candidates) -> list[str]:
    """One note saying how many candidates are flagged, or none."""
    counts = flagged_counts(candidates)
    if not any(counts.values()):
        return []
    parts = [f"{counts['unconverged']} unconverged (BIF series truncation above tolerance)"
             if counts["unconverged"] else "",
             f"{counts['ill_conditioned']} ill-conditioned (rounding at tiny n*lam above "
             "tolerance)" if counts["ill_conditioned"] else "",
             f"{counts['uncertified']} uncertified (points changing loss piece may move "
             "the value by more than the tolerance)" if counts["uncertified"] else ""]
    return [f"{len(candidates)} candidates, BIF values flagged: "
            + ", ".join(part for part in parts if part)
            + "; their scores are not to be trusted, only exact_error is (candidates' "
            "unconverged / ill_conditioned / uncertified)"]


NONE_FINITE_WARNING = (
    "every candidate's CV error is infinite or NaN, so none is better than another and the "
    "reported best is only the first in grid order: the computation overflowed (put X and "
    "y on a reasonable scale, e.g. standardize them) or lam is too small for the kernel")


def rank(candidates):
    """``rank`` 1 = best score (ties share the smallest rank, as in GridSearchCV)."""
    scores = np.array([c["score"] for c in candidates], dtype=np.float64)
    for c, score in zip(candidates, scores, strict=True):
        c["rank"] = int(np.sum(scores < score)) + 1
