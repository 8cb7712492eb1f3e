"""The final model of a random-feature search: the exact kernel machine or the linear one.

After a feature-space search (``method="rff"``) the chosen (gamma, lam) is fit once on all
the training data, either as the exact kernel machine (LIBSVM's SVC for a binary svm; for
the other machines and every multiclass one a clone of the kernelcv estimator the caller
passes, or else the same fit as a :class:`kernelcv.machines.model.KernelModel`) or, for
large n (above ``kernel_limit``, default 100,000 samples, where one exact SVC fit costs
O(n^2)-O(n^3)), as the linear machine in feature space with more features than the search
used (``final_features``, default twice the search's D): a fresh nested draw of the
search's map and seed (every binary machine of a multiclass scheme on the same features,
in memory). With the square loss that fit needs only sums over row chunks (no n x D
matrix: :func:`kernelcv.random_features.sums.square_full_model`). scikit-learn (SVC,
``clone``) is imported only by the branches that use it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import KernelCVError
from ..features import FeatureMap, LinearFeatureModel
from ..kernels import Kernel
from ..machines.model import KernelModel
from ..machines.multiclass import MulticlassFeatureModel
from ..memory import check_dense_budget
from ..reading.rowchunks import ArraySource, chunk_rows_for, is_row_source
from ..validation import check_data
from .dask_rows import dask_rows
from .linear_cv import fit_linear
from .multiclass import (
    chunk_class_sums,
    fit_multiclass_linear,
    scheme_full_models,
)
from .newton import squared_hinge_sums_path
from .refine import refit_name
from .rowmap import LocalRows
from .sums import chunk_square_sums, square_full_model

FINAL_KERNEL_LIMIT = 100_000  # samples beyond which final="auto" fits in feature space
FINAL_FEATURE_FACTOR = 2  # the feature-space final model has this many times the search's D
FINAL_CACHE_MB = 1000  # LIBSVM kernel cache of the final SVC fit
DENSE_FINAL_BYTES = 512 * 2**20  # densify sparse X up to this size for the final SVC
# Dense n x n float64 matrices a kernelcv estimator holds while it fits (Gram + solver).
FINAL_DENSE_MATRICES = 2.0


#: The final models of method "rff": the exact kernel machine, the linear model in feature
#: space, or the first where it fits.
FINALS = ("auto", "kernel", "linear")

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

    def fit(self, X, y):
        """Refit the wrapped SVC on ``X`` (converted as at predict time); returns self.
        With :meth:`__sklearn_is_fitted__` this makes it a fitted estimator for
        scikit-learn's checks (a Pipeline ending in it predicts)."""
        convert = _to_dense if self.dense else _to_csr32
        self.svc.fit(convert(X), y)
        self.classes_ = self.svc.classes_
        return self

    def __sklearn_is_fitted__(self):
        return hasattr(self.svc, "support_")

    def __sklearn_tags__(self):
        # the wrapped SVC's (a classifier); scikit-learn is imported only where it is used
        return self.svc.__sklearn_tags__()

    def get_params(self, deep=True):
        """Its constructor's arguments (scikit-learn's estimator protocol)."""
        return {"svc": self.svc, "dense": self.dense, "chunk_rows": self.chunk_rows}

    def set_params(self, **params):
        """Set constructor arguments; returns self."""
        for name, value in params.items():
            setattr(self, name, value)
        return self


def kernel_final_fits(machine: str, n: int, memory_budget=None) -> bool:
    """Whether the exact kernel fit of ``machine`` on n samples fits the memory budget.

    svm uses LIBSVM (no n x n matrix, only its kernel cache); krr, lssvm and l2svm use the
    kernelcv estimators, which hold about :data:`FINAL_DENSE_MATRICES` dense n x n arrays.
    """
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


def final_feature_count(result, n: int, final_features=None) -> int:
    """D of a feature-space final model: ``final_features``, else
    :data:`FINAL_FEATURE_FACTOR` times the search's D (Nystroem: at most n)."""
    D = final_features or FINAL_FEATURE_FACTOR * result.feature_map.n_features
    return int(min(D, n) if result.criterion.feature_map == "nystroem" else D)


