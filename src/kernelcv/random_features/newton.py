"""Feature-space CV of the squared hinge (L2-SVM) from sums over row chunks (out of core).

The same fold-out models as :func:`kernelcv.random_features.linear_cv.linear_svm_path_cv`
-- each fold i's model minimises ``(1/m_i) sum_{j not in S_i} max(0, 1 - y_j f_j)^2 +
lam ||w||^2`` with ``f = z.w + c`` -- by the same primal Newton method with exact line
search, warm-started along decreasing lam, but every quantity that sums over rows is
summed chunk by chunk, for all t fold-out models in the same pass:

* a Newton step needs, for each model i over its training rows, the gradient parts
  ``sum_A y r [z; 1]`` and the Hessian ``sum_A [z; 1][z; 1]^T`` on its active set
  A = {j : y_j f_j < 1} (:func:`chunk_newton_sums`, O(t c D^2) per chunk of c rows);
* each 1-D Newton iteration of the exact line search needs ``sum_A b r`` and
  ``sum_A b^2`` along the step, ``b = y (z.dw + dc)`` (:func:`chunk_line_sums`,
  O(t c D)).

So memory is O(c D + t D^2) and no n x D matrix is held; the price is one pass over the
rows per Newton step and per line-search iteration (the in-memory path updates its
Hessian incrementally instead). Rows on a Dask cluster keep the features, the active
sets and the Hessians on the workers between passes instead
(:mod:`kernelcv.random_features.resident`): the same sums, most of the work saved.
Tested against the in-memory path on the same folds.
"""

from __future__ import annotations

import numpy as np

from .linear_cv import _solve_spd
from .sums import FoldModels, chunk_square_errors


def _features(X, fmap, gamma, projection):
    return fmap.features(fmap.base(X), gamma, projection=projection)


def chunk_newton_sums(X, y, fold_ids, fmap, gamma, projection, coef, intercept, models,
                      out=None):
    """Per fold-out model (``models``: their indices): ``(grad_parts, hessian)`` over this
    chunk's training rows of each, ``grad_parts[i] = sum_A y r [z; 1]`` (t x (D+1)) and
    ``hessian[i] = sum_A [z; 1][z; 1]^T`` (t x (D+1) x (D+1)), added to ``out``."""
    Z = _features(X, fmap, gamma, projection)
    t, D = coef.shape
    if out is None:
        out = (np.zeros((t, D + 1)), np.zeros((t, D + 1, D + 1)))
    grad, hessian = out
    for i in models:
        train = fold_ids != i
        Zi, yi = Z[train], y[train]
        r = 1.0 - yi * (Zi @ coef[i] + intercept[i])
        active = r > 0
        A, yr = Zi[active], yi[active] * r[active]
        grad[i, :D] += yr @ A
        grad[i, D] += yr.sum()
        hessian[i, :D, :D] += A.T @ A
        column = A.sum(axis=0)
        hessian[i, :D, D] += column
        hessian[i, D, :D] += column
        hessian[i, D, D] += A.shape[0]
    return out


def chunk_line_sums(X, y, fold_ids, fmap, gamma, projection, coef, intercept, step_coef,
                    step_intercept, sizes, models, out=None):
    """Per model at its step size ``sizes[i]``: ``sum_A b r`` and ``sum_A b^2`` over its
    training rows, ``r = 1 - y f - s b``, ``b = y (z.dw + dc)`` (two t-vectors)."""
    Z = _features(X, fmap, gamma, projection)
    t = coef.shape[0]
    out = (np.zeros(t), np.zeros(t)) if out is None else out
    for i in models:
        train = fold_ids != i
        Zi, yi = Z[train], y[train]
        a = yi * (Zi @ coef[i] + intercept[i])
        b = yi * (Zi @ step_coef[i] + step_intercept[i])
        r = 1.0 - a - sizes[i] * b
        active = r > 0
        out[0][i] += b[active] @ r[active]
        out[1][i] += b[active] @ b[active]
    return out


class ChunkPasses:
    """The Newton and line-search sums by stateless passes over ``rows`` (every pass
    recomputes the features and, for the Newton sums, each model's whole active Hessian):
    the passes of rows read in chunks here (:class:`~kernelcv.random_features.rowmap.
    LocalRows`), which keep no O(n) state between passes."""

    def __init__(self, rows, fmap, gamma, projection, chunk_rows):
        self.rows = rows
        self.common = {"chunk_rows": chunk_rows, "fmap": fmap, "gamma": gamma,
                       "projection": projection}

    def newton(self, coef, intercept, models):
        """``(grad_parts, hessian)`` of :func:`chunk_newton_sums` over all rows."""
        return self.rows.map_reduce(chunk_newton_sums, coef=coef, intercept=intercept,
                                    models=models, **self.common)

    def line(self, coef, intercept, step_coef, step_intercept, sizes, models):
        """``(sum_A b r, sum_A b^2)`` of :func:`chunk_line_sums` over all rows."""
        return self.rows.map_reduce(chunk_line_sums, coef=coef, intercept=intercept,
                                    step_coef=step_coef, step_intercept=step_intercept,
                                    sizes=sizes, models=models, **self.common)

    def step_sizes(self, coef, intercept, step_coef, step_intercept, lam, m, models,
                   iterations):
        """The exact line search of every model (:func:`_line_search`)."""
        return _line_search(self, coef, intercept, step_coef, step_intercept, lam, m,
                            models, iterations)

    def heldout_errors(self, models: FoldModels, classifier: bool) -> np.ndarray:
        """(t, k) sums of each fold's held-out errors under its models, one pass
        (:func:`~kernelcv.random_features.sums.chunk_square_errors`)."""
        common = self.common
        return self.rows.map_reduce(
            chunk_square_errors, common["chunk_rows"], fmap=common["fmap"],
            gammas=[common["gamma"]], coefs=[models.on_columns()],
            intercepts=[models.intercept], n_folds=self.rows.n_folds,
            classifier=classifier)[0]

    def close(self):
        """Nothing to release."""


