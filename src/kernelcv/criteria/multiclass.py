"""Multiclass CV: the binary machines of a scheme, each cross-validated on the same folds.

For one candidate (a Gram matrix on all n rows and one lam) every binary machine of
:func:`kernelcv.machines.multiclass.binary_problems` is evaluated by the same criterion
(:func:`kernelcv.criteria.evaluate.evaluate_lam`: exact refits, closed form, BIF of any
order) on the rows it is trained on, with the folds restricted to those rows. A held-out
point is then classified from the values that *its* fold-out machines give it:

* one-vs-rest: every machine is trained on all rows, so its held-out values cover every
  point;
* one-vs-one: machine (a, b) is trained on the rows of a and b; a point of another class
  in fold i is predicted by the pair's model fitted without fold i (the criterion's
  "extra points": the same approximation as the fold's own members), or by the pair's
  full model when fold i holds no row of a or b.

The multiclass 0-1 error of those predictions is the CV error; it equals refit CV of the
same scheme on the same folds wherever the criterion equals refit CV (exact, closed form,
BIF order inf for KRR / LS-SVM).

Cost per candidate: the binary criteria (one-vs-rest: k on n rows; one-vs-one:
k (k - 1) / 2 on about 2n/k rows) plus, for one-vs-one, ``O(n^2 (k - 1))`` products for
the other classes' points. The one-vs-one Gram blocks are copied once per kernel setting
(about ``(2 (k - 1) / k) n^2`` floats in all), by the stacked pairs or, for a pair the
one-problem path evaluates, when it first needs its block; the kernel-free layout (rows,
targets, folds) is computed once per (codes, folds) (:func:`problem_layout`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..machines.multiclass import binary_problems, predict_codes
from ..machines.stacked import worth_stacking
from .certificate import fixed_classes, uncertified_note
from .closed_form import ClosedFormCV
from .evaluate import Evaluation, certifiable, evaluate_lam
from .result import Criterion
from .stacked_pairs import StackedPairs
from .truncation import within_tolerance

# Pairs are stacked (kernelcv.machines.stacked.worth_stacking) when there are at least
# ten of them (five classes) and the largest has at most 120 rows. Above that size the
# batch's padded systems and its slowest member's iterations cost more than the Python
# overhead they save (digits, 180-row pairs: select 17 s one by one, 30 s stacked;
# vowel, 48 rows: 7.9 s -> 4.3 s; glass, 15 pairs: 2.6 -> 2.0 s); with three pairs
# (iris, wine) there is little overhead to save and the two ways cost the same.


# One-vs-one: the kernel blocks between a pair's rows and the other classes' rows are
# kept between lam values up to this many floats in all (128 MB).
EXTRA_BLOCK_CACHE_FLOATS = 16_000_000
# Layouts of (codes, folds) kept (a search uses one for all rows and one per subsample).
LAYOUT_CACHE = 4


@dataclass(frozen=True)
class _Entry:
    """One binary machine's rows, targets and folds (none of it depends on the kernel)."""

    problem: object
    y: np.ndarray
    rows: np.ndarray | None
    folds: np.ndarray | None
    extra: tuple | None


def problem_layout(codes, fold_ids, n_classes: int, strategy: str) -> tuple:
    """The binary machines of a scheme with their rows, targets and folds, read-only.

    One-vs-one: the pair's rows, its fold ids renumbered ``0..`` over the folds that hold
    its rows, and the other classes' rows with their local fold (-1 where the fold holds
    none of the pair). Every candidate of a search has the same layout: it is kept for the
    last :data:`LAYOUT_CACHE` (codes, folds) seen (vowel's 55 pairs: 3 ms per candidate).
    """
    return _cached_layout(codes.astype(np.intp).tobytes(),
                          np.asarray(fold_ids).astype(np.intp).tobytes(), int(n_classes),
                          strategy)


@lru_cache(maxsize=LAYOUT_CACHE)
def _cached_layout(code_bytes, fold_bytes, n_classes, strategy):
    codes = np.frombuffer(code_bytes, dtype=np.intp)
    fold_ids = np.frombuffer(fold_bytes, dtype=np.intp)
    n = codes.shape[0]
    entries = []
    for problem in binary_problems(codes, n_classes, strategy):
        y = problem.targets(codes)
        y.setflags(write=False)
        if problem.rows is None:
            entries.append(_Entry(problem, y, None, None, None))
            continue
        rows = problem.rows
        present, local = np.unique(fold_ids[rows], return_inverse=True)
        to_local = np.full(int(fold_ids.max()) + 1, -1)
        to_local[present] = np.arange(present.size)
        others = np.setdiff1d(np.arange(n), rows, assume_unique=True)
        extra_folds = to_local[fold_ids[others]]
        for array in (rows, local, others, extra_folds):
            array.setflags(write=False)
        entries.append(_Entry(problem, y, rows, local, (others, extra_folds)))
    return tuple(entries)


