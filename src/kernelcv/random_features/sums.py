"""Feature-space CV of the square loss from per-fold sums over row chunks.

The fold-out models of the square loss (feature-space ridge regression / LS-SVM, see
:mod:`kernelcv.random_features.linear_cv`) need the data only through per-fold sums: for
each fold i over its rows S_i,

    G_i = sum z z^T (D x D),  s_i = sum z,  r_i = sum z y,  l_i = |S_i|,  u_i = sum y.

The model that leaves fold i out (m = n - l_i rows T, the same lam) has
``mu = (s - s_i) / m``, ``ybar = (u - u_i) / m`` (zero without intercept),
``A = (G - G_i) - m mu mu^T``, ``b = (r - r_i) - m mu ybar`` and, with ``A = Q Lambda Q^T``,
``w(lam) = Q (Q^T b / (Lambda + m lam))``, ``c(lam) = ybar - mu.w(lam)``: one D x D
``eigh`` per fold serves every lam (O(D^3 + k D^2) per fold).

So CV runs in two passes over the rows, chunk by chunk, without the n x D feature matrix:
pass 1 adds each chunk's sums (:func:`chunk_square_sums`, O(c D^2) per chunk of c rows;
Nystroem adds O(c D^2) for the projection), then :func:`square_fold_models` solves, and
pass 2 counts each held-out row's errors for every lam (:func:`chunk_square_errors`,
O(c D k)). Sums of chunks add (:meth:`FoldSums.__add__`), so the chunks may be read from
a file one after another or summed on a cluster (map-reduce); the result is the same up
to the order of floating-point additions. Memory: O(c D) per chunk plus O(t D^2) per
gamma for the sums. Tested against :func:`~kernelcv.random_features.linear_cv.square_path_cv`
and refits of scikit-learn's ``Ridge`` on the same folds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from .linear_cv import PathCV


@dataclass
class FoldSums:
    """Per-fold sums of one gamma's features: ``gram`` (t, D, D), ``total`` (t, D),
    ``zy`` (t, D), ``count`` (t,) and ``ysum`` (t,) (see the module docstring)."""

    gram: np.ndarray
    total: np.ndarray
    zy: np.ndarray
    count: np.ndarray
    ysum: np.ndarray

    @classmethod
    def zeros(cls, n_folds: int, n_features: int) -> FoldSums:
        t, D = n_folds, n_features
        return cls(np.zeros((t, D, D)), np.zeros((t, D)), np.zeros((t, D)),
                   np.zeros(t, dtype=np.int64), np.zeros(t))

    def __add__(self, other: FoldSums) -> FoldSums:
        return FoldSums(self.gram + other.gram, self.total + other.total,
                        self.zy + other.zy, self.count + other.count, self.ysum + other.ysum)

    def add(self, other: FoldSums) -> FoldSums:
        """Add ``other`` in place (no new D x D arrays); returns self."""
        self.gram += other.gram
        self.total += other.total
        self.zy += other.zy
        self.count += other.count
        self.ysum += other.ysum
        return self

    @property
    def nbytes(self) -> int:
        return int(self.gram.nbytes + self.total.nbytes + self.zy.nbytes)


@dataclass
class FoldModels:
    """The fold-out linear models of one gamma for every lam: ``coef`` (t, D, k) and
    ``intercept`` (t, k); ``projection`` (Nystroem's D x D matrix, or None) maps them to
    the kernel columns: f = (k(x, L) P) w + c = k(x, L) (P w) + c."""

    coef: np.ndarray
    intercept: np.ndarray
    projection: np.ndarray | None = None

    def on_columns(self) -> np.ndarray:
        """The coefficients on :meth:`~kernelcv.features.FeatureMap.kernel_columns`."""
        if self.projection is None:
            return self.coef
        return np.einsum("ij,tjk->tik", self.projection, self.coef)


def _fold_runs(fold_ids):
    """(fold, start, stop) runs of the rows sorted by fold, and the sorting order."""
    if fold_ids.size and fold_ids[0] == fold_ids[-1] and np.all(fold_ids == fold_ids[0]):
        return [(int(fold_ids[0]), 0, fold_ids.size)], None
    order = np.argsort(fold_ids, kind="stable")
    sorted_ids = fold_ids[order]
    cuts = np.flatnonzero(np.diff(sorted_ids)) + 1
    starts = np.concatenate([[0], cuts])
    stops = np.concatenate([cuts, [sorted_ids.size]])
    return [(int(sorted_ids[a]), int(a), int(b)) for a, b in zip(starts, stops,
                                                                   strict=True)], order


def fold_sums(Z, y, fold_ids, n_folds, out=None) -> FoldSums:
    """The per-fold sums of one chunk's features Z (c x D), added to ``out`` when given
    (else to zeros), O(c D^2)."""
    out = FoldSums.zeros(n_folds, Z.shape[1]) if out is None else out
    runs, order = _fold_runs(fold_ids)
    if order is not None:
        Z, y = Z[order], y[order]
    for fold, start, stop in runs:
        rows, labels = Z[start:stop], y[start:stop]
        out.gram[fold] += rows.T @ rows
        out.total[fold] += rows.sum(axis=0)
        out.zy[fold] += labels @ rows
        out.count[fold] += stop - start
        out.ysum[fold] += labels.sum()
    return out


def square_fold_models(sums: FoldSums, lams, fit_intercept=True, projection=None) -> FoldModels:
    """The fold-out ridge models of every lam from the summed folds (module docstring).

    Cost O(t (D^3 + k D^2)). ``projection`` is kept with the models (see
    :class:`FoldModels`).
    """
    return shared_fold_models(sums, sums.zy[:, None, :], sums.ysum[:, None], lams,
                              fit_intercept, projection)[0]


def shared_fold_models(sums: FoldSums, zy, ysum, lams, fit_intercept=True,
                       projection=None) -> list[FoldModels]:
    """The fold-out ridge models of q target vectors on the same rows, one ``eigh`` per
    fold for all of them.

    ``zy`` (t, q, D) and ``ysum`` (t, q) replace ``sums.zy`` / ``sums.ysum`` (the sums of
    z y and y of each fold for each target; the one-vs-rest machines of a multiclass
    scheme). A fold without rows is left out of its model like any other (its model is
    that of all rows): it has no held-out rows of its own, but a multiclass scheme asks
    every machine for the values of every fold's rows. Cost O(t (D^3 + q k D^2)).
    """
    lams = np.asarray(lams, dtype=np.float64)
    t, D = sums.total.shape
    q = zy.shape[1]
    G, s = sums.gram.sum(axis=0), sums.total.sum(axis=0)
    r, u = zy.sum(axis=0), ysum.sum(axis=0)  # (q, D), (q,)
    n = int(sums.count.sum())
    coef = np.zeros((q, t, D, lams.size))
    intercept = np.zeros((q, t, lams.size))
    for i in range(t):
        m = n - int(sums.count[i])
        if m <= 0:
            continue
        if fit_intercept:
            mu = (s - sums.total[i]) / m
            ybar = (u - ysum[i]) / m
        else:
            mu, ybar = np.zeros(D), np.zeros(q)
        A = G - sums.gram[i] - m * np.outer(mu, mu)
        b = r - zy[i] - m * ybar[:, None] * mu[None, :]  # (q, D)
        values, Q = np.linalg.eigh((A + A.T) / 2.0)
        values = np.maximum(values, 0.0)  # A is PSD; rounding may leave tiny negatives
        scaled = (b @ Q)[:, :, None] / (values[None, :, None] + m * lams[None, None, :])
        coef[:, i] = np.einsum("dj,qjk->qdk", Q, scaled)
        intercept[:, i] = ybar[:, None] - np.einsum("d,qdk->qk", mu, coef[:, i])
    return [FoldModels(coef[j], intercept[j], projection) for j in range(q)]


def fold_errors(F, y, fold_ids, n_folds, classifier=True) -> np.ndarray:
    """(t, k) sums of held-out errors: F (c x k) the values of each row's own fold-out
    models; 0-1 errors of sign(F) (F = 0 counts as +1) or squared errors."""
    out = np.zeros((n_folds, F.shape[1]))
    if classifier:
        wrong = np.where(F >= 0, 1.0, -1.0) != y[:, None]
    else:
        wrong = (F - y[:, None]) ** 2
    np.add.at(out, fold_ids, wrong)
    return out


def held_out_values(columns, fold_ids, coef_on_columns, intercept):
    """Each row's value under the models of its own fold: (c x k), O(c D k)."""
    runs, order = _fold_runs(fold_ids)
    if order is None:
        fold = runs[0][0]
        return columns @ coef_on_columns[fold] + intercept[fold]
    F = np.empty((columns.shape[0], intercept.shape[1]))
    for fold, start, stop in runs:
        rows = order[start:stop]
        F[rows] = columns[rows] @ coef_on_columns[fold] + intercept[fold]
    return F


def chunk_square_sums(X, y, fold_ids, fmap, gammas, projections, n_folds,
                      out=None) -> list[FoldSums]:
    """Pass 1 on one chunk of rows: the :class:`FoldSums` of each gamma (added to the
    list ``out`` when given).

    ``fmap`` is a fitted :class:`~kernelcv.features.FeatureMap`, ``projections`` its
    :meth:`~kernelcv.features.FeatureMap.projection` for each gamma (None for RFF). The
    base (O(nnz(X) D)) is computed once for all gammas.
    """
    base = fmap.base(X)
    out = [None] * len(gammas) if out is None else out
    for g, (gamma, projection) in enumerate(zip(gammas, projections, strict=True)):
        Z = fmap.features(base, gamma, projection=projection)
        out[g] = fold_sums(Z, y, fold_ids, n_folds, out[g])
    return out


def chunk_square_errors(X, y, fold_ids, fmap, gammas, coefs, intercepts, n_folds,
                        classifier=True, out=None) -> list[np.ndarray]:
    """Pass 2 on one chunk: the (t, k) held-out error sums of each gamma (added to the
    list ``out`` when given).

    ``coefs[g]`` are the fold-out coefficients on the kernel columns
    (:meth:`FoldModels.on_columns`), ``intercepts[g]`` their intercepts.
    """
    base = fmap.base(X)
    out = [None] * len(gammas) if out is None else out
    for g, (gamma, coef, intercept) in enumerate(zip(gammas, coefs, intercepts,
                                                     strict=True)):
        F = held_out_values(fmap.kernel_columns(base, gamma), fold_ids, coef, intercept)
        errors = fold_errors(F, y, fold_ids, n_folds, classifier)
        out[g] = errors if out[g] is None else out[g] + errors
    return out


def path_from_errors(errors, counts, lams, seconds=None) -> PathCV:
    """A :class:`~kernelcv.random_features.linear_cv.PathCV` from the (t, k) error sums."""
    counts = np.asarray(counts)
    lams = np.asarray(lams, dtype=np.float64)
    fold_errors = (errors / np.maximum(counts, 1)[:, None]).T
    if seconds is None:
        seconds = np.zeros(lams.size)
    return PathCV(lams, fold_errors, counts, np.asarray(seconds, dtype=np.float64))


def square_full_model(sums: FoldSums, lam, fit_intercept=True):
    """``(w, c)`` of feature-space ridge on all rows from the summed chunks (any folds):
    ``(A + n lam I) w = b`` with A, b centred by the means as in the module docstring,
    ``c = ybar - mu.w``. Cost O(D^3) (a Cholesky factorisation; least squares if it
    fails)."""
    W, c = shared_full_models(sums, sums.zy[:, None, :], sums.ysum[:, None], lam,
                              fit_intercept)
    return W[:, 0], float(c[0])


def shared_full_models(sums: FoldSums, zy, ysum, lam, fit_intercept=True):
    """:func:`square_full_model` of q target vectors on the same rows (``zy`` (t, q, D),
    ``ysum`` (t, q) as in :func:`shared_fold_models`), one factorisation for all:
    ``(W (D, q), c (q,))``."""
    D = sums.total.shape[1]
    G, s = sums.gram.sum(axis=0), sums.total.sum(axis=0)
    r, u = zy.sum(axis=0), ysum.sum(axis=0)
    n = int(sums.count.sum())
    mu, ybar = (s / n, u / n) if fit_intercept else (np.zeros(D), np.zeros(zy.shape[1]))
    A = G - n * np.outer(mu, mu) + n * float(lam) * np.eye(D)
    b = (r - n * ybar[:, None] * mu[None, :]).T  # (D, q)
    A = (A + A.T) / 2.0
    try:
        W = cho_solve(cho_factor(A), b)
    except LinAlgError:
        W = np.linalg.lstsq(A, b, rcond=None)[0]
    return W, ybar - mu @ W
