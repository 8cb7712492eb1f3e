"""A resumed search does not let its checkpoint decide: the choice is recomputed.

A checkpoint's lines carry checksums, but the checksum's recipe is public: a line can be
edited and signed again (a forged "CV error 0.0" chose the model). So when a search
resumed from a checkpoint, the candidate it chose and its rivals -- every candidate whose
trusted value lies within one standard error of the choice's -- whose values came from
the checkpoint are evaluated again by exact refit CV in this run, their values replaced by
the recomputed ones, and the choice made again; until the chosen candidate's value was
computed in this run. A recomputed value that differs from the checkpoint's is named in
a note. Cost: one exact CV (t fits) per recomputed candidate, usually a handful.
"""

from __future__ import annotations

from contextlib import closing

import numpy as np

from ..backends import run_tasks
from ..tasks import exact_task
from .safeguards import choose

__all__ = ["recompute_resumed_choice"]


def _value(candidate) -> float:
    value = candidate["exact_error"] if candidate["exact_error"] is not None \
        else candidate["score"]
    return np.inf if value is None or not np.isfinite(value) else float(value)


def _standard_error(candidate) -> float:
    folds = candidate.get("exact_fold_errors") or candidate.get("fold_errors")
    if not folds or len(folds) < 2:
        return 0.0
    return float(np.std(folds, ddof=1) / np.sqrt(len(folds)))


def recompute_resumed_choice(candidates, best_index, from_checkpoint, method, average,
                             shared, execution, confirmed, rechecked):
    """Recompute the choice and its rivals that came from a checkpoint; returns the new
    best index, the confirmed indices and the notes.

    ``from_checkpoint``: indices of candidates whose values were read from the
    checkpoint (their setting's records or their confirmation).
    """
    notes = []
    recomputed: set[int] = set()
    differing = []
    # Only values the choice is made on: exact ones (an exact method's scores, a
    # safeguarded method's confirmations); approximate scores were never trusted.
    trusted = {i for i in from_checkpoint
               if method.exact or candidates[i]["exact_error"] is not None}
    while best_index in trusted - recomputed:
        best = candidates[best_index]
        bound = _value(best) + _standard_error(best)
        todo = [i for i in sorted(trusted - recomputed)
                if i == best_index or _value(candidates[i]) <= bound]
        tasks = [{"setting": {key: candidates[i][key]
                              for key in ("kernel", "gamma", "degree", "coef0")
                              if key in candidates[i]},
                  "lam": candidates[i]["lam"], "n_folds": candidates[i]["n_folds"]}
                 for i in todo]
        with closing(run_tasks(exact_task, tasks, shared=shared, n_jobs=execution.n_jobs,
                               backend=execution.backend,
                               scheduler=execution.scheduler)) as results:
            for position, result in results:
                i = todo[position]
                fresh = (float(np.mean(result["fold_errors"]))
                         if average == "folds" else float(result["cv_error"]))
                recomputed.add(i)
                stored = candidates[i]["exact_error"]
                if stored is not None and np.isclose(fresh, stored, rtol=1e-9, atol=1e-12):
                    continue  # confirmed: the checkpoint's value stands (same report)
                differing.append((i, _value(candidates[i]), fresh))
                candidates[i]["exact_error"] = fresh
                candidates[i]["exact_fold_errors"] = list(result["fold_errors"])
                if method.exact:
                    candidates[i]["score"] = fresh
                    candidates[i]["fold_errors"] = list(result["fold_errors"])
        best_index = choose(candidates, method.safeguarded, method.score_is_error,
                            confirmed, rechecked)
    if recomputed:
        notes.append(f"resumed from a checkpoint: the choice and {len(recomputed) - 1} "
                     "rival(s) within one standard error were recomputed by exact refit CV "
                     "in this run (a checkpoint never decides by itself)")
    for i, old, fresh in differing:
        notes.append(f"candidate {i}: the checkpoint's value {old:.6g} differs from the "
                     f"recomputed {fresh:.6g}; the recomputed one is used (the checkpoint "
                     "was edited or made by another version)")
    return best_index, confirmed, notes
