"""Feature-space CV of a multiclass scheme: one linear machine per binary problem.

The binary machines of :func:`kernelcv.machines.multiclass.binary_problems` (one-vs-one:
one per pair of classes on the pair's rows; one-vs-rest: one per class on all rows) are
linear machines on the features Z, each with its own objective over its m training
rows, ``(1/m) sum loss(y_j, z_j.w + c) + lam ||w||^2`` (the same lam for every machine
and fold, as the kernel machines of :mod:`kernelcv.criteria.multiclass`). For fold i each
machine is trained on its rows outside fold i and gives a value to **every** row of fold
i (one-vs-one: the other classes' rows too); the held-out class is the vote (one-vs-one)
or the arg-max (one-vs-rest) of those values (:func:`kernelcv.machines.multiclass.predict_codes`),
and the CV error is the multiclass 0-1 error. This is exactly what refitting scikit-learn's
``OneVsOneClassifier`` / ``OneVsRestClassifier`` on each fold's training part computes.

Losses (see :mod:`kernelcv.random_features.linear_cv`):

``square``
    every lam from one symmetric eigendecomposition per (fold, machine)
    (:func:`ridge_heldout_values`), of the D x D centred Gram ``Zc^T Zc`` or, when the
    machine has fewer training rows m than features, of the m x m ``Zc Zc^T`` (the same
    model, ``w = Zc^T alpha``). One-vs-rest machines share their training rows, so one
    decomposition per fold serves every class (the targets are right-hand sides).
    Cost per (fold, machine): O(m D min(m, D) + min(m, D)^3 + s D min(m, D) + s k min(m, D)).
``squared_hinge``, ``hinge``
    :func:`~kernelcv.random_features.linear_cv.svm_heldout_values` per (fold, machine): the
    primal Newton path warm-started along lam, or LIBLINEAR cold fits.

One-vs-one with k classes has k (k - 1) / 2 machines on about 2n/k rows each. Memory: the
(n, machines, lams) held-out values besides Z.

Rows read in chunks or on a cluster (square loss): :func:`chunk_class_sums` sums each
(fold, class) cell once (t k D^2 floats per gamma); every machine's per-fold sums are sums
of cells (:func:`problem_sums`), its fold-out models follow as in
:mod:`kernelcv.random_features.sums` (:func:`scheme_fold_models`: one ``eigh`` per fold
for all one-vs-rest machines, t per pair for one-vs-one), and a second pass combines each
row's values (:func:`chunk_scheme_errors`). Tested equal to :func:`multiclass_path_cv`.
"""

from __future__ import annotations

import time

import numpy as np

from ..machines.multiclass import binary_problems, predict_codes
from .linear_cv import (
    PathCV,
    _liblinear_hinge,
    square_fit,
    squared_hinge_fit,
    svm_heldout_values,
    unconverged_notes,
)
from .sums import (
    FoldModels,
    FoldSums,
    chunk_square_sums,
    held_out_values,
    shared_fold_models,
    shared_full_models,
    square_fold_models,
    square_full_model,
)


def ridge_heldout_values(Zt, Yt, Zs, lams, fit_intercept=True) -> np.ndarray:
    """Values on ``Zs`` of feature-space ridge trained on ``(Zt, Yt)`` at every lam.

    Each column j of ``Yt`` (m x q) is one machine's targets on the shared rows Zt:
    ``(w_j, c_j) = argmin (1/m) ||Yt[:, j] - Zt w - c||^2 + lam ||w||^2``. With the means
    mu, ybar (zero without intercept), ``Zc = Zt - mu`` and the eigendecomposition of the
    smaller of ``Zc^T Zc = Q L Q^T`` (D <= m) and ``Zc Zc^T = U L U^T`` (m < D):
    ``f(Zs) = (Zs - mu) V (B / (L + m lam)) + ybar`` with ``V = Q``, ``B = Q^T Zc^T Yc``
    or ``V = Zc^T U``, ``B = U^T Yc``. Returns (s, q, k).
    """
    lams = np.asarray(lams, dtype=np.float64)
    m, D = Zt.shape
    if fit_intercept:
        mu, ybar = Zt.mean(axis=0), Yt.mean(axis=0)
    else:
        mu, ybar = np.zeros(D), np.zeros(Yt.shape[1])
    Zc, Yc = Zt - mu, Yt - ybar
    if D <= m:
        values, Q = np.linalg.eigh(Zc.T @ Zc)
        B = Q.T @ (Zc.T @ Yc)
        P = (Zs - mu) @ Q
    else:
        values, U = np.linalg.eigh(Zc @ Zc.T)
        B = U.T @ Yc
        P = ((Zs - mu) @ Zc.T) @ U
    values = np.maximum(values, 0.0)  # PSD; rounding may leave tiny negatives
    coef = B[:, :, None] / (values[:, None, None] + m * lams[None, None, :])
    return np.einsum("sr,rqk->sqk", P, coef) + ybar[None, :, None]


