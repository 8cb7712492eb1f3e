"""``run_tune``: the library side of ``kernelcv tune`` (SLOO-MPS tuning of an LS-SVM
kernel mixture).

:func:`run_tune` does the work (load, check everything, tune, cross-validate, test,
write ``report.json`` atomically) and returns the report dict. Conventions follow
``kernelcv select``: bad input stops before any work with no files; optimiser failures
are passed on as Python warnings.
"""

from __future__ import annotations

import json
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import KFold, StratifiedKFold

from ..estimators import SmoothLOOLSSVMClassifier, SmoothLOOTuning, fixed_parameter_cv
from ..exceptions import KernelCVError
from ..memory import check_dense_budget, dense_array
from ..reading.files import load_data
from .command_files import DataFiles, Outputs
from .io import check_writable_folder, jsonable, write_all

REPORT_NAME = "report.json"

# What ``cv_error`` measures (the paper's Table 1 figure): the weights are tuned once on all
# the data, then only the machine is refit on each training part, so the folds have seen
# the data that chose the weights. ``test_error`` (with --test) is the honest estimate.
CV_PROTOCOL = ("tuned on all data, machine refit per fold (optimistic; the paper's Table 1 "
               "measure); use --test for an unbiased error")


def run_tune(files: DataFiles, tuning: SmoothLOOTuning | None = None, *,
             fit_intercept=True, multiclass="ovo", seed=0, folds=10, memory_budget=None,
             outputs: Outputs | None = None) -> dict:
    """Tune the LS-SVM kernel mixture on a data file; report LOO, t-fold CV and test error.

    Parameters
    ----------
    files : DataFiles or path
        The training data (classification), an optional test file (then the test error is
        reported) and a CSV file's ``header`` and ``target``
        (:class:`kernelcv.reports.command_files.DataFiles`; a path stands for
        ``DataFiles(path)``). ``fold_ids``, ``scale`` and ``stream`` are refused.
    tuning : SmoothLOOTuning or None, default None
        The kernel mixture and the optimiser: kernels, betas, ard, C, tune_C, gamma_s,
        optimizer, n_restarts, max_iter (:class:`kernelcv.estimators.SmoothLOOTuning`;
        None: its defaults, the paper's mixture).
    fit_intercept : bool, default True
        The LS-SVM bias term.
    multiclass : {"ovo", "ovr"}, default "ovo"
        One-against-one or one-against-rest binary machines for more than two classes.
    seed : int, default 0
        Seed of the optimiser's restarts and of the CV folds.
    folds : int, default 10
        t of the t-fold CV error at the tuned parameters (:func:`tune_folds`).
    memory_budget : int, str or None, default None
        Memory the dense n x n matrices may use (:mod:`kernelcv.memory`).
    outputs : Outputs, path or None, default None
        ``out``: a folder for ``report.json`` (:class:`kernelcv.reports.command_files.Outputs`;
        a path stands for ``Outputs(out=path)``; None: nothing is written). ``plot``,
        ``save_model`` and ``argv`` are refused.

    Returns
    -------
    dict
        ``machines`` (per binary machine: classes, theta per kernel, C, ARD widths, smooth
        LOO error, optimiser record), ``loo_error`` (exact LOO 0-1 error of the tuned
        classifier), ``cv_error`` / ``fold_errors`` (t-fold CV with the tuned parameters
        refit per fold; ``cv_protocol`` says so: the parameters were chosen on all the data,
        so this estimate is optimistic, unlike ``test_error``), ``test_error``, ``timings``,
        ``failures``, ``notes``, ``files``.

    Raises
    ------
    KernelCVError
        For bad input, before any work and with no files written.
    """
    tic = time.perf_counter()
    if not isinstance(files, DataFiles):
        files = DataFiles(files)
    files.refuse("run_tune", "fold_ids", "scale", "stream")
    if not isinstance(outputs, Outputs):
        outputs = Outputs(out=outputs)
    _refuse_outputs(outputs)
    tuning = SmoothLOOTuning() if tuning is None else tuning
    if not isinstance(tuning, SmoothLOOTuning):
        raise KernelCVError(f"run_tune takes the tuning options as a SmoothLOOTuning, got "
                            f"{type(tuning).__name__}")
    data, test, out = files.data, files.test, outputs.out
    spec = tuning.spec
    if out is not None:
        check_writable_folder(out, (REPORT_NAME,))
    estimator = SmoothLOOLSSVMClassifier(
        **tuning.estimator_params(), fit_intercept=fit_intercept, multiclass=multiclass,
        random_state=seed, memory_budget=memory_budget)
    estimator._check_params()
    X, y = _load(data, memory_budget=memory_budget, header=files.header,
                 target=files.target)
    n = X.shape[0]
    classes, counts = np.unique(y, return_counts=True)
    if classes.size < 2:
        raise KernelCVError(f"{data}: tuning a classifier needs two classes, found one")
    if np.any(counts < 2):
        scheme = "one-against-one" if classes.size > 2 and multiclass == "ovo" \
            else "leave-one-out"
        raise KernelCVError(f"{data}: class {_plain(classes[np.argmin(counts)])!r} has only "
                            f"one sample; {scheme} tuning needs at least two per class")
    check_dense_budget(n, n, len(spec.components) + 10 + 2 * int(spec.ard),
                       "smooth leave-one-out tuning", memory_budget)
    notes = []
    fold_ids, stratified = tune_folds(y, folds, seed, f"{data}: ")
    if not stratified:
        smallest = int(np.min(np.unique(y, return_counts=True)[1]))
        notes.append(f"the smallest class has {smallest} samples, fewer than {folds} "
                     "folds: plain shuffled folds are used")
    X_test = y_test = None
    if test is not None:
        X_test, y_test = _load(test, n_features=X.shape[1], memory_budget=memory_budget,
                                header=files.header, target=files.target)
        unknown = sorted({_plain(v) for v in np.unique(y_test)} - {_plain(c) for c in classes},
                         key=str)
        if unknown:
            raise KernelCVError(f"{test}: test labels {unknown[:3]} do not occur in the "
                                "training data")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tune_tic = time.perf_counter()
        estimator.fit(X, y)
        tune_seconds = time.perf_counter() - tune_tic
    failures = [str(w.message) for w in caught]
    for w in caught:  # hand them on: the CLI prints each as a one-line warning
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    n_iter = int(np.sum(estimator.n_iter_))
    cv_tic = time.perf_counter()
    cv_error, fold_errors = fixed_parameter_cv(estimator, X, y, fold_ids)
    timings = {"tune_seconds": tune_seconds, "iterations": n_iter,
               "seconds_per_iteration": tune_seconds / max(n_iter, 1),
               "cv_seconds": time.perf_counter() - cv_tic}
    test_error = None
    if test is not None:
        test_tic = time.perf_counter()
        test_error = float(np.mean(estimator.predict(X_test) != y_test))
        timings["test_seconds"] = time.perf_counter() - test_tic
    report = {
        "data": str(data), "test": None if test is None else str(test), "n_samples": n,
        "n_features": X.shape[1], "classes": [_plain(c) for c in classes],
        "kernels": list(spec.kernels), "betas": list(spec.betas), "ard": bool(tuning.ard),
        "C": tuning.C, "tune_C": bool(tuning.tune_C), "gamma_s": tuning.gamma_s,
        "fit_intercept": fit_intercept, "multiclass": multiclass if classes.size > 2 else None,
        "optimizer": tuning.optimizer, "restarts": tuning.n_restarts,
        "max_iter": tuning.max_iter, "seed": seed, "folds": int(folds),
        "machines": estimator.tuned_parameters(),
        "loo_error": float(estimator.loo_error_),
        "smooth_loo_error": float(np.mean(estimator.smooth_loo_error_)),
        "cv_error": cv_error, "fold_errors": fold_errors,
        "cv_protocol": CV_PROTOCOL, "test_error": test_error,
        "timings": timings, "failures": failures, "notes": notes,
    }
    timings["total_seconds"] = time.perf_counter() - tic
    if out is not None:
        report["files"] = [os.path.join(os.fspath(out), REPORT_NAME)]
        payload = (json.dumps(jsonable(report), indent=2, allow_nan=False) + "\n").encode()
        write_all(out, {REPORT_NAME: payload})
    else:
        report["files"] = []
    return report


