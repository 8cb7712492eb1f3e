"""Explicit feature maps approximating the Gaussian kernel: random Fourier and Nystroem.

Both maps send a sample x to a vector z(x) of D numbers with z(x).z(x') ~ k(x, x') for the
Gaussian kernel ``k(x, x') = exp(-gamma ||x - x'||^2)``, so a *linear* machine on Z (n x D)
stands in for the kernel machine at O(n D) memory instead of O(n^2).

Random Fourier features (Rahimi & Recht)
    ``w_j ~ N(0, 2 gamma I_d)``, ``b_j ~ U(-pi, pi)``, ``z(x) = sqrt(2/D) cos(W^T x + b)``;
    ``E[z(x).z(x')] = k(x, x')`` and the error of one entry is O(1/sqrt(D)).
    One draw of standard normals ``W0`` (d x D) serves every gamma: ``W = sqrt(2 gamma) W0``,
    so the product ``X W0`` (cost O(nnz(X) D)) is computed **once per data set** and each
    gamma costs one elementwise cosine, O(n D).
Nystroem (Williams & Seeger)
    D landmark rows L of X (sampled without replacement, seeded);
    ``z(x) = Lambda^{-1/2} U^T k(L, x)`` with ``K_LL = U Lambda U^T``, dropping eigenvalues
    below ``1e-12 max(Lambda)``, so ``Z Z^T`` is the Nystroem approximation
    ``K_nL K_LL^+ K_Ln``. The squared distances ``||x - l||^2`` (n x D) are computed once;
    each gamma costs an elementwise exponential, one ``eigh`` of D x D and an O(n D^2)
    product.

Nested draws (``nested=True``, used by the adaptive feature count): the features of a
smaller D are the first D of a larger draw (:meth:`FeatureMap.prefix`): RFF draws each
feature's d normals and its phase from two independent streams, feature after feature;
Nystroem keeps its landmarks in draw order, not sorted.

Rows are processed in chunks of ``chunk_rows`` (default: about 8 MiB of temporaries), so
the peak memory is the n x D output plus the n x D base, plus the d x D draw (RFF) or the
D landmark rows (Nystroem). Sparse CSR input is supported by both maps: RFF multiplies the
sparse rows by the dense d x D draw (so ``d * D * 8`` bytes must fit in the memory budget;
for a huge d use Nystroem, which keeps only D sparse landmark rows).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .exceptions import KernelCVError, MemoryBudgetError
from .memory import format_bytes, memory_budget

#: The feature maps: random Fourier features and Nystroem landmarks.
RFF, NYSTROEM = "rff", "nystroem"
MAPS = (RFF, NYSTROEM)
# Rows per chunk: keep chunk temporaries near this many bytes.
_CHUNK_BYTES = 8 * 2**20


def check_n_features(value) -> int:
    """D must be an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise KernelCVError(f"the number of random features D must be an integer >= 1, "
                            f"got {value!r} (the paper's default is 30)")
    return int(value)


def feature_memory(X, n_features: int, feature_map: str, copies: float = 4.0,
                   workers: int = 1) -> int:
    """Bytes a feature-space search holds at its peak (estimate).

    ``copies`` n x D float64 arrays (the base X W0 or the distances, the features Z of one
    gamma, a fold's training rows and a solver temporary), plus, per worker, about
    ``4 (D + 1)^2`` doubles of D x D work (the full and fold Gram matrices and the
    eigenvectors of the square path; the Hessian, its cached copy and the solve of the
    Newton solver), plus the map's own storage: the dense d x D draw of RFF, or
    Nystroem's D landmark rows (dense: D d values; sparse CSR: about 12 bytes per stored
    value, at the data's mean row density).
    """
    n = X.shape[0]
    square = 8 * 4 * (n_features + 1) ** 2 * max(int(workers), 1)
    return int(8 * copies * n * n_features + square + map_memory(X, n_features, feature_map))


def map_memory(X, n_features: int, feature_map: str) -> int:
    """Bytes of the map's own storage: RFF's dense d x D draw; Nystroem's D landmark rows
    (dense, or about 12 bytes per stored value of sparse rows at X's mean density)."""
    n, d = X.shape
    if feature_map == "nystroem" and (sp.issparse(X) or getattr(X, "sparse", False)):
        return int(12 * n_features * (X.nnz / max(n, 1) + 1))
    return int(8 * d * n_features)