class MulticlassCV:
    """The binary problems of one multiclass scheme on one Gram matrix and fold split.

    Parameters
    ----------
    K : (n, n) Gram matrix on all rows.
    codes : (n,) class codes ``0..k-1`` (float or int).
    fold_ids : (n,) fold ids ``0..t-1``; every training part holds every class.
    machine : a multiclass :class:`kernelcv.machines.Machine` (``n_classes``, ``multiclass``).
    closed_form : prepare the closed-form eigendecompositions (one per distinct row set:
        one for one-vs-rest, one per pair for one-vs-one).
    """

    #: Evaluate one-vs-one pairs together (:class:`StackedPairs`) for exact refits and BIF
    #: order inf; False evaluates each pair on its own (same numbers, slower).
    stack_pairs = True

    def __init__(self, K, codes, fold_ids, machine, closed_form=False, settle_flags=False):
        self.settle_flags = bool(settle_flags)
        self.K = K
        self.codes = np.asarray(codes).astype(np.intp)
        self.fold_ids = fold_ids
        self.n_classes = machine.n_classes
        self.strategy = machine.multiclass
        layout = problem_layout(self.codes, np.asarray(fold_ids), self.n_classes,
                                self.strategy)
        self.problems = [entry.problem for entry in layout]
        # the entries are shared between candidates: each part is a fresh dict over them
        self._parts = [{"y": entry.y, "folds": entry.folds, "rows": entry.rows,
                        "extra": entry.extra} for entry in layout]
        shared_closed = None
        for part in self._parts:
            if part["rows"] is None:
                part.update(K=K, folds=fold_ids)
                if closed_form:
                    if shared_closed is None:
                        shared_closed = ClosedFormCV(K, fold_ids,
                                                     fit_intercept=machine.fit_intercept)
                    part["closed"] = shared_closed
            elif closed_form:
                part["closed"] = ClosedFormCV(self._pair_block(part), part["folds"],
                                              fit_intercept=machine.fit_intercept)
        self._stacked = None  # built by the first order-inf evaluation (one-vs-one)
        self._extra_floats = 0

    def _pair_block(self, part):
        """``K[rows, rows]`` of a one-vs-one pair (made when the one-problem path needs it:
        the stacked path reads the pairs' blocks from its own copy)."""
        if "K" not in part:
            part["K"] = self.K[np.ix_(part["rows"], part["rows"])]
        return part["K"]

    def _extra_block(self, part):
        """``K[others, rows]`` of a one-vs-one pair, kept for the next lam while all
        pairs' blocks together stay within :data:`EXTRA_BLOCK_CACHE_FLOATS` (digits, 898
        rows: 5.8 M floats, whose copy was 40 ms of every lam)."""
        block = part.get("extra_K")
        if block is None:
            others, _ = part["extra"]
            block = self.K[np.ix_(others, part["rows"])]
            if self._extra_floats + block.size <= EXTRA_BLOCK_CACHE_FLOATS:
                part["extra_K"] = block
                self._extra_floats += block.size
        return block

    def evaluate(self, lam, machine, method, *, warm=None, **options) -> Evaluation:
        """Every binary machine at ``lam``; the multiclass held-out error.

        ``warm`` is the previous lam's ``Evaluation.fit`` (a list, one fit per machine);
        ``options`` go to :func:`evaluate_lam` (order, tol, atol, certify: False skips
        every enclosure, as :func:`evaluate_lam` does for one machine). The returned
        :class:`Evaluation` has the multiclass ``cv_error`` and ``fold_errors``,
        ``predictions`` the held-out class codes, ``decisions`` the (n, m) held-out values
        of the m machines, ``fit`` the list of full fits, ``degenerate`` when any machine's
        values are (likewise ``unconverged``, ``ill_conditioned`` and ``uncertified``,
        the last judged on each machine's own rows), ``heldout_ratio``
        the smallest machine's, and ``order_used`` the highest order any machine used.
        BIF of the SVM machines also bounds every machine's value at every row
        (``bounds``: (n, m) lower and upper) and flags the candidate ``uncertified`` when
        the rows whose class those bounds do not fix (``certified_error``) exceed 0.01.
        With ``settle_flags`` (a search, which keeps the flag only) the enclosures stop
        at the first uncertified machine: the flag is the same, ``bounds`` and
        ``certified_error`` are then None.
        """
        tic = time.perf_counter()
        n = self.codes.shape[0]
        decisions = np.empty((n, len(self.problems)))
        fits, orders, notes = [], [], []
        degenerate, ratio, fit_seconds = False, np.inf, 0.0
        unconverged = ill_conditioned = uncertified = False
        done = np.zeros(len(self.problems), dtype=bool)
        asked = options.pop("certify", True)  # False: no enclosures at all
        certify = method == Criterion.BIF and certifiable(machine) and asked
        lower = np.full(decisions.shape, np.nan)
        upper = np.full(decisions.shape, np.nan)
        stacked_fits = None
        stacked_order = None if method == Criterion.EXACT else "inf"
        stackable = method == Criterion.EXACT or (method == Criterion.BIF
                                                  and options.get("order") == "inf")
        # weighted pairs each have their own loss: evaluated one by one
        if (self.stack_pairs and self.strategy == "ovo" and stackable
                and not machine.weighted
                and worth_stacking([part["rows"].size for part in self._parts])
                and (warm is None or all(fit is not None for fit in warm))):
            if self._stacked is None:
                self._stacked = StackedPairs(self.K, self.fold_ids,
                                             [part["rows"] for part in self._parts],
                                             [part["y"] for part in self._parts])
            fit_tic = time.perf_counter()
            found = self._stacked.evaluate(lam, machine, method, warm, certify=certify)
            fit_seconds += time.perf_counter() - fit_tic
            stacked_fits = found.fits
            done = ~found.fallback
            decisions[:, done] = found.values[:, done]
            if done.any():
                ratio = float(np.min(found.ratio[done]))
                ill_conditioned = bool(np.any(found.ill_conditioned[done]))
                uncertified = bool(np.any(found.uncertified[done]))
            if certify and found.lower is not None:
                lower[:, done], upper[:, done] = found.lower[:, done], found.upper[:, done]
        for p, (problem, part) in enumerate(zip(self.problems, self._parts, strict=True)):
            if done[p]:
                fits.append(stacked_fits[p])
                orders.append(stacked_order)
                notes.extend(f"machine {problem.label}: {note}" for note in found.notes[p])
                continue
            # a search needs the flag only: once a machine is uncertified, the candidate is,
            # and the other machines' enclosures (a quarter of a one-vs-one search) can go
            settled = certify and self.settle_flags and uncertified
            extra = None
            if part["extra"] is not None and part["extra"][0].size:
                extra = (self._extra_block(part), part["extra"][1])
                if certify and not settled:  # k(x, x) of the other classes' points
                    extra = (*extra, np.diagonal(self.K)[part["extra"][0]])
            start = None if warm is None else warm[p]
            if stacked_fits is not None and stacked_fits[p] is not None:
                start = stacked_fits[p]  # the stack's converged fit: one Newton iteration
            ev = evaluate_lam(self._pair_block(part), part["y"], part["folds"], lam,
                              machine.problem_machine(problem), method,
                              closed=part.get("closed"), warm=start, extra=extra,
                              certify=asked and not settled, **options)
            rows = slice(None) if part["rows"] is None else part["rows"]
            decisions[rows, p] = ev.predictions
            if extra is not None:
                decisions[part["extra"][0], p] = ev.extra_predictions
            if certify and ev.bounds is not None:
                lower[rows, p], upper[rows, p] = ev.bounds[:2]
                if extra is not None and len(ev.bounds) == 4:
                    lower[part["extra"][0], p], upper[part["extra"][0], p] = ev.bounds[2:]
            fits.append(ev.fit)
            orders.append(ev.order_used)
            degenerate |= ev.degenerate
            unconverged |= ev.unconverged
            ill_conditioned |= ev.ill_conditioned
            uncertified |= ev.uncertified
            ratio = min(ratio, ev.heldout_ratio)
            fit_seconds += ev.fit_seconds
            notes.extend(f"machine {problem.label}: {note}" for note in ev.notes)
        predicted = predict_codes(decisions, self.n_classes, self.strategy)
        losses = (predicted != self.codes).astype(np.float64)
        certified = None
        settled = certify and self.settle_flags and uncertified
        if certify and not settled:  # the multiclass value: rows whose class they fix
            certified = float(np.mean(~fixed_classes(lower, upper, predicted,
                                                     self.n_classes, self.strategy)))
            if not within_tolerance(certified, float(losses.mean()), "0-1"):
                if not uncertified:
                    notes.append(uncertified_note(certified, "0-1") + " (the machines' "
                                 "votes at the other classes' points)")
                uncertified = True
        t = int(self.fold_ids.max()) + 1
        per_fold = np.bincount(self.fold_ids, weights=losses, minlength=t) / np.bincount(
            self.fold_ids, minlength=t)
        evaluation = Evaluation(
            cv_error=float(losses.mean()), fold_errors=per_fold, predictions=predicted,
            order_used=_highest_order(orders), degenerate=degenerate,
            heldout_ratio=float(ratio), fit_seconds=fit_seconds,
            seconds=time.perf_counter() - tic, fit=fits, notes=notes,
            unconverged=unconverged, ill_conditioned=ill_conditioned,
            uncertified=uncertified, certified_error=certified,
            bounds=(lower, upper) if certify and not settled else None)
        evaluation.decisions = decisions
        return evaluation


def _highest_order(orders):
    """``"inf"`` if any machine used it, else the largest int (None for non-BIF)."""
    if any(order == "inf" for order in orders):
        return "inf"
    numbers = [order for order in orders if isinstance(order, int)]
    return max(numbers) if numbers else None
