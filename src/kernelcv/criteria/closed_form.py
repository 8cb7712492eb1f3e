"""Exact t-fold and leave-one-out CV for KRR and the LS-SVM without refits.

With ``mu`` the fold-out ridge and ``C = (K + mu I)^-1``, ``a = C y``, the model refitted
without fold S has (block inverse; An, Liu & Venkatesh 2007)::

    alpha'_{-S} = a_{-S} - [C_{:,S} C_SS^-1 a_S]_{-S}          (cancellation-free form)
    f_{-S}(x_S) = K_{S,-S} alpha'_{-S}

The shorter residual form ``y_S - C_SS^-1 a_S`` is equal in exact arithmetic but loses
every digit when held-out predictions are tiny (small kernel widths), so it is not used.
With an intercept the same identity is applied to the bordered matrix
``[[K + mu I, 1], [1', 0]]``, whose inverse is ``C`` plus a rank-one term
(``u = C 1``, ``c = 1' u``)::

    [[C - u u'/c, u/c], [u'/c, -1/c]]

One eigendecomposition ``K = Q diag(Lambda) Q'`` serves every lam: ``C`` never needs to be
formed, since ``C_SS = Q_S diag(w) Q_S'`` and ``C v = Q (w * (Q' v))`` with
``w = 1 / (Lambda + mu)``. Fold-out ridges follow the papers' convention
``mu_i = (n - l_i) lam`` (same lam, mean loss over the retained points).

Cost: ``eigh`` once, ``O(n^3)`` (about 10 Cholesky factorisations); then per lam
``O(n^2 (t + n / t))`` for t folds. Leave-one-out uses ``P = K_off Q`` (one more
``O(n^3)`` product, ``K_off`` = K without its diagonal) and then ``O(n^2)`` per lam.
Memory: three n x n matrices (K, Q and P for leave-one-out).

Extra points (``predictions(y, lam, extra=(K_extra, extra_fold_ids))``): a point e of fold
S is predicted by the same fold-out model, ``K_extra[e, -S] alpha'_{-S} + b'`` (``O(n)``
per point, the coefficients are formed anyway); id -1 by the full fit. Leave-one-out, which
never forms fold-out coefficients, forms them for the folds J that hold extra points:
``alpha'_{-i} = a_{-i} - C_{-i,i} a_i / C_ii`` (bordered ``C``, ``a`` with an intercept,
whose fold-out intercept is ``b - u_i a_i / (c C_ii)``), from the columns
``C_{:,J} = Q diag(w) Q_J'``: ``O(n^2 |J|)`` more per lam.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy.linalg import blas


class ClosedFormCV:
    """Exact fold-out predictions of KRR / LS-SVM for any lam from one ``eigh(K)``.

    Parameters
    ----------
    K : (n, n) symmetric positive semi-definite Gram matrix.
    fold_ids : (n,) fold ids ``0..t-1`` (all folds of size 1 = leave-one-out).
    fit_intercept : bordered system with an unregularised intercept (LS-SVM).
    """

    def __init__(self, K, fold_ids, fit_intercept=False):
        self.K = K
        self.fold_ids = fold_ids
        self.fit_intercept = fit_intercept
        self.n = K.shape[0]
        # divide-and-conquer driver: the fastest LAPACK route to all eigenpairs
        eigenvalues, self.Q = sla.eigh(K, driver="evd", check_finite=False)
        # K is PSD: negative eigenvalues are rounding noise of size eps ||K||.
        self.eigenvalues = np.maximum(eigenvalues, 0.0)
        self.folds = [np.flatnonzero(fold_ids == i) for i in range(int(fold_ids.max()) + 1)]
        self.leave_one_out = all(len(f) == 1 for f in self.folds)
        self._P = None
        if self.leave_one_out:
            K_off = K.copy()
            np.fill_diagonal(K_off, 0.0)
            self._P = K_off @ self.Q

    def _weights(self, mu):
        return 1.0 / (self.eigenvalues + mu)

    def _apply_C(self, w, v):
        """``C v`` for ``C = Q diag(w) Q'``."""
        return self.Q @ (w * (self.Q.T @ v))

    def full_fit(self, y, lam):
        """Coefficients ``(alpha, b)`` of the full-data model (ridge ``n lam``)."""
        w = self._weights(self.n * lam)
        a = self._apply_C(w, y)
        if not self.fit_intercept:
            return a, 0.0
        u = self._apply_C(w, np.ones(self.n))
        b = a.sum() / u.sum()
        return a - u * b, float(b)

    def predictions(self, y, lam, extra=None):
        """Held-out decision values ``f_{-S(j)}(x_j)`` for every sample, at this lam.

        ``extra``: None or ``(K_extra, extra_fold_ids)``, (m, n) kernel values between m
        extra points and the sample and (m,) ids in ``-1..t-1`` (trusted). When given,
        returns ``(predictions, extra_predictions)``: each extra point predicted by the model
        fitted without its fold, or by the full fit for id -1.
        """
        if self.leave_one_out:
            out = self._loo_predictions(y, lam)
            if extra is None:
                return out
            return out, self._extra_values(y, lam, extra, self._loo_extra(y, lam, extra))
        n = self.n
        out = np.empty(n)
        out_e = None if extra is None else np.empty(extra[1].shape[0])
        sizes = {len(f) for f in self.folds}
        for size in sizes:
            w = self._weights((n - size) * lam)
            a = self._apply_C(w, y)
            if self.fit_intercept:
                u = self._apply_C(w, np.ones(n))
                c = u.sum()
                b_full = a.sum() / c
                a = a - u * b_full
            for i, idx in ((i, f) for i, f in enumerate(self.folds) if len(f) == size):
                Q_S = self.Q[idx]
                # C_SS = Q_S diag(w) Q_S' as a symmetric rank-k product (upper triangle)
                scaled = Q_S * np.sqrt(w)
                C_SS = blas.dsyrk(1.0, scaled.T, trans=1)
                if self.fit_intercept:
                    C_SS -= np.outer(u[idx], u[idx]) / c
                    v = sla.solve(C_SS, a[idx], assume_a="sym", lower=False,
                                  check_finite=False)
                else:
                    v = sla.cho_solve(sla.cho_factor(C_SS, lower=False, check_finite=False),
                                      a[idx], check_finite=False)
                correction = self.Q @ (w * (Q_S.T @ v))
                bias = 0.0
                if self.fit_intercept:
                    shift = u[idx] @ v / c
                    correction -= u * shift
                    bias = b_full - shift
                alpha = a - correction
                rest = np.ones(n, dtype=bool)
                rest[idx] = False
                out[idx] = self.K[np.ix_(idx, rest)] @ alpha[rest] + bias
                if extra is not None:
                    at = extra[1] == i
                    out_e[at] = extra[0][np.ix_(at, rest)] @ alpha[rest] + bias
        if extra is None:
            return out
        return out, self._extra_values(y, lam, extra, out_e)

    def _extra_values(self, y, lam, extra, out_e):
        """Fill the extra points of id -1 with the full fit ``K_extra[e] alpha + b``."""
        free = extra[1] < 0
        if free.any():
            alpha, b = self.full_fit(y, lam)
            out_e[free] = extra[0][free] @ alpha + b
        return out_e

    def _loo_extra(self, y, lam, extra):
        """Leave-one-out values at the extra points of ids >= 0 (see the module docstring).

        Forms the fold-out coefficients of the folds J holding extra points, as columns of
        an (n, |J|) matrix with a zero on each column's held-out point: ``O(n^2 |J|)``.
        """
        K_extra, ids = extra
        out_e = np.empty(ids.shape[0])
        held = np.flatnonzero(ids >= 0)
        if held.size == 0:
            return out_e
        n = self.n
        J, column = np.unique(ids[held], return_inverse=True)
        cols = np.arange(J.size)
        w = self._weights((n - 1) * lam)
        a = self._apply_C(w, y)
        C_J = self.Q @ (w[:, None] * self.Q[J].T)
        bias = np.zeros(J.size)
        if self.fit_intercept:
            u = self._apply_C(w, np.ones(n))
            c = u.sum()
            b_full = a.sum() / c
            a = a - u * b_full
            C_J -= np.outer(u, u[J]) / c
        ratio = a[J] / C_J[J, cols]
        if self.fit_intercept:
            bias = b_full - u[J] * ratio / c
        alpha = a[:, None] - C_J * ratio[None, :]
        alpha[J, cols] = 0.0  # the fold-out model has no coefficient on its held-out point
        out_e[held] = np.einsum("ej,je->e", K_extra[held], alpha[:, column]) + bias[column]
        return out_e

    def _loo_predictions(self, y, lam):
        """Vectorised leave-one-out: ``O(n^2)`` per lam given ``P = K_off Q``.

        ``f_i = sum_{j != i} K_ij (a_j - C_ji a_i / C_ii)
              = (K_off a)_i - (a_i / C_ii) diag(K_off C)_i``.
        """
        n = self.n
        w = self._weights((n - 1) * lam)
        Qw = self.Q * w
        Qt_y = self.Q.T @ y
        a = self.Q @ (w * Qt_y)
        C_diag = np.einsum("ij,ij->i", Qw, self.Q)
        KC_diag = np.einsum("ij,ij->i", self._P, Qw)
        K_off_a = self._P @ (w * Qt_y)
        if not self.fit_intercept:
            return K_off_a - (a / C_diag) * KC_diag
        Qt_1 = self.Q.T @ np.ones(n)
        u = self.Q @ (w * Qt_1)
        K_off_u = self._P @ (w * Qt_1)
        c = u.sum()
        b_full = a.sum() / c
        a_b = a - u * b_full
        C_diag_b = C_diag - u**2 / c
        KC_diag_b = KC_diag - K_off_u * u / c
        K_off_a_b = K_off_a - K_off_u * b_full
        ratio = a_b / C_diag_b
        return K_off_a_b - ratio * KC_diag_b + (b_full - u * ratio / c)
