"""Exact local refinement of a random-feature search: a walk on the grid by refit CV.

The feature-space CV (``method="rff"``) ranks (gamma, lam) for a *linear* machine on D
random features, with its own loss (squared hinge by default); its best region is near
the exact kernel machine's, but the winner itself often is not the kernel machine's best
(on the Raetsch sets ringnorm, splice and waveform the final SVC's test accuracy was
significantly worse than after exact grid search, measured). The refinement checks the
choice where the exact refits are affordable:

1. start one grid step from the feature-space winner towards larger gamma and smaller C
   (:func:`ridge_start`: gamma x 4, C / 4 on the paper's grid), call it p;
2. compute the exact refit CV error of the final kernel machine
   (:mod:`kernelcv.random_features.kernel_refit`) at p and at its grid neighbours (the up to 4
   points one step away in gamma or in lam: a compass search);
3. move to the best of them by (exact error, feature-space score, grid index) and repeat
   from 2 until p is the best of its neighbourhood or ``max_evals`` points are spent;
4. a local minimum whose exact error is above the feature-space winner's score plus two
   standard errors of its fold errors is a region where the two models disagree (SVC at
   a tiny C predicts by its intercept alone, whatever gamma: a plateau at the majority
   rate where the squared-hinge linear model still scores 0.12; measured on TorchKM's
   simulated data with its C grid down to 5e-7): the walk goes on from the best-scored
   point not yet visited, within the same budget;
5. the result is the best point visited.

A neighbour only matters if it beats the best point so far, so its SVC refits stop
after the fold that already puts its CV error above that best (status ``pruned``): the
walk and its result are unchanged, and 1-20 % of the refit time is saved (simulated on
the exact per-fold errors of image, splice, ringnorm and waveform).

The last Gram matrix is kept for the next point of the same gamma (SVC: when the memory
budget allows, else LIBSVM computes kernel rows itself). Cost: one exact t-fold CV (t
kernel fits) per visited point, a small fraction of the 143 points of a full exact grid
search; the compass walk needed about 40 % fewer refits than one over all 8 neighbours,
with the same test accuracy on ringnorm, splice and waveform (simulated on the exact CV
surfaces of 3-5 splits each). It grows like the kernel fits (O(n^2) or worse), not
linearly: the search refines automatically only up to :data:`REFINE_AUTO_LIMIT` samples.
"""

from __future__ import annotations

import time

import numpy as np

from ..exceptions import KernelCVError, MemoryBudgetError
from ..kernels import GramFactory, make_kernel
from ..memory import check_dense_budget
from . import kernel_refit

# refine="auto" refines searches on at most this many samples.
REFINE_AUTO_LIMIT = 5000
# Default budget of exact refit CVs for one refinement.
REFINE_MAX_EVALS = 30


def refit_name(machine) -> str:
    """What the refinement refits for a :class:`~kernelcv.machines.Machine`: ``"svm"`` for
    the binary svm (scikit-learn's SVC), else the kernelcv machine, multiclass ones named
    with their scheme (``"one-vs-one svm"``: the Huber SVMs of the other methods).
    The functions below that take a ``machine`` string take this name."""
    if not machine.is_multiclass:
        return machine.name
    scheme = "one-vs-one" if machine.multiclass == "ovo" else "one-vs-rest"
    return f"{scheme} {machine.name}"


def refit_matrices(machine: str, workers: int = 1) -> float:
    """Dense n x n matrices the exact refits hold at once.

    SVC with a precomputed kernel: the distances, one Gram matrix and a fold's block per
    worker thread (2 + workers). kernelcv machines: the Gram matrices and the solver's
    work (3.5); one-vs-one schemes also copy the pairs' blocks and the other classes'
    blocks (measured with tracemalloc at n = 1,500: 6.5 with 3 and 6 classes).
    """
    if machine == "svm":
        return 2.0 + max(workers, 1)
    return 6.5 if machine.startswith("one-vs-one") else 3.5