def _training_rows(problem, held):
    """The rows a machine trains on without fold ``held`` (a mask of the fold's rows)."""
    if problem.rows is None:
        return np.flatnonzero(~held)
    return problem.rows[~held[problem.rows]]


def multiclass_path_cv(Z, codes, fold_ids, lams, loss, n_classes: int, strategy: str,
                       random_state=0, fit_intercept=True, tol=1e-6, max_iter=100) -> PathCV:
    """Exact t-fold CV of a multiclass scheme of linear machines on Z, every lam.

    Parameters
    ----------
    Z : (n, D) features.
    codes : (n,) class codes ``0..n_classes-1``.
    fold_ids : (n,) fold ids ``0..t-1``; every training part should hold every class.
    lams : lam values (> 0).
    loss : ``"square"``, ``"squared_hinge"`` or ``"hinge"``.
    strategy : ``"ovo"`` or ``"ovr"``.

    Returns
    -------
    PathCV
        ``fold_errors`` the multiclass 0-1 error of each fold and lam.
    """
    tic = time.perf_counter()
    lams = np.asarray(lams, dtype=np.float64)
    codes = np.asarray(codes).astype(np.intp)
    problems = binary_problems(codes, n_classes, strategy)
    n, t, k = codes.shape[0], int(fold_ids.max()) + 1, lams.size
    signs = [np.where(codes == p.positive, 1.0, -1.0) for p in problems]
    decisions = np.empty((n, len(problems), k))
    unconverged = 0
    for i in range(t):
        held = fold_ids == i
        Zs = Z[held]
        if loss == "square" and strategy == "ovr":
            train = ~held
            Y = np.column_stack([sign[train] for sign in signs])
            decisions[held] = ridge_heldout_values(Z[train], Y, Zs, lams, fit_intercept)
            continue
        for p, problem in enumerate(problems):
            rows = _training_rows(problem, held)
            Zt, yt = Z[rows], signs[p][rows]
            if loss == "square":
                decisions[held, p] = ridge_heldout_values(Zt, yt[:, None], Zs, lams,
                                                          fit_intercept)[:, 0]
            else:
                decisions[held, p], _, missed = svm_heldout_values(
                    Zt, yt, Zs, lams, loss, tol=tol, max_iter=max_iter,
                    random_state=random_state, fit_intercept=fit_intercept)
                unconverged += missed
    predicted = predict_codes(decisions.transpose(0, 2, 1).reshape(n * k, len(problems)),
                              n_classes, strategy).reshape(n, k)
    wrong = (predicted != codes[:, None]).astype(np.float64)
    sizes = np.bincount(fold_ids, minlength=t)
    errors = np.zeros((t, k))
    np.add.at(errors, fold_ids, wrong)
    fold_errors = (errors / np.maximum(sizes, 1)[:, None]).T
    seconds = np.full(k, (time.perf_counter() - tic) / k)
    notes = unconverged_notes(unconverged, k * t * len(problems), loss)
    return PathCV(lams, fold_errors, sizes, seconds, notes)


