"""Exact t-fold cross-validation by refitting on each training part (the ground truth).

For fold ``S_i`` (size ``l_i``) the machine is refitted on the ``n - l_i`` retained points
with the **same lam** and the mean loss over those points (the papers' convention; for
KRR this is a ridge of ``(n - l_i) lam``). The held-out prediction is
``f_{-S_i}(x_j) = sum_{k not in S_i} K_jk alpha'_k + b'`` for ``j in S_i``.

Cost: t fits on ``n (t - 1) / t`` points, i.e. about t times one full fit. Each refit is
warm-started from the full-data solution: for the square loss rescaled to the fold
(``alpha' ~ alpha n/(n-l)``, since ``alpha = -g / (2 lam n)``; one Newton iteration
solves it anyway), for the other losses from the order-inf Newton step of
:func:`kernelcv.criteria.bif.fold_out_starts` (one shared factorisation for all folds),
which about halves the Newton iterations of the Huber SVM's refits (digits, n = 898:
244 -> 124 iterations for ten folds). Refits that start from LIBSVM's solution instead
(``svm``/``svr`` from :data:`kernelcv.machines.libsvm_start.LIBSVM_START_MIN_ROWS` rows,
250 for a multiclass machine's binary problems; LIBSVM solves the smoothed machine's
dual, 1-3 Newton iterations each) skip that step.

Extra points (``extra=(K_extra, extra_fold_ids)``): an extra point e of fold i is predicted
by fold i's refit, ``K_extra[e, R_i] alpha'_i + b'_i`` (``O(n)`` per point); id -1 by the
full fit (fitted here when ``full_fit`` is not given), ``K_extra[e] alpha + b``.
"""

from __future__ import annotations

import numpy as np

from ..machines.gram_products import rows_times
from ..machines.losses import SquareLoss
from .bif import fold_out_starts

# Rows of K gathered at a time by training_block (8 MB of float64 at 4,000 columns).
BLOCK_ROWS = 256


def training_block(K, rows, out):
    """``K[np.ix_(rows, rows)]`` written into ``out`` (``len(rows)`` squared), a chunk of
    :data:`BLOCK_ROWS` rows at a time, so that no temporary larger than a chunk is made.
    O(len(rows)^2)."""
    for start in range(0, rows.size, BLOCK_ROWS):
        chunk = rows[start:start + BLOCK_ROWS]
        np.take(K.take(chunk, axis=0), rows, axis=1, out=out[start:start + chunk.size])
    return out


def refit_predictions(K, y, fold_ids, lam, machine, full_fit=None, extra=None):
    """Held-out decision values of the t refitted models.

    Parameters
    ----------
    K : (n, n) Gram matrix; y : (n,) targets; fold_ids : (n,) ids ``0..t-1``.
    lam : regularisation; machine : :class:`kernelcv.machines.Machine`.
    full_fit : optional full-data :class:`FitResult` used as warm start.
    extra : None or ``(K_extra, extra_fold_ids)``: (m, n) kernel values between m extra
        points and the sample and (m,) ids in ``-1..t-1`` (trusted); the points of id i are
        predicted by fold i's refit, those of id -1 by the full fit.

    Returns
    -------
    predictions : (n,) ``f_{-S(j)}(x_j)``.
    n_iter : total Newton iterations of the refits (not counting a full fit made for id -1).
    extra_predictions : (m,) the extra points' values; returned only when ``extra`` is given.
    """
    n = y.shape[0]
    predictions = np.empty(n)
    n_iter = 0
    starts = None
    sizes = np.bincount(fold_ids)
    extra_predictions = None if extra is None else np.empty(extra[1].shape[0])
    from_libsvm = machine.starts_from_libsvm(int(n - sizes.max()))
    if (full_fit is not None and not isinstance(machine.loss, SquareLoss)
            and not from_libsvm):
        starts = fold_out_starts(K, y, fold_ids, lam, machine, full_fit)
    # Every fold's training block is copied into one buffer (the largest block's size):
    # a fresh (n - l) x (n - l) array per fold faulted its pages in anew (ijcnn1, 5,000
    # rows: 3.0 s of a search's 4.5 s of confirmations went to copying the blocks).
    workspace = np.empty(int(n - sizes.min()) ** 2)
    expanded = np.zeros(n)
    for i in range(int(fold_ids.max()) + 1):
        test = fold_ids == i
        train = ~test
        rows = np.flatnonzero(train)
        n_train = rows.size
        K_train = training_block(K, rows, workspace[:n_train * n_train].reshape(n_train,
                                                                                n_train))
        warm = {}
        if starts is not None:
            warm = {"alpha0": starts[i][0], "intercept0": starts[i][1]}
        elif full_fit is not None and not from_libsvm:
            warm = {"alpha0": full_fit.alpha[train] * (n / n_train),
                    "intercept0": full_fit.intercept}
        fit = machine.take(train).fit(K_train, y[train], lam, **warm)
        n_iter += fit.n_iter
        # the held-out values K[S_i, R_i] alpha': K's block on the fold's rows and the
        # refit's support vectors (alpha' spread over all rows with zeros on the fold)
        expanded[:] = 0.0
        expanded[rows] = fit.alpha
        predictions[test] = rows_times(K, np.flatnonzero(test), expanded) + fit.intercept
        if extra is not None:
            at = extra[1] == i
            extra_predictions[at] = extra[0][at] @ expanded + fit.intercept
    if extra is None:
        return predictions, n_iter
    free = extra[1] < 0
    if free.any():
        if full_fit is None:
            full_fit = machine.fit(K, y, lam)
        extra_predictions[free] = extra[0][free] @ full_fit.alpha + full_fit.intercept
    return predictions, n_iter, extra_predictions
