"""Kernel functions and Gram matrices, with the parameter-free part computed once.

Kernels (scikit-learn's conventions):

* ``rbf`` (Gaussian): ``k(x, x') = exp(-gamma * ||x - x'||_2^2)``; the papers write
  ``exp(-||x - x'||^2 / (2 sigma^2))``, i.e. ``gamma = 1 / (2 sigma^2)``.
* ``laplace``: ``k(x, x') = exp(-gamma * ||x - x'||_1)`` (scikit-learn's ``laplacian_kernel``).
* ``poly``: ``k(x, x') = (gamma * <x, x'> + coef0) ** degree``.
* ``linear``: ``k(x, x') = <x, x'>``.

A grid over ``gamma`` needs the pairwise distances only once: :class:`GramFactory`
computes the base matrix (squared Euclidean distances, L1 distances or inner products,
O(n m d)) on construction and each :meth:`GramFactory.gram` call is then an O(n m)
element-wise map. Dense arrays and ``scipy.sparse`` matrices are both accepted.

Inner products and squared Euclidean distances (``||x||^2 + ||y||^2 - 2 <x, y>``, as
scikit-learn's ``euclidean_distances`` computes them) are computed here, so the rbf, poly
and linear kernels do not import scikit-learn; the L1 distances of the laplace kernel come
from scikit-learn's ``manhattan_distances``, imported when first needed.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .exceptions import KernelCVError
from .memory import check_dense_budget, memory_budget

KERNELS = ("rbf", "laplace", "poly", "linear")
# Sparse inputs at least this dense (nonzeros / entries) are multiplied as dense arrays.
DENSE_FROM = 0.1
# Rows of a sparse matrix made dense at a time by inner_products (32 MiB of float64).
_DENSE_BLOCK_ENTRIES = 2**22
# Most Gram matrices a GramFactory keeps for a search (kept_grams_within): a screening walk
# revisits about six kernel widths (ijcnn1, 5,000 rows: 69 Gram maps, 6.9 s of 28 s,
# for 6 widths).
MAX_KEPT_GRAMS = 6
# The parameter-free matrix each kernel is a function of (see base_matrix).
KERNEL_BASE = {"rbf": "sqeuclidean", "laplace": "manhattan", "poly": "dot", "linear": "dot"}


@dataclass(frozen=True)
class Kernel:
    """A kernel and its parameters; call it on ``(X, Y)`` to get the Gram matrix.

    Parameters
    ----------
    name : {"rbf", "laplace", "poly", "linear"}
    gamma : float
        Width (rbf, laplace) or scale of the inner product (poly); ignored by linear.
    degree : int
        Polynomial degree (poly only).
    coef0 : float
        Additive constant of the polynomial kernel (poly only).
    """

    name: str = "rbf"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 1.0

    def __post_init__(self) -> None:
        if self.name not in KERNELS:
            raise KernelCVError(
                f"unknown kernel {self.name!r}; choose one of {', '.join(KERNELS)}"
            )
        if self.name != "linear":
            if not _is_positive_finite(self.gamma):
                raise KernelCVError(f"gamma must be a positive finite number, got {self.gamma!r}")
        if self.name == "poly":
            if int(self.degree) != self.degree or self.degree < 1:
                raise KernelCVError(f"degree must be a positive integer, got {self.degree!r}")
            if not np.isfinite(self.coef0) or self.coef0 < 0:
                raise KernelCVError(
                    f"coef0 must be a finite number >= 0 (so the kernel is positive "
                    f"semi-definite), got {self.coef0!r}"
                )

    def params(self) -> dict:
        """The parameters that matter for this kernel, for reports."""
        if self.name == "linear":
            return {"kernel": "linear"}
        if self.name == "poly":
            return {"kernel": "poly", "gamma": self.gamma, "degree": int(self.degree),
                    "coef0": self.coef0}
        return {"kernel": self.name, "gamma": self.gamma}

    def __call__(self, X, Y=None, memory_budget=None) -> np.ndarray:
        return GramFactory(X, Y, base=KERNEL_BASE[self.name],
                           memory_budget=memory_budget).gram(self)


def _as_float64(X, name):
    """``X`` as float64: CSR with 32-bit indices where they fit (scikit-learn's
    ``manhattan_distances`` accepts no other index type) or a 2-D array; finite."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if X.indices.dtype != np.int32 and max(X.shape) < 2**31 and X.nnz < 2**31:
            X = sp.csr_matrix((X.data, X.indices.astype(np.int32),
                               X.indptr.astype(np.int32)), shape=X.shape)
        values = X.data
    else:
        try:
            X = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise KernelCVError(f"{name} is not numeric") from None
        if X.ndim != 2:
            raise KernelCVError(f"{name} must be 2-D (n_samples, n_features), got "
                                f"{X.ndim}-D")
        values = X
    if not np.all(np.isfinite(values)):
        raise KernelCVError(f"{name} contains NaN or infinite values")
    return X