def fit_multiclass_linear(Z, codes, lam, loss, n_classes: int, strategy: str,
                          random_state=0, fit_intercept=True):
    """Every binary machine of the scheme on all its rows: ``(W (D, m), c (m,))``.

    Column p is machine p of :func:`~kernelcv.machines.multiclass.binary_problems`.
    Cost: m machine fits (square: O(rows D^2 + D^3) each).
    """
    codes = np.asarray(codes).astype(np.intp)
    problems = binary_problems(codes, n_classes, strategy)
    W = np.empty((Z.shape[1], len(problems)))
    c = np.empty(len(problems))
    everything = np.zeros(codes.shape[0], dtype=bool)
    for p, problem in enumerate(problems):
        rows = _training_rows(problem, everything)
        Zt, yt = Z[rows], np.where(codes[rows] == problem.positive, 1.0, -1.0)
        if loss == "square":
            W[:, p], c[p] = square_fit(Zt, yt, lam, fit_intercept)
        elif loss == "squared_hinge":
            W[:, p], c[p] = squared_hinge_fit(Zt, yt, lam, fit_intercept=fit_intercept)[:2]
        else:
            W[:, p], c[p] = _liblinear_hinge(Zt, yt, 1.0 / (2.0 * yt.shape[0] * lam),
                                             random_state, fit_intercept)[:2]
    return W, c



# --------------------------------------------------------------------------------------
# the square loss from sums over row chunks (rows read from a file, or on a cluster)
# --------------------------------------------------------------------------------------


def chunk_class_sums(X, y, fold_ids, fmap, gammas, projections, n_folds, n_classes,
                     out=None) -> list[FoldSums]:
    """Pass 1 on one chunk (``y`` class codes): the sums of every (fold, class) cell.

    Cell ``f k + c`` holds the rows of fold f and class c (the
    :class:`~kernelcv.random_features.sums.FoldSums` of
    :func:`~kernelcv.random_features.sums.chunk_square_sums` over ``t k`` cells); every
    binary machine's fold sums are sums of cells (:func:`problem_sums`). O(c D^2) per
    chunk of c rows, memory ``t k D^2`` floats per gamma.
    """
    cells = np.asarray(fold_ids, dtype=np.intp) * n_classes + np.asarray(y).astype(np.intp)
    return chunk_square_sums(X, y, cells, fmap, gammas, projections, n_folds * n_classes,
                             out)


def problem_sums(cells: FoldSums, n_folds: int, n_classes: int, problem) -> FoldSums:
    """The per-fold sums of one binary machine from the (fold, class) cells.

    Its rows are the classes it trains on (a pair, or all for one-vs-rest), its targets
    +1 for ``problem.positive`` and -1 for the others: ``gram``, ``total`` and ``count``
    add the cells of its classes, ``zy`` and ``ysum`` add them signed.
    """
    t, k = n_folds, n_classes
    D = cells.total.shape[1]
    total = cells.total.reshape(t, k, D)
    count = cells.count.reshape(t, k)
    sign = _signs(problem, k)
    if problem.negative is None:  # every class: a sum, no copy of the cells
        gram = cells.gram.reshape(t, k, D, D).sum(axis=1)
        return FoldSums(gram, total.sum(axis=1), np.einsum("tkd,k->td", total, sign),
                        count.sum(axis=1), count @ sign)
    a, b = problem.negative, problem.positive
    gram = cells.gram.reshape(t, k, D, D)
    return FoldSums(gram[:, a] + gram[:, b], total[:, a] + total[:, b],
                    total[:, b] - total[:, a], count[:, a] + count[:, b],
                    (count[:, b] - count[:, a]).astype(np.float64))


def _signs(problem, n_classes):
    """+1 for the machine's positive class, -1 for its other classes, 0 elsewhere."""
    sign = np.zeros(n_classes)
    if problem.negative is None:
        sign[:] = -1.0
    else:
        sign[problem.negative] = -1.0
    sign[problem.positive] = 1.0
    return sign


