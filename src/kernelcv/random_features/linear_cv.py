"""Cross-validation of linear machines in an explicit feature space (random features).

The kernel machine is replaced by a linear one on features Z (n x D, see
:mod:`kernelcv.features`) with an unregularised intercept c (or c = 0 with
``fit_intercept=False``, the bias-free machines krr and l2svm; then nothing is centred):

    f(x) = z(x).w + c,   (w, c) = argmin (1/m) sum_j loss(y_j, f(x_j)) + lam ||w||^2

over the m retained points of each fold (the **same lam** for the full and every fold-out
model, as everywhere in kernelcv). Mapping to scikit-learn's ``C`` (``0.5 ||w||^2 +
C sum loss``): divide by ``m C`` to get ``lam = 1 / (2 m C)``, i.e. ``C = 1 / (2 m lam)``.
The values here are *exact* t-fold CV errors of the feature-space model; the only
approximation is that of the kernel by the features.

Three losses:

``square`` (:func:`square_path_cv`) -- exact CV for every lam from one D x D ``eigh``
    per fold: with the fold-out mean mu, centred Gram ``G = Z_T^T Z_T - m mu mu^T`` (a
    downdate of the full ``Z^T Z``), ``G = Q Lambda Q^T``, ``q = Q^T r``,
    ``r = Z_T^T y_T - m mu ybar``, the fold-out model is ``w = Q (q / (Lambda + m lam))``,
    ``c = ybar - mu.w`` and the held-out values ``(Z_S - mu) Q (q / (Lambda + m lam)) +
    ybar``. Cost: O(n D^2) once, O(D^3 + l D^2) per fold, O(l D) per fold and lam.
``squared_hinge`` (:func:`squared_hinge_fit`) -- the L2-SVM, by a primal Newton method
    with exact line search (Keerthi & DeCoste's finite Newton method), warm-started along
    decreasing lam (increasing C). Cost per Newton step O(|A| D^2 + D^3), A the points with
    margin < 1; typically 2-6 steps per lam with warm starts.
``hinge`` -- the paper's L1-loss linear SVM via LIBLINEAR (scikit-learn's
    :class:`~sklearn.svm.LinearSVC`, dual coordinate descent). scikit-learn exposes no
    warm start for LIBLINEAR, so each (fold, lam) is a cold fit; at large C it often
    stops at its iteration limit (reported in the notes). LIBLINEAR also penalises the
    intercept (as a feature of value 1).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

LOSSES = ("square", "squared_hinge", "hinge")


@dataclass
class PathCV:
    """CV errors of one feature matrix along a lam path.

    Attributes
    ----------
    lams : (k,) the lam values, in the order given.
    fold_errors : (k, t) 0-1 error (classification) or MSE per fold.
    fold_sizes : (t,) held-out points per fold.
    seconds : (k,) time attributed to each lam (the shared per-fold setup split evenly).
    notes : messages (e.g. solver iteration limits reached).
    """

    lams: np.ndarray
    fold_errors: np.ndarray
    fold_sizes: np.ndarray
    seconds: np.ndarray
    notes: list[str] = field(default_factory=list)

    @property
    def cv_error(self) -> np.ndarray:
        """Pooled error: held-out errors of all folds over n."""
        return self.fold_errors @ self.fold_sizes / self.fold_sizes.sum()


def _errors(f, y, classifier):
    if classifier:
        return float(np.mean(np.where(f >= 0, 1.0, -1.0) != y))
    return float(np.mean((f - y) ** 2))


def square_path_cv(Z, y, fold_ids, lams, classifier=True, fit_intercept=True) -> PathCV:
    """Exact t-fold CV of feature-space ridge regression (LS-SVM) for every lam.

    Parameters
    ----------
    Z : (n, D) features.
    y : (n,) targets (+-1 for classification).
    fold_ids : (n,) fold ids 0..t-1.
    lams : lam values (> 0).
    classifier : 0-1 error of sign(f) (f = 0 counts as +1) if True, else MSE.
    fit_intercept : free intercept (centre by the fold-out means) if True, else c = 0
        (mu = 0, ybar = 0).

    Notes
    -----
    See the module docstring for the formula; cost O(n D^2 + t (D^3 + l D^2) + t k l D).
    """
    tic = time.perf_counter()
    lams = np.asarray(lams, dtype=np.float64)
    t = int(fold_ids.max()) + 1
    G_all = Z.T @ Z
    s_all = Z.sum(axis=0)
    zy_all = Z.T @ y
    y_all = float(y.sum())
    errors = np.empty((lams.size, t))
    sizes = np.bincount(fold_ids, minlength=t)
    for i in range(t):
        held = fold_ids == i
        Zs, ys = Z[held], y[held]
        m = y.shape[0] - ys.shape[0]
        if fit_intercept:
            mu = (s_all - Zs.sum(axis=0)) / m
            ybar = (y_all - ys.sum()) / m
        else:
            mu, ybar = np.zeros(Z.shape[1]), 0.0
        G = G_all - Zs.T @ Zs - m * np.outer(mu, mu)
        r = zy_all - Zs.T @ ys - m * mu * ybar
        values, Q = np.linalg.eigh((G + G.T) / 2.0)
        values = np.maximum(values, 0.0)  # G is PSD; rounding may leave tiny negatives
        q = Q.T @ r
        P = (Zs - mu) @ Q
        for k, lam in enumerate(lams):
            f = P @ (q / (values + m * lam)) + ybar
            errors[k, i] = _errors(f, ys, classifier)
    seconds = np.full(lams.size, (time.perf_counter() - tic) / lams.size)
    return PathCV(lams, errors, sizes, seconds)


def square_fit(Z, y, lam, fit_intercept=True):
    """Feature-space ridge on all rows: returns ``(w, c)`` (c = 0 without intercept).

    Cost O(n D^2 + D^3).
    """
    m = y.shape[0]
    if fit_intercept:
        mu, ybar = Z.mean(axis=0), float(y.mean())
    else:
        mu, ybar = np.zeros(Z.shape[1]), 0.0
    Zc = Z - mu
    w = np.linalg.solve(Zc.T @ Zc + m * lam * np.eye(Z.shape[1]), Zc.T @ (y - ybar))
    return w, ybar - float(mu @ w)


def squared_hinge_objective(Z, y, lam, w, c) -> float:
    """``(1/m) sum max(0, 1 - y (Z w + c))^2 + lam ||w||^2``."""
    r = np.maximum(1.0 - y * (Z @ w + c), 0.0)
    return float(r @ r / y.shape[0] + lam * w @ w)


def squared_hinge_fit(Z, y, lam, w0=None, c0=0.0, tol=1e-8, max_iter=100, state=None,
                      fit_intercept=True):
    """L2-SVM in feature space by primal Newton steps with exact line search.

    Minimises ``J(w, c) = (1/m) sum max(0, 1 - y_j (z_j.w + c))^2 + lam ||w||^2``. With
    the active set A = {j : y_j f_j < 1}, residuals r = 1 - y f, the gradient is
    ``-(2/m) [Z_A 1]^T (y r)_A + 2 lam [w; 0]`` and the generalised Hessian
    ``(2/m) [Z_A 1]^T [Z_A 1] + 2 lam diag(I, 0)``. The step length minimises the
    piecewise-quadratic J along the Newton direction exactly (1-D Newton iterations on
    its derivative). Stops when ``max|grad| <= tol``.

    ``state`` (a dict, updated in place) carries the active set and its unscaled Hessian
    ``[Z_A 1]^T [Z_A 1]`` from one call to the next (warm starts along lam): when few
    points enter or leave A the Hessian is updated by those rows only.
    ``fit_intercept=False`` keeps c = 0 (the Newton system is the leading D x D block).

    Returns
    -------
    w : (D,), c : float, n_iter : int, converged : bool

    Notes
    -----
    Cost per step: O(n D) for the margins, O(|changed| D^2) (update) or O(|A| D^2)
    (recomputed) for the Hessian, O(D^3) for the solve.
    """
    m, D = Z.shape
    w = np.zeros(D) if w0 is None else np.array(w0, dtype=np.float64)
    c = float(c0) if fit_intercept else 0.0
    size_ = D + 1 if fit_intercept else D
    reg = np.full(D + 1, 2.0 * lam)
    reg[-1] = 1e-12  # the intercept is not penalised; a jitter keeps H invertible
    state = {} if state is None else state
    f = Z @ w + c
    for n_iter in range(1, max_iter + 1):
        r = 1.0 - y * f
        active = r > 0
        ya_r = np.where(active, y * r, 0.0)
        grad = np.empty(D + 1)
        grad[:D] = -(2.0 / m) * (ya_r @ Z) + 2.0 * lam * w
        grad[D] = -(2.0 / m) * ya_r.sum() if fit_intercept else 0.0
        if np.max(np.abs(grad)) <= tol:
            return w, c, n_iter - 1, True
        H = _active_gram(Z, active, state)[:size_, :size_] * (2.0 / m)
        H[np.diag_indices(size_)] += reg[:size_]
        step = np.zeros(D + 1)
        step[:size_] = _solve_spd(H, -grad[:size_])
        df = Z @ step[:D] + step[D]
        size = _line_search(y * f, y * df, w, step[:D], lam, m)
        w = w + size * step[:D]
        c += size * step[D]
        f = f + size * df
    r = np.maximum(1.0 - y * f, 0.0)
    grad_inf = max(np.max(np.abs(-(2.0 / m) * (Z.T @ (y * r)) + 2.0 * lam * w)),
                   abs((2.0 / m) * np.sum(y * r)) if fit_intercept else 0.0)
    return w, c, max_iter, bool(grad_inf <= tol)


def _solve_spd(H, b):
    """Solve the symmetric positive definite Newton system H x = b.

    Cholesky (LAPACK ``posv``: about half the time of ``numpy.linalg.solve``'s LU on a
    101 x 101 system, which the search solves thousands of times); a system that is not
    numerically positive definite falls back to LU, then to least squares. Not
    :func:`kernelcv.machines.solver.cholesky_with_jitter`: a jitter would change the
    Newton step, and ``cho_factor`` + ``cho_solve`` cost 1.5x one ``posv`` call here.
    """
    from scipy.linalg.lapack import dposv

    _, x, info = dposv(H, b)
    if info == 0:
        return x
    try:
        return np.linalg.solve(H, b)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(H, b, rcond=None)[0]


def _augmented_gram(rows):
    D = rows.shape[1]
    S = np.empty((D + 1, D + 1))
    S[:D, :D] = rows.T @ rows
    S[:D, D] = S[D, :D] = rows.sum(axis=0)
    S[D, D] = rows.shape[0]
    return S


def _active_gram(Z, active, state):
    """``[Z_A 1]^T [Z_A 1]``, updated from ``state`` when less than a quarter of A changed."""
    previous = state.get("active")
    if previous is not None and previous.shape == active.shape:
        entered = active & ~previous
        left = previous & ~active
        changed = int(entered.sum() + left.sum())
        if changed <= 0.25 * max(int(active.sum()), 1) and state.get("updates", 0) < 50:
            S = state["gram"]
            if changed:
                S = S + _augmented_gram(Z[entered]) - _augmented_gram(Z[left])
                state["updates"] = state.get("updates", 0) + 1
            state.update(active=active, gram=S)
            return S  # callers must not modify it in place
    S = _augmented_gram(Z[active])
    state.update(active=active, gram=S, updates=0)
    return S


def _line_search(margin, dmargin, w, dw, lam, m, iterations=30):
    """Exact minimiser of J along the step: 1-D Newton on the piecewise-linear J'(s)."""
    wd, dd = w @ dw, dw @ dw
    s = 1.0
    for _ in range(iterations):
        r = 1.0 - margin - s * dmargin
        act = r > 0
        slope = -(2.0 / m) * np.sum(dmargin[act] * r[act]) + 2.0 * lam * (wd + s * dd)
        curve = (2.0 / m) * np.sum(dmargin[act] ** 2) + 2.0 * lam * dd
        if curve <= 0:
            break
        new = s - slope / curve
        if abs(new - s) <= 1e-12 * max(1.0, abs(s)):
            s = new
            break
        s = new
    return max(s, 0.0)


