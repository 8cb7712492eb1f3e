"""The CV methods of a grid search as objects: one class per method, one small protocol.

A method object is a frozen, picklable value (it travels to joblib and Dask workers). Each
knows

* which machines and kernels it accepts (:meth:`CVMethod.bind`, which also resolves
  machine-dependent defaults and returns a checked copy),
* its default search space (:meth:`CVMethod.default_gammas`, :meth:`CVMethod.default_lams`),
* its memory need (:meth:`CVMethod.check_memory`),
* how to evaluate one kernel setting for every lam (:meth:`CVMethod.evaluate_setting`, the
  task run by :func:`kernelcv.selection.tasks.evaluate_task`), and an exact refit of one
  candidate (:meth:`CVMethod.exact_candidate`),
* what the search does after the grid: the exact safeguards (``safeguarded``), a
  refinement (``refines``) or nothing -- :func:`kernelcv.selection.search.run_search`
  reads these flags and never a method's name.

The kernel methods (:class:`ExactRefit`, :class:`ClosedForm`, :class:`BIF` and
:class:`~kernelcv.selection.gacv_method.GACV`) build one Gram matrix per kernel setting
and take the lam values in decreasing order, so each full fit warm-starts from the
previous one, or from the
search's stored fit at the nearest lam (:mod:`kernelcv.selection.warm_starts`; closed form
shares one eigendecomposition instead). The random-feature method lives in
:mod:`kernelcv.random_features.method`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from .._threads import blas_threads_for
from ..criteria.closed_form import ClosedFormCV
from ..criteria.evaluate import evaluate_lam
from ..criteria.multiclass import MulticlassCV
from ..criteria.result import Criterion, weigh_errors
from ..criteria.scoring import HeldoutScore
from ..exceptions import KernelCVError
from ..kernels import GramFactory, kept_grams_within
from ..machines import Machine
from ..memory import check_dense_budget
from ..validation import make_folds
from .after_grid.edges import edge_note
from .after_grid.safeguards import run_safeguards
from .granularity import (
    RULES,
    GranularityRule,
    adaptive_tolerance,
    bound_rule,
    check_tolerance,
)
from .records import cv_record, fold_losses, gram_for_setting, loss_delta, parse_order
from .space.grids import default_gammas, default_lams, reserve_lams
from .warm_starts import WarmStarts

__all__ = ["BIF", "CVMethod", "ClosedForm", "ExactRefit", "GranularityRule", "GridRun",
           "cv_record", "gram_for_setting", "loss_delta", "parse_order"]


@dataclass
class GridRun:
    """What the steps after the grid work with: the search's data, folds and options, and
    what they fill in (``heldout``, ``values``: the held-out class codes and decision values
    of every candidate refitted exactly, index -> array).

    :func:`~kernelcv.selection.search.run_search` builds it once the grid is evaluated and
    hands it to the method's hooks (:meth:`CVMethod.check_grid`,
    :meth:`CVMethod.refine_choice`).
    """

    X: object
    y: np.ndarray
    fold_ids: np.ndarray
    machine: Machine
    average: str
    safeguards: object
    execution: object
    shared: dict
    store: object = None
    heldout: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)


def refuse_class_weight(machine, method_name: str) -> None:
    """A one-line error where a method cannot weigh classes or rows (closed-form, gacv,
    rff)."""
    if machine.class_weight is not None or machine.row_weighted:
        raise KernelCVError(f"method {method_name!r} has no class or sample weights: use "
                            "method 'bif' (the default), 'spectral' or 'exact'")


@dataclass(frozen=True)
class CVMethod:
    """The protocol of a CV method, with the behaviour the kernel methods share.

    Class attributes
    ----------------
    name : the method's name in reports, checkpoints and the CLI.
    criterion : the held-out predictions it computes per lam (``"exact"``,
        ``"closed-form"`` or ``"bif"`` of :func:`kernelcv.criteria.evaluate.evaluate_lam`).
    exact : the scores are exact CV errors (no safeguards needed).
    safeguarded : degenerate rechecks and exact confirmation follow the grid.
    refines : an exact local refinement follows the grid.
    kernel_grid : the scores come from the kernel machine itself (its BIF orders can be
        drawn beside them); False for a feature-space search.
    score_is_error : the score is a CV error (False for GACV, whose scale differs).
    dense_matrices : dense n x n float64 matrices one task holds at its peak.

    Field ``scoring``: None (rank by the 0-1 error or MSE) or a
    :class:`~kernelcv.criteria.scoring.HeldoutScore` whose negated per-fold values
    become the records' ``fold_errors`` and ``score`` (methods with held-out values only).
    Field ``by_default`` (keyword only, not compared): the user named no method, so a
    front door may run the low-rank feature-space search instead where this method's
    dense matrices exceed the memory budget
    (:func:`kernelcv.selection.method_choice.method_for_size`).
    """

    name: ClassVar[str] = ""
    criterion: ClassVar[Criterion] = Criterion.EXACT
    exact: ClassVar[bool] = True
    safeguarded: ClassVar[bool] = False
    refines: ClassVar[bool] = False
    score_is_error: ClassVar[bool] = True
    dense_matrices: ClassVar[float] = 2.5
    kernel_grid: ClassVar[bool] = True

    scoring: HeldoutScore | None = None
    by_default: bool = field(default=False, compare=False, repr=False, kw_only=True)

    @property
    def checkpointable(self) -> bool:
        """Whether a checkpoint of finished kernel settings can resume this search."""
        return True

    def describe(self) -> str:
        """The method in words, for messages."""
        return f"method {self.name!r}"

    # ------------------------------------------------------------------ before the grid
    def bind(self, machine: Machine, kernel: str, random_state=None) -> CVMethod:
        """Check that the method accepts ``machine`` and ``kernel``; a resolved copy."""
        return self

    def default_gammas(self) -> list[float]:
        """The default kernel-width grid (rbf/laplace)."""
        return default_gammas()

    def default_lams(self, n_samples: int) -> list[float]:
        """The default lam grid, ``2^i / n`` for i = -3..11."""
        return default_lams(n_samples)

    def reserve_lams(self, n_samples: int) -> list[float]:
        """The default grid's reserve toward large C, ``2^i / n`` for i = -12..-4,
        evaluated where the choice reaches the edge
        (:mod:`~kernelcv.selection.after_grid.extension`); empty: no reserve."""
        return reserve_lams(n_samples)

    def base_folds(self, folds, n_samples: int):
        """The fixed folds of the search (int t or fold ids)."""
        return folds

    def check_memory(self, X, n_samples: int, workers: int, memory_budget=None):
        """Refuse before any work when the search's matrices exceed the budget.

        Returns a byte estimate to report, or None.
        """
        check_dense_budget(n_samples, n_samples, self.dense_matrices * workers,
                           f"method {self.name!r} on {n_samples} samples with {workers} "
                           "worker(s)", memory_budget)
        return None

    def for_subsample(self) -> CVMethod:
        """The method the halving screen walks its subsample with, whose records only
        choose where the all-rows walk starts and are never reported (default: itself)."""
        return self

    def for_rows(self, n_samples: int, memory_budget=None) -> tuple[CVMethod, list[str]]:
        """This method with its size-dependent choices made for ``n_samples`` rows, and
        notes saying what was chosen and why (default: itself, no notes)."""
        return self, []

    def on_device(self, device: str, precision: str = "float64"):
        """This method with its dense linear algebra on ``device`` (a name of
        :data:`kernelcv.devices.DEVICES` other than ``"auto"``) in ``precision`` (of
        :data:`kernelcv.devices.PRECISIONS`), or None where it runs in numpy's float64
        only (every method but ``spectral``)."""
        return self if device == "numpy" and precision == "float64" else None

    def config_entries(self, machine: Machine) -> dict:
        """The method's entries of the search configuration (reports, checkpoint key)."""
        entries = {"method": self.name, "order": None, "tol": 1e-6, "folds": "fixed",
                   "epsilon": None, "delta": loss_delta(machine), "granularity": "adaptive"}
        if self.scoring is not None:  # only then: earlier checkpoints keep their keys
            entries["scoring"] = self.scoring.name
        return entries

    def reported_folds(self, fold_ids):
        """The number of folds to report."""
        return int(fold_ids.max()) + 1

    def reported_order(self):
        """The BIF order to report (None for other methods)."""
        return None

    # ------------------------------------------------------------------ after the grid
    # What follows the grid belongs to the method: the driver calls these hooks and
    # never asks which method it runs.
    def check_screening(self, screening):
        """Refuse a screening strategy the method cannot follow (default: any is fine)."""

    def check_grid(self, candidates: list[dict], run: GridRun) -> tuple[list, list]:
        """The exact checks after the grid: ``(rechecked, confirmed)`` candidate indices.

        A safeguarded method (``safeguarded``: its scores are approximate) re-evaluates
        degenerate candidates and confirms the best ``run.safeguards.confirm`` by exact
        refit CV (:func:`~kernelcv.selection.after_grid.safeguards.run_safeguards`); an exact
        method needs nothing.
        """
        if not self.safeguarded:
            return [], []
        return run_safeguards(candidates, self, run.safeguards, run.average, run.shared,
                              run.store, run.execution, run.heldout, run.values)

    def refine_choice(self, candidates: list[dict], best_index: int,
                      run: GridRun) -> tuple[int, list, list[str]]:
        """A step after the choice: ``(best_index, refined indices, notes)``; default
        none (the random-feature method walks the grid by exact refits here)."""
        return best_index, [], []

    def edge_notes(self, edges: dict, best: dict, reasons: dict | None) -> list[str]:
        """The note when the choice lies on an end of the grid
        (:func:`~kernelcv.selection.after_grid.edges.edge_note`)."""
        return edge_note(edges, best, reasons)

    # ------------------------------------------------------------------ the grid
    def search_grid(self, X, y, fold_ids, settings, setting_lams, shared, execution):
        """A method that walks the grid itself returns ``(per_setting, chosen, method,
        notes)`` here: the records per setting, its choice ``(setting, lam position)``,
        the method with what the walk resolved, notes. None (default): the driver
        evaluates the grid."""
        return None

    def prepare(self, X, memory_budget=None, parallel: bool = False):
        """The data shared by every task: a :class:`GramFactory` (or X for workers) that
        keeps the latest Gram matrices the budget leaves room for beside a task's
        :attr:`dense_matrices` (:func:`~kernelcv.kernels.kept_grams_within`)."""
        if parallel:
            return X
        n = X.shape[0]
        return GramFactory(X, memory_budget=memory_budget, kept_grams=kept_grams_within(
            n, n, self.dense_matrices, memory_budget))

    def evaluate_setting(self, data, y, fold_ids, setting: dict, lams, *, machine: Machine,
                         random_state=None, memory_budget=None,
                         warm_starts: WarmStarts | None = None) -> list[dict]:
        """Evaluate every lam of one kernel setting; one JSON-able record per lam.

        Lam from the largest down, each fit started from the previous one or, with
        ``warm_starts``, from the search's stored fit at the nearest lam.

        Records have ``lam``, ``score`` (the criterion's value), ``cv_error`` (pooled
        held-out error; None for GACV), ``fold_errors``, ``fold_sizes``, ``n_folds``,
        ``order_used``, ``degenerate``, ``heldout_ratio``, ``seconds``, ``fit_seconds``,
        ``notes``, ``plateau_loss`` (binary classifiers whose held-out values all have
        one sign: their held-out hinge loss; else None) and, with granularity selection,
        ``granularity``.

        Cost: one Gram matrix (O(n^2) from cached distances, O(n^2 d) otherwise) plus, per
        lam, what the criterion costs (see :func:`kernelcv.cross_validate`).
        """
        with blas_threads_for(y.shape[0]):
            tic = time.perf_counter()
            K = gram_for_setting(data, setting, memory_budget)
            state = (self._multiclass_state(K, y, fold_ids, machine) if machine.is_multiclass
                     else self._setting_state(K, fold_ids, machine))
            setup = (time.perf_counter() - tic) / len(lams)
            records: list[dict | None] = [None] * len(lams)
            previous = None
            n = y.shape[0]
            for position in np.argsort(lams)[::-1]:
                lam = float(lams[position])
                if warm_starts is not None:
                    previous = warm_starts.nearest(setting, n, lam) or previous
                record, previous = self._lam_record(
                    K, y, fold_ids, lam, machine, state, previous, random_state)
                if warm_starts is not None:
                    warm_starts.add(setting, n, lam, previous)
                record["seconds"] += setup
                records[position] = record
        return records

    def evaluate_lams(self, K, y, fold_ids, lams, machine: Machine) -> list:
        """The held-out predictions of every lam on one Gram matrix, in the order of
        ``lams``: one :class:`~kernelcv.criteria.evaluate.Evaluation` each (a
        :class:`~kernelcv.criteria.multiclass.MulticlassCV` evaluation, with
        ``decisions``, for more than two classes). ``cross_validate`` runs this.

        Lam from the largest down, each full fit started from the previous one; the
        work shared by the lam values (closed form: the eigenbasis) is done once.
        """
        state = (self._multiclass_state(K, y, fold_ids, machine) if machine.is_multiclass
                 else self._setting_state(K, fold_ids, machine))
        evaluations: list = [None] * len(lams)
        previous = None
        for position in np.argsort(lams)[::-1]:
            ev = self._evaluate(K, y, fold_ids, float(lams[position]), machine, state,
                                previous, **self._lam_options())
            previous = ev.fit if ev.fit is not None else previous
            evaluations[position] = ev
        return evaluations

    def _lam_options(self) -> dict:
        """The criterion's options of one lam (BIF: its order and tolerance)."""
        return {}

    def _setting_state(self, K, fold_ids, machine):
        """Work shared by the lam values of one setting (closed form: the eigenbasis).

        For more than two classes the state is a
        :class:`~kernelcv.criteria.multiclass.MulticlassCV` instead (its binary problems,
        with their own closed forms), built by :meth:`evaluate_setting`.
        """
        return None

    def _multiclass_state(self, K, y, fold_ids, machine):
        """The state of a multiclass setting: its binary problems on ``fold_ids``."""
        return MulticlassCV(K, y, fold_ids, machine,
                            closed_form=self.criterion == Criterion.CLOSED_FORM,
                            settle_flags=True)

    def _lam_record(self, K, y, fold_ids, lam, machine, state, previous, random_state):
        ev = self._evaluate(K, y, fold_ids, lam, machine, state, previous)
        return (cv_record(ev, lam, fold_ids, y, self.scoring, machine),
                (ev.fit if ev.fit is not None else previous))

    def _evaluate(self, K, y, fold_ids, lam, machine, state, warm, **options):
        """One lam with this method's criterion: the binary machine, or every machine of
        a multiclass scheme when ``state`` is a :class:`MulticlassCV`."""
        if isinstance(state, MulticlassCV):
            ev = state.evaluate(lam, machine, self.criterion, warm=warm, **options)
        else:
            ev = evaluate_lam(K, y, fold_ids, lam, machine, self.criterion, warm=warm,
                              **self._evaluate_options(state), **options)
        return weigh_errors(ev, y, fold_ids, machine)

    def _evaluate_options(self, state) -> dict:
        return {}

    def candidate_folds(self, y, fold_ids, n_folds: int, machine: Machine, random_state):
        """The folds of a candidate's exact refit (those its score was computed on)."""
        return fold_ids

    def exact_candidate(self, data, y, fold_ids, setting: dict, lam: float, n_folds: int, *,
                        machine: Machine, random_state=None, memory_budget=None,
                        warm_starts: WarmStarts | None = None) -> dict:
        """Exact refit CV of one candidate (the safeguards' confirmation); t fits. A full
        fit the refits need starts from ``warm_starts``' fit at this lam."""
        with blas_threads_for(y.shape[0]):
            tic = time.perf_counter()
            K = gram_for_setting(data, setting, memory_budget)
            folds = self.candidate_folds(y, fold_ids, n_folds, machine, random_state)
            warm = (None if warm_starts is None
                    else warm_starts.nearest(setting, y.shape[0], float(lam)))
            if machine.is_multiclass:
                ev = MulticlassCV(K, y, folds, machine).evaluate(float(lam), machine,
                                                                  "exact", warm=warm)
            else:
                ev = evaluate_lam(K, y, folds, float(lam), machine, "exact", full_fit=False,
                                  warm=warm)
            ev = weigh_errors(ev, y, folds, machine)
        result = {"cv_error": ev.cv_error,
                  "fold_errors": fold_losses(ev, y, folds, self.scoring, machine),
                  "fold_sizes": [int(c) for c in np.bincount(folds)],
                  "seconds": time.perf_counter() - tic}
        if machine.is_multiclass:  # the report's confusion matrix reuses them
            result["heldout_codes"] = [int(c) for c in ev.predictions]
        if machine.is_classifier:  # KernelSearchCV calibrates its probabilities on them
            values = ev.decisions if machine.is_multiclass else ev.predictions
            result["heldout_values"] = np.asarray(values, dtype=np.float64).tolist()
        return result

    # ------------------------------------------------------------------ after the grid
    def report_entries(self, config: dict) -> dict:
        """Extra entries of the search's JSON summary."""
        return {}

    def notes(self, candidates, best_index: int, n_samples: int) -> list[str]:
        """Notes on the choice, added after the grid."""
        return []

    def fitted_map(self, data):
        """The fitted feature map of a feature-space search (None otherwise)."""
        return None

    def score_label(self, folds, metric: str) -> str:
        """What the scores are, for figure axes (e.g. ``10-fold CV 0-1 error (bif)``)."""
        return f"{folds}-fold CV {metric} ({self.name})"


