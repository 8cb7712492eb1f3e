"""Factorizations of K that solve the spectral engine's ridge systems, in numpy.

Every majorize-minimize step of :mod:`.spectral` solves, for each column z of a batch,
the LS-SVM system on all n rows::

    (K + rho I) alpha + b 1 = z,   1' alpha = 0        (no intercept: b = 0)

and needs ``f = K alpha + b 1``. Two factorizations serve it:

* :class:`EigenFactor`: ``K = Q diag(s) Q'`` once, then every rho at once. With
  ``z_hat = Q' z``, ``u = Q' 1`` and ``w = 1 / (s + rho)``:
  ``b = (u' (w * z_hat)) / (u' (w * u))`` and ``f = Q (s * w * (z_hat - b u)) + b``.
  Eigenpairs with ``s_j <= n eps max(s)`` (rounding noise of ``eigh``) are dropped: they
  add nothing to f, and their share of the intercept is ``(1' z - u_r' z_hat_r) / rho``
  with ``s_j`` taken as 0 (relative error ``s_j / rho``). Cost: one ``eigh``
  (``O(n^3)``, about 20x a Cholesky factorization on a CPU), then ``4 n r`` flops per
  column for the r eigenpairs kept. Memory: K, Q and the ``eigh`` workspace (~4.5 n^2).
* :class:`CholeskyFactor`: ``K + rho I = L L'`` for one rho. With
  ``a_z = (K + rho I)^{-1} z`` and ``a_1 = (K + rho I)^{-1} 1``:
  ``b = (1' a_z) / (1' a_1)``, ``alpha = a_z - b a_1`` and ``f = z - rho alpha``. Cost:
  ``n^3 / 3`` flops per rho, then ``2 n^2`` per column. Memory: K and L (2 n^2). It needs
  no eigendecomposition, so it runs where ``eigh`` cannot (a GPU eigensolver's size
  limit, or its memory), at one factorization per (kernel, rho).

Both take a ``dtype``: float64 (default), or float32 where the engine judged it safe
(:func:`~kernelcv.criteria.spectral.single_precision_safe`); every input is cast to it.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ..exceptions import KernelCVError

#: The factorizations :class:`~kernelcv.criteria.spectral.SpectralCV` accepts.
FACTORIZATIONS = ("eigh", "cholesky")


def check_factorization(name) -> str:
    """``name`` if it is one of :data:`FACTORIZATIONS` (or ``"auto"``), else an error."""
    if name not in FACTORIZATIONS + ("auto",):
        raise KernelCVError(f"factorization must be one of eigh, cholesky, auto, got "
                            f"{name!r}")
    return name


class EigenFactor:
    """``K = Q diag(s) Q'`` (numpy, LAPACK's divide-and-conquer ``eigh``): the ridge
    systems of every rho from one eigendecomposition.

    Parameters
    ----------
    K : (n, n) symmetric positive semi-definite Gram matrix.
    fit_intercept : an unregularised intercept b.
    """

    shared_rho = False

    def __init__(self, K, fit_intercept: bool, dtype=np.float64):
        n = K.shape[0]
        self.dtype = np.dtype(dtype)
        eigenvalues, Q = sla.eigh(np.asarray(K, dtype=self.dtype), driver="evd",
                                  check_finite=False)
        top = float(eigenvalues[-1]) if n else 0.0
        keep = eigenvalues > n * np.finfo(self.dtype).eps * max(top, 0.0)
        # Columns in descending order of eigenvalue; a contiguous copy (BLAS reads it
        # once per step in each direction).
        self.s = np.ascontiguousarray(eigenvalues[keep][::-1])
        self.Q = np.ascontiguousarray(Q[:, keep][:, ::-1])
        self.u = self.Q.T @ np.ones(n, dtype=self.dtype)
        self.n = n
        self.fit_intercept = bool(fit_intercept)

    def ridge_solve(self, Z, rho):
        """f (n, C) and b (C,) of the system for each column of Z and its ridge ``rho``."""
        Z = np.asarray(Z, dtype=self.dtype)
        rho = np.asarray(rho, dtype=self.dtype)
        Z_hat = self.Q.T @ Z
        w = 1.0 / (self.s[:, None] + rho[None, :])
        if self.fit_intercept:
            u = self.u[:, None]
            # The dropped eigenpairs (s ~ 0) weigh 1 / rho in the intercept.
            tail_z = Z.sum(axis=0) - (u * Z_hat).sum(axis=0)
            tail_u = self.n - float(self.u @ self.u)
            b = (((u * w) * Z_hat).sum(axis=0) + tail_z / rho) / (
                (u * u * w).sum(axis=0) + tail_u / rho)
            Z_hat -= b[None, :] * u
        else:
            b = np.zeros(Z.shape[1], dtype=self.dtype)
        Z_hat *= self.s[:, None] * w
        return self.Q @ Z_hat + b[None, :], b


class CholeskyFactor:
    """``K + rho I = L L'`` for one ``rho`` (numpy, LAPACK's ``potrf``).

    Parameters
    ----------
    K : (n, n) symmetric positive semi-definite Gram matrix (not changed).
    rho : the ridge, > 0.
    fit_intercept : an unregularised intercept b.

    Raises
    ------
    KernelCVError
        When ``K + rho I`` is not numerically positive definite (rho far below the
        rounding level of K: a larger lam is needed).
    """

    shared_rho = True

    def __init__(self, K, rho: float, fit_intercept: bool, dtype=np.float64):
        n = K.shape[0]
        self.dtype = np.dtype(dtype)
        A = np.array(K, dtype=self.dtype, order="F")
        A.flat[:: n + 1] += rho
        try:
            self.factor = sla.cho_factor(A, lower=True, overwrite_a=True,
                                         check_finite=False)
        except np.linalg.LinAlgError:
            raise not_definite(rho) from None
        self.rho = float(rho)
        self.n = n
        self.fit_intercept = bool(fit_intercept)
        if self.fit_intercept:
            self.a_one = sla.cho_solve(self.factor, np.ones(n, dtype=self.dtype),
                                       check_finite=False)
            self.one_a_one = float(self.a_one.sum(dtype=np.float64))

    def ridge_solve(self, Z, rho):
        """f (n, C) and b (C,) of the system for each column of Z (``rho`` must be this
        factor's ridge in every column)."""
        Z = np.asarray(Z, dtype=self.dtype)
        A = sla.cho_solve(self.factor, Z, check_finite=False)
        if self.fit_intercept:
            b = (A.sum(axis=0) / self.one_a_one).astype(self.dtype)
            A -= self.a_one[:, None] * b[None, :]
        else:
            b = np.zeros(Z.shape[1], dtype=self.dtype)
        return Z - self.dtype.type(self.rho) * A, b


def not_definite(rho: float) -> KernelCVError:
    """The error of a Cholesky factorization that failed at ridge ``rho``."""
    return KernelCVError(f"K + rho I is not numerically positive definite at rho = "
                         f"{rho:.3g} (lam too small for this kernel's rounding): use a "
                         "larger lam, or factorization='eigh'")