def _refuse_outputs(outputs: Outputs):
    """run_tune writes only report.json: refuse the outputs it has no use for."""
    for name in ("plot", "save_model", "argv"):
        if getattr(outputs, name):
            raise KernelCVError(f"run_tune takes no {name} (it was "
                                f"{getattr(outputs, name)!r})")


def _load(path, n_features=None, memory_budget=None, header="auto", target=None):
    X, y = load_data(path, header, target)
    svmlight = sp.issparse(X)
    if n_features is not None and X.shape[1] != n_features:
        d = X.shape[1]
        # svmlight files omit trailing zero features: pad, or cut columns that are all zero
        if svmlight and d < n_features:
            X = sp.hstack([X, sp.csr_matrix((X.shape[0], n_features - d))]).tocsr()
        elif svmlight and not sp.csr_matrix(X)[:, n_features:].count_nonzero():
            X = sp.csr_matrix(X)[:, :n_features]
        else:
            raise KernelCVError(f"{path}: test data use {d} features but the training data "
                                f"have {n_features}")
    X = dense_array(X, f"kernelcv tune on {path}", memory_budget) if svmlight \
        else np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        raise KernelCVError(f"{path}: no samples")
    if not np.all(np.isfinite(X)):
        raise KernelCVError(f"{path}: the data contain NaN or infinite values")
    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise KernelCVError(f"{path}: the labels contain NaN or infinite values")
    return X, y


def tune_folds(y, t, seed, where=""):
    """The folds of ``kernelcv tune``'s CV error and whether they are stratified.

    ``StratifiedKFold(t, shuffle=True, random_state=seed)`` when every class has t
    members, else ``KFold``; refused when a training part lacks a class (``where`` prefixes
    the message, e.g. the data path).
    """
    n = y.shape[0]
    if t > n:
        raise KernelCVError(f"cannot make {t} folds from {n} samples")
    stratified = int(np.min(np.unique(y, return_counts=True)[1])) >= t
    splitter = (StratifiedKFold(t, shuffle=True, random_state=seed) if stratified
                else KFold(t, shuffle=True, random_state=seed))
    ids = np.empty(n, dtype=np.int64)
    for i, (_, part) in enumerate(splitter.split(np.zeros(n), y)):
        ids[part] = i
    n_classes = np.unique(y).size
    for i in range(t):
        if np.unique(y[ids != i]).size < n_classes:
            raise KernelCVError(f"{where}with {t} folds the training part of fold {i} "
                                "lacks a class; use fewer --folds")
    return ids, stratified


def _plain(value):
    return value.item() if hasattr(value, "item") else value
