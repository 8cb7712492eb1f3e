"""``cv_results_`` of ``KernelSearchCV``: GridSearchCV's keys, filled with trusted values.

A fast search scores every candidate approximately and then re-evaluates some of them by
exact refit CV (degenerate rechecks, confirmations of the best, an rff refinement); the
choice is made on the exact values. So that a table sorted by rank never shows a
candidate the search did not trust above the chosen one:

* ``mean_test_score`` (and ``split<k>_test_score``, ``std_test_score``) hold the exact
  value where one was computed, else the approximate one -- except where that
  approximate value beats the chosen candidate's value: it was never confirmed (the
  confirmation budget ran out, or an rff refinement did not reach it), so the search did
  not trust it, and the entry is NaN with status ``unverified``;
* ``rank_test_score`` ranks ``mean_test_score`` as GridSearchCV does (ties share the
  smallest rank, NaN last), so rank 1 is always ``best_index_`` and ``best_score_`` is
  ``mean_test_score[best_index_]``;
* ``approx_test_score`` and ``exact_test_score`` keep the two kinds of value apart
  (``approx_test_score`` is the criterion's own value: equal to the exact one for exact
  methods; NaN where none is defined, e.g. GACV, which is not on the score's scale).
"""

from __future__ import annotations

import numpy as np

from ..selection.records import EXACT_STATUS


def _fold_scores(losses, sizes, default_classifier, weighted=False):
    """Per-fold scores from per-fold losses: ``correct / l_k`` as scikit-learn computes
    accuracy (default classifier score; ``1 - loss`` when the rows are weighted), else
    the negated loss."""
    if losses is None:
        return None
    losses = np.asarray(losses, dtype=np.float64)
    if default_classifier and weighted:
        return 1.0 - losses
    if default_classifier and sizes is not None:
        sizes = np.asarray(sizes, dtype=np.int64)
        return (sizes - np.rint(losses * sizes).astype(np.int64)) / sizes
    return -losses


def _to_score(loss, default_classifier):
    if loss is None:
        return np.nan
    return 1.0 - loss if default_classifier else -loss


def trusted_values(candidates, chosen: int, score_is_error: bool):
    """Per candidate ``(loss, fold losses or None, kind)`` or None (unverified).

    ``kind`` is ``"exact"`` or ``"approximate"``; ``chosen`` indexes ``candidates``.
    """
    best = candidates[chosen]
    chosen_exact = best["exact_error"] is not None
    chosen_loss = best["exact_error"] if chosen_exact else best["score"]
    # Approximate values are on the exact values' scale unless they are GACV values.
    comparable = score_is_error or not chosen_exact
    values = []
    for c in candidates:
        if c["exact_error"] is not None:
            folds = c.get("exact_fold_errors")
            if folds is None and c["status"] == EXACT_STATUS:
                folds = c["fold_errors"]
            values.append((c["exact_error"], folds, EXACT_STATUS))
        elif comparable and c["score"] is not None and c["score"] >= chosen_loss:
            values.append((c["score"], c["fold_errors"], "approximate"))
        else:
            values.append(None)
    return values


def rank_scores(means) -> np.ndarray:
    """GridSearchCV's ranks: higher is better, ties share the smallest rank, NaN last."""
    means = np.asarray(means, dtype=np.float64)
    finite = means[np.isfinite(means)]
    if finite.size == 0:
        return np.ones(means.size, dtype=np.int32)
    filled = np.where(np.isfinite(means), means, finite.min() - 1.0)
    return np.array([int(np.sum(filled > m)) + 1 for m in filled], dtype=np.int32)


def cv_results(params, candidates, chosen, *, default_classifier, score_is_error,
               lams, weighted=False) -> dict:
    """GridSearchCV-shaped results from the search's candidate records (user order).

    ``chosen`` indexes the candidate the search chose (None: choose the first with the
    best mean, as GridSearchCV); ``lams`` the searched lam of each candidate; ``weighted``:
    the fold losses are weighted by sample weights (not counts). Returns
    ``(results, best_index)``.
    """
    n = len(params)
    results: dict = {"params": params}
    for name in sorted({key for p in params for key in p}):
        column = np.ma.MaskedArray(np.empty(n, dtype=object), mask=True)
        for i, p in enumerate(params):
            if name in p:
                column[i] = p[name]
        results[f"param_{name}"] = column
    reference = 0 if chosen is None else chosen
    if chosen is None:
        reference = min(range(n), key=lambda i: (
            np.inf if candidates[i]["score"] is None else candidates[i]["score"], i))
    values = trusted_values(candidates, reference, score_is_error)
    splits = [None if v is None else _fold_scores(v[1], c["fold_sizes"], default_classifier,
                                                  weighted)
              for v, c in zip(values, candidates, strict=True)]
    counts = {len(c["fold_sizes"]) for c in candidates if c["fold_sizes"] is not None}
    n_splits = counts.pop() if len(counts) == 1 else None
    if n_splits is not None:
        for k in range(n_splits):
            results[f"split{k}_test_score"] = np.array(
                [np.nan if s is None or len(s) != n_splits else s[k] for s in splits])
    # Averaged as GridSearchCV does (np.average of the split scores), so exact searches
    # produce bit-identical means and ties.
    means = np.array([np.nan if v is None else (np.average(s) if s is not None
                                                else _to_score(v[0], default_classifier))
                      for v, s in zip(values, splits, strict=True)])
    results["mean_test_score"] = means
    results["std_test_score"] = np.array([np.nan if s is None else np.std(s)
                                          for s in splits])
    results["rank_test_score"] = rank_scores(means)
    results["mean_fit_time"] = np.array([c["seconds"] for c in candidates])
    # Folds are not fitted one by one (one factorisation per kernel setting serves them):
    # no per-fold spread, and the scoring is part of the fit time.
    results["std_fit_time"] = np.zeros(n)
    results["mean_score_time"] = np.zeros(n)
    results["std_score_time"] = np.zeros(n)
    results["approx_test_score"] = np.array(
        [_to_score(c.get("approx_score", c["score"]), default_classifier)
         if score_is_error and c["score"] is not None else np.nan for c in candidates])
    # The exact value as mean_test_score holds it (the average of the fold scores).
    results["exact_test_score"] = np.array(
        [means[i] if v is not None and v[2] == EXACT_STATUS
         else _to_score(c["exact_error"], default_classifier)
         for i, (v, c) in enumerate(zip(values, candidates, strict=True))])
    results["lam"] = np.array(lams, dtype=np.float64)
    results["method"] = np.array([c["method"] for c in candidates], dtype=object)
    results["order_used"] = np.array([c["order_used"] for c in candidates], dtype=object)
    results["n_folds"] = np.array([c["n_folds"] for c in candidates])
    results["status"] = np.array([c["status"] if v is not None or c["status"] == "screened out"
                                  else "unverified"
                                  for c, v in zip(candidates, values, strict=True)],
                                 dtype=object)
    results["degenerate"] = np.array([c["degenerate"] for c in candidates])
    best_index = int(np.argmax(np.where(np.isfinite(means), means, -np.inf))) \
        if chosen is None else chosen
    return results, best_index