def dense_refits_fit(machine: str, n: int, memory_budget=None, workers: int = 1) -> bool:
    """Whether the dense refits of :func:`refit_matrices` fit the memory budget.

    When they do not, SVC refits go on without n x n matrices (LIBSVM computes kernel
    rows itself), the kernelcv machines cannot refine.
    """
    try:
        check_dense_budget(n, n, refit_matrices(machine, workers), "", memory_budget)
    except MemoryBudgetError:
        return False
    return True


def check_refine(refine, max_evals):
    """``refine`` is "auto", True or False; ``max_evals`` an integer >= 1."""
    if not (refine is True or refine is False or (isinstance(refine, str)
                                                   and refine == "auto")):
        raise KernelCVError(f"refine must be 'auto', True or False, got {refine!r}")
    if (isinstance(max_evals, bool) or not isinstance(max_evals, int | np.integer)
            or max_evals < 1):
        raise KernelCVError(f"refine_evals must be an integer >= 1, got {max_evals!r}")


def refine_for_final(refine, final):
    """The refinement checks the kernel machine: none when the linear model is final.

    ``final="linear"`` turns ``refine="auto"`` off and refuses ``refine=True``.
    """
    if final != "linear":
        return refine
    if refine is True:
        raise KernelCVError("refine=True (--refine on) checks the exact kernel machine, but "
                            "final='linear' (--final linear) keeps the linear model in "
                            "feature space; drop one of them")
    return False if isinstance(refine, str) and refine == "auto" else refine


def refine_wanted(refine, n_samples: int) -> bool:
    """Whether to refine: always (True), never (False), or up to the auto limit."""
    if refine == "auto":
        return n_samples <= REFINE_AUTO_LIMIT
    return bool(refine)


def _columns(candidates) -> list[list[tuple[float, int]]]:
    """(lam, index) pairs of each gamma, gammas ascending, lams ascending."""
    by_gamma: dict[float, list[tuple[float, int]]] = {}
    for i, c in enumerate(candidates):
        by_gamma.setdefault(float(c["gamma"]), []).append((float(c["lam"]), i))
    return [sorted(by_gamma[g]) for g in sorted(by_gamma)]


def _nearest(column, lam: float) -> int:
    """Position in ``column`` of the lam nearest to ``lam`` in log scale (ties: smaller)."""
    return min(range(len(column)),
               key=lambda k: (abs(np.log(column[k][0] / lam)), column[k][0]))


def neighbours(candidates) -> dict[int, list[int]]:
    """Grid neighbours of every candidate: one step in gamma or in lam (4-neighbourhood).

    In lam: the next smaller and larger lam of the same gamma. In gamma: at the next
    smaller and larger gamma, the lam nearest in log scale (on a rectangular grid the same
    lam), so a ragged grid (its own lam list per gamma) stays connected.
    """
    columns = _columns(candidates)
    result = {}
    for g, column in enumerate(columns):
        for k, (lam, i) in enumerate(column):
            around = [column[k + step][1] for step in (-1, 1) if 0 <= k + step < len(column)]
            for h in (g - 1, g + 1):
                if 0 <= h < len(columns):
                    around.append(columns[h][_nearest(columns[h], lam)][1])
            result[i] = around
    return result


def ridge_start(candidates, index: int) -> int:
    """Where the walk starts: one grid step from ``index`` to larger gamma and larger lam.

    The diagonal step (on the paper's grid gamma x 4 and C / 4, i.e. gamma C kept) follows
    the ridge along which small-gamma RBF SVMs barely change (Keerthi & Lin 2003: as
    gamma -> 0 with gamma C fixed the SVM tends to a linear one), and it moves away from
    the two biases of the feature-space winner: D features cannot resolve narrow kernels
    (too small a gamma wins) and the linear squared-hinge model prefers a large C, where
    LIBSVM is slowest. A step that leaves the grid is not taken (per coordinate). Measured
    on the exact CV surfaces of image, splice, ringnorm and waveform (3-5 splits each):
    the same test accuracy as starting at the winner (no set significantly worse than
    exact grid search), with 35-50 % less refit time on splice and image.
    """
    columns = _columns(candidates)
    lam = float(candidates[index]["lam"])
    g = next(h for h, column in enumerate(columns) if any(i == index for _, i in column))
    column = columns[min(g + 1, len(columns) - 1)]
    k = _nearest(column, lam)
    return column[min(k + 1, len(column) - 1)][1]