def linear_svm_path_cv(Z, y, fold_ids, lams, loss="squared_hinge", tol=1e-6, max_iter=100,
                       random_state=0, fit_intercept=True) -> PathCV:
    """t-fold CV of a linear SVM in feature space along a lam path (refit on each fold).

    ``squared_hinge``: :func:`squared_hinge_fit`, lam in decreasing order, each fit
    warm-started from the previous one of the same fold. ``hinge``: LinearSVC with
    ``C = 1 / (2 m lam)`` (cold starts, see the module docstring).

    Cost: per fold and lam one fit on m x D.
    """
    lams = np.asarray(lams, dtype=np.float64)
    t = int(fold_ids.max()) + 1
    errors = np.empty((lams.size, t))
    seconds = np.zeros(lams.size)
    sizes = np.bincount(fold_ids, minlength=t)
    unconverged = 0
    for i in range(t):
        held = fold_ids == i
        values, fold_seconds, missed = svm_heldout_values(
            Z[~held], y[~held], Z[held], lams, loss, tol=tol, max_iter=max_iter,
            random_state=random_state, fit_intercept=fit_intercept)
        for k in range(lams.size):
            errors[k, i] = _errors(values[:, k], y[held], True)
        seconds += fold_seconds
        unconverged += missed
    return PathCV(lams, errors, sizes, seconds, unconverged_notes(unconverged, lams.size * t,
                                                                   loss))


