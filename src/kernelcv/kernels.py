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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import euclidean_distances, manhattan_distances
from sklearn.utils.extmath import safe_sparse_dot

from .exceptions import KernelCVError
from .memory import check_dense_budget

KERNELS = ("rbf", "laplace", "poly", "linear")
_BASE = {"rbf": "sqeuclidean", "laplace": "manhattan", "poly": "dot", "linear": "dot"}


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
        return GramFactory(X, Y, base=_BASE[self.name], memory_budget=memory_budget).gram(self)


def _as_csr_int32(X):
    """Sparse input as CSR with 32-bit indices where they fit (some scikit-learn distance
    routines, e.g. ``manhattan_distances``, accept no other index type); dense unchanged."""
    if not sp.issparse(X):
        return X
    X = sp.csr_matrix(X)
    if X.indices.dtype != np.int32 and max(X.shape) < 2**31 and X.nnz < 2**31:
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                          shape=X.shape)
    return X


def _is_positive_finite(value) -> bool:
    try:
        return math.isfinite(float(value)) and float(value) > 0
    except (TypeError, ValueError):
        return False


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

    Notes
    -----
    Cost: O(n m d) once for the base matrix, O(n m) per :meth:`gram` call.
    """

    def __init__(self, X, Y=None, base: str | None = None, memory_budget=None):
        X = _as_csr_int32(X)
        Y = None if Y is None else _as_csr_int32(Y)
        self.X = X
        self.Y = X if Y is None else Y
        self.symmetric = Y is None
        self.memory_budget = memory_budget
        check_dense_budget(X.shape[0], self.Y.shape[0], 2, "the kernel matrix", memory_budget)
        self._base: dict[str, np.ndarray] = {}
        if base is not None:
            self._get_base(base)

    def _get_base(self, kind: str) -> np.ndarray:
        if kind not in self._base:
            X, Y = self.X, None if self.symmetric else self.Y
            if kind == "sqeuclidean":
                D = euclidean_distances(X, Y, squared=True)
                if self.symmetric:
                    np.fill_diagonal(D, 0.0)
            elif kind == "manhattan":
                D = manhattan_distances(X, Y)
            elif kind == "dot":
                D = safe_sparse_dot(X, (X if Y is None else Y).T, dense_output=True)
                D = np.asarray(D.toarray() if sp.issparse(D) else D, dtype=np.float64)
            else:  # pragma: no cover - internal misuse
                raise ValueError(kind)
            self._base[kind] = np.asarray(D, dtype=np.float64)
        return self._base[kind]

    def gram(self, kernel: Kernel) -> np.ndarray:
        """The Gram matrix ``k(X, Y)`` for ``kernel`` (a new array each call)."""
        base = self._get_base(_BASE[kernel.name])
        if kernel.name in ("rbf", "laplace"):
            gram = np.multiply(base, -kernel.gamma)
            return np.exp(gram, out=gram)
        if kernel.name == "poly":
            return (kernel.gamma * base + kernel.coef0) ** int(kernel.degree)
        return base.copy()


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