class RefitEvaluator:
    """Exact refit CV errors of the final kernel machine, by gamma, with shared distances.

    Parameters
    ----------
    X, y, fold_ids : the search's data (labels +-1 for classifiers) and folds.
    machine : the search's :class:`kernelcv.machines.Machine` (binary svm refits are
        SVC's; see :func:`refit_name`).
    average : "pooled" or "folds" (see :func:`kernelcv.selection.search.grid_search`).
    workers : threads fitting the folds of one SVC refit CV at once (svm only).
    memory_budget : bytes or e.g. "8G" (see :mod:`kernelcv.memory`).
    """

    def __init__(self, X, y, fold_ids, machine, average="pooled", workers=1,
                 memory_budget=None):
        self.X, self.y, self.fold_ids = X, y, fold_ids
        self.machine_spec, self.average = machine, average
        # threads beyond the number of folds would never run (svc_refit_cv caps them)
        self.workers = min(max(int(workers), 1), int(fold_ids.max()) + 1)
        self.machine = refit_name(machine)
        budget = memory_budget
        self.factory, self._gram_gamma, self._gram_cache = None, None, None
        if dense_refits_fit(self.machine, y.shape[0], budget, self.workers):
            self.factory = GramFactory(X, memory_budget=budget)
        elif self.machine != "svm":
            raise MemoryBudgetError(f"the exact {self.machine} refits need dense "
                                    f"{y.shape[0]} x {y.shape[0]} matrices beyond the "
                                    "memory budget")

    def __call__(self, gamma: float, lams, stop_above=None) -> list[dict]:
        """Records (``error``, ``seconds``, ...) of the exact refit CV of each lam.

        ``stop_above``: SVC refits stop after the fold that puts the error above it
        (``error`` None, ``pruned`` True, ``error_at_least``); kernelcv machines ignore it.
        """
        tic = time.perf_counter()
        K = self._gram(gamma)
        setup = (time.perf_counter() - tic) / len(lams)
        if self.machine == "svm":
            records = kernel_refit.svc_refit_cv(
                self.X, self.y, self.fold_ids, gamma, lams, K, stop_above=stop_above,
                average=self.average, n_jobs=self.workers)
        else:
            records = kernel_refit.machine_refit_cv(K, self.y, self.fold_ids, lams,
                                                    self.machine_spec)
        for record in records:
            record["seconds"] += setup
            if record["cv_error"] is None:
                record["error"] = None  # stopped early (pruned) or the refit failed
            elif self.average == "folds":
                record["error"] = float(np.mean(record["fold_errors"]))
            else:
                record["error"] = record["cv_error"]
        return records

    def _gram(self, gamma: float):
        """The Gram matrix of gamma (the last one is kept), or None without a factory."""
        if self.factory is None:
            return None
        if self._gram_gamma != gamma:
            self._gram_cache = None  # free the old matrix before building the new one
            self._gram_cache = self.factory.gram(make_kernel("rbf", gamma))
            self._gram_gamma = gamma
        return self._gram_cache


