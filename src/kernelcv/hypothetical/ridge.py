"""Hypothetical (non-enumerative) cross-validation of ridge regression with a PSD regulariser.

Convention: ``X`` is ``(n, p)`` with one row per object and the model is ``y ~ X a``.
For a symmetric positive semi-definite regulariser ``B`` (``p x p``) the ridge estimate and
its hat matrix are::

    a_B = (X'X + B)^-1 X'y,        H_B = X (X'X + B)^-1 X'.

The hypothetical criterion (Theorem 3 of Chernousova et al.) estimates the loss on a
hypothetical test set by the training loss plus an effective-dimension penalty::

    J(B) = ||y - X a_B||^2 + 2 s2 * d(B),     d(B) = Tr H_B = Tr[(X'X + B)^-1 X'X].

With the paper's unit-scaled likelihood (``s2 = 1/2``, the default) this is exactly
``||y - X a||^2 + Tr[X X' (X X' + B)^-1]`` in the paper's transposed notation. Setting
``s2`` to the noise variance gives Mallows' Cp; ``noise_var="auto"`` in :func:`ridge_path`
estimates it from the data (:func:`estimate_noise_var`), which makes the choice of ``B``
independent of the scale of ``y``. As ``B -> 0`` on the free coefficients
(Theorem 4, the AIC limit) ``d(B)`` tends to the number of free coefficients; a coefficient
penalised infinitely (``inf`` on the diagonal) is fixed at zero and counts for nothing.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as la

from ..exceptions import KernelCVError

__all__ = [
    "check_penalty",
    "effective_dimension",
    "estimate_noise_var",
    "intercept_design",
    "ridge_criterion",
    "ridge_fit",
    "ridge_path",
]

DEFAULT_NOISE_VAR = 0.5
DEFAULT_LAMS = np.logspace(-3, 3, 13)


def intercept_design(X):
    """``Z = [X, 1]`` and the diagonal ``B0 = (1, ..., 1, 0)``: ridge with a free intercept.

    ``B = lam * diag(B0)`` on ``Z`` is scikit-learn's ``Ridge(alpha=lam)``: the weights of
    ``X`` are penalised, the intercept is not. Cost O(n p).
    """
    X = np.asarray(X, dtype=np.float64)
    Z = np.column_stack([X, np.ones(X.shape[0])])
    B0 = np.ones(Z.shape[1])
    B0[-1] = 0.0
    return Z, B0


def check_penalty(B, n_features):
    """Validate a regulariser: a diagonal (1-D, entries in [0, inf]) or a PSD matrix.

    Returns
    -------
    keep : (p,) bool mask of the coefficients that are not fixed at zero.
    B_kept : the regulariser restricted to ``keep`` (a finite ``k x k`` matrix).
    """
    B = np.asarray(B, dtype=np.float64)
    if B.ndim == 0:
        B = np.full(n_features, float(B))
    if B.ndim == 1:
        if B.shape[0] != n_features:
            raise KernelCVError(
                f"the diagonal regulariser has {B.shape[0]} entries but X has {n_features} "
                "features; give one penalty per feature")
        if np.any(np.isnan(B)) or np.any(B < 0):
            raise KernelCVError("regulariser entries must be >= 0 (inf fixes a coefficient "
                                "at zero); found a negative or NaN entry")
        keep = np.isfinite(B)
        return keep, np.diag(B[keep])
    if B.ndim != 2 or B.shape != (n_features, n_features):
        raise KernelCVError(f"the regulariser must be a vector of {n_features} penalties or a "
                            f"{n_features} x {n_features} matrix, got shape {B.shape}")
    if not np.all(np.isfinite(B)):
        raise KernelCVError("a matrix regulariser must be finite; to fix coefficients at "
                            "zero give a diagonal vector with inf entries")
    scale = max(1.0, float(np.max(np.abs(B))))
    if np.max(np.abs(B - B.T)) > 1e-10 * scale:
        raise KernelCVError("the regulariser matrix must be symmetric")
    if np.linalg.eigvalsh(B)[0] < -1e-10 * scale:
        raise KernelCVError("the regulariser matrix must be positive semi-definite")
    return np.ones(n_features, dtype=bool), 0.5 * (B + B.T)


def _solve(gram, B, rhs):
    """``(gram + B)^-1 rhs`` by Cholesky, or a readable error when it is singular."""
    try:
        factor = la.cho_factor(gram + B, check_finite=False)
    except la.LinAlgError:
        raise KernelCVError(
            "X'X + B is singular: the data do not determine every free coefficient; "
            "penalise them (B > 0) or use fewer features") from None
    return la.cho_solve(factor, rhs, check_finite=False)


def ridge_fit(X, y, B):
    """Ridge coefficients ``a_B = (X'X + B)^-1 X'y`` and the effective dimension ``Tr H_B``.

    ``B`` is as in :func:`check_penalty` (validated here). Cost O(n p^2 + p^3).

    Returns
    -------
    a : (p,) coefficients (zero where the penalty is infinite).
    d : float, the effective dimension ``Tr[(X'X + B)^-1 X'X]``.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    keep, Bk = check_penalty(B, X.shape[1])
    Xk = X[:, keep]
    gram = Xk.T @ Xk
    a = np.zeros(X.shape[1])
    if not keep.any():
        return a, 0.0
    sol = _solve(gram, Bk, np.column_stack([Xk.T @ y, gram]))
    a[keep] = sol[:, 0]
    return a, float(np.trace(sol[:, 1:]))


def effective_dimension(X, B):
    """``d(B) = Tr[X (X'X + B)^-1 X'] = Tr[(X'X + B)^-1 X'X]``; cost O(n p^2 + p^3)."""
    X = np.asarray(X, dtype=np.float64)
    return ridge_fit(X, np.zeros(X.shape[0]), B)[1]


def estimate_noise_var(X, y):
    """Unbiased noise variance of the least-squares fit, ``RSS / (n - rank X)``.

    This is Mallows' estimate: under ``y = X a + e`` with ``e ~ (0, s2 I)`` the residuals of
    the unpenalised (least-regularised) fit have ``E RSS = s2 (n - rank X)``, since the
    hat matrix of least squares has trace ``rank X``. It scales with ``y^2``, so the
    criterion ``RSS + 2 s2 d`` it feeds picks the same ``lam`` whatever the units of ``y``.
    Needs more objects than the rank of ``X``; cost O(n p^2).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    coef, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    dof = X.shape[0] - rank
    if dof <= 0:
        raise KernelCVError(f"cannot estimate the noise variance from {X.shape[0]} objects "
                            f"and rank {rank}; give noise_var explicitly")
    return float(np.sum((y - X @ coef) ** 2) / dof)


def _check_noise_var(noise_var):
    if isinstance(noise_var, str):
        raise KernelCVError(f"noise_var must be a positive number or 'auto' (ridge_path), "
                            f"got {noise_var!r}")
    value = float(noise_var)
    if not math.isfinite(value) or value <= 0:
        raise KernelCVError(f"noise_var must be a positive finite number, got {noise_var!r}")
    return value


def ridge_criterion(X, y, B, noise_var=DEFAULT_NOISE_VAR):
    """The hypothetical CV criterion ``J(B) = ||y - X a_B||^2 + 2 s2 d(B)`` of one regulariser.

    Parameters
    ----------
    X : (n, p) array; y : (n,) array
    B : (p,) diagonal penalties in [0, inf] or a (p, p) PSD matrix
    noise_var : float, default 0.5
        ``s2``; 0.5 reproduces the paper's formula, the noise variance gives Mallows' Cp.

    Returns
    -------
    dict with ``criterion``, ``rss``, ``effective_dimension`` and ``coef``.
    Cost O(n p^2 + p^3).
    """
    X, y = _check_xy(X, y)
    s2 = _check_noise_var(noise_var)
    a, d = ridge_fit(X, y, B)
    rss = float(np.sum((y - X @ a) ** 2))
    return {"criterion": rss + 2.0 * s2 * d, "rss": rss, "effective_dimension": d,
            "coef": a}


def ridge_path(X, y, lams, B0=None, noise_var=DEFAULT_NOISE_VAR):
    """Criterion, closed-form LOO and GCV along ``B = lam * B0`` for every ``lam``.

    ``B0`` defaults to the identity. ``X'X`` is formed once (O(n p^2)); each ``lam`` then
    costs O(p^3 + n p^2) for the hat diagonal. LOO uses the exact ridge identity
    ``y_i - f_{-i}(x_i) = r_i / (1 - H_ii)``; GCV is ``n RSS / (n - d)^2``.

    ``noise_var`` is ``s2`` of ``J = RSS + 2 s2 d``: a positive number (0.5, the default, is
    the paper's unit-scaled form, which depends on the units of ``y``) or ``"auto"``
    (Mallows' Cp): ``s2 = RSS / (n - rank X)`` of the least-squares fit
    (:func:`estimate_noise_var`); when ``n <= rank X`` the least-regularised ``lam`` of the
    path that leaves at least one residual degree of freedom gives
    ``s2 = RSS(lam) / (n - d(lam))``. ``"auto"`` scales with ``y^2``, so the chosen
    ``lam`` does not depend on the units of ``y``.

    Returns
    -------
    dict of (L,) arrays ``criterion``, ``loo_mse``, ``gcv``, ``effective_dimension``,
    ``rss`` and ``lams``, the arg-minima ``best_lam`` and ``best_lam_loo`` and the ``s2``
    used, ``noise_var``.
    """
    X, y = _check_xy(X, y)
    auto = isinstance(noise_var, str) and noise_var == "auto"
    s2 = None if auto else _check_noise_var(noise_var)
    lams = np.asarray(lams, dtype=np.float64).ravel()
    if lams.size == 0 or not np.all(np.isfinite(lams)) or np.any(lams < 0):
        raise KernelCVError("lams must be a non-empty list of finite values >= 0")
    n, p = X.shape
    if B0 is None:
        B0 = np.eye(p)
    _, B0 = check_penalty(B0, p)
    if B0.shape[0] != p:
        raise KernelCVError("B0 must be finite; fix coefficients by dropping their columns")
    gram, Xty = X.T @ X, X.T @ y
    out = {k: np.empty(lams.size) for k in
           ("criterion", "loo_mse", "gcv", "effective_dimension", "rss")}
    for i, lam in enumerate(lams):
        sol = _solve(gram, lam * B0, np.column_stack([Xty, X.T]))
        resid = y - X @ sol[:, 0]
        hdiag = np.einsum("ij,ji->i", X, sol[:, 1:])
        d = float(hdiag.sum())
        rss = float(resid @ resid)
        out["rss"][i] = rss
        out["effective_dimension"][i] = d
        out["loo_mse"][i] = float(np.mean((resid / (1.0 - hdiag)) ** 2))
        out["gcv"][i] = n * rss / (n - d) ** 2 if d < n else math.inf
    if auto:
        s2 = _auto_noise_var(X, y, lams, out["rss"], out["effective_dimension"])
    out["criterion"] = out["rss"] + 2.0 * s2 * out["effective_dimension"]
    out["noise_var"] = s2
    out["lams"] = lams
    out["best_lam"] = float(lams[np.argmin(out["criterion"])])
    out["best_lam_loo"] = float(lams[np.argmin(out["loo_mse"])])
    return out


def _auto_noise_var(X, y, lams, rss, dims):
    """Mallows' ``s2``: least squares if ``n > rank X``, else the least-regularised fit."""
    n = X.shape[0]
    if n > np.linalg.matrix_rank(X):
        return estimate_noise_var(X, y)
    for i in np.argsort(lams, kind="stable"):
        if n - dims[i] >= 1.0:
            return float(rss[i] / (n - dims[i]))
    raise KernelCVError(f"noise_var='auto' cannot estimate the noise variance from {n} "
                        f"sample(s): it needs more samples than features or a lam that "
                        "leaves a residual degree of freedom; give a larger lam or "
                        "noise_var explicitly")


def _check_xy(X, y):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise KernelCVError(f"X must be (n, p) and y (n,), got shapes {X.shape} and {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise KernelCVError("X and y must be finite; remove or impute NaN/inf values")
    return X, y