@dataclass(frozen=True)
class ExactRefit(CVMethod):
    """Refit CV: t fits per candidate on the training parts (the ground truth)."""

    name: ClassVar[str] = "exact"


@dataclass(frozen=True)
class ClosedForm(CVMethod):
    """Exact t-fold CV of krr/lssvm from one eigendecomposition per kernel setting.

    Cost: one ``eigh`` (O(n^3)) per setting plus O(n^2 (t + n/t)) per lam.
    """

    name: ClassVar[str] = "closed-form"
    criterion: ClassVar[Criterion] = Criterion.CLOSED_FORM
    dense_matrices: ClassVar[float] = 3.0

    def bind(self, machine, kernel, random_state=None):
        refuse_class_weight(machine, self.name)
        if machine.loss.name != "square":
            raise KernelCVError(
                f"method 'closed-form' is exact only for krr and lssvm, not "
                f"{machine.name!r}; use method='bif' (fast) or 'exact'")
        return self

    def _setting_state(self, K, fold_ids, machine):
        return ClosedFormCV(K, fold_ids, fit_intercept=machine.fit_intercept)

    def _evaluate_options(self, state):
        return {"closed": state}


@dataclass(frozen=True)
class BIF(CVMethod):
    """One full fit plus the BIF series of order ``order`` per candidate.

    ``order``: int >= 1, ``"inf"`` or ``"auto"`` (``tol`` relative to max|F|);
    ``granularity``: a :class:`GranularityRule` choosing t and r per lam instead (the
    search's fixed folds then serve only the degeneracy checks); ``certify``: bound each
    SVM candidate's values (:mod:`kernelcv.criteria.certificate`) and flag it
    ``uncertified`` where the bounds leave its error open; False skips that (the halving
    screen's subsample walk, :meth:`for_subsample`: a fifth to a half of its time on
    one-vs-one problems). Cost: one warm-started fit plus O(n |A| t) per order; about 1.2
    fits at r = 5.
    """

    name: ClassVar[str] = "bif"
    criterion: ClassVar[Criterion] = Criterion.BIF
    exact: ClassVar[bool] = False
    safeguarded: ClassVar[bool] = True

    order: object = "inf"
    tol: float = 1e-6
    granularity: GranularityRule | None = None
    certify: bool = True

    def __post_init__(self):
        if self.granularity is None:
            object.__setattr__(self, "order", parse_order(self.order))
        else:
            object.__setattr__(self, "order", None)
            if self.granularity.rule not in RULES:
                raise KernelCVError(f"granularity must be one of {', '.join(RULES)}, "
                                    f"got {self.granularity.rule!r}")
        object.__setattr__(self, "tol", float(self.tol))

    def bind(self, machine, kernel, random_state=None):
        if self.granularity is None:
            return self
        epsilon = check_tolerance(self.granularity.epsilon, loss_delta(machine))
        return replace(self, granularity=replace(self.granularity, epsilon=epsilon))

    def for_subsample(self):
        return replace(self, certify=False)

    def base_folds(self, folds, n_samples):
        # Granularity selection chooses t per lam; fixed 10 folds serve the degeneracy
        # checks (n folds below 10 samples).
        return folds if self.granularity is None else min(10, n_samples)

    def config_entries(self, machine):
        entries = {**super().config_entries(machine), "order": self.order, "tol": self.tol}
        if self.granularity is not None:
            entries.update({"folds": "auto", "epsilon": self.granularity.epsilon,
                            "granularity": self.granularity.rule})
        return entries

    def reported_folds(self, fold_ids):
        return "auto" if self.granularity is not None else super().reported_folds(fold_ids)

    def reported_order(self):
        return self.order

    def _setting_state(self, K, fold_ids, machine):
        return {"kappa": float(np.max(np.diag(K))), "folds": {}}

    def _multiclass_state(self, K, y, fold_ids, machine):
        # With granularity selection every lam has its own t: the binary problems are
        # laid out per t (``"multiclass"``), on the same folds as a binary search's.
        if self.granularity is None:
            return super()._multiclass_state(K, y, fold_ids, machine)
        return {**self._setting_state(K, fold_ids, machine), "multiclass": {}}

    def _lam_options(self):
        if self.granularity is not None:
            raise KernelCVError("granularity selection chooses t and r per lam in a grid "
                                "search; give cross_validate a BIF order")
        return {"order": self.order, "tol": self.tol, "certify": self.certify}

    def _lam_record(self, K, y, fold_ids, lam, machine, state, previous, random_state):
        if self.granularity is None:
            ev = self._evaluate(K, y, fold_ids, lam, machine, state, previous,
                                order=self.order, tol=self.tol, certify=self.certify)
            return (cv_record(ev, lam, fold_ids, y, self.scoring, machine),
                    (ev.fit if ev.fit is not None else previous))
        rule, delta = self.granularity, loss_delta(machine)
        choice = bound_rule(rule.epsilon, delta=delta, lam=lam, kappa=state["kappa"],
                            n_samples=y.shape[0])
        t = choice.n_folds
        if t not in state["folds"]:
            state["folds"][t] = make_folds(y, t, machine.is_classifier, random_state)
        folds = state["folds"][t]
        problems = None  # a binary machine: _evaluate calls evaluate_lam on the folds
        if machine.is_multiclass:
            if t not in state["multiclass"]:
                state["multiclass"][t] = MulticlassCV(K, y, folds, machine)
            problems = state["multiclass"][t]
        # Adaptive rule: same t, stop once the observed series tail is below the tolerance.
        adaptive = self._evaluate(K, y, folds, lam, machine, problems, previous, order="auto",
                                  tol=self.tol, atol=adaptive_tolerance(rule.epsilon, delta),
                                  certify=self.certify)
        ev = adaptive
        if rule.rule == "bound":
            ev = self._evaluate(K, y, folds, lam, machine, problems, adaptive.fit,
                                order=choice.order, tol=self.tol, certify=self.certify)
            ev.seconds += adaptive.seconds
        record = cv_record(ev, lam, folds, y, self.scoring, machine)
        record["granularity"] = {"rule": rule.rule, **choice.to_dict(),
                                 "order_adaptive": adaptive.order_used}
        return record, (ev.fit if ev.fit is not None else previous)

    def candidate_folds(self, y, fold_ids, n_folds, machine, random_state):
        # With granularity selection a candidate's own t, with the same seeded assignment
        # as its approximate value.
        if self.granularity is None:
            return fold_ids
        return make_folds(y, int(n_folds), machine.is_classifier, random_state)