def unconverged_notes(unconverged: int, fits: int, loss: str) -> list[str]:
    """The note on fits that stopped at their iteration limit (none when all converged)."""
    if not unconverged:
        return []
    return [f"{unconverged} of {fits} {loss} fits stopped at the iteration limit"]


def svm_heldout_values(Zt, yt, Zs, lams, loss="squared_hinge", tol=1e-6, max_iter=100,
                       random_state=0, fit_intercept=True):
    """The values ``Zs w + c`` of the linear SVMs trained on ``(Zt, yt)`` at every lam.

    ``squared_hinge``: :func:`squared_hinge_fit` along decreasing lam, each fit
    warm-started from the previous one; ``hinge``: LIBLINEAR with ``C = 1 / (2 m lam)``
    (m = len(yt)), cold. Returns ``(values (s, k), seconds (k,), unconverged fits)``.
    """
    lams = np.asarray(lams, dtype=np.float64)
    values = np.empty((Zs.shape[0], lams.size))
    seconds = np.zeros(lams.size)
    m = yt.shape[0]
    w, c, state, unconverged = None, 0.0, {}, 0
    for k in np.argsort(-lams, kind="stable"):
        tic = time.perf_counter()
        if loss == "squared_hinge":
            w, c, _, ok = squared_hinge_fit(Zt, yt, lams[k], w, c, tol=tol, max_iter=max_iter,
                                            state=state, fit_intercept=fit_intercept)
        else:
            w, c, ok = _liblinear_hinge(Zt, yt, 1.0 / (2.0 * m * lams[k]), random_state,
                                        fit_intercept)
        unconverged += not ok
        values[:, k] = Zs @ w + c
        seconds[k] += time.perf_counter() - tic
    return values, seconds, unconverged


