"""Exact refit t-fold CV of the *final* kernel machine of a random-feature search.

A random-feature search (:mod:`kernelcv.criteria.random_features`) ranks (gamma, lam) by
the CV error of a linear machine on D random features; the model the user gets is the
exact kernel machine at the chosen values. This module computes the exact CV error of
that final machine on the search's folds, one gamma at a time, so that the refinement
(:mod:`kernelcv.selection.refine`) can check the feature-space choice where it is cheap.

``svm``
    scikit-learn's ``SVC`` (LIBSVM: hinge loss, free intercept) refit on each fold's
    training part with ``C_fold = 1 / (2 m lam)`` (m retained points: the same lam for
    every fold, kernelcv's convention; GridSearchCV keeps C instead, a factor t/(t-1)
    apart). Given the Gram matrix of gamma, ``K_ij = exp(-gamma ||x_i - x_j||^2)``,
    LIBSVM is fed its blocks (``kernel="precomputed"``: no kernel evaluations inside the
    solver; 1.3-2.6x faster on splice, measured); without it LIBSVM computes kernel rows
    itself through its cache (no n x n matrix; the caller decides by the memory budget).
``l2svm``, ``krr``, ``lssvm``
    the kernelcv machine (the search's options) refit on each fold from the Gram matrix
    (:func:`kernelcv.criteria.evaluate.evaluate_lam` with ``method="exact"``).

Cost per (gamma, lam): t kernel fits on about n (t-1)/t points; the caller builds one
Gram matrix per gamma (O(n^2) from cached distances).
"""

from __future__ import annotations

import time

import numpy as np

# LIBSVM kernel cache of the refits that compute kernel rows themselves (MB).
SVC_CACHE_MB = 500


def _fold_errors(predict, y, fold_ids):
    """Per-fold 0-1 error of ``predict(fold) -> held-out labels``."""
    t = int(fold_ids.max()) + 1
    errors = np.empty(t)
    for fold in range(t):
        errors[fold] = np.mean(predict(fold) != y[fold_ids == fold])
    return errors


def svc_refit_cv(X, y, fold_ids, gamma: float, lams, K=None) -> list[dict]:
    """Exact t-fold CV of ``SVC(C = 1/(2 m lam), gamma)`` for each lam (same folds).

    Parameters
    ----------
    X : (n, d) dense or sparse inputs (unused when ``K`` is given).
    y : (n,) labels in {-1, +1}.
    fold_ids : (n,) fold ids 0..t-1.
    gamma : RBF width parameter (> 0).
    lams : lam values (> 0); ``C_fold = 1 / (2 m lam)`` with m the fold's training size.
    K : (n, n) Gram matrix of gamma on X, or None (LIBSVM computes kernel rows itself).

    Returns
    -------
    list of dict, one per lam in the given order: ``cv_error`` (pooled 0-1 error),
    ``fold_errors``, ``seconds``.
    """
    from sklearn.svm import SVC

    n = y.shape[0]
    sizes = np.bincount(fold_ids)
    records = []
    for lam in lams:
        start = time.perf_counter()

        def predict(fold, lam=lam):
            train = fold_ids != fold
            C = 1.0 / (2.0 * train.sum() * lam)
            if K is not None:
                svc = SVC(C=C, kernel="precomputed").fit(K[np.ix_(train, train)], y[train])
                return svc.predict(K[np.ix_(~train, train)])
            svc = SVC(C=C, gamma=gamma, kernel="rbf", cache_size=SVC_CACHE_MB)
            return svc.fit(X[train], y[train]).predict(X[~train])

        errors = _fold_errors(predict, y, fold_ids)
        records.append({"cv_error": float(errors @ sizes / n),
                        "fold_errors": [float(e) for e in errors],
                        "seconds": time.perf_counter() - start})
    return records


def machine_refit_cv(K, y, fold_ids, lams, machine) -> list[dict]:
    """Exact t-fold CV of a kernelcv machine (l2svm, krr, lssvm) for each lam.

    :func:`~kernelcv.criteria.evaluate.evaluate_lam` with ``method="exact"`` (t refits on
    blocks of the Gram matrix K) per lam. Returns records as :func:`svc_refit_cv`; a refit
    that fails (:class:`KernelCVError`, e.g. non-finite predictions at a tiny lam) gives
    ``cv_error`` and ``fold_errors`` None.
    """
    from ..exceptions import KernelCVError
    from .evaluate import evaluate_lam

    records = []
    for lam in lams:
        start = time.perf_counter()
        try:
            ev = evaluate_lam(K, y, fold_ids, float(lam), machine, "exact")
        except KernelCVError:
            records.append({"cv_error": None, "fold_errors": None,
                            "seconds": time.perf_counter() - start})
            continue
        records.append({"cv_error": float(ev.cv_error),
                        "fold_errors": [float(e) for e in ev.fold_errors],
                        "seconds": float(ev.seconds)})
    return records