def squared_hinge_sums_path(rows, fmap, gamma, lams, chunk_rows, fit_intercept=True,
                            tol=1e-6, max_iter=100, line_iterations=30, classifier=None):
    """The fold-out L2-SVMs of every lam, by Newton steps whose sums run over ``rows``.

    ``rows`` is a :class:`~kernelcv.random_features.rowmap.LocalRows`-like object
    (``map_reduce``, ``n_folds``, ``fold_counts``), read ``chunk_rows`` at a time. Its
    ``newton_passes(fmap, gamma, projection, chunk_rows)``, when it has one, gives the
    object that computes the sums (rows on a Dask cluster keep state on the workers
    between passes: :mod:`kernelcv.random_features.resident`); else :class:`ChunkPasses`.
    Returns the :class:`~kernelcv.random_features.sums.FoldModels` (coef t x D x k,
    intercepts) and the number of (fold, lam) fits that stopped at ``max_iter``; with
    ``classifier`` (True: 0-1 errors, False: squared) also the (t, k) sums of the
    held-out errors, from the same passes' state.
    """
    lams = np.asarray(lams, dtype=np.float64)
    t, D = rows.n_folds, fmap.n_features
    counts = rows.fold_counts()
    m = counts.sum() - counts
    projection = fmap.projection(gamma)
    make_passes = getattr(rows, "newton_passes", None)
    passes = (make_passes or (lambda *a: ChunkPasses(rows, *a)))(fmap, gamma, projection,
                                                                  chunk_rows)
    try:
        models, unconverged = _path(passes, t, D, m, lams, projection, fit_intercept, tol,
                                    max_iter, line_iterations)
        if classifier is None:
            return models, unconverged
        return models, unconverged, passes.heldout_errors(models, classifier)
    finally:
        passes.close()


def _path(passes, t, D, m, lams, projection, fit_intercept, tol, max_iter, line_iterations):
    coef, intercept = np.zeros((t, D)), np.zeros(t)
    out_coef, out_intercept = np.zeros((t, D, lams.size)), np.zeros((t, lams.size))
    size = D + 1 if fit_intercept else D
    unconverged = 0
    for k in np.argsort(-lams, kind="stable"):
        lam = lams[k]
        todo = [i for i in range(t) if m[i] > 0]
        for _ in range(max_iter):
            parts, hessian = passes.newton(coef, intercept, todo)
            steps = {}
            for i in todo:
                grad = np.empty(D + 1)
                grad[:D] = -(2.0 / m[i]) * parts[i, :D] + 2.0 * lam * coef[i]
                grad[D] = -(2.0 / m[i]) * parts[i, D] if fit_intercept else 0.0
                if np.max(np.abs(grad)) <= tol:
                    continue
                H = hessian[i][:size, :size] * (2.0 / m[i])
                H[np.diag_indices(size)] += np.r_[np.full(D, 2.0 * lam), 1e-12][:size]
                step = np.zeros(D + 1)
                step[:size] = _solve_spd(H, -grad[:size])
                steps[i] = step
            todo = sorted(steps)
            if not todo:
                break
            step_coef, step_intercept = np.zeros((t, D)), np.zeros(t)
            for i, step in steps.items():
                step_coef[i], step_intercept[i] = step[:D], step[D]
            sizes = passes.step_sizes(coef, intercept, step_coef, step_intercept, lam, m,
                                      todo, line_iterations)
            for i in todo:
                coef[i] += sizes[i] * step_coef[i]
                intercept[i] += sizes[i] * step_intercept[i]
        else:
            unconverged += len(todo)
        out_coef[:, :, k], out_intercept[:, k] = coef, intercept
    return FoldModels(out_coef, out_intercept, projection), unconverged


def _line_search(passes, coef, intercept, step_coef, step_intercept, lam, m, models,
                 iterations):
    """Exact minimisers of each model's objective along its step: 1-D Newton iterations
    on the piecewise-linear derivative, one pass over the rows per iteration."""
    sizes = np.ones(coef.shape[0])
    wd = np.einsum("ij,ij->i", coef, step_coef)
    dd = np.einsum("ij,ij->i", step_coef, step_coef)
    moving = list(models)
    for _ in range(iterations):
        if not moving:
            break
        br, bb = passes.line(coef, intercept, step_coef, step_intercept, sizes, moving)
        still = []
        for i in moving:
            slope = -(2.0 / m[i]) * br[i] + 2.0 * lam * (wd[i] + sizes[i] * dd[i])
            curve = (2.0 / m[i]) * bb[i] + 2.0 * lam * dd[i]
            if curve <= 0:
                continue
            new = sizes[i] - slope / curve
            done = abs(new - sizes[i]) <= 1e-12 * max(1.0, abs(sizes[i]))
            sizes[i] = new
            if not done:
                still.append(i)
        moving = still
    return np.maximum(sizes, 0.0)