def _liblinear_hinge(Z, y, C, random_state, fit_intercept=True):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model = LinearSVC(C=C, loss="hinge", dual=True, tol=1e-4, max_iter=2000,
                          random_state=random_state, fit_intercept=fit_intercept).fit(Z, y)
    ok = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    c = float(np.ravel(model.intercept_)[0]) if fit_intercept else 0.0
    return model.coef_.ravel().copy(), c, ok


def fit_linear(Z, y, lam, loss, classifier=True, random_state=0, fit_intercept=True):
    """The feature-space model on all rows: ``(w, c)`` for the given loss."""
    if loss == "square":
        return square_fit(Z, y, lam, fit_intercept)
    if loss == "squared_hinge":
        return squared_hinge_fit(Z, y, lam, fit_intercept=fit_intercept)[:2]
    return _liblinear_hinge(Z, y, 1.0 / (2.0 * y.shape[0] * lam), random_state,
                            fit_intercept)[:2]


def path_cv(Z, y, fold_ids, lams, loss, classifier=True, random_state=0,
            fit_intercept=True) -> PathCV:
    """Dispatch to the loss's CV path (see the module docstring)."""
    if loss == "square":
        return square_path_cv(Z, y, fold_ids, lams, classifier, fit_intercept)
    return linear_svm_path_cv(Z, y, fold_ids, lams, loss, random_state=random_state,
                              fit_intercept=fit_intercept)


# --------------------------------------------------------------------------------------
# grids of the random-feature paper and the C <-> lam mapping
# --------------------------------------------------------------------------------------


def paper_gammas() -> list[float]:
    """Feng & Liao's Gaussian grid ``gamma = 2^-15, 2^-13, ..., 2^9`` (13 values)."""
    return [2.0**k for k in range(-15, 10, 2)]


def paper_cs() -> list[float]:
    """Feng & Liao's grid ``C = 2^-5, 2^-3, ..., 2^15`` (11 values)."""
    return [2.0**k for k in range(-5, 16, 2)]


def c_to_lam(C, n_samples):
    """``lam = 1 / (2 n C)``: SVC's ``0.5||w||^2 + C sum loss`` divided by ``n C``."""
    return 1.0 / (2.0 * n_samples * np.asarray(C, dtype=np.float64))


def lam_to_c(lam, n_samples):
    """``C = 1 / (2 n lam)`` (inverse of :func:`c_to_lam`)."""
    return 1.0 / (2.0 * n_samples * np.asarray(lam, dtype=np.float64))
