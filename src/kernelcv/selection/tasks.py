"""The units of work of a grid search, as plain functions that run on any worker.

A *kernel setting* (kernel name plus its parameters) is one task: its Gram matrix is built
once and every lam is evaluated on it, in decreasing order so each full fit warm-starts
from the previous one (closed-form shares one eigendecomposition instead). A task returns
a list of JSON-able records, so results can be shipped between processes, written to a
checkpoint and read back unchanged.

Inputs are trusted: :mod:`kernelcv.selection.search` validates them once.
"""

from __future__ import annotations

import time

import numpy as np

from .._threads import blas_threads_for
from ..criteria.closed_form import ClosedFormCV
from ..criteria.evaluate import evaluate_lam
from ..criteria.result import DEGENERATE_RATIO, heldout_ratio
from ..kernels import GramFactory, make_kernel
from ..machines import make_machine
from ..validation import make_folds
from .granularity import adaptive_tolerance, bound_rule


def machine_from_config(config: dict):
    """The :class:`Machine` described by a search configuration."""
    return make_machine(config["machine"], huber_width=config["huber_width"],
                        epsilon=config["svr_epsilon"], fit_intercept=config["fit_intercept"])


def gram_for_setting(data, setting: dict, memory_budget=None) -> np.ndarray:
    """The Gram matrix of ``setting`` on ``data`` (a :class:`GramFactory` or the X matrix)."""
    factory = data if isinstance(data, GramFactory) else GramFactory(
        data, memory_budget=memory_budget)
    kernel = make_kernel(setting["kernel"], setting.get("gamma"), setting.get("degree", 3),
                         setting.get("coef0", 1.0))
    return factory.gram(kernel)


def _fold_plan(y, config, fold_ids, cache, lam, kappa, classifier):
    """Fold ids and BIF order for one lam: fixed folds, or eq. 6 with ``folds="auto"``."""
    if config["folds"] != "auto":
        return fold_ids, config["order"], None
    delta = config["delta"]
    choice = bound_rule(config["epsilon"], delta=delta, lam=lam, kappa=kappa,
                        n_samples=y.shape[0])
    t = choice.n_folds
    if t not in cache:
        cache[t] = make_folds(y, t, classifier, config["random_state"])
    return cache[t], choice.order, choice


def evaluate_setting(data, y, fold_ids, setting: dict, lams, config: dict) -> list[dict]:
    """Evaluate every lam of one kernel setting with the configured criterion.

    Parameters
    ----------
    data : GramFactory or (n, d) array / sparse matrix.
    y : (n,) +-1 labels or targets.
    fold_ids : (n,) fold ids (unused with ``config["folds"] == "auto"``).
    setting : ``{"kernel": ..., "gamma": ..., "degree": ..., "coef0": ...}``.
    lams : lam values; records come back in this order.
    config : the search configuration (see :func:`kernelcv.selection.search.grid_search`).

    Returns
    -------
    list of dict
        One record per lam: ``lam``, ``score`` (the criterion's value), ``cv_error``
        (pooled held-out error; None for GACV), ``fold_errors``, ``n_folds``,
        ``order_used``, ``degenerate``, ``heldout_ratio``, ``seconds``, ``fit_seconds``,
        ``notes`` and, with ``folds="auto"``, ``granularity``.

    Notes
    -----
    Cost: one Gram matrix (O(n^2) from cached distances, O(n^2 d) otherwise) plus, per lam,
    what the criterion costs (see :func:`kernelcv.cross_validate`).
    """
    if config["method"] == "rff":
        return evaluate_features_setting(data, y, fold_ids, setting, lams, config)
    machine = machine_from_config(config)
    method = config["method"]
    with blas_threads_for(y.shape[0]):
        tic = time.perf_counter()
        K = gram_for_setting(data, setting, config["memory_budget"])
        kappa = float(np.max(np.diag(K)))
        closed = None
        if method == "closed-form":
            closed = ClosedFormCV(K, fold_ids, fit_intercept=machine.fit_intercept)
        setup = (time.perf_counter() - tic) / len(lams)
        records: list[dict | None] = [None] * len(lams)
        previous = None
        cache: dict[int, np.ndarray] = {}
        for position in np.argsort(lams)[::-1]:
            lam = float(lams[position])
            if method == "gacv":
                record, previous = _gacv_record(K, y, fold_ids, lam, machine, previous)
            else:
                record, previous = _cv_record(K, y, fold_ids, lam, machine, config, closed,
                                              previous, cache, kappa)
            record["seconds"] += setup
            records[position] = record
    return records


def _cv_record(K, y, fold_ids, lam, machine, config, closed, previous, cache, kappa):
    folds, order, choice = _fold_plan(y, config, fold_ids, cache, lam, kappa,
                                      machine.is_classifier)
    method = config["method"]
    granularity = None
    if choice is not None:
        # Adaptive rule: same t, stop once the observed series tail is below the tolerance.
        atol = adaptive_tolerance(config["epsilon"], config["delta"])
        adaptive = evaluate_lam(K, y, folds, lam, machine, method, order="auto",
                                tol=config["tol"], atol=atol, warm=previous)
        ev = adaptive
        if config["granularity"] == "bound":
            ev = evaluate_lam(K, y, folds, lam, machine, method, order=order,
                              tol=config["tol"], warm=adaptive.fit)
            ev.seconds += adaptive.seconds
        granularity = {"rule": config["granularity"], **choice.to_dict(),
                       "order_adaptive": adaptive.order_used}
    else:
        ev = evaluate_lam(K, y, folds, lam, machine, method, order=order, tol=config["tol"],
                          closed=closed, warm=previous)
    record = {
        "lam": lam, "score": ev.cv_error, "cv_error": ev.cv_error,
        "fold_errors": [float(e) for e in ev.fold_errors],
        "fold_sizes": [int(c) for c in np.bincount(folds)],
        "n_folds": int(folds.max()) + 1,
        "order_used": ev.order_used, "degenerate": bool(ev.degenerate),
        "heldout_ratio": float(ev.heldout_ratio), "seconds": ev.seconds,
        "fit_seconds": ev.fit_seconds, "notes": list(ev.notes),
    }
    if granularity is not None:
        record["granularity"] = granularity
    return record, (ev.fit if ev.fit is not None else previous)