def refine_walk(candidates, start: int, evaluate, max_evals=REFINE_MAX_EVALS,
                progress=None) -> tuple[int, list[int]]:
    """Walk from ``start`` to a local minimum of the exact refit CV error (see module doc).

    Parameters
    ----------
    candidates : the search's candidates (``gamma``, ``lam``, ``score``); the visited
        ones get ``exact_error``, ``exact_seconds`` and ``status = "refined"``, or
        ``status = "pruned"`` with ``exact_error`` None and ``exact_error_at_least``
        when their refit CV stopped early.
    start : index of the first point (the search starts at :func:`ridge_start` of the
        feature-space winner).
    evaluate : ``evaluate(gamma, lams, stop_above) -> records`` with ``error``,
        ``seconds`` (a :class:`RefitEvaluator`); ``stop_above`` is the best exact error
        so far: a point whose first folds already exceed it cannot be chosen, nor be
        moved to, so its remaining folds may be skipped (record ``pruned``,
        ``error_at_least``). The walk and its result are the same as without it.
    max_evals : at most this many points visited (pruned ones included; a pruned point
        that a restarted walk meets again is refitted to the end without counting
        twice). In each neighbourhood the current point goes first, then the others by
        feature-space score, so a budget cut keeps the best-scored ones.
    progress : callable ``progress("refine", done, max_evals)``.

    Returns
    -------
    best : index of the best visited candidate by (exact error, score, index).
    visited : indices of the visited candidates, in the order they were evaluated.
    """
    around = neighbours(candidates)
    visited: list[int] = []

    def error_key(i):
        """A pruned point ranks by its bound (above the best), a failed refit last."""
        c = candidates[i]
        if c["exact_error"] is not None:
            return c["exact_error"]
        return c.get("exact_error_at_least", np.inf)

    def key(i):
        return (error_key(i), candidates[i]["score"], i)

    restarted = False

    def run(i):
        best = min((error_key(j) for j in visited), default=np.inf)
        # A restarted walk compares points that are all worse than the best so far: its
        # refits run to the end so that its moves are those of a walk without pruning.
        bound = None if restarted or np.isinf(best) else best
        record = evaluate(float(candidates[i]["gamma"]), [candidates[i]["lam"]], bound)[0]
        candidates[i].update(exact_error=record["error"], exact_seconds=record["seconds"],
                             status="refined")
        if record["error"] is not None and record.get("fold_errors") is not None:
            candidates[i]["exact_fold_errors"] = [float(e) for e in record["fold_errors"]]
        if record.get("unconverged"):
            candidates[i]["exact_unconverged"] = True
        if record.get("pruned"):
            candidates[i].update(status="pruned",
                                 exact_error_at_least=record["error_at_least"])
        if i not in visited:
            visited.append(i)
        if progress is not None:
            progress("refine", len(visited), max(len(visited), max_evals))

    expected = expected_error(candidates)
    current = start
    while True:
        pool = [current, *around[current]]
        if restarted:  # points pruned by the first walk get their exact error
            for i in pool:
                if i in visited and candidates[i]["status"] == "pruned":
                    run(i)
        todo = sorted((i for i in pool if i not in visited),
                      key=lambda i: (i != current, candidates[i]["score"], i))
        for i in todo[:max(max_evals - len(visited), 0)]:
            run(i)
        best = min((i for i in pool if i in visited), key=key)
        if len(visited) >= max_evals:
            break
        if best != current:
            current = best
            continue
        # A local minimum. One far above what the feature space expects lies in a region
        # where the kernel machine and the linear model disagree (SVC at a tiny C predicts
        # by its intercept alone: a plateau at the majority rate, no way down): walk again
        # from the best-scored point not yet visited.
        if error_key(min(visited, key=key)) <= expected:
            break
        fresh = [i for i in range(len(candidates)) if i not in visited
                 and candidates[i]["score"] is not None
                 and np.isfinite(candidates[i]["score"])]
        if not fresh:
            break
        current = min(fresh, key=lambda i: (candidates[i]["score"], i))
        restarted = True
    return min(visited, key=key), visited


