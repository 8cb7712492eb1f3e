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
import scipy.sparse as sp

from .._threads import blas_threads_for
from ..criteria.closed_form import ClosedFormCV
from ..criteria.evaluate import evaluate_lam
from ..criteria.result import DEGENERATE_RATIO, heldout_ratio
from ..kernels import GramFactory, make_kernel
from ..machines import make_machine
from ..memory import check_dense_budget
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


FINAL_KERNEL_LIMIT = 100_000  # samples beyond which final="auto" keeps the linear model
FINAL_CACHE_MB = 1000  # LIBSVM kernel cache of the final SVC fit
DENSE_FINAL_BYTES = 512 * 2**20  # densify sparse X up to this size for the final SVC
# Dense n x n float64 matrices a kernelcv estimator holds while it fits (Gram + solver).
FINAL_DENSE_MATRICES = 2.0


def _to_dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def _to_csr32(X):
    X = sp.csr_matrix(X, dtype=np.float64)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X


class ChunkedSVC:
    """A fitted SVC that converts and predicts its input in row chunks.

    LIBSVM is fastest on dense rows, so the final SVC is fit on densified data when that is
    small; at predict time a large (sparse) test set is densified ``chunk_rows`` rows at a
    time, so memory stays O(chunk_rows d) whatever the test size.
    """

    def __init__(self, svc, dense: bool, chunk_rows: int = 4096):
        self.svc = svc
        self.dense = dense
        self.chunk_rows = chunk_rows
        self.classes_ = svc.classes_

    def _apply(self, method, X):
        convert = _to_dense if self.dense else _to_csr32
        parts = [getattr(self.svc, method)(convert(X[start:start + self.chunk_rows]))
                 for start in range(0, X.shape[0], self.chunk_rows)]
        return np.concatenate(parts) if parts else np.empty(0)

    def predict(self, X):
        """Labels, row chunk by row chunk."""
        return self._apply("predict", X)

    def decision_function(self, X):
        """SVC decision values, row chunk by row chunk."""
        return self._apply("decision_function", X)

    def score(self, X, y):
        """Accuracy."""
        return float(np.mean(self.predict(X) == np.asarray(y)))


def kernel_final_fits(machine: str, n: int, memory_budget=None) -> bool:
    """Whether the exact kernel fit of ``machine`` on n samples fits the memory budget.

    svm uses LIBSVM (no n x n matrix, only its kernel cache); krr, lssvm and l2svm use the
    kernelcv estimators, which hold about :data:`FINAL_DENSE_MATRICES` dense n x n arrays.
    """
    from ..exceptions import KernelCVError

    if machine == "svm":
        return True
    try:
        check_dense_budget(n, n, FINAL_DENSE_MATRICES, "", memory_budget)
    except KernelCVError:
        return False
    return True


def check_final_kernel(machine: str, n: int, memory_budget=None):
    """Refuse ``final="kernel"`` up front when the exact fit would exceed the budget."""
    check_dense_budget(n, n, FINAL_DENSE_MATRICES,
                       f"the final exact {machine} fit (--final kernel) on {n} samples",
                       memory_budget)


def fit_final(X, y, result, final="auto", memory_budget=None, best=None, estimator=None):
    """The final model of a feature-space search at the chosen (gamma, lam).

    ``final="kernel"``: the exact kernel machine -- scikit-learn's ``SVC(C = 1/(2 n lam),
    gamma)`` (LIBSVM, hinge loss with intercept) for ``svm``, the kernelcv estimator
    (``L2SVMClassifier``, ``KernelRidgeRegressor``, ``LSSVMClassifier``, with the search's
    options: a clone of ``estimator`` when given) for ``l2svm``/``krr``/``lssvm``.
    ``"linear"``: the linear model in feature space
    (:class:`kernelcv.features.LinearFeatureModel`), O(n D) memory, with the search's
    intercept setting. ``"auto"``: kernel up to :data:`FINAL_KERNEL_LIMIT` samples when
    the dense n x n fit fits the memory budget (svm: always), linear otherwise (a note).

    ``best`` (default ``result.best``): the chosen ``gamma`` and ``lam``.

    Returns
    -------
    model : object with ``predict``
    kind : ``"kernel"`` or ``"linear"``
    notes : list of str
    """
    from ..criteria.random_features import fit_linear
    from ..features import LinearFeatureModel

    config = result.config
    best = result.best if best is None else best
    gamma, lam = float(best["gamma"]), float(best["lam"])
    n = y.shape[0]
    machine = config["machine"]
    notes = []
    kind = final
    if final == "auto":
        kind = "kernel" if n <= FINAL_KERNEL_LIMIT else "linear"
        if kind == "linear":
            notes.append(
                f"n = {n} > {FINAL_KERNEL_LIMIT}: the exact kernel fit would cost O(n^2) "
                "time and cache memory, so the linear model in feature space was kept; "
                "use --final kernel (final='kernel') to fit it anyway")
        elif not kernel_final_fits(machine, n, memory_budget):
            kind = "linear"
            notes.append(
                f"the exact {machine} fit needs {FINAL_DENSE_MATRICES:g} dense {n} x {n} "
                "matrices, more than the memory budget, so the linear model in feature "
                "space was kept")
    if kind == "linear":
        _, y_pm, mapping = _pm_labels(y, config["classifier"])
        fmap = result.feature_map
        Z = fmap.transform(X, gamma)
        w, c = fit_linear(Z, y_pm, lam, config["feature_loss"],
                          random_state=config["feature_seed"],
                          fit_intercept=config["feature_intercept"])
        classes = (mapping[-1], mapping[1]) if mapping is not None else None
        return LinearFeatureModel(fmap, gamma, w, c, classes), "linear", notes
    if machine == "svm":
        from sklearn.svm import SVC

        svc = SVC(C=float(1.0 / (2.0 * n * lam)), gamma=gamma, kernel="rbf",
                  cache_size=FINAL_CACHE_MB)
        # LIBSVM is faster on dense rows; densify when that is small (else int32 CSR).
        dense = not sp.issparse(X) or X.shape[0] * X.shape[1] * 8 <= DENSE_FINAL_BYTES
        svc.fit(_to_dense(X) if dense else _to_csr32(X), y)
        return ChunkedSVC(svc, dense), "kernel", notes
    from sklearn.base import clone

    from .search_cv import ESTIMATORS

    if estimator is None:
        options = {"fit_intercept": config["fit_intercept"]} if machine == "lssvm" else {}
        estimator = ESTIMATORS[machine](memory_budget=memory_budget, **options)
    model = clone(estimator).set_params(kernel="rbf", gamma=gamma, lam=lam)
    if model.memory_budget is None:
        model.set_params(memory_budget=memory_budget)
    return model.fit(X, y), "kernel", notes


def _pm_labels(y, classifier):
    from ..validation import check_data

    dummy = np.zeros((y.shape[0], 1))
    return check_data(dummy, y, classifier)