def _rest_targets(cells: FoldSums, n_folds: int, n_classes: int):
    """The one-vs-rest machines' ``zy`` (t, k, D) and ``ysum`` (t, k): the targets of
    class c are +1 on c, -1 elsewhere, so ``zy_c = 2 total_c - total``."""
    t, k = n_folds, n_classes
    total = cells.total.reshape(t, k, -1)
    count = cells.count.reshape(t, k).astype(np.float64)
    return (2.0 * total - total.sum(axis=1, keepdims=True),
            2.0 * count - count.sum(axis=1, keepdims=True))


def scheme_fold_models(cells: FoldSums, lams, n_folds: int, n_classes: int, strategy: str,
                       fit_intercept=True, projection=None) -> list[FoldModels]:
    """The fold-out models of every binary machine of the scheme for every lam.

    One-vs-one: :func:`~kernelcv.random_features.sums.square_fold_models` of each pair's
    :func:`problem_sums`, O(t (D^3 + k D^2)) per pair. One-vs-rest: the machines share
    their rows, so one ``eigh`` per fold serves every class
    (:func:`~kernelcv.random_features.sums.shared_fold_models`).
    """
    problems = binary_problems(np.arange(n_classes), n_classes, strategy)
    if strategy == "ovr":
        zy, ysum = _rest_targets(cells, n_folds, n_classes)
        return shared_fold_models(problem_sums(cells, n_folds, n_classes, problems[0]), zy,
                                  ysum, lams, fit_intercept, projection)
    return [square_fold_models(problem_sums(cells, n_folds, n_classes, problem), lams,
                               fit_intercept, projection) for problem in problems]


def chunk_scheme_errors(X, y, fold_ids, fmap, gammas, coefs, intercepts, n_folds,
                        n_classes, strategy, out=None) -> list[np.ndarray]:
    """Pass 2 on one chunk (``y`` class codes): the (t, k) held-out multiclass error sums
    of each gamma, added to ``out``.

    ``coefs[g][p]`` / ``intercepts[g][p]``: machine p's fold-out coefficients on the kernel
    columns (:meth:`~kernelcv.random_features.sums.FoldModels.on_columns`) and
    intercepts. Each row gets the values of its own fold's models; the class is their
    vote / arg-max. O(c D k m) for m machines, memory c m k floats.
    """
    base = fmap.base(X)
    codes = np.asarray(y).astype(np.intp)
    out = [None] * len(gammas) if out is None else out
    for g, gamma in enumerate(gammas):
        columns = fmap.kernel_columns(base, gamma)
        values = np.stack([held_out_values(columns, fold_ids, coef, intercept)
                           for coef, intercept in zip(coefs[g], intercepts[g], strict=True)],
                          axis=2)  # (c, k lams, m machines)
        rows, k, m = values.shape
        predicted = predict_codes(values.reshape(rows * k, m), n_classes,
                                  strategy).reshape(rows, k)
        errors = np.zeros((n_folds, k))
        np.add.at(errors, fold_ids, (predicted != codes[:, None]).astype(np.float64))
        out[g] = errors if out[g] is None else out[g] + errors
    return out


def scheme_full_models(cells: FoldSums, lam, n_classes: int, strategy: str,
                       fit_intercept=True):
    """Every binary machine on all the summed rows: ``(W (D, m), c (m,))``
    (:func:`~kernelcv.random_features.sums.square_full_model` of each pair's sums; one
    factorisation for all one-vs-rest machines; the cells' folds are summed)."""
    t = cells.count.shape[0] // n_classes
    problems = binary_problems(np.arange(n_classes), n_classes, strategy)
    if strategy == "ovr":
        zy, ysum = _rest_targets(cells, t, n_classes)
        return shared_full_models(problem_sums(cells, t, n_classes, problems[0]), zy, ysum,
                                  lam, fit_intercept)
    fits = [square_full_model(problem_sums(cells, t, n_classes, problem), lam, fit_intercept)
            for problem in problems]
    return np.column_stack([w for w, _ in fits]), np.array([c for _, c in fits])