def expected_error(candidates) -> float:
    """The exact error a refinement should reach: the feature-space winner's score plus
    two standard errors of its fold errors (``std / sqrt(t)``) and ``1e-12``.

    A walk that stops above it restarts (:func:`refine_walk`). O(number of candidates).
    """
    scored = [c for c in candidates if c.get("score") is not None
              and np.isfinite(c["score"])]
    if not scored:
        return np.inf
    winner = min(scored, key=lambda c: c["score"])
    folds = np.asarray(winner.get("fold_errors") or [], dtype=float)
    spread = 2.0 * folds.std(ddof=1) / np.sqrt(folds.size) if folds.size > 1 else 0.0
    return float(winner["score"]) + float(spread) + 1e-12


def check_refine_memory(refine, machine: str, n: int, memory_budget=None):
    """Refuse ``refine=True`` up front when the kernelcv refits exceed the memory budget."""
    if refine is True and machine != "svm":
        check_dense_budget(n, n, refit_matrices(machine),
                           f"the exact {machine} refits of refine=True on {n} samples",
                           memory_budget)


def refine_search(X, y, fold_ids, candidates, start, machine, average, refine, max_evals,
                  progress=None, workers=1, memory_budget=None
                  ) -> tuple[int, list[int], list[str]]:
    """Run the refinement of a feature-space search when wanted; see the module docstring.

    ``machine``: the search's :class:`kernelcv.machines.Machine`; ``workers``: threads
    for the folds of each SVC refit CV (the search's ``n_jobs``).

    Returns the chosen index (``start`` when not refined), the visited indices and notes.
    """
    n = y.shape[0]
    spec, machine = machine, refit_name(machine)
    if not refine_wanted(refine, n):
        if refine == "auto":
            return start, [], [
                f"the choice was not refined by exact refit CV: n = {n} > "
                f"{REFINE_AUTO_LIMIT} samples, where each exact refit CV costs t kernel "
                "fits; refine=True (--refine on) walks the grid from it by exact CV"]
        return start, [], []
    if machine != "svm" and not dense_refits_fit(machine, n, memory_budget):
        return start, [], [
            f"the choice was not refined: the exact {machine} refits need dense {n} x {n} "
            "matrices beyond the memory budget"]
    evaluate = RefitEvaluator(X, y, fold_ids, spec, average, workers, memory_budget)
    first = ridge_start(candidates, start)
    best, visited = refine_walk(candidates, first, evaluate, max_evals, progress)
    final = "SVC" if machine == "svm" else machine
    where = ("one step along the gamma C ridge from the feature-space choice"
             if first != start else "the feature-space choice (a corner of the grid)")
    note = (f"refined by exact refit CV of the final {final}: {len(visited)} grid points "
            f"visited from {where}")
    stopped = [i for i in visited if candidates[i].get("exact_unconverged")]
    if stopped:
        note += (f" ({len(stopped)} of their exact refit CVs had fits stopped at the solver's "
                 "iteration limit: their errors may be inexact)")
    pruned = [i for i in visited if candidates[i]["status"] == "pruned"]
    if pruned:
        note += (f" ({len(pruned)} of them stopped early, once their first folds exceeded "
                 "the best exact error: status 'pruned', exact_error_at_least)")
    if best != start:
        def point(c):
            if c["exact_error"] is not None:
                error = f"{c['exact_error']:.4g}"
            elif c["status"] == "pruned":
                error = f">= {c['exact_error_at_least']:.4g}"
            else:
                error = "failed"
            return f"gamma = {c['gamma']:.4g}, lam = {c['lam']:.4g} (exact CV error {error})"

        note += (f"; chose {point(candidates[best])} instead of the feature-space choice "
                 f"gamma = {candidates[start]['gamma']:.4g}, "
                 f"lam = {candidates[start]['lam']:.4g}")
    if len(visited) >= max_evals:
        note += f"; stopped at the budget of {max_evals} refits (refine_evals)"
    notes = [note]
    failed = [i for i in visited
              if candidates[i]["exact_error"] is None and candidates[i]["status"] != "pruned"]
    if failed:
        notes.append(f"{len(failed)} exact refits failed (non-finite predictions, e.g. a "
                     "tiny lam) and count as worst; their exact_error is null")
    return best, visited, notes
