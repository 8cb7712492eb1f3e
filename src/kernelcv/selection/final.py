"""The final model of a random-feature search: the exact kernel machine or the linear one.

After a feature-space search (``method="rff"``) the chosen (gamma, lam) is fit once on all
the training data, either as the exact kernel machine (LIBSVM's SVC for svm; for the other
machines a clone of the kernelcv estimator the caller passes, or else the same fit as a
:class:`kernelcv.machines.model.KernelModel`) or, for very large n, as the linear machine
in feature space. scikit-learn (SVC, ``clone``) is imported only by the branches that use
it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..criteria.random_features import fit_linear
from ..exceptions import KernelCVError
from ..features import LinearFeatureModel
from ..kernels import Kernel
from ..machines.model import KernelModel
from ..memory import check_dense_budget
from ..validation import check_data

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
    gamma)`` (LIBSVM, hinge loss with intercept) for ``svm``; for ``l2svm``/``krr``/``lssvm``
    a clone of ``estimator`` (a kernelcv estimator, e.g. ``L2SVMClassifier``, carrying the
    search's options) or, without one, a :class:`~kernelcv.machines.model.KernelModel` of
    the searched machine (``result.machine_spec``: the same fit, no scikit-learn).
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
    space = result.criterion  # the FeatureSpace method of the search
    best = result.best if best is None else best
    gamma, lam = float(best["gamma"]), float(best["lam"])
    n = y.shape[0]
    machine = result.machine
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
        _, y_pm, mapping = _pm_labels(y, space.classifier)
        fmap = result.feature_map
        Z = fmap.transform(X, gamma)
        w, c = fit_linear(Z, y_pm, lam, space.feature_loss, random_state=space.feature_seed,
                          fit_intercept=space.feature_intercept)
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
    if estimator is None:
        model = KernelModel(result.machine_spec, Kernel("rbf", gamma=gamma), lam,
                            memory_budget=memory_budget)
        return model.fit(X, y), "kernel", notes
    from sklearn.base import clone

    model = clone(estimator).set_params(kernel="rbf", gamma=gamma, lam=lam)
    if model.memory_budget is None:
        model.set_params(memory_budget=memory_budget)
    return model.fit(X, y), "kernel", notes


def _pm_labels(y, classifier):
    dummy = np.zeros((y.shape[0], 1))
    return check_data(dummy, y, classifier)