def fit_final(X, y, result, final="auto", memory_budget=None, best=None, estimator=None,
              kernel_limit=None, final_features=None, rows=None, execution=None):
    """The final model of a feature-space search at the chosen (gamma, lam).

    ``final="kernel"``: the exact kernel machine -- scikit-learn's ``SVC(C = 1/(2 n lam),
    gamma)`` (LIBSVM, hinge loss with intercept) for ``svm``; for ``l2svm``/``krr``/``lssvm``
    a clone of ``estimator`` (a kernelcv estimator, e.g. ``L2SVMClassifier``, carrying the
    search's options) or, without one, a :class:`~kernelcv.machines.model.KernelModel` of
    the searched machine (``result.machine_spec``: the same fit, no scikit-learn).
    ``"linear"``: the linear model in feature space with :func:`final_feature_count`
    features (:class:`kernelcv.features.LinearFeatureModel`), with the search's loss and
    intercept setting. ``"auto"``: kernel up to ``kernel_limit`` samples (default
    :data:`FINAL_KERNEL_LIMIT`) when the dense n x n fit fits the memory budget (svm:
    always), linear otherwise (a note says so).

    ``best`` (default ``result.best``): the chosen ``gamma`` and ``lam``. ``rows``: the
    training rows as a :class:`~kernelcv.random_features.rowmap.LocalRows` (out of core; X may
    then be None and only the feature-space model is possible). ``execution``: with a
    Dask scheduler (or backend "dask"), a squared-hinge feature-space model runs its
    Newton passes on the cluster's workers (the rows scattered again, as the search did;
    :mod:`kernelcv.random_features.resident`): rows read in chunks are not read again at
    every pass here, and rows in memory are not fitted by this process alone.

    Returns
    -------
    model : object with ``predict``
    kind : ``"kernel"`` or ``"linear"``
    notes : list of str
    """
    best = result.best if best is None else best
    gamma, lam = float(best["gamma"]), float(best["lam"])
    n = y.shape[0]
    spec = result.machine_spec
    svc = result.machine == "svm" and not spec.is_multiclass
    machine = result.machine if svc or not spec.is_multiclass else refit_name(spec)
    limit = FINAL_KERNEL_LIMIT if kernel_limit is None else int(kernel_limit)
    notes = []
    kind = final
    streamed = is_row_source(X)
    if streamed and final == "kernel":
        raise KernelCVError("the exact kernel machine is fitted on the rows in memory; rows "
                            "read in chunks get the feature-space model (final 'linear')")
    if final == "auto" and streamed:
        kind = "linear"
        notes.append("the rows were read in chunks: the chosen (gamma, C) was fitted in "
                     f"feature space with D = {final_feature_count(result, n, final_features)}"
                     " features (the exact kernel machine needs the rows in memory)")
    elif final == "auto":
        kind = "kernel" if n <= limit else "linear"
        if kind == "linear":
            notes.append(
                f"n = {n} > {limit}: the exact kernel fit would cost O(n^2) time and cache "
                "memory, so the chosen (gamma, C) was fitted in feature space with D = "
                f"{final_feature_count(result, n, final_features)} features (the search "
                f"used {result.feature_map.n_features}); use --final kernel "
                "(final='kernel') to fit the kernel machine anyway")
        elif not kernel_final_fits(machine, n, memory_budget):
            kind = "linear"
            notes.append(
                f"the exact {machine} fit needs {FINAL_DENSE_MATRICES:g} dense {n} x {n} "
                "matrices, more than the memory budget, so the chosen (gamma, C) was "
                f"fitted in feature space with D = "
                f"{final_feature_count(result, n, final_features)} features")
    if kind == "linear":
        model = _fit_in_feature_space(X, y, result, gamma, lam,
                                      final_feature_count(result, n, final_features), rows,
                                      _on_cluster(execution))
        return model, "linear", notes
    if svc:
        from sklearn.svm import SVC

        svc = SVC(C=float(1.0 / (2.0 * n * lam)), gamma=gamma, kernel="rbf",
                  cache_size=FINAL_CACHE_MB)
        # LIBSVM is faster on dense rows; densify when that is small (else int32 CSR).
        dense = not sp.issparse(X) or X.shape[0] * X.shape[1] * 8 <= DENSE_FINAL_BYTES
        svc.fit(_to_dense(X) if dense else _to_csr32(X), y)
        return ChunkedSVC(svc, dense), "kernel", notes
    if estimator is None:
        model = KernelModel(result.machine_spec, Kernel("rbf", gamma=gamma), lam,
                            memory_budget=memory_budget)
        return model.fit(X, y), "kernel", notes
    from sklearn.base import clone

    model = clone(estimator).set_params(kernel="rbf", gamma=gamma, lam=lam)
    if model.memory_budget is None:
        model.set_params(memory_budget=memory_budget)
    return model.fit(X, y), "kernel", notes


def _on_cluster(execution):
    """``(True, scheduler)`` when ``execution`` names a Dask cluster, else ``(False, None)``."""
    if execution is None:
        return False, None
    return (execution.scheduler is not None or execution.backend == "dask",
            execution.scheduler)