def _gacv_record(K, y, fold_ids, lam, machine, previous):
    from ..criteria.gacv import gacv

    tic = time.perf_counter()
    start = {} if previous is None else {"alpha0": previous.alpha,
                                         "intercept0": previous.intercept}
    fit = machine.fit(K, y, lam, **start)
    fit_seconds = time.perf_counter() - tic
    value = float(gacv(K, y, fit, lam, machine=machine))
    ratio = heldout_ratio(K, fit.alpha, fold_ids)
    record = {
        "lam": lam, "score": value, "cv_error": None, "fold_errors": None, "fold_sizes": None,
        "n_folds": int(fold_ids.max()) + 1, "order_used": None,
        "degenerate": bool(ratio < DEGENERATE_RATIO), "heldout_ratio": float(ratio),
        "seconds": time.perf_counter() - tic, "fit_seconds": fit_seconds, "notes": [],
    }
    return record, fit


def exact_candidate(data, y, fold_ids, setting: dict, lam: float, config: dict) -> dict:
    """Exact refit CV of one candidate (the safeguard's confirmation).

    With ``folds="auto"`` the candidate's own t is used (``config["n_folds"]``) with the
    same seeded fold assignment as its approximate value.
    """
    machine = machine_from_config(config)
    with blas_threads_for(y.shape[0]):
        tic = time.perf_counter()
        K = gram_for_setting(data, setting, config["memory_budget"])
        if config["folds"] == "auto":
            fold_ids = make_folds(y, int(config["n_folds"]), machine.is_classifier,
                                  config["random_state"])
        ev = evaluate_lam(K, y, fold_ids, float(lam), machine, "exact")
    return {"cv_error": ev.cv_error, "fold_errors": [float(e) for e in ev.fold_errors],
            "seconds": time.perf_counter() - tic}


# --------------------------------------------------------------------------------------
# random-feature search (method "rff")
# --------------------------------------------------------------------------------------


def feature_data(X, config: dict):
    """The shared data of a feature-space search: the fitted map and its gamma-free base.

    Computed once per data set (O(nnz(X) D)); every gamma reuses it. The Nystroem
    landmarks are drawn from all rows, held-out folds included: the fold-out models
    see the inputs x (never the labels) of some held-out points through the map, an
    x-only leak that the report notes. Raises :class:`KernelCVError` when the base is
    not finite (data too large for the map).
    """
    from ..features import FeatureMap

    with _feature_threads(X.shape[0], config["features"]):
        fmap = FeatureMap(config["feature_map"], config["features"],
                          config["feature_seed"]).fit(X)
        return {"map": fmap, "base": fmap.base(X)}


# Below this many features the D x D products are too small to share between BLAS
# threads; idle spinning threads made a 400-sample search ~20x slower (measured).
_THREADED_FEATURES = 300


def _feature_threads(n, D):
    return blas_threads_for(n if D >= _THREADED_FEATURES else 0)


def evaluate_features_setting(data, y, fold_ids, setting, lams, config) -> list[dict]:
    """All lam of one gamma in feature space (see :mod:`kernelcv.criteria.random_features`).

    Returns records shaped like :func:`evaluate_setting`'s (``order_used`` None, never
    degenerate) plus ``C = 1 / (2 n lam)``. Cost: O(n D) for the features plus the
    loss's path (``square``: O(n D^2 + t D^3) for every lam; ``squared_hinge``: a few
    Newton steps of O(n D^2) per fold and lam).
    """
    from ..criteria.random_features import lam_to_c, path_cv
    from ..features import check_finite_features

    tic = time.perf_counter()
    n = y.shape[0]
    with _feature_threads(n, config["features"]):
        Z = data["map"].features(data["base"], setting["gamma"])
        check_finite_features(Z, f"the features at gamma = {setting['gamma']:g}")
        path = path_cv(Z, y, fold_ids, lams, config["feature_loss"],
                       classifier=config["classifier"],
                       random_state=config["feature_seed"],
                       fit_intercept=config["feature_intercept"])
    setup = (time.perf_counter() - tic - path.seconds.sum()) / len(lams)
    records = []
    for k, lam in enumerate(lams):
        errors = path.fold_errors[k]
        records.append({
            "lam": float(lam), "C": float(lam_to_c(lam, n)),
            "score": float(path.cv_error[k]), "cv_error": float(path.cv_error[k]),
            "fold_errors": [float(e) for e in errors],
            "fold_sizes": [int(c) for c in path.fold_sizes],
            "n_folds": int(path.fold_sizes.size), "order_used": None,
            "degenerate": False, "heldout_ratio": None,
            "seconds": float(path.seconds[k] + setup), "fit_seconds": float(path.seconds[k]),
            "notes": list(path.notes) if k == 0 else [],
        })
    return records
