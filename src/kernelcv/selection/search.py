"""The grid-search driver: kernel settings x lam with any CV method, then what follows.

:func:`run_search` is the core (about ten parameters: the data, the machine, a CV method
object of :mod:`kernelcv.selection.methods`, the search space and the option groups of
:mod:`kernelcv.selection.options`). It validates the data once, splits the grid into
kernel settings (one task each, see :mod:`kernelcv.selection.tasks`), runs them
sequentially, on joblib workers or on a Dask cluster (:mod:`kernelcv.selection.backends`),
records finished settings in an optional checkpoint, and then does what the method asks
for after the grid: the exact safeguards of :mod:`kernelcv.selection.after_grid.safeguards`, the
exact refinement of :mod:`kernelcv.random_features.refine`, or nothing. It contains no method
names. :func:`grid_search` is the flat keyword interface that builds these objects.

The driver fits no machine itself; the refinement's refits run in this process.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from ..devices import resolve_device
from ..exceptions import GridEdgeWarning, KernelCVError
from ..machines import Machine
from ..machines.weights import weights_digest
from ..reading.rowchunks import as_source
from ..validation import check_data, check_sample_weight, make_folds
from .after_grid.baseline import baseline_note
from .after_grid.edges import edge_distance, grid_edges
from .after_grid.extension import extend_at_edge
from .after_grid.resume_check import recompute_resumed_choice
from .after_grid.safeguards import (
    APPROXIMATE,
    NONE_FINITE_WARNING,
    candidate_error,
    choose,
    flagged_counts,
    flagged_note,
    none_finite,
    rank,
)
from .checkpointing.checkpoint import Checkpoint, fingerprint
from .checkpointing.record_checks import BIF_FLAGS
from .method_choice import METHODS, default_method, make_method, method_for_size
from .methods import CVMethod, GridRun
from .moved_options import machine_of, split_moved
from .options import (
    AVERAGES,
    Execution,
    Safeguards,
    SearchSpace,
    check_kernel_params,
    kernel_settings,
)
from .records import EXACT_STATUS
from .screening import (
    SCREENING_REFUSED,
    GridTasks,
    Screening,
    SearchStrategy,
    evaluate_grid,
    plan,
)
from .warm_starts import WarmStarts

# Option names that select results of nothing: they may differ when a checkpoint resumes.
_NOT_FINGERPRINTED = ("memory_budget", "memory_estimate", "refine", "refine_evals")

__all__ = ["METHODS", "APPROXIMATE", "SearchResult", "default_method", "grid_search",
           "kernel_settings", "make_method", "run_search"]


@dataclass
class SearchResult:
    """Outcome of :func:`grid_search`.

    Attributes
    ----------
    candidates : list of dict
        One per (setting, lam) in grid order: the kernel parameters, ``lam``, ``score``
        (the criterion's value, after degenerate re-checks), ``cv_error``, ``exact_error``
        (when refit on all folds), ``status`` (``exact`` | ``approximate`` | ``rechecked``
        | ``confirmed`` | ``refined`` | ``pruned``: an rff refinement stopped its refit
        early, with ``exact_error_at_least``), ``rank``, timings and notes.
    best_index : index of the chosen candidate.
    exact_values : classifiers: candidate index -> held-out decision values of its exact
        refit CV ((n,) binary, (n, m) the m binary machines'), where one was made.
    exact_heldout : multiclass searches: candidate index -> (n,) held-out class codes of
        its exact refit CV, for the candidates the safeguards refit.
    edge_notes : the notes (also in ``notes``) saying that the choice lies on an edge of
        the grid; ``grid_search`` and ``KernelSearchCV`` warn with them
        (:class:`~kernelcv.exceptions.GridEdgeWarning`).
    """

    candidates: list[dict]
    best_index: int
    machine: str
    method: str
    kernel: str
    param_name: str | None
    metric: str
    n_samples: int
    folds: object
    order: object
    confirmed: list[int]
    rechecked: list[int]
    timings: dict
    label_mapping: dict | None = None
    notes: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict, repr=False)
    refined: list[int] = field(default_factory=list)
    fold_ids: np.ndarray | None = field(default=None, repr=False)
    feature_map: object = field(default=None, repr=False)
    criterion: CVMethod | None = field(default=None, repr=False)
    machine_spec: Machine | None = field(default=None, repr=False)
    exact_heldout: dict = field(default_factory=dict, repr=False)
    exact_values: dict = field(default_factory=dict, repr=False)
    grid_edges: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    edge_notes: list[str] = field(default_factory=list, repr=False)

    @property
    def best(self) -> dict:
        return self.candidates[self.best_index]

    @property
    def best_params(self) -> dict:
        best = self.best
        keys = ["kernel", "gamma", "degree", "coef0", "lam"]
        params = {key: best[key] for key in keys if key in best}
        if "C" in best:  # a feature-space search reports SVC's C too
            params["C"] = best["C"]
        return params

    @property
    def best_cv_error(self):
        """The chosen candidate's CV error: exact where it was refit, else approximate."""
        best = self.best
        return best["exact_error"] if best["exact_error"] is not None else best["cv_error"]

    def to_dict(self) -> dict:
        """JSON-able summary (no arrays)."""
        return {
            "machine": self.machine, "method": self.method, "kernel": self.kernel,
            "param_name": self.param_name, "metric": self.metric, "n_samples": self.n_samples,
            "folds": self.folds, "order": self.order, "best_index": self.best_index,
            "best_params": self.best_params, "best_score": self.best["score"],
            "best_cv_error": self.best_cv_error, "none_finite": none_finite(self.candidates),
            "flagged": flagged_counts(self.candidates),
            "confirmed": self.confirmed, "rechecked": self.rechecked,
            "refined": self.refined, "grid_edges": self.grid_edges, "grid": self.grid,
            "timings": self.timings, "notes": self.notes, "candidates": self.candidates,
            **(self.criterion.report_entries(self.config) if self.criterion else {}),
        }


def run_search(X, y, machine: Machine, method: CVMethod, space: SearchSpace, *, folds=10,
               random_state=0, average="pooled", safeguards: Safeguards | None = None,
               execution: Execution | None = None,
               screening: Screening | SearchStrategy | None = None,
               sample_weight=None) -> SearchResult:
    """Evaluate every candidate of ``space`` with ``method``, then apply its after-grid step.

    Parameters
    ----------
    X, y : training data (dense or sparse X; two classes for classifiers).
    machine : :class:`kernelcv.machines.Machine` (see :func:`make_machine`).
    method : a CV method object (:mod:`kernelcv.selection.methods`, or
        :class:`~kernelcv.random_features.method.FeatureSpace`).
    space : :class:`SearchSpace` (kernel settings and lam values).
    folds : int t or one fold id per sample (stratified shuffled folds for classifiers);
        with BIF granularity selection, 10 fixed folds (or n below 10 samples) serve the
        degeneracy checks whatever is given.
    random_state : seed of the fold assignment (and of a feature draw by default).
    average : ``"pooled"`` (error over all held-out points) or ``"folds"`` (unweighted
        mean of per-fold errors, scikit-learn's ``GridSearchCV`` convention).
    safeguards : :class:`Safeguards` (used by safeguarded methods; default
        ``Safeguards()``).
    execution : :class:`Execution` (workers, checkpoint, progress, memory budget; default
        ``Execution()``: one process, no checkpoint).
    screening : which candidates are evaluated: a
        :class:`~kernelcv.selection.screening.Screening` naming a built-in strategy (every
        candidate, the default; a coarse-to-fine walk that evaluates only the
        neighbourhoods of the best points; a walk started from a subsample's ranking) or
        a strategy object of one's own (:class:`~kernelcv.selection.screening.
        SearchStrategy`: ``name``, ``enabled``, ``evaluate(grid)``). A strategy that
        evaluates part of the grid combines neither with a checkpoint nor with the
        random-feature method.
    sample_weight : (n,) weights of the rows' loss terms, or None (see
        :mod:`kernelcv.machines.weights`; the CV error itself stays unweighted, as
        GridSearchCV's scores); not with a row source (``--stream``).

    Returns
    -------
    SearchResult
    """
    total_tic = time.perf_counter()
    safeguards = Safeguards() if safeguards is None else safeguards
    execution = Execution() if execution is None else execution
    screening = plan(Screening() if screening is None else screening)
    if execution.checkpoint is not None and not method.checkpointable:
        raise KernelCVError(f"a checkpoint cannot resume {method.describe()}")
    if screening.enabled and execution.checkpoint is not None:
        raise KernelCVError(SCREENING_REFUSED)
    method.check_screening(screening)
    if average not in AVERAGES:
        raise KernelCVError(f"average must be 'pooled' or 'folds', got {average!r}")
    X, y, mapping = check_data(*as_source(X, y), machine.is_classifier, multiclass=True)
    machine = machine.for_labels(mapping, y)
    if sample_weight is not None:
        if not isinstance(y, np.ndarray) or getattr(X, "is_row_source", False):
            raise KernelCVError("sample_weight needs the rows in memory, not streamed")
        machine = machine.with_sample_weight(check_sample_weight(sample_weight, y.shape[0]))
    if method.scoring is not None:
        method.scoring.check(machine.is_classifier, len(mapping) if mapping else None,
                             weighted=machine.row_weighted)
        method = replace(method, scoring=method.scoring.bound(machine.is_classifier,
                                                              mapping))
    method = method.bind(machine, space.kernel, random_state)
    method, device_notes = _place_on_device(method, execution)
    space, derived, grid_entry = space.with_data(X, method)
    n = y.shape[0]
    settings, setting_lams = space.resolve(n, method)
    reserve = space.reserve_for(n, method)
    fold_ids = make_folds(y, method.base_folds(folds, n), machine.is_classifier,
                          random_state)
    budget = execution.memory_budget
    method, size_notes = method.for_rows(n, budget)
    device_notes = device_notes + size_notes
    estimate = method.check_memory(X, n, execution.workers, budget)

    loss = machine.loss
    config = {"machine": machine.name, "huber_width": float(getattr(loss, "width", 0.01)),
              "svr_epsilon": float(getattr(loss, "epsilon", 0.1)),
              "fit_intercept": machine.fit_intercept, **method.config_entries(machine),
              **({"multiclass": machine.multiclass} if machine.is_multiclass else {}),
              **({"class_weight": machine.params()["class_weight"]}
                 if machine.class_weight is not None else {}),
              **({"sample_weight": weights_digest(machine.row_weights)}
                 if machine.row_weighted else {}),
              "random_state": random_state, "memory_budget": budget}
    if estimate is not None:
        config["memory_estimate"] = int(estimate)
    store = None
    if execution.checkpoint is not None:
        identity = {k: v for k, v in config.items() if k not in _NOT_FINGERPRINTED}
        key = fingerprint(X, y, fold_ids, {"config": identity, "settings": settings,
                                           "lams": setting_lams})
        store = Checkpoint(execution.checkpoint, key, len(settings), setting_lams=setting_lams,
                           n_samples=n, metric=machine.metric)
    # what the checkpoint already held: never the last word (selection/after_grid/resume_check.py)
    resumed_settings = set(store.settings) if store else set()
    resumed_confirmations = set(store.confirmations) if store else set()

    data = method.prepare(X, budget, execution.parallel)
    shared = {"data": data, "y": y, "fold_ids": fold_ids, "method": method,
              "machine": machine, "random_state": random_state, "memory_budget": budget,
              "warm_starts": WarmStarts()}

    search_tic = time.perf_counter()
    walked = method.search_grid(X, y, fold_ids, settings, setting_lams, shared, execution)
    widen_notes = []
    if walked is not None:  # the method walks the grid itself (the rff feature growth)
        (per_setting, chosen, method, walk_notes), rounds, screen_notes = walked, 0, []
    else:
        chosen, walk_notes = None, []
        per_setting, rounds, screen_notes = evaluate_grid(
            settings, setting_lams, shared, execution, screening, store,
            subsample=(X, method, machine.is_classifier, random_state,
                       machine.is_multiclass and machine.multiclass == "ovo"))
        if reserve:
            reserve_grid = GridTasks(settings, [reserve] * len(settings), shared, execution)
            per_setting, widen_notes = extend_at_edge(per_setting, setting_lams, reserve,
                                                      reserve_grid.runner(stage="widen"))
    search_seconds = time.perf_counter() - search_tic

    order = method.reported_order()
    candidates = []
    for index, setting in enumerate(settings):
        for record in per_setting.get(index, []):
            candidates.append({"setting": index, **setting, "method": method.name,
                               "order": order, **record, "exact_error": None})
    for candidate in candidates:
        for flag in BIF_FLAGS:  # BIF's; other criteria: False
            candidate.setdefault(flag, False)
        candidate["status"] = EXACT_STATUS if method.exact else "approximate"
        if method.exact:
            candidate["exact_error"] = candidate_error(candidate, average)
        if average == "folds" and candidate["fold_errors"] is not None:
            candidate["score"] = float(np.mean(candidate["fold_errors"]))

    confirm_tic = time.perf_counter()
    run = GridRun(X=X, y=y, fold_ids=fold_ids, machine=machine, average=average,
                  safeguards=safeguards, execution=execution, shared=shared, store=store)
    rechecked, confirmed = method.check_grid(candidates, run)
    heldout, values = run.heldout, run.values
    # the whole grid a choice is judged against: each setting's lam values and the reserve
    full_lams = [sorted({*lams, *reserve}) for lams in setting_lams]
    # on a default grid, ties go to the candidate farthest from the grid's edges
    interior = (partial(edge_distance, candidates, settings, full_lams, space.param_name)
                if reserve else None)
    best_index = choose(candidates, method.safeguarded, method.score_is_error, confirmed,
                        rechecked, chosen, interior)
    resume_notes = []
    from_checkpoint = {i for i, c in enumerate(candidates)
                       if c["setting"] in resumed_settings or i in resumed_confirmations}
    # the values a choice is made on are exact ones: an exact method's scores, or the
    # confirmations of a safeguarded one (GACV's too, whose own scores are not errors)
    if from_checkpoint and chosen is None and (method.exact or method.safeguarded):
        best_index, confirmed, resume_notes = recompute_resumed_choice(
            candidates, best_index, from_checkpoint, method, average, shared, execution,
            confirmed, rechecked)
    rank(candidates)
    if none_finite(candidates):
        warnings.warn(NONE_FINITE_WARNING, RuntimeWarning, stacklevel=2)
    confirm_seconds = time.perf_counter() - confirm_tic
    notes, refined, refine_tic = list(store.notes) if store else [], [], time.perf_counter()
    notes.extend(device_notes)
    notes.extend(walk_notes)
    notes.extend(resume_notes)
    best_index, refined, refine_notes = method.refine_choice(candidates, best_index, run)
    notes.extend(refine_notes)
    notes.extend(method.notes(candidates, best_index, n))
    notes.extend(flagged_note(candidates))
    if method.score_is_error and isinstance(y, np.ndarray):
        notes.extend(baseline_note(candidates[best_index], y, fold_ids,
                                   machine.is_classifier))
    notes.extend([derived.note()] if derived else [])
    edges = grid_edges(candidates[best_index], settings, full_lams, space.param_name)
    edge_texts = method.edge_notes(edges, candidates[best_index],
                                   derived.edge_reasons() if derived else None)
    notes.extend(widen_notes)
    notes.extend(edge_texts)
    if screening.enabled:
        grid_size = sum(len(lams) for lams in setting_lams)
        notes.extend(screen_notes)
        notes.append(f"screened ({screening.name}): {len(candidates)} of {grid_size} "
                     f"candidates evaluated on all rows, {rounds} refinement rounds after "
                     "the start")
    if machine.is_multiclass:
        notes.append(f"{len(mapping)} classes: {len(mapping) * (len(mapping) - 1) // 2} "
                     "one-vs-one machines per candidate" if machine.multiclass == "ovo" else
                     f"{len(mapping)} classes: {len(mapping)} one-vs-rest machines per "
                     "candidate")
    elif mapping is not None and set(mapping.values()) != {-1, 1}:
        notes.append(f"labels {mapping[-1]!r}/{mapping[1]!r} mapped to -1/+1")
    return SearchResult(
        candidates=candidates, best_index=best_index, machine=machine.name,
        method=method.name, kernel=space.kernel, param_name=space.param_name,
        metric=machine.metric, n_samples=n, folds=method.reported_folds(fold_ids),
        order=order, confirmed=confirmed, rechecked=rechecked, refined=refined,
        timings={"search_seconds": search_seconds, "confirm_seconds": confirm_seconds,
                 "refine_seconds": time.perf_counter() - refine_tic,
                 "total_seconds": time.perf_counter() - total_tic},
        label_mapping=mapping, notes=notes, config=config, fold_ids=fold_ids,
        feature_map=method.fitted_map(data), criterion=method, machine_spec=machine,
        exact_heldout=heldout, exact_values=values, grid_edges=edges, grid=grid_entry,
        edge_notes=list(edge_texts))


def _place_on_device(method: CVMethod, execution) -> tuple[CVMethod, list[str]]:
    """``method`` with its linear algebra on the device ``execution.device`` names, in
    ``execution.precision``, and the note saying where it ran; a torch device (``"cpu"``,
    ``"cuda"``) or ``precision="mixed"`` for a method that runs in numpy's float64 only is
    refused, ``"auto"`` then stays on numpy."""
    device = resolve_device(execution.device)
    precision = execution.precision
    if not device.is_torch and precision == "float64":
        return method, []
    placed = method.on_device(device.name, precision)
    if placed is None and execution.device == "auto" and precision == "float64":
        return method, [f"device auto: {method.describe()} runs in numpy only; "
                        "method='spectral' runs on the GPU"]
    if placed is None:
        asked = (f"device={execution.device!r}" if device.is_torch
                 else f"precision={precision!r}")
        raise KernelCVError(f"{asked} runs the spectral method only (one factorization "
                            f"per kernel), not {method.describe()}: give "
                            "method='spectral', or device='numpy' and precision='float64'")
    if not device.is_torch:
        return placed, []
    return placed, [f"device: {device.with_precision(precision).describe()} ran the Gram "
                    "matrices, the factorizations, the MM steps and the fold-out values"]


def warn_edges(result: SearchResult, stacklevel: int = 3) -> None:
    """Each note of ``result`` about a choice on the grid's edge as a
    :class:`~kernelcv.exceptions.GridEdgeWarning` (the Python front doors; the command
    line prints the notes). O(notes)."""
    for note in result.edge_notes:
        warnings.warn(note, GridEdgeWarning, stacklevel=stacklevel)


def grid_search(X, y, machine="krr", *, kernel="rbf", gammas=None, degrees=None, lams=None,
                Cs=None, kernel_params=None, method=None, folds=10, random_state=0,
                screen="off", safeguards=None, execution=None, **moved) -> SearchResult:
    """Choose the kernel parameter and lam of a kernel machine by (approximate) CV.

    The keyword front door of :func:`run_search`: the grid is given flat, the machine, the
    method and the option groups as names or objects.

    Parameters
    ----------
    X, y : training data (dense or sparse X; labels of any type for classifiers).
    machine : {"krr", "lssvm", "l2svm", "svm", "svr"} or a machine from
        :func:`kernelcv.make_machine` (``make_machine("svm", huber_width=0.05,
        fit_intercept=False, multiclass="ovr")``); a name gets the machine's defaults
        (an intercept for lssvm, l2svm, svm and svr; one-vs-one for more than two
        classes, cross-validated on the same folds, the multiclass 0-1 error ranking:
        :mod:`kernelcv.criteria.multiclass`).
    kernel : {"rbf", "laplace", "poly", "linear"}.
    gammas, degrees, lams : grids. ``gammas`` (rbf/laplace): values, ``"data"`` (None,
        the default: the papers' lattice between the ends derived from the data's
        distances, :mod:`kernelcv.selection.space.gamma_range`) or ``"paper"`` (the method's
        fixed grid, :mod:`kernelcv.selection.space.grids`); ``degrees`` (poly, default 1..8);
        lam's default ``2^i / n``, i = -3..11 (C = 2^-12..4), widened toward C = 2^11
        where the choice reaches that edge (:mod:`~kernelcv.selection.after_grid.
        extension`), ties there going to the candidate farthest from the grid's edges.
    Cs : instead of ``lams``, SVC-style values C; ``lam = 1 / (2 n C)`` (divide
        ``0.5||w||^2 + C sum loss`` by ``n C`` to get the mean-loss form).
    kernel_params : dict of the kernel parameters not searched: poly's ``gamma``
        (default 1) and ``coef0`` (default 1), ``degree`` of a single poly setting.
    method : {"exact", "closed-form", "bif", "gacv", "rff", "spectral"} or a method
        object whose options travel inside it: :class:`~kernelcv.selection.ExactRefit`,
        :class:`~kernelcv.selection.ClosedForm`, :class:`~kernelcv.selection.BIF`
        (``order``, ``tol``, ``granularity``), :class:`~kernelcv.selection.GACV`,
        :class:`~kernelcv.selection.FeatureSpace` (the random-feature options, the
        refinement and the final model), :class:`~kernelcv.selection.Spectral`.
        Default closed-form for krr/lssvm, bif otherwise. ``gacv`` (svm only) ranks by
        Wahba's GACV, not by CV. ``spectral`` (any machine): exact t-fold CV of every
        lam of a kernel setting from one eigendecomposition of its Gram matrix
        (:mod:`kernelcv.criteria.spectral`). ``rff`` (rbf kernel; svm, l2svm, krr,
        lssvm): exact t-fold CV of a linear machine on D random features (Feng & Liao),
        O(n D) memory and time linear in n, then a walk on the grid by exact refit CV of
        the final kernel machine; the default grids are then the paper's.
    folds : int t, array of fold ids, or ``"auto"`` with ``method=BIF(granularity=
        GranularityRule(epsilon))`` (granularity selection: t and r per lam from the
        tolerated error epsilon).
    random_state : seed of the fold assignment (and of the feature draw of ``rff``
        unless its object fixes ``feature_seed``).
    screen : {"off", "coarse", "halving"} or a :class:`~kernelcv.selection.Screening`:
        evaluate every candidate, or walk coarse to fine (every third setting at 3 lam
        values first, then the neighbourhoods of the 3 best points until they are local
        minima), or start that walk from the 3 best points of the whole grid ranked on an
        n/4 subsample (:mod:`kernelcv.selection.screening`). Not with a checkpoint or
        ``rff``.
    safeguards : :class:`~kernelcv.selection.Safeguards` (``confirm``: the best
        candidates of an approximate search confirmed by exact refit CV, default 3;
        ``recheck_degenerate``).
    execution : :class:`~kernelcv.selection.Execution` (``n_jobs``, ``backend``,
        ``scheduler``: parallel execution, one task per kernel setting; ``checkpoint``:
        a JSON Lines file of finished settings, a rerun resumes; ``progress``:
        ``progress(stage, done, total)``; ``memory_budget``: bytes or e.g. ``"8G"``).
    **moved : ``sample_weight=``, (n,) weights of the rows' loss terms (see
        :func:`run_search`; a keyword of its own, kept out of the signature, which holds
        at most 15 parameters), and ``average=`` (``"pooled"`` or ``"folds"``); the flat
        options of kernelcv 0.1 (``order=``, ``n_jobs=``, ``huber_width=``, ...), still
        taken with a ``FutureWarning`` that shows the new spelling
        (:mod:`kernelcv.selection.moved_options`).

    Returns
    -------
    SearchResult

    Notes
    -----
    Cost per kernel setting: one Gram matrix; closed-form adds one ``eigh`` (O(n^3)) and
    O(n^2 (t + n/t)) per lam; bif one warm-started fit per lam plus the correction
    (about 1.2 fits at r = 5); exact t fits per lam. Confirmations add ``confirm`` exact
    CVs, an rff refinement one exact CV per visited point.
    """
    old = split_moved("grid_search", moved, passthrough=("average", "sample_weight"))
    sample_weight = old.other.get("sample_weight")
    machine_spec = machine_of(machine, old.machine)
    cv_method = make_method(method, machine_spec.name, folds=folds, **old.method)
    average = old.other.get("average", "pooled")
    if average not in AVERAGES:
        raise KernelCVError(f"average must be 'pooled' or 'folds', got {average!r}")
    guards = _group_of("safeguards", safeguards, Safeguards, old.safeguards)
    execution = _group_of("execution", execution, Execution, old.execution)
    screening = (screen if isinstance(screen, Screening | SearchStrategy)
                 else Screening(strategy=screen))
    params = {**check_kernel_params(kernel_params), **old.kernel_params}
    cv_method.bind(machine_spec, kernel, random_state)  # machine/kernel errors first
    cv_method, size_note = method_for_size(cv_method, machine_spec.name, [kernel],
                                           _n_rows(X, y), execution.workers,
                                           execution.memory_budget,
                                           class_weighted=machine_spec.class_weight is not None
                                           or sample_weight is not None)
    if size_note is not None and screening.enabled:
        raise KernelCVError(f"{size_note}; that search walks the grid itself: give "
                            "screen='off', or name a method to screen")
    space = SearchSpace.grid(kernel, gammas, degrees, lams, Cs=Cs, **params)
    result = run_search(X, y, machine_spec, cv_method, space,
                        folds=folds, random_state=random_state, average=average,
                        safeguards=guards, execution=execution, screening=screening,
                        sample_weight=sample_weight)
    if size_note is not None:
        result.notes.insert(0, size_note)
    warn_edges(result)
    return result


def _n_rows(X, y) -> int:
    """Training rows of a search's data (labels, or the rows of X)."""
    if y is not None and hasattr(y, "__len__"):
        return len(y)
    return int(X.shape[0])


def _group_of(name: str, given, cls, options: dict):
    """An option group: the object given, or one built from the 0.1 flat options."""
    if given is None:
        return cls(**options)
    if not isinstance(given, cls):
        raise KernelCVError(f"{name} must be a {cls.__name__} object, got {given!r}")
    if options:
        raise KernelCVError(f"{name} is given as an object: put {', '.join(options)} "
                            "inside it")
    return given