def check_feature_memory(X, n_features, feature_map, workers=1, budget=None) -> int:
    """Refuse with advice when the feature-space search would exceed the memory budget."""
    need = feature_memory(X, n_features, feature_map, 2.0 + 2.0 * workers, workers)
    limit = memory_budget(budget)
    n_samples, n_dims = X.shape
    if need > limit:
        hint = ("use --feature-map nystroem (it keeps D landmark rows, not a d x D matrix) "
                "or fewer features" if feature_map == RFF and n_dims > n_samples
                else "use fewer features D, a random subsample, or fewer parallel jobs")
        raise MemoryBudgetError(
            f"the {feature_map} search with D = {n_features} features on {n_samples} x "
            f"{n_dims} data needs about {format_bytes(need)} but the memory budget is "
            f"{format_bytes(limit)}; {hint} (or raise the budget with --memory-budget)")
    return need


def check_finite_features(values, what="the features"):
    """Refuse non-finite features (overflow of huge inputs) with advice."""
    if not np.all(np.isfinite(values)):
        raise KernelCVError(
            f"{what} contain NaN or infinite values: the data values are too large for "
            "the feature map (squared norms or products overflow); standardize X (e.g. "
            "--scale standard on the command line, or scale it to [-1, 1]) before the search")


def _chunk_rows(n_cols: int) -> int:
    return max(1, _CHUNK_BYTES // (8 * max(n_cols, 1)))


class FeatureMap:
    """A seeded Gaussian-kernel feature map whose data-dependent base is shared by all gamma.

    Parameters
    ----------
    kind : {"rff", "nystroem"}
    n_features : int
        D, the number of features (Nystroem: landmarks, at most n).
    random_state : int or None
        Seed of the random draw (same seed, same map).
    chunk_rows : int, optional
        Rows per chunk (default: about 8 MiB of temporaries per chunk).

    Use :meth:`fit` on the training data once, then :meth:`base` for the n x D base of any
    data and :meth:`features` for the features of one gamma.
    """

    def __init__(self, kind="rff", n_features=30, random_state=0, chunk_rows=None,
                 nested=False):
        if kind not in MAPS:
            raise KernelCVError(f"unknown feature map {kind!r}; choose one of "
                                f"{', '.join(MAPS)}")
        self.kind = kind
        self.n_features = check_n_features(n_features)
        self.random_state = random_state
        self.chunk_rows = chunk_rows
        self.nested = bool(nested)

    def fit(self, X):
        """Draw the map for data with X's dimension (Nystroem: sample landmarks from X)."""
        self.draw(*X.shape)
        if self.kind == "nystroem":
            self.set_landmarks(X[self.landmark_rows_])
        return self

    def draw(self, n_rows: int, n_dims: int):
        """The random part of the map for n_rows x n_dims data, without the data.

        RFF: the d x D normals ``W0_`` and the phases ``b_``. Nystroem: the landmark row
        indices ``landmark_rows_`` (sorted, or in draw order when ``nested``); the rows
        themselves are given to :meth:`set_landmarks` (a streaming reader fetches them).
        """
        D = self.n_features
        self.n_dims_ = int(n_dims)
        if self.kind == RFF:
            if self.nested:
                normals, phases = (np.random.default_rng(s) for s in
                                   np.random.SeedSequence(self.random_state).spawn(2))
                self.W0_ = normals.standard_normal((D, n_dims)).T
                self.b_ = phases.uniform(-np.pi, np.pi, D)
            else:
                rng = np.random.default_rng(self.random_state)
                self.W0_ = rng.standard_normal((n_dims, D))
                self.b_ = rng.uniform(-np.pi, np.pi, D)
            return self
        if D > n_rows:
            raise KernelCVError(f"Nystroem needs D <= n landmarks; got D = {D} for "
                                f"{n_rows} samples")
        rows = np.random.default_rng(self.random_state).choice(n_rows, size=D, replace=False)
        self.landmark_rows_ = rows if self.nested else np.sort(rows)
        return self

    def set_landmarks(self, rows):
        """The landmark rows (Nystroem), in the order of ``landmark_rows_``."""
        self.landmarks_ = rows
        self.landmark_sq_ = _row_sq(rows)
        return self

    @property
    def nbytes(self) -> int:
        """Bytes of the fitted map's own arrays (RFF's draw, Nystroem's landmark rows)."""
        if self.kind == RFF:
            return int(self.W0_.nbytes + self.b_.nbytes)
        L = self.landmarks_
        own = L.data.nbytes + L.indices.nbytes + L.indptr.nbytes if sp.issparse(L) \
            else L.nbytes
        return int(own + self.landmark_sq_.nbytes)

    def prefix(self, n_features: int) -> FeatureMap:
        """The fitted map of the first ``n_features`` features of this (nested) draw.

        Cost O(d D') (a copy of the first D' columns or landmark rows).
        """
        D = check_n_features(n_features)
        if D > self.n_features:
            raise KernelCVError(f"a prefix of {D} features of a draw of {self.n_features}")
        out = FeatureMap(self.kind, D, self.random_state, self.chunk_rows, self.nested)
        out.n_dims_ = self.n_dims_
        if self.kind == RFF:
            out.W0_ = np.ascontiguousarray(self.W0_[:, :D])
            out.b_ = self.b_[:D].copy()
        else:
            out.landmark_rows_ = self.landmark_rows_[:D].copy()
            out.set_landmarks(self.landmarks_[:D])
        return out

    def base(self, X) -> np.ndarray:
        """The gamma-free n x D base: ``X W0`` (RFF) or ``||x - l||^2`` (Nystroem).

        Cost O(nnz(X) D) (RFF) or O(nnz(X) D) plus O(n D) (Nystroem), chunked over rows.
        """
        if X.shape[1] != self.n_dims_:
            raise KernelCVError(f"the data have {X.shape[1]} features but the map was "
                                f"drawn for {self.n_dims_}")
        n = X.shape[0]
        out = np.empty((n, self.n_features))
        step = self.chunk_rows or _chunk_rows(self.n_features)
        with np.errstate(over="ignore", invalid="ignore"):
            for start in range(0, n, step):
                rows = X[start:start + step]
                if self.kind == RFF:
                    out[start:start + step] = np.asarray(rows @ self.W0_)
                else:
                    cross = _dense(rows @ self.landmarks_.T)
                    block = _row_sq(rows)[:, None] - 2.0 * cross + self.landmark_sq_[None, :]
                    out[start:start + step] = np.maximum(block, 0.0)
        check_finite_features(out, "the feature base")
        return out

    def features(self, base: np.ndarray, gamma: float, out=None,
                 projection=None) -> np.ndarray:
        """Features of one gamma from the base, O(n D) (Nystroem: plus O(D^3 + n D^2)).

        RFF: ``sqrt(2/D) cos(sqrt(2 gamma) base + b)``. Nystroem:
        ``exp(-gamma base) U Lambda^{-1/2}`` with ``K_LL = U Lambda U^T``
        (``projection``: that D x D matrix from :meth:`projection`, to compute it once
        for many row chunks).
        """
        n, D = base.shape
        step = self.chunk_rows or _chunk_rows(D)
        if self.kind == RFF:
            out = np.empty_like(base) if out is None else out
            scale, shift = np.sqrt(2.0 * gamma), self.b_
            for start in range(0, n, step):
                block = out[start:start + step]
                np.multiply(base[start:start + step], scale, out=block)
                block += shift
                np.cos(block, out=block)
                block *= np.sqrt(2.0 / D)
            return out
        if projection is None:
            projection = self.projection(gamma)
        out = np.empty((n, D)) if out is None else out
        for start in range(0, n, step):
            out[start:start + step] = np.exp(-gamma * base[start:start + step]) @ projection
        return out

    def kernel_columns(self, base: np.ndarray, gamma: float) -> np.ndarray:
        """The features before Nystroem's projection, O(n D): RFF's features themselves,
        Nystroem's kernel values ``k(x, l) = exp(-gamma ||x - l||^2)`` (times
        :meth:`projection` they are the features)."""
        if self.kind == RFF:
            return self.features(base, gamma)
        return np.exp(-gamma * base)

    def transform(self, X, gamma: float) -> np.ndarray:
        """Features of X at gamma (base and features in one call)."""
        return self.features(self.base(X), gamma)

    def projection(self, gamma):
        """Nystroem's ``U Lambda^{-1/2}`` at gamma (D x D; None for RFF), O(D^2 d + D^3)."""
        if self.kind == RFF:
            return None
        L = self.landmarks_
        with np.errstate(over="ignore", invalid="ignore"):
            d2 = _row_sq(L)[:, None] - 2.0 * _dense(L @ L.T) + self.landmark_sq_[None, :]
        check_finite_features(d2, "the landmark distances")
        K = np.exp(-gamma * np.maximum(d2, 0.0))
        values, vectors = np.linalg.eigh(K)
        # Directions with eigenvalues below 1e-12 * max are dropped (a zero column keeps D
        # columns), so Z Z^T uses the pseudo-inverse of K_LL.
        keep = values > 1e-12 * max(values[-1], 1e-300)
        scale = np.zeros_like(values)
        scale[keep] = 1.0 / np.sqrt(values[keep])
        return vectors * scale


def _dense(M):
    return np.asarray(M.todense()) if sp.issparse(M) else np.asarray(M)


def _row_sq(X) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused by base()
        if sp.issparse(X):
            return np.asarray(X.multiply(X).sum(axis=1)).ravel()
        return np.einsum("ij,ij->i", X, X)


class LinearFeatureModel:
    """A linear model in feature space, ``f(x) = z_gamma(x).w + c``, used as a final model.

    Parameters
    ----------
    feature_map : a fitted :class:`FeatureMap`.
    gamma, w, c : the kernel parameter and the linear model (``w`` (D, m) and ``c`` (m,)
        for m machines on the same features: see
        :class:`kernelcv.machines.multiclass.MulticlassFeatureModel`).
    classes : the two original labels ``(negative, positive)`` for a classifier, or None.

    The model predicts through the map's :meth:`FeatureMap.kernel_columns` with
    ``coef_on_columns`` (``w``, or Nystroem's ``P w``), row chunk by row chunk, so a test
    set is never expanded to n x D at once.
    """

    #: the multiclass scheme of a subclass with several machines (None: one machine)
    strategy = None

    def __init__(self, feature_map, gamma, w, c, classes=None, coef_on_columns=None):
        self.feature_map = feature_map
        self.gamma = float(gamma)
        self.w = np.asarray(w, dtype=np.float64)
        self.c = float(c) if np.ndim(c) == 0 else np.asarray(c, dtype=np.float64)
        self.classes = classes
        if coef_on_columns is None:  # (given when a saved model is loaded)
            projection = feature_map.projection(self.gamma)
            coef_on_columns = self.w if projection is None else projection @ self.w
        self.coef_on_columns = np.asarray(coef_on_columns, dtype=np.float64)

    @property
    def n_features(self) -> int:
        """D, the number of features."""
        return self.feature_map.n_features

    def decision_function(self, X) -> np.ndarray:
        """``z(x).w + c`` for every row, O(nnz(X) D + n D m), in row chunks: (n,), or
        (n, m) for a multiclass scheme of m machines."""
        fmap = self.feature_map
        step = fmap.chunk_rows or _chunk_rows(fmap.n_features)
        out = np.empty((X.shape[0], *self.coef_on_columns.shape[1:]))
        for start in range(0, X.shape[0], step):
            rows = X[start:start + step]
            out[start:start + step] = fmap.kernel_columns(fmap.base(rows), self.gamma) \
                @ self.coef_on_columns
        return out + self.c

    def predict(self, X) -> np.ndarray:
        """The original labels (f >= 0 gives the positive class), or f for regression."""
        f = self.decision_function(X)
        if self.classes is None:
            return f
        return np.where(f >= 0, self.classes[1], self.classes[0])

    def score(self, X, y) -> float:
        """Accuracy (classifier) or R^2 (regression), as scikit-learn's ``score``."""
        predicted = self.predict(X)
        y = np.asarray(y)
        if self.classes is not None:
            return float(np.mean(predicted == y))
        residual = np.sum((y - predicted) ** 2)
        return float(1.0 - residual / np.sum((y - y.mean()) ** 2))
