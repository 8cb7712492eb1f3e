"""Grid search over kernel settings x lam with any CV criterion, safeguarded by exact refits.

The driver validates once, splits the grid into kernel settings (one task each, see
:mod:`kernelcv.selection.tasks`), runs them sequentially, on joblib workers or on a Dask
cluster (:mod:`kernelcv.selection.backends`), records finished settings in an optional
checkpoint, and then applies the safeguards of :mod:`kernelcv.selection.safeguards`
(exact rechecks of degenerate candidates, exact confirmation of the best few) or, for a
random-feature search, the exact refinement of :mod:`kernelcv.selection.refine`.

The driver fits no machine itself; the refinement's refits run in this process.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass, field

import numpy as np

from ..criteria.evaluate import METHODS as CV_METHODS
from ..criteria.random_features import c_to_lam, paper_cs, paper_gammas
from ..exceptions import KernelCVError
from ..features import check_feature_memory
from ..kernels import KERNELS, GramFactory
from ..machines import make_machine
from ..memory import check_dense_budget
from ..validation import check_data, make_folds
from .backends import run_tasks
from .checkpoint import Checkpoint, fingerprint
from .feature_space import FEATURE_LOSSES, check_feature_options, edge_notes, feature_notes
from .granularity import RULES, check_tolerance
from .grids import check_grid, default_degrees, default_gammas, default_lams
from .refine import REFINE_MAX_EVALS, check_refine, check_refine_memory, refine_search
from .safeguards import APPROXIMATE, candidate_error, choose, rank, safeguards
from .tasks import evaluate_setting, feature_data

METHODS = (*CV_METHODS, "gacv", "rff")
# Dense n x n float64 matrices one task holds at its peak.
_MATRICES = {"exact": 2.5, "closed-form": 3.0, "bif": 2.5, "gacv": 2.0}


def default_method(machine: str) -> str:
    """Closed-form (exact and fast) for krr/lssvm, BIF for the other machines."""
    return "closed-form" if machine in ("krr", "lssvm") else "bif"


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

    @property
    def best(self) -> dict:
        return self.candidates[self.best_index]

    @property
    def best_params(self) -> dict:
        best = self.best
        keys = ["kernel", "gamma", "degree", "coef0", "lam"]
        params = {key: best[key] for key in keys if key in best}
        if self.method == "rff":
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
            "best_cv_error": self.best_cv_error,
            "confirmed": self.confirmed, "rechecked": self.rechecked,
            "refined": self.refined,
            "timings": self.timings, "notes": self.notes, "candidates": self.candidates,
            **({"feature_space": {k: self.config[k] for k in (
                "features", "feature_map", "feature_loss", "feature_seed", "feature_intercept",
                "memory_estimate", "refine", "refine_evals")}} if self.method == "rff"
               else {}),
        }


def kernel_settings(kernel, gammas=None, degrees=None, *, gamma=None, degree=3, coef0=1.0):
    """The kernel settings of a grid and the name of the varied parameter.

    rbf/laplace vary gamma (default grid: :func:`default_gammas`); poly varies the degree
    (default 1..8) at a fixed ``gamma`` (default 1) and ``coef0``; linear has one setting.
    """
    if kernel not in KERNELS:
        raise KernelCVError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    if kernel in ("rbf", "laplace"):
        if degrees is not None:
            raise KernelCVError(f"kernel {kernel!r} has no degree; give a gamma grid")
        values = check_grid(default_gammas() if gammas is None else gammas, "gamma")
        return [{"kernel": kernel, "gamma": g} for g in values], "gamma"
    if kernel == "poly":
        if gammas is not None:
            raise KernelCVError("the poly grid varies the degree; give gamma as one value")
        values = check_grid(default_degrees() if degrees is None else degrees, "degree",
                            integer=True)
        g = 1.0 if gamma is None else check_grid([gamma], "gamma")[0]
        c = float(coef0)
        if not np.isfinite(c) or c < 0:
            raise KernelCVError(f"coef0 must be a finite number >= 0, got {coef0!r}")
        return [{"kernel": "poly", "gamma": g, "degree": d, "coef0": c} for d in values], \
            "degree"
    if gammas is not None or degrees is not None:
        raise KernelCVError("the linear kernel has no parameter to search; give only lam")
    return [{"kernel": "linear"}], None


def grid_search(X, y, machine="krr", *, kernel="rbf", gammas=None, degrees=None, lams=None,
                gamma=None, degree=3, coef0=1.0, huber_width=0.01, svr_epsilon=0.1,
                fit_intercept=None, method=None, folds=10, order="inf", epsilon=None,
                granularity="adaptive", confirm=3, recheck_degenerate=True, average="pooled",
                random_state=0, tol=1e-6, n_jobs=1, backend="auto", scheduler=None,
                checkpoint=None, progress=None, memory_budget=None,
                settings=None, setting_lams=None, Cs=None, features=30, feature_map="rff",
                feature_loss=None, feature_seed=None, refine="auto",
                refine_evals=REFINE_MAX_EVALS) -> SearchResult:
    """Choose the kernel parameter and lam of a kernel machine by (approximate) CV.

    Parameters
    ----------
    X, y : training data (dense or sparse X; two classes for classifiers).
    machine : {"krr", "lssvm", "l2svm", "svm", "svr"}.
    kernel : {"rbf", "laplace", "poly", "linear"}.
    gammas, degrees, lams : grids (defaults in :mod:`kernelcv.selection.grids`; lam's
        default ``2^i / n``, i = -3..11).
    gamma, degree, coef0 : fixed kernel parameters not searched (poly's gamma and coef0).
    huber_width, svr_epsilon, fit_intercept : machine options (see :func:`make_machine`).
    method : {"exact", "closed-form", "bif", "gacv", "rff"}; default closed-form for
        krr/lssvm, bif otherwise. ``gacv`` (svm only) ranks by Wahba's GACV, not by CV.
        ``rff`` (rbf kernel; svm, l2svm, krr, lssvm): exact t-fold CV of a linear machine
        on D random features (Feng & Liao), O(n D) memory and time linear in n, then
        (``refine``) a walk on the grid by exact refit CV of the final kernel machine; the
        default grids are then the paper's, gamma = 2^-15, 2^-13..2^9 and
        C = 2^-5, 2^-3..2^15.
    folds : int t, array of fold ids, or ``"auto"`` (granularity selection, bif only:
        t and r per lam from the tolerated error ``epsilon``).
    order : BIF order (int, ``"inf"`` or ``"auto"``); ignored with ``folds="auto"``.
    epsilon : tolerated approximation error for ``folds="auto"`` (> huber_width / 2).
    granularity : {"adaptive", "bound"}: with ``folds="auto"``, choose r from the observed
        series terms (default) or from the paper's bound; both choices are reported.
    confirm : how many of the best candidates of an approximate search to confirm by exact
        refit CV at least (0 switches the confirmation off); more are confirmed while the
        next approximate score beats the best exact error so far (at most 5x).
    recheck_degenerate : re-evaluate degenerate candidates of approximate methods exactly.
    average : {"pooled", "folds"}: the CV error is the error over all held-out points, or
        the unweighted mean of per-fold errors (scikit-learn's ``GridSearchCV`` convention).
    random_state : seed of the fold assignment.
    tol : BIF ``order="auto"`` tolerance (relative to ``max|F|``).
    n_jobs, backend, scheduler : parallel execution (see :func:`run_tasks`); the unit of
        work is one kernel setting.
    checkpoint : path of a JSON Lines file recording finished settings; a rerun resumes.
    progress : callable ``progress(stage, done, total)``.
    memory_budget : bytes or e.g. ``"8G"`` (see :mod:`kernelcv.memory`).
    settings, setting_lams : internal: explicit kernel settings (list of dicts) and one lam
        list per setting, used by :class:`KernelSearchCV`.
    Cs : instead of ``lams``, SVC-style values C; ``lam = 1 / (2 n C)`` (divide
        ``0.5||w||^2 + C sum loss`` by ``n C`` to get the mean-loss form).
    features, feature_map, feature_loss : ``rff`` only: D (default 30), ``"rff"`` (random
        Fourier features) or ``"nystroem"``, and the loss of the linear machine in feature
        space (``"squared_hinge"`` for svm/l2svm, ``"square"`` for krr/lssvm by default;
        ``"hinge"`` runs LIBLINEAR's L1-loss SVM as in the paper, slowly at large C).
        The feature-space model has a free intercept for svm (as the final SVC) and
        lssvm (unless ``fit_intercept=False``), none for the bias-free krr and l2svm.
    feature_seed : ``rff`` only: seed of the feature draw (default: ``random_state`` when
        that is an integer, else 0), so the search is reproducible even with given fold
        ids; it is reported and part of the checkpoint fingerprint.
    refine, refine_evals : ``rff`` only: check the feature-space choice by exact refit CV
        of the final kernel machine (SVC for svm) -- walk from one step along the gamma C
        ridge from it to the best of its 4 grid neighbours until none is better, at most
        ``refine_evals`` (default 30) refit CVs (:mod:`kernelcv.selection.refine`; with
        ``n_jobs`` > 1 the folds of each SVC refit CV run in that many threads).
        ``"auto"`` (default) refines up to 5,000 samples; True always (kernelcv machines:
        refused when the dense refits exceed the memory budget); False never. The visited
        candidates get status ``refined`` and an ``exact_error``, or ``pruned`` (stopped
        early, ``exact_error_at_least``); the choice is the best of them by exact error.

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
    total_tic = time.perf_counter()
    machine_spec = make_machine(machine, huber_width=huber_width, epsilon=svr_epsilon,
                                fit_intercept=fit_intercept)
    method = default_method(machine) if method is None else method
    if method not in METHODS:
        raise KernelCVError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if method == "closed-form" and machine_spec.loss.name != "square":
        raise KernelCVError(
            f"method 'closed-form' is exact only for krr and lssvm, not {machine!r}; "
            "use method='bif' (fast) or 'exact'")
    if method == "rff":
        check_feature_options(machine, kernel, folds, features, feature_map, feature_loss)
        feature_loss = feature_loss or FEATURE_LOSSES[machine]
        if settings is None and gammas is None:
            gammas = paper_gammas()
        check_refine(refine, refine_evals)
    elif ((features, feature_map, feature_loss, feature_seed, refine, refine_evals)
          != (30, "rff", None, None, "auto", REFINE_MAX_EVALS)):
        raise KernelCVError("features, feature_map, feature_loss, feature_seed, refine and "
                            "refine_evals belong to method='rff'")
    if method == "gacv" and machine != "svm":
        raise KernelCVError(f"method 'gacv' is defined for the hinge SVM (machine 'svm'), "
                            f"not {machine!r}")
    if average not in ("pooled", "folds"):
        raise KernelCVError(f"average must be 'pooled' or 'folds', got {average!r}")
    if isinstance(confirm, bool) or not isinstance(confirm, int | np.integer) or confirm < 0:
        raise KernelCVError(f"confirm must be an integer >= 0, got {confirm!r}")
    from ..cv import parse_order

    delta = machine_spec.loss.width if machine in ("svm", "svr") else 0.0
    auto = isinstance(folds, str)
    if auto:
        if folds != "auto":
            raise KernelCVError(f"folds must be an integer, fold ids or 'auto', got {folds!r}")
        if method != "bif":
            raise KernelCVError("folds='auto' (granularity selection) chooses the BIF "
                                "order; use it with method='bif'")
        if epsilon is None:
            raise KernelCVError("folds='auto' needs the tolerated error epsilon "
                                "(e.g. epsilon=0.1)")
        epsilon = check_tolerance(epsilon, delta)
        if granularity not in RULES:
            raise KernelCVError(f"granularity must be one of {', '.join(RULES)}, "
                                f"got {granularity!r}")
    elif epsilon is not None:
        raise KernelCVError("epsilon (tolerated error) is used only with folds='auto'")
    order = parse_order(order) if method == "bif" and not auto else None

    X, y, mapping = check_data(X, y, machine_spec.is_classifier)
    n = y.shape[0]
    if settings is None:
        settings, param_name = kernel_settings(kernel, gammas, degrees, gamma=gamma,
                                               degree=degree, coef0=coef0)
        if Cs is not None:
            if lams is not None:
                raise KernelCVError("give either a lam grid or a C grid, not both")
            lams = [float(v) for v in c_to_lam(check_grid(Cs, "C"), n)]
        elif lams is None and method == "rff":
            lams = [float(v) for v in c_to_lam(paper_cs(), n)]
        lam_values = check_grid(default_lams(n) if lams is None else lams, "lam")
        setting_lams = [lam_values] * len(settings)
    else:
        param_name = "gamma" if kernel in ("rbf", "laplace") else (
            "degree" if kernel == "poly" else None)
        setting_lams = [check_grid(values, "lam") for values in setting_lams]
    # The fixed folds serve every method (auto mode uses them only for degeneracy checks).
    base_folds = 10 if auto else folds
    if auto and n < 10:
        base_folds = n
    fold_ids = make_folds(y, base_folds, machine_spec.is_classifier, random_state)
    workers = _n_workers(n_jobs, backend, scheduler)
    if method == "rff":
        estimate = check_feature_memory(X, features, feature_map, workers, memory_budget)
        check_refine_memory(refine, machine, n, memory_budget)
    else:
        check_dense_budget(n, n, _MATRICES[method] * workers,
                           f"method {method!r} on {n} samples with {workers} worker(s)",
                           memory_budget)

    config = {
        "machine": machine, "huber_width": float(huber_width),
        "svr_epsilon": float(svr_epsilon), "fit_intercept": machine_spec.fit_intercept,
        "method": method, "order": order, "tol": float(tol),
        "folds": "auto" if auto else "fixed", "epsilon": epsilon, "delta": delta,
        "granularity": granularity, "random_state": random_state,
        "memory_budget": memory_budget,
    }
    if method == "rff":
        if feature_seed is None:
            feature_seed = (int(random_state) if isinstance(random_state, int | np.integer)
                            and not isinstance(random_state, bool) else 0)
        config.update({"features": int(features), "feature_map": feature_map,
                       "feature_loss": feature_loss, "feature_seed": int(feature_seed),
                       "feature_intercept": bool(machine == "svm"
                                                 or machine_spec.fit_intercept),
                       "classifier": machine_spec.is_classifier,
                       "memory_estimate": int(estimate), "refine": refine,
                       "refine_evals": int(refine_evals)})
    store = None
    if checkpoint is not None:
        # The memory budget does not change results, so it may differ on resume.
        identity = {k: v for k, v in config.items() if k not in (
            "memory_budget", "memory_estimate", "refine", "refine_evals")}
        key = fingerprint(X, y, fold_ids, {"config": identity, "settings": settings,
                                           "lams": setting_lams})
        store = Checkpoint(checkpoint, key, len(settings))

    parallel = workers > 1 or scheduler is not None
    if method == "rff":
        data = feature_data(X, config)  # the O(nnz(X) D) product, once for every gamma
    else:
        data = X if parallel else GramFactory(X, memory_budget=memory_budget)
    shared = {"data": data, "y": y, "fold_ids": fold_ids, "config": config}

    search_tic = time.perf_counter()
    per_setting: dict[int, list[dict]] = dict(store.settings) if store else {}
    todo = [i for i in range(len(settings)) if i not in per_setting]
    tasks = [{"setting": settings[i], "lams": setting_lams[i]} for i in todo]
    _report(progress, "search", len(per_setting), len(settings))
    with closing(run_tasks(evaluate_setting, tasks, shared=shared, n_jobs=n_jobs,
                           backend=backend, scheduler=scheduler)) as finished:
        for position, records in finished:
            index = todo[position]
            per_setting[index] = records
            if store is not None:
                store.add_setting(index, records)
            _report(progress, "search", len(per_setting), len(settings))
    search_seconds = time.perf_counter() - search_tic

    candidates = []
    for index, setting in enumerate(settings):
        for record in per_setting[index]:
            candidates.append({"setting": index, **setting, "method": method,
                               "order": order, **record, "exact_error": None})
    for candidate in candidates:
        candidate["status"] = "approximate" if method in (*APPROXIMATE, "rff") else "exact"
        if method not in (*APPROXIMATE, "rff"):
            candidate["exact_error"] = candidate_error(candidate, average)
        if average == "folds" and candidate["fold_errors"] is not None:
            candidate["score"] = float(np.mean(candidate["fold_errors"]))

    confirm_tic = time.perf_counter()
    rechecked, confirmed = safeguards(candidates, method, confirm, recheck_degenerate,
                                       average, shared, config, store, n_jobs, backend,
                                       scheduler, progress)
    best_index = choose(candidates, method, confirmed, rechecked)
    rank(candidates)
    confirm_seconds = time.perf_counter() - confirm_tic
    notes, refined, refine_tic = [], [], time.perf_counter()
    if method == "rff":
        best_index, refined, refine_notes = refine_search(
            X, y, fold_ids, candidates, best_index, config, average, refine, refine_evals,
            progress, workers=_n_workers(n_jobs, backend, scheduler))
        notes.extend(refine_notes)
        notes.extend(edge_notes(candidates, best_index, config["features"]))
        notes.extend(feature_notes(config, n))
    if mapping is not None and set(mapping.values()) != {-1, 1}:
        notes.append(f"labels {mapping[-1]!r}/{mapping[1]!r} mapped to -1/+1")
    return SearchResult(
        candidates=candidates, best_index=best_index, machine=machine, method=method,
        kernel=kernel, param_name=param_name, metric=machine_spec.metric, n_samples=n,
        folds="auto" if auto else int(fold_ids.max()) + 1, order=order,
        confirmed=confirmed, rechecked=rechecked, refined=refined,
        timings={"search_seconds": search_seconds, "confirm_seconds": confirm_seconds,
                 "refine_seconds": time.perf_counter() - refine_tic,
                 "total_seconds": time.perf_counter() - total_tic},
        label_mapping=mapping, notes=notes, config=config, fold_ids=fold_ids,
        feature_map=data["map"] if method == "rff" else None)


def _report(progress, stage, done, total):
    if progress is not None:
        progress(stage, done, total)


def _n_workers(n_jobs, backend, scheduler) -> int:
    if scheduler is not None or backend == "dask":
        return 1  # the cluster's memory, not ours
    if n_jobs is None or backend == "sequential":
        return 1
    if n_jobs == -1:
        import os

        return os.cpu_count() or 1
    return max(int(n_jobs), 1)
