"""The doubly regularised (elastic-net) squared-hinge SVM and its hypothetical criterion.

The machine selects relevant features (or, on secondary features, relevant objects)::

    min_{a, b}  ||a||^2 + mu ||a||_1 + C sum_j xi_j^2,   xi_j = max(0, 1 - y_j (x_j'a + b)).

Solver: FISTA with adaptive restart on the smooth part ``C sum xi^2`` (gradient Lipschitz
constant ``L = 2 C ||[X, 1]||_2^2``), whose proximal step for ``||a||^2 + mu ||a||_1`` is
``soft(v, mu / L) / (1 + 2 / L)`` (the bias is left free), followed by an exact
active-set polish: with the relevant set ``F``, their signs ``s`` and the support set ``S``
fixed the problem is quadratic, ``(D + C Z'Z) w = C Z'y_S - (mu / 2) (s, 0)`` with
``Z = [X_{S,F}, 1]``; the polished point is kept only when it keeps ``F``, ``s`` and ``S``
and lowers the objective. Cost O(n p) per FISTA iteration, O(n p^2 + p^3) per polish.

The criterion (43) of a ``mu`` retrains the plain squared-hinge SVM on the relevant set
``F`` (eq. 40) and scores it with :func:`kernelcv.hypothetical.svm.svm_criterion`'s
formula ``sum xi^2 + 2 s2 d_S`` on the columns ``F``. A ``mu`` so large that every feature
is dropped is reported (``n_relevant = 0``, bias-only machine), not an error.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.linalg as la

from ..exceptions import ConvergenceError, KernelCVError
from ..validation import check_data, check_positive
from .ridge import DEFAULT_NOISE_VAR
from .svm import _evaluate, fit_squared_hinge_svm

__all__ = ["enet_objective", "enet_svm_path", "fit_enet_svm", "mu_max"]


def enet_objective(X, y, coef, intercept, mu, C):
    """``||a||^2 + mu ||a||_1 + C sum_j xi_j^2``; cost O(n p)."""
    xi = np.maximum(0.0, 1.0 - y * (X @ coef + intercept))
    return float(coef @ coef + mu * np.abs(coef).sum() + C * xi @ xi)


def mu_max(X, y, C):
    """Smallest ``mu`` whose solution has ``a = 0``: ``||2 C X_S'(y_S xi_S)||_inf`` at ``a = 0``.

    Cost O(n p) after the bias-only fit.
    """
    _, b = fit_squared_hinge_svm(np.zeros((X.shape[0], 0)), y, C)
    xi = np.maximum(0.0, 1.0 - y * b)
    return float(np.max(np.abs(2.0 * C * X.T @ (y * xi)))) if X.shape[1] else 0.0


def fit_enet_svm(X, y, mu, C, coef=None, intercept=0.0, tol=1e-10, max_iter=50000,
                 lipschitz=None, center=None):
    """Solve the elastic-net squared-hinge SVM (inputs trusted; validate at the boundary).

    Parameters
    ----------
    X : (n, p) float array; y : (n,) +-1 labels; mu : float >= 0; C : float > 0
    coef, intercept : optional warm start (e.g. the previous ``mu`` of a path).
    tol : stop when an iteration moves no coordinate by more than ``tol * max(1, |w|)``.
    lipschitz : optional precomputed ``2 C ||[X - center, 1]||_2^2`` (saves an SVD along a
        path; a bound computed on a superset of the rows is valid too).
    center : (p,) vector subtracted from the rows before solving, default the column
        means. Because the bias is free, ``x'a + b = (x - m)'a + (b + m'a)`` is an exact
        reparametrisation; centring only improves the conditioning (features with a large
        mean make FISTA crawl along the bias direction).

    Returns
    -------
    coef : (p,) with exact zeros off the relevant set; intercept : float.
    """
    n, p = X.shape
    center = X.mean(axis=0) if center is None else np.asarray(center, dtype=np.float64)
    X = X - center
    Z = np.column_stack([X, np.ones(n)])
    L = lipschitz if lipschitz is not None else 2.0 * C * np.linalg.norm(Z, 2) ** 2
    w = (np.zeros(p + 1) if coef is None
         else np.append(coef, intercept + float(center @ np.asarray(coef))))

    def objective(v):
        return enet_objective(X, y, v[:p], v[p], mu, C)

    def prox_grad(v):
        xi = np.maximum(0.0, 1.0 - y * (Z @ v))
        u = v + (2.0 * C / L) * (Z.T @ (y * xi))
        out = np.empty_like(u)
        out[:p] = np.sign(u[:p]) * np.maximum(np.abs(u[:p]) - mu / L, 0.0) / (1.0 + 2.0 / L)
        out[p] = u[p]
        return out

    v, t, value = w.copy(), 1.0, objective(w)
    for _ in range(max_iter):
        w_new = prox_grad(v)
        new_value = objective(w_new)
        if new_value > value:  # adaptive restart: drop the momentum
            v, t = w.copy(), 1.0
            w_new = prox_grad(v)
            new_value = objective(w_new)
        t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        v = w_new + ((t - 1.0) / t_new) * (w_new - w)
        moved = np.max(np.abs(w_new - w))
        w, t, value = w_new, t_new, new_value
        if moved <= tol * max(1.0, np.max(np.abs(w))):
            break
    else:
        raise ConvergenceError(f"the elastic-net SVM did not converge in {max_iter} "
                               "iterations; scale the features or lower C")
    w = _polish(X, y, Z, w, mu, C, objective)
    w = _drop_negligible(w, p, objective)
    return w[:p], float(w[p] - center @ w[:p])


def _drop_negligible(w, p, objective, rel=1e-9):
    """Zero coefficients at rounding level when that does not raise the objective.

    At ``mu`` equal to a coordinate's threshold (e.g. ``mu = mu_max``) the exact solution
    has that coordinate at zero, but the iteration can stop at ``1e-16`` instead, which
    would count the feature as relevant.
    """
    tiny = np.flatnonzero(np.abs(w[:p]) <= rel * max(1.0, np.max(np.abs(w[:p]))))
    tiny = tiny[w[tiny] != 0]
    if tiny.size == 0:
        return w
    candidate = w.copy()
    candidate[tiny] = 0.0
    value = objective(w)
    if objective(candidate) <= value + 1e-12 * max(1.0, abs(value)):
        return candidate
    return w


def _polish(X, y, Z, w, mu, C, objective):
    """Exact solve of the quadratic piece that FISTA has identified (see module doc)."""
    p = X.shape[1]
    value = objective(w)
    for _ in range(5):
        relevant = np.flatnonzero(w[:p])
        active = y * (Z @ w) < 1.0
        cols = np.append(relevant, p)
        Zs = Z[np.ix_(active, cols)]
        D = np.eye(cols.size)
        D[-1, -1] = 1e-12 * max(1.0, C)
        rhs = C * Zs.T @ y[active]
        rhs[:-1] -= 0.5 * mu * np.sign(w[relevant])
        try:
            sol = la.solve(D + C * Zs.T @ Zs, rhs, assume_a="pos")
        except la.LinAlgError:
            return w
        candidate = np.zeros_like(w)
        candidate[cols] = sol
        same = (np.array_equal(np.sign(candidate[relevant]), np.sign(w[relevant]))
                and np.array_equal(y * (Z @ candidate) < 1.0, active))
        new_value = objective(candidate)
        if not same or new_value > value:
            return w
        w, value = candidate, new_value
    return w


def _check_mus(mus):
    mus = np.asarray(mus, dtype=np.float64).ravel()
    if mus.size == 0 or np.any(np.isnan(mus)):
        raise KernelCVError("the mu grid must be a non-empty list of numbers")
    if np.any(mus < 0) or not np.all(np.isfinite(mus)):
        bad = mus[(mus < 0) | ~np.isfinite(mus)][0]
        raise KernelCVError(f"mu must be a finite number >= 0, got {bad:g}")
    return np.sort(mus)[::-1]


def _select_and_score(X, y, mu, C, s2, coef, intercept, lipschitz, center):
    """One ``mu``: elastic-net fit (warm), retrain on the relevant set, criterion (43)."""
    coef, intercept = fit_enet_svm(X, y, mu, C, coef, intercept, lipschitz=lipschitz,
                                   center=center)
    relevant = np.flatnonzero(coef)
    sub = X[:, relevant]
    a, b = fit_squared_hinge_svm(sub, y, C)
    return coef, intercept, relevant, _evaluate(sub, y, C, s2, a, b)


def _loo_error(X, y, mu, C, coef, intercept, lipschitz, center):
    """Exact LOO 0-1 error of select-then-retrain: n refits warm-started at the full fit.

    Every refit is centred at the full-data mean, for which the full data's Lipschitz
    constant is a valid bound (dropping a row cannot raise a spectral norm).
    """
    n = X.shape[0]
    wrong = 0
    for i in range(n):
        keep = np.arange(n) != i
        c_i, b_i = fit_enet_svm(X[keep], y[keep], mu, C, coef, intercept,
                                lipschitz=lipschitz, center=center)
        rel = np.flatnonzero(c_i)
        a, b = fit_squared_hinge_svm(X[keep][:, rel], y[keep], C)
        wrong += int(y[i] * (X[i, rel] @ a + b) <= 0)
    return wrong / n


def enet_svm_path(X, y, mus=None, C=1.0, noise_var=DEFAULT_NOISE_VAR, loo=False,
                  n_mus=12):
    """Hypothetical criterion (43) over a ``mu`` path with warm starts, optionally exact LOO.

    Parameters
    ----------
    X : (n, p) array; y : (n,) two-class labels (mapped to -1/+1)
    mus : values >= 0, evaluated from the largest down (warm starts); default ``n_mus``
        values from :func:`mu_max` down to ``mu_max / 1000`` on a log scale.
    C : float > 0
    noise_var : float, default 0.5 (the paper's form)
    loo : bool, default False
        Also compute the exact leave-one-out 0-1 error of select-and-retrain by ``n``
        refits per ``mu`` (the slow reference the criterion replaces).

    Returns
    -------
    dict (JSON-friendly) with ``mus`` (decreasing), per-``mu`` lists ``criterion``,
    ``empirical_risk``, ``effective_dimension``, ``n_relevant``, ``relevant``,
    ``n_support``, ``train_error``, ``all_removed``, ``coef`` (the retrained SVM's
    weights on ``relevant``), ``intercept`` and (with ``loo``) ``loo_error``;
    ``best_mu``, ``best_relevant``, ``best_mu_loo``, ``seconds_criterion``,
    ``seconds_loo`` and ``notes``.

    Cost: one warm-started fit and one retrain per ``mu``; ``loo`` multiplies it by ``n``.
    """
    X, y, _ = check_data(X, y, classifier=True)
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X)
    C = check_positive("C", C)
    s2 = check_positive("noise_var", noise_var)
    if mus is None:
        top = mu_max(X, y, C)
        mus = top * np.logspace(0, -3, int(n_mus)) if top > 0 else np.zeros(1)
    mus = _check_mus(mus)
    center = X.mean(axis=0)
    lipschitz = 2.0 * C * np.linalg.norm(np.column_stack([X - center, np.ones(len(y))]),
                                         2) ** 2
    keys = ("criterion", "empirical_risk", "effective_dimension", "n_relevant", "relevant",
            "n_support", "train_error", "all_removed", "loo_error", "coef", "intercept")
    out = {key: [] for key in keys}
    coef, intercept = np.zeros(X.shape[1]), 0.0
    fits = []
    start = time.perf_counter()
    for mu in mus:
        coef, intercept, relevant, res = _select_and_score(X, y, mu, C, s2, coef, intercept,
                                                           lipschitz, center)
        fits.append((coef, intercept))
        for key in ("criterion", "empirical_risk", "effective_dimension", "n_support",
                    "train_error"):
            out[key].append(res[key])
        out["coef"].append(np.asarray(res["coef"], dtype=np.float64).tolist())
        out["intercept"].append(float(res["intercept"]))
        out["n_relevant"].append(int(relevant.size))
        out["relevant"].append(relevant.tolist())
        out["all_removed"].append(bool(relevant.size == 0))
    out["seconds_criterion"] = time.perf_counter() - start
    start = time.perf_counter()
    if loo:
        out["loo_error"] = [_loo_error(X, y, mu, C, c, b, lipschitz, center)
                            for mu, (c, b) in zip(mus, fits, strict=True)]
    else:
        out["loo_error"] = None
    out["seconds_loo"] = time.perf_counter() - start if loo else None
    best = int(np.argmin(out["criterion"]))
    out.update(mus=mus.tolist(), best_mu=float(mus[best]),
               best_relevant=out["relevant"][best], C=C, noise_var=s2,
               n_samples=int(X.shape[0]), n_features=int(X.shape[1]))
    out["best_mu_loo"] = float(mus[int(np.argmin(out["loo_error"]))]) if loo else None
    out["notes"] = ([f"{sum(out['all_removed'])} mu value(s) removed every feature; "
                     "those are bias-only machines"] if any(out["all_removed"]) else [])
    return out
