"""Squared-hinge SVM with bias and its hypothetical CV criterion on the support set.

The machine (eq. 33 of Chernousova et al.) is::

    min_{a, b}  ||a||^2 + C sum_j xi_j^2,     xi_j = max(0, 1 - y_j (x_j'a + b)),  y_j = +-1.

On the support set ``S = {j : y_j (x_j'a + b) < 1}`` we have ``xi_j^2 = (y_j - x_j'a - b)^2``,
so the solution is the ridge estimate of ``y_S`` on ``Z_S = [X_S, 1]`` with the regulariser
``B_C = diag(1/C, ..., 1/C, 0)`` (the bias is free). The criterion (37) is therefore::

    J(C) = sum_j xi_j^2 + 2 s2 d_S,      d_S = Tr[Z_S (Z_S'Z_S + B_C)^-1 Z_S'],

with ``s2 = 1/2`` for the paper's form. As ``C -> inf`` with ``S`` fixed, ``d_S`` tends to
``rank Z_S = min(p + 1, |S|)`` for data in general position: ``min(p, |S|) + 1`` (Theorem
5) when ``|S| > p``; when ``|S| <= p`` the support objects are interpolated and the limit
is ``|S|`` (a trace of a projection cannot exceed its rank).

The solver is the finite primal Newton method: with ``S`` fixed the objective is quadratic,
so each step solves ``(D + C Z_S'Z_S) w = C Z_S'y_S`` (``D = diag(1, ..., 1, 0)``) and a
backtracking line search keeps the objective decreasing; it stops when ``S`` repeats.
Cost O(n p^2 + p^3) per Newton step; a handful of steps in practice.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as la

from ..exceptions import ConvergenceError
from ..validation import check_data, check_positive
from .ridge import DEFAULT_NOISE_VAR

__all__ = [
    "fit_squared_hinge_svm",
    "squared_hinge_objective",
    "support_effective_dimension",
    "svm_criterion",
]

MARGIN_TOL = 1e-9


def _design(X):
    return np.column_stack([X, np.ones(X.shape[0])])


def squared_hinge_objective(X, y, coef, intercept, C):
    """``||a||^2 + C sum_j max(0, 1 - y_j (x_j'a + b))^2``; cost O(n p)."""
    xi = np.maximum(0.0, 1.0 - y * (X @ coef + intercept))
    return float(coef @ coef + C * xi @ xi)


def fit_squared_hinge_svm(X, y, C, coef=None, intercept=0.0, tol=1e-10, max_iter=200):
    """Fit the squared-hinge SVM with an unpenalised bias by primal Newton steps.

    Parameters
    ----------
    X : (n, p) float array; y : (n,) array of +-1 (trusted: validate at the boundary)
    C : float > 0
    coef, intercept : optional warm start.
    tol : relative objective decrease below which the iteration stops.

    Returns
    -------
    coef : (p,) weights ``a``; intercept : float ``b``.
    """
    n, p = X.shape
    Z = _design(X)
    w = np.zeros(p + 1) if coef is None else np.append(coef, intercept)
    D = np.eye(p + 1)
    D[p, p] = 0.0

    def objective(v):
        return squared_hinge_objective(X, y, v[:p], v[p], C)

    value = objective(w)
    for _ in range(max_iter):
        active = y * (Z @ w) < 1.0
        Zs = Z[active]
        system = D + C * Zs.T @ Zs
        system[p, p] += 1e-12 * max(1.0, C)
        step = la.solve(system, C * Zs.T @ y[active], assume_a="pos") - w
        t = 1.0
        while True:
            candidate = w + t * step
            new_value = objective(candidate)
            if new_value <= value or t < 1e-12:
                break
            t *= 0.5
        decrease = value - new_value
        w, value = candidate, min(new_value, value)
        if decrease <= tol * max(1.0, value) and np.array_equal(
                y * (Z @ w) < 1.0, active):
            return w[:p], float(w[p])
    raise ConvergenceError(f"the squared-hinge SVM did not converge in {max_iter} Newton "
                           "steps; scale the features or lower C")


def support_effective_dimension(X, support, C):
    """``d_S = Tr[Z_S (Z_S'Z_S + B_C)^-1 Z_S']`` with ``Z_S = [X_S, 1]``, ``B_C = diag(1/C.., 0)``.

    The free bias projects out the mean, so ``d_S = 1 + sum_k s_k^2 / (s_k^2 + 1/C)`` with
    ``s_k`` the singular values of ``X_S`` centred over ``S``: stable for any ``C`` and
    exact in the ``C -> inf`` limit. Zero for an empty support set. Cost
    O(|S| p min(|S|, p)).
    """
    Xs = X[support]
    if Xs.shape[0] == 0:
        return 0.0
    s2 = np.linalg.svd(Xs - Xs.mean(axis=0), compute_uv=False) ** 2
    return float(1.0 + np.sum(s2 / (s2 + 1.0 / C)))


def svm_criterion(X, y, C, noise_var=DEFAULT_NOISE_VAR):
    """Fit the squared-hinge SVM and evaluate the hypothetical criterion (37).

    Parameters
    ----------
    X : (n, p) array; y : (n,) two-class labels (mapped to -1/+1)
    C : float > 0
    noise_var : float, default 0.5 (the paper's form)

    Returns
    -------
    dict with ``criterion``, ``empirical_risk`` (``sum xi^2``), ``effective_dimension``,
    ``n_support``, ``support`` (indices), ``rank_limit`` (``min(p + 1, |S|)``, the
    ``C -> inf`` limit of the penalty), ``train_error``, ``coef`` and ``intercept``.
    Cost: one fit plus O(|S| p^2 + p^3).
    """
    X, y, _ = check_data(X, y, classifier=True)
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X)
    C = check_positive("C", C)
    s2 = check_positive("noise_var", noise_var)
    coef, intercept = fit_squared_hinge_svm(X, y, C)
    return _evaluate(X, y, C, s2, coef, intercept)


def _evaluate(X, y, C, s2, coef, intercept):
    margins = y * (X @ coef + intercept)
    support = np.flatnonzero(margins < 1.0 - MARGIN_TOL)
    xi = np.maximum(0.0, 1.0 - margins)
    risk = float(xi @ xi)
    d = support_effective_dimension(X, support, C)
    return {"criterion": risk + 2.0 * s2 * d, "empirical_risk": risk,
            "effective_dimension": d, "n_support": int(support.size),
            "support": support, "rank_limit": min(X.shape[1] + 1, int(support.size)),
            "train_error": float(np.mean(margins <= 0)), "coef": coef,
            "intercept": intercept, "C": C, "noise_var": s2}