def squared_norms(X) -> np.ndarray:
    """``||x_i||^2`` for each row of a float64 array or CSR matrix; O(nnz)."""
    if sp.issparse(X):
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        return np.bincount(rows, weights=X.data * X.data, minlength=X.shape[0])
    return np.einsum("ij,ij->i", X, X)


def inner_products(X, Y) -> np.ndarray:
    """The dense ``(n, m)`` float64 matrix ``X Y'`` for float64 arrays and CSR matrices.

    Dense inputs: one BLAS product, O(n m d). Sparse inputs take the cheapest of three
    routes (per multiply-add, measured on a9a, w8a and ijcnn1: scipy's sparse product
    about 5-12 ns, a sparse row times dense rows about 0.5 ns, BLAS about 0.04 ns):

    * both at least :data:`DENSE_FROM` dense, and their dense copies no larger than the
      result: densified, one BLAS product, O(n m d);
    * sparse x sparse, when it needs 1/25 of the work of the next route or less:
      ``sum_k nnz(X[:, k]) nnz(Y[:, k])`` multiply-adds (very sparse, high-dimensional
      data);
    * otherwise ``X`` times blocks of ``Y``'s rows made dense, O(nnz(X) m) multiply-adds
      and O(block d) extra memory.
    """
    x_sparse, y_sparse = sp.issparse(X), sp.issparse(Y)
    if not x_sparse and not y_sparse:
        return X @ Y.T
    if not y_sparse:
        return np.asarray(X @ Y.T)  # CSR times dense: O(nnz(X) m)
    if not x_sparse:
        return np.ascontiguousarray((Y @ X.T).T)
    (n, d), m = X.shape, Y.shape[0]
    density = min(X.nnz / max(n * d, 1), Y.nnz / max(m * d, 1))
    if density >= DENSE_FROM and (n + m) * d <= n * m:
        return X.toarray() @ Y.toarray().T
    shared = np.dot(np.bincount(X.indices, minlength=d).astype(np.float64),
                    np.bincount(Y.indices, minlength=d).astype(np.float64))
    if 25.0 * shared <= float(X.nnz) * m:
        return (X @ Y.T).toarray()
    out = np.empty((n, m))
    rows = max(1, _DENSE_BLOCK_ENTRIES // max(d, 1))
    for start in range(0, m, rows):
        out[:, start:start + rows] = X @ Y[start:start + rows].toarray().T
    return out


def squared_distances(X, Y=None) -> np.ndarray:
    """``||x_i - y_j||^2`` as ``||x_i||^2 + ||y_j||^2 - 2 <x_i, y_j>``, clipped at 0.

    ``Y=None`` means ``Y = X``; then the diagonal is exactly 0. The same formula (and
    rounding) as scikit-learn's ``euclidean_distances(X, Y, squared=True)`` on float64
    data, built in one n x m array. Cost: O(n m d) (dense) plus O(n m).
    """
    symmetric = Y is None
    Y = X if symmetric else Y
    D = inner_products(X, Y)
    D *= -2.0
    x_norms = squared_norms(X)
    D += x_norms[:, None]
    D += (x_norms if symmetric else squared_norms(Y))[None, :]
    np.maximum(D, 0.0, out=D)
    if symmetric:
        np.fill_diagonal(D, 0.0)
    return D


def base_matrix(kind: str, X, Y=None) -> np.ndarray:
    """The parameter-free matrix of a kernel between float64 ``X`` and ``Y`` (None: X).

    ``kind``: ``"sqeuclidean"`` (:func:`squared_distances`), ``"manhattan"`` (L1
    distances, scikit-learn's ``manhattan_distances``) or ``"dot"`` (inner products).
    :data:`KERNEL_BASE` names the kind of each kernel. Values that overflow float64
    (unscaled X) are a one-line :class:`KernelCVError` naming X's scale, without numpy's
    warnings. Cost: O(n m d).
    """
    if kind not in ("sqeuclidean", "manhattan", "dot"):
        raise KernelCVError(f"unknown base matrix {kind!r}")
    with np.errstate(over="ignore", invalid="ignore"):  # checked below, one line
        if kind == "sqeuclidean":
            D = squared_distances(X, Y)
        elif kind == "manhattan":
            from sklearn.metrics.pairwise import manhattan_distances

            D = manhattan_distances(X, Y)
        else:
            D = inner_products(X, X if Y is None else Y)
        D = np.asarray(D, dtype=np.float64)
    if not np.all(np.isfinite(D)):
        raise KernelCVError(_overflow_message(kind, X, Y))
    return D


def _is_positive_finite(value) -> bool:
    try:
        return math.isfinite(float(value)) and float(value) > 0
    except (TypeError, ValueError):
        return False


def kept_grams_within(n_rows: int, n_cols: int, in_use: float, budget=None) -> int:
    """How many n x m Gram matrices a :class:`GramFactory` may keep beside ``in_use``
    dense n x m float64 matrices (a task's peak) within the memory budget
    (:func:`kernelcv.memory.memory_budget`), at most :data:`MAX_KEPT_GRAMS`. O(1)."""
    matrix = max(int(n_rows) * int(n_cols) * 8, 1)
    spare = memory_budget(budget) - in_use * matrix
    return int(max(0, min(MAX_KEPT_GRAMS, spare // matrix)))


class GramFactory:
    """Gram matrices between X and Y for many kernel parameters, sharing the distances.

    Parameters
    ----------
    X : array or sparse matrix, shape (n, d)
    Y : array or sparse matrix, shape (m, d), optional
        Defaults to X (then the base matrix is symmetric with an exact zero diagonal for
        the distances).
    base : {"sqeuclidean", "manhattan", "dot"} or None
        Which parameter-free matrix to keep; None keeps what the first kernel needs.
    memory_budget : int, str or None
        See :mod:`kernelcv.memory`. Two n x m float64 matrices (base and one Gram) are
        checked against it before anything is allocated.
    kept_grams : int
        How many of the latest Gram matrices to keep (least recently used dropped first):
        a search that returns to a kernel setting (a screening walk's later rounds, the
        exact confirmations) gets it again without the O(n m) map and its fresh
        allocation. 0 (default) keeps none; the caller sizes it within its memory budget
        (:func:`kept_grams_within`).

    Notes
    -----
    Cost: O(n m d) once for the base matrix, O(n m) per :meth:`gram` call that is not
    kept. Memory: the base and up to ``kept_grams`` n x m float64 matrices.
    """

    def __init__(self, X, Y=None, base: str | None = None, memory_budget=None,
                 kept_grams: int = 0):
        X = _as_float64(X, "X")
        Y = None if Y is None else _as_float64(Y, "Y")
        if Y is not None and Y.shape[1] != X.shape[1]:
            raise KernelCVError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}; "
                                "they must match")
        self.X = X
        self.Y = X if Y is None else Y
        self.symmetric = Y is None
        self.memory_budget = memory_budget
        check_dense_budget(X.shape[0], self.Y.shape[0], 2, "the kernel matrix", memory_budget)
        self._base: dict[str, np.ndarray] = {}
        self.kept_grams = max(int(kept_grams), 0)
        self._kept: OrderedDict[Kernel, np.ndarray] = OrderedDict()
        if base is not None:
            self._get_base(base)

    def _get_base(self, kind: str) -> np.ndarray:
        if kind not in self._base:
            self._base[kind] = base_matrix(kind, self.X, None if self.symmetric else self.Y)
        return self._base[kind]

    def base_for(self, kernel: Kernel) -> np.ndarray:
        """The parameter-free matrix ``kernel`` is a map of (computed once, shared)."""
        return self._get_base(KERNEL_BASE[kernel.name])

    def gram(self, kernel: Kernel) -> np.ndarray:
        """The Gram matrix ``k(X, Y)`` for ``kernel``.

        A new array, or with ``kept_grams`` the kept one of an earlier call: callers must
        leave it as they found it (LIBSVM's start raises its diagonal and restores it).
        """
        kept = self._kept.get(kernel)
        if kept is not None:
            self._kept.move_to_end(kernel)
            return kept
        gram = self._new_gram(kernel)
        if self.kept_grams:
            self._kept[kernel] = gram
            while len(self._kept) > self.kept_grams:
                self._kept.popitem(last=False)
        return gram

    def _new_gram(self, kernel: Kernel) -> np.ndarray:
        base = self._get_base(KERNEL_BASE[kernel.name])
        if kernel.name in ("rbf", "laplace"):
            gram = np.multiply(base, -kernel.gamma)
            return np.exp(gram, out=gram)
        with np.errstate(over="ignore", invalid="ignore"):
            if kernel.name == "poly":
                gram = (kernel.gamma * base + kernel.coef0) ** int(kernel.degree)
            else:
                gram = base.copy()
        if not np.all(np.isfinite(gram)):
            raise KernelCVError(
                f"the {kernel.name} kernel's values overflow float64 (the largest |x . x'| "
                f"is {float(np.max(np.abs(base))):.3g}): X is not on a reasonable scale for "
                "this kernel; standardize X" + (", or lower gamma or the degree"
                                                if kernel.name == "poly" else ""))
        return gram


def _overflow_message(kind, X, Y) -> str:
    """Why a distance or inner-product matrix is not finite: the scale of X (and Y)."""
    what = {"sqeuclidean": "squared distances", "manhattan": "distances",
            "dot": "inner products"}[kind]
    largest = max(_largest_magnitude(X), _largest_magnitude(X if Y is None else Y))
    return (f"the {what} between rows of X overflow float64 (its values reach "
            f"{largest:.3g}): X is not on a reasonable scale for a kernel; standardize X "
            "(e.g. --scale standard on the command line)")


def _largest_magnitude(X) -> float:
    values = X.data if sp.issparse(X) else X
    return float(np.max(np.abs(values))) if values.size else 0.0


def feature_variance(X) -> float:
    """Variance of all entries of X (dense or sparse), as SVC's ``gamma="scale"`` uses it.

    For sparse X the implicit zeros count; the centred sum is computed directly rather
    than as ``E[X^2] - E[X]^2``, which can round to a tiny or negative number.
    """
    if not sp.issparse(X):
        return float(np.var(X))
    n_entries = X.shape[0] * X.shape[1]
    X = sp.csr_matrix(X, copy=True)
    X.sum_duplicates()
    data = X.data
    mean = float(data.sum()) / n_entries
    centred = float(np.sum((data - mean) ** 2)) + (n_entries - data.size) * mean**2
    return centred / n_entries


def resolve_gamma(gamma, X):
    """The numeric gamma of SVC's conventions: ``"scale"`` is ``1 / (n_features *
    X.var())`` (1 when X is constant), ``"auto"`` ``1 / n_features``; anything else is
    returned as it is (None included), to be checked by :func:`make_kernel`."""
    if isinstance(gamma, str) and gamma == "scale":
        with np.errstate(over="ignore", invalid="ignore"):
            variance = feature_variance(X)
        if not math.isfinite(variance):
            raise KernelCVError(
                f"gamma='scale': the variance of X overflows float64 (its values reach "
                f"{_largest_magnitude(X):.3g}): X is not on a reasonable scale for a "
                "kernel; standardize X")
        return 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0
    if isinstance(gamma, str) and gamma == "auto":
        return 1.0 / X.shape[1]
    if isinstance(gamma, str):
        raise KernelCVError(f"gamma must be a positive number, 'scale' or 'auto', got "
                            f"{gamma!r}")
    return gamma


def make_kernel(name: str = "rbf", gamma: float | None = None, degree: int = 3,
                coef0: float = 1.0) -> Kernel:
    """Build a :class:`Kernel`, with a clear error when a required gamma is missing."""
    if name == "linear" and gamma is not None and not _is_positive_finite(gamma):
        raise KernelCVError(f"gamma must be a positive finite number, got {gamma!r}")
    if gamma is None:
        if name in ("rbf", "laplace"):
            raise KernelCVError(f"kernel {name!r} needs gamma > 0 (e.g. gamma=1/n_features)")
        gamma = 1.0
    return Kernel(name=name, gamma=float(gamma), degree=degree if name == "poly" else 3,
                  coef0=float(coef0))