def _fit_in_feature_space(X, y, result, gamma, lam, n_features, rows=None,
                          cluster=(False, None)):
    """The search's linear machine on all rows with ``n_features`` features.

    The square loss sums over row chunks (``rows``, or X's rows), O(n D^2 + D^3) time and
    O(chunk D + D^2) memory; the squared hinge of rows read in chunks by Newton passes
    over them; with ``cluster`` ``(True, scheduler)`` the squared hinge's Newton passes
    run on the Dask workers, the rows (read in chunks or in memory) scattered to them;
    otherwise the losses fit on the n x D features in memory.
    """
    space = result.criterion
    if space.is_multiclass:
        return _multiclass_in_feature_space(X, y, space, gamma, lam, n_features, rows)
    _, y_pm, mapping = _pm_labels(y, space.classifier)
    classes = (mapping[-1], mapping[1]) if mapping is not None else None
    rows, fmap, chunk = _final_map(X, y_pm, space, n_features, rows)
    if space.feature_loss == "square":
        projection = fmap.projection(gamma)
        sums = rows.map_reduce(chunk_square_sums, chunk, fmap=fmap, gammas=[gamma],
                               projections=[projection], n_folds=rows.n_folds)[0]
        w, c = square_full_model(sums, lam, space.feature_intercept)
    elif space.feature_loss == "squared_hinge" and (is_row_source(X) or cluster[0]):
        if cluster[0]:  # model 0 leaves out the empty fold 0: it has every row
            tol = 1e-6 if is_row_source(X) else 1e-8  # rows in memory: fit_linear's
            with dask_rows(cluster[1], X, y_pm, rows.fold_ids) as scattered:
                models, _ = squared_hinge_sums_path(scattered, fmap, gamma, [lam], chunk,
                                                    space.feature_intercept, tol=tol)
        else:
            models, _ = squared_hinge_sums_path(rows, fmap, gamma, [lam], chunk,
                                                space.feature_intercept)
        w, c = models.coef[0, :, 0], float(models.intercept[0, 0])
    else:
        w, c = fit_linear(fmap.transform(X, gamma), y_pm, lam, space.feature_loss,
                          random_state=space.feature_seed,
                          fit_intercept=space.feature_intercept)
    return LinearFeatureModel(fmap, gamma, w, c, classes)


def _final_map(X, targets, space, n_features, rows=None):
    """The training rows (``rows``, else X's rows as one "fold" of all rows -- the second,
    so that model 0 has them all), a fresh nested draw of the search's map on them, and
    the chunk size: ``(rows, fmap, chunk_rows)``."""
    if rows is None:
        source = X if is_row_source(X) else ArraySource(X, targets)
        rows = LocalRows(source, targets, np.ones(targets.shape[0], dtype=np.intp), n_folds=2)
    fmap = FeatureMap(space.feature_map, n_features, space.feature_seed, nested=True)
    fmap.draw(rows.n_rows, rows.n_dims)
    if fmap.kind == "nystroem":
        fmap.set_landmarks(rows.take(fmap.landmark_rows_))
    return rows, fmap, chunk_rows_for(n_features, rows.source.row_bytes)


def _multiclass_in_feature_space(X, y, space, gamma, lam, n_features, rows=None):
    """Every binary machine of the search's scheme in feature space: from sums per class
    over row chunks with the square loss (:func:`~kernelcv.random_features.multiclass.
    scheme_full_models`, the rows in memory or read as they go), else on the n x D
    features of X in memory (:func:`~kernelcv.random_features.multiclass.
    fit_multiclass_linear`)."""
    _, codes, mapping = check_data(np.zeros((y.shape[0], 1)), y, True, multiclass=True)
    classes = tuple(mapping[code] for code in sorted(mapping))
    k, strategy = space.n_classes, space.strategy
    rows, fmap, chunk = _final_map(X, codes, space, n_features, rows)
    if space.feature_loss != "square":
        W, c = fit_multiclass_linear(fmap.transform(X, gamma), codes, lam, space.feature_loss,
                                     k, strategy, random_state=space.feature_seed,
                                     fit_intercept=space.feature_intercept)
        return MulticlassFeatureModel(fmap, gamma, W, c, classes, strategy)
    cells = rows.map_reduce(chunk_class_sums, chunk, fmap=fmap, gammas=[gamma],
                            projections=[fmap.projection(gamma)], n_folds=rows.n_folds,
                            n_classes=k)[0]
    W, c = scheme_full_models(cells, lam, k, strategy, space.feature_intercept)
    return MulticlassFeatureModel(fmap, gamma, W, c, classes, strategy)


def svc_as_kernel_model(model: ChunkedSVC, machine, gamma: float, lam: float) -> KernelModel:
    """The fitted SVC of :func:`fit_final` as a :class:`KernelModel` (support vectors,
    signed dual coefficients, intercept; ``f(x) = sum_j a_j k(x, sv_j) + b``, the SVC's
    decision value), so that it can be saved without pickle."""
    svc = model.svc
    out = KernelModel(machine, Kernel("rbf", gamma=gamma), lam)
    vectors = svc.support_vectors_
    out.X_fit_ = sp.csr_matrix(vectors) if sp.issparse(vectors) else np.asarray(vectors)
    out.dual_coef_ = np.asarray(svc.dual_coef_[0], dtype=np.float64).copy()
    out.intercept_ = float(svc.intercept_[0])
    out.classes_ = np.asarray(svc.classes_)
    return out


def _pm_labels(y, classifier):
    dummy = np.zeros((y.shape[0], 1))
    return check_data(dummy, y, classifier)
