"""The ``kernelcv tune`` subcommand: SLOO-MPS tuning of an LS-SVM kernel mixture.

:func:`run_tune` does the work (load, check everything, tune, cross-validate, test,
write ``report.json`` atomically) and returns the report dict; the argparse functions
only translate options. Conventions follow ``kernelcv select``: bad input stops before
any work with exit status 2 and no files; optimiser failures are one-line warnings.
"""

from __future__ import annotations

import json
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import KFold, StratifiedKFold

from ._cli_options import budget_arg
from .criteria.smooth_loo import DEFAULT_GAMMA_S, PAPER_BETAS, make_spec
from .datasets import SUPPORTED_FORMATS, load_data
from .estimators._smooth_loo import SmoothLOOLSSVMClassifier, fixed_parameter_cv
from .exceptions import KernelCVError
from .memory import check_dense_budget
from .reports.io import check_writable_folder, jsonable, write_all
from .selection.grids import parse_grid

REPORT_NAME = "report.json"

# What ``cv_error`` measures (the paper's Table 1 figure): the weights are tuned once on all
# the data, then only the machine is refit on each training part, so the folds have seen
# the data that chose the weights. ``test_error`` (with --test) is the honest estimate.
CV_PROTOCOL = ("tuned on all data, machine refit per fold (optimistic; the paper's Table 1 "
               "measure); use --test for an unbiased error")


def add_arguments(parser):
    """Declare the options of ``kernelcv tune``."""
    parser.add_argument("data", metavar="DATA",
                        help=f"training data (classification); formats: {SUPPORTED_FORMATS}")
    kern = parser.add_argument_group("kernels")
    kern.add_argument("--kernels", default="gaussian,laplace", metavar="LIST",
                      help="comma list of gaussian, laplace (default: both)")
    kern.add_argument("--betas", default="0.01,0.1,1,10,100", metavar="B",
                      help="widths of every kernel: exp(-||x-x'||^2/beta), "
                           "exp(-||x-x'||_1/beta) (default 0.01,0.1,1,10,100)")
    kern.add_argument("--ard", action="store_true",
                      help="add an ARD Gaussian kernel with one tuned width per feature")
    kern.add_argument("--C", type=float, default=1.0, dest="C",
                      help="regularisation, H = K + I/C (default 1)")
    kern.add_argument("--tune-C", action="store_true", help="tune C as well")
    kern.add_argument("--no-intercept", action="store_true", help="LS-SVM without bias")
    opt = parser.add_argument_group("optimiser")
    opt.add_argument("--gamma-s", type=float, default=DEFAULT_GAMMA_S,
                     help="tanh sharpness of the smooth LOO error (default 10)")
    opt.add_argument("--optimizer", choices=("cg", "lbfgs"), default="cg",
                     help="conjugate gradient (default, the paper's) or L-BFGS-B")
    opt.add_argument("--restarts", type=int, default=3, help="starting points (default 3)")
    opt.add_argument("--max-iter", type=int, default=100,
                     help="iterations per restart (default 100)")
    opt.add_argument("--multiclass", choices=("ovo", "ovr"), default="ovo",
                     help="one-against-one (default, the paper's) or one-against-rest")
    opt.add_argument("--seed", type=int, default=0, help="seed of restarts and folds")
    out = parser.add_argument_group("evaluation and output")
    out.add_argument("--folds", type=int, default=10,
                     help="t of the t-fold CV error at the tuned parameters (default 10)")
    out.add_argument("--test", metavar="TESTDATA", help="test data: report the test error")
    out.add_argument("--out", metavar="DIR", help="write report.json here")
    out.add_argument("--json", action="store_true", help="print the report as JSON")
    out.add_argument("--memory-budget", type=budget_arg, metavar="BYTES",
                     help="memory the dense n x n matrices may use, e.g. 8G")


def run_command(args, parser):
    """Turn the parsed options into a :func:`run_tune` call."""
    for name, minimum in (("restarts", 1), ("max_iter", 1), ("folds", 2)):
        if getattr(args, name) < minimum:
            parser.error(f"argument --{name.replace('_', '-')}: must be >= {minimum}")
    try:
        betas = parse_grid(args.betas, "beta")
    except KernelCVError as exc:
        raise KernelCVError(f"argument --betas: {exc}") from None
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    return run_tune(args.data, kernels=kernels, betas=betas, ard=args.ard, C=args.C,
                    tune_C=args.tune_C, gamma_s=args.gamma_s,
                    fit_intercept=not args.no_intercept, multiclass=args.multiclass,
                    optimizer=args.optimizer, n_restarts=args.restarts,
                    max_iter=args.max_iter, seed=args.seed, folds=args.folds,
                    test=args.test, out=args.out, memory_budget=args.memory_budget)


def run_tune(data, *, kernels=("gaussian", "laplace"), betas=PAPER_BETAS, ard=False, C=1.0,
             tune_C=False, gamma_s=DEFAULT_GAMMA_S, fit_intercept=True, multiclass="ovo",
             optimizer="cg", n_restarts=3, max_iter=100, seed=0, folds=10, test=None,
             out=None, memory_budget=None) -> dict:
    """Tune the LS-SVM kernel mixture on a data file; report LOO, t-fold CV and test error.

    Returns
    -------
    dict
        ``machines`` (per binary machine: classes, theta per kernel, C, ARD widths, smooth
        LOO error, optimiser record), ``loo_error`` (exact LOO 0-1 error of the tuned
        classifier), ``cv_error`` / ``fold_errors`` (t-fold CV with the tuned parameters
        refit per fold; ``cv_protocol`` says so: the parameters were chosen on all the data,
        so this estimate is optimistic, unlike ``test_error``), ``test_error``, ``timings``,
        ``failures``, ``notes``, ``files``.
    """
    tic = time.perf_counter()
    spec = make_spec(kernels, betas, ard, tune_C)
    if out is not None:
        check_writable_folder(out)
    estimator = SmoothLOOLSSVMClassifier(
        kernels=spec.kernels, betas=spec.betas, ard=ard, C=C, tune_C=tune_C, gamma_s=gamma_s,
        fit_intercept=fit_intercept, multiclass=multiclass, optimizer=optimizer,
        n_restarts=n_restarts, max_iter=max_iter, random_state=seed,
        memory_budget=memory_budget)
    estimator._check_params()
    X, y = _load(data)
    n = X.shape[0]
    classes, counts = np.unique(y, return_counts=True)
    if classes.size < 2:
        raise KernelCVError(f"{data}: tuning a classifier needs two classes, found one")
    if np.any(counts < 2):
        scheme = "one-against-one" if classes.size > 2 and multiclass == "ovo" \
            else "leave-one-out"
        raise KernelCVError(f"{data}: class {_plain(classes[np.argmin(counts)])!r} has only "
                            f"one sample; {scheme} tuning needs at least two per class")
    check_dense_budget(n, n, len(spec.components) + 10 + 2 * int(ard),
                       "smooth leave-one-out tuning", memory_budget)
    notes = []
    fold_ids = _folds(y, folds, seed, notes, data)
    X_test = y_test = None
    if test is not None:
        X_test, y_test = _load(test, n_features=X.shape[1])
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
        "kernels": list(spec.kernels), "betas": list(spec.betas), "ard": bool(ard),
        "C": C, "tune_C": bool(tune_C), "gamma_s": gamma_s, "fit_intercept": fit_intercept,
        "multiclass": multiclass if classes.size > 2 else None, "optimizer": optimizer,
        "restarts": n_restarts, "max_iter": max_iter, "seed": seed, "folds": int(folds),
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


def _load(path, n_features=None):
    X, y = load_data(path)
    svmlight = sp.issparse(X)
    X = X.toarray() if svmlight else np.asarray(X, dtype=np.float64)
    if n_features is not None and X.shape[1] != n_features:
        d = X.shape[1]
        # svmlight files omit trailing zero features: pad, or cut columns that are all zero
        if svmlight and d < n_features:
            X = np.hstack([X, np.zeros((X.shape[0], n_features - d))])
        elif svmlight and not np.any(X[:, n_features:]):
            X = X[:, :n_features]
        else:
            raise KernelCVError(f"{path}: test data use {d} features but the training data "
                                f"have {n_features}")
    if X.shape[0] == 0:
        raise KernelCVError(f"{path}: no samples")
    if not np.all(np.isfinite(X)):
        raise KernelCVError(f"{path}: the data contain NaN or infinite values")
    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise KernelCVError(f"{path}: the labels contain NaN or infinite values")
    return X, y


def _folds(y, t, seed, notes, data):
    n = y.shape[0]
    if t > n:
        raise KernelCVError(f"cannot make {t} folds from {n} samples")
    smallest = int(np.min(np.unique(y, return_counts=True)[1]))
    if smallest >= t:
        splitter = StratifiedKFold(t, shuffle=True, random_state=seed)
    else:
        notes.append(f"the smallest class has {smallest} samples, fewer than {t} folds: "
                     "plain shuffled folds are used")
        splitter = KFold(t, shuffle=True, random_state=seed)
    ids = np.empty(n, dtype=np.int64)
    for i, (_, part) in enumerate(splitter.split(np.zeros(n), y)):
        ids[part] = i
    n_classes = np.unique(y).size
    for i in range(t):
        if np.unique(y[ids != i]).size < n_classes:
            raise KernelCVError(f"{data}: with {t} folds the training part of fold {i} "
                                "lacks a class; use fewer --folds")
    return ids


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def render(report, args=None):
    """The readable summary: settings, errors, timings and the tuned weights."""
    t = report["timings"]
    rows = [
        ("data", f"{report['data']}  ({report['n_samples']} samples, "
                 f"{report['n_features']} features, {len(report['classes'])} classes)"),
        ("kernels", ", ".join(report["kernels"]) + (" + ARD gaussian" if report["ard"] else "")
         + f"  (betas {', '.join(f'{b:g}' for b in report['betas'])})"),
        ("optimiser", f"{report['optimizer']}, {report['restarts']} restarts, "
                      f"{t['iterations']} iterations, {t['tune_seconds']:.3g} s "
                      f"({1000 * t['seconds_per_iteration']:.3g} ms/iteration)"),
        ("LOO error", f"{report['loo_error']:.4g}  (smooth {report['smooth_loo_error']:.4g})"),
        (f"{report['folds']}-fold CV", f"{report['cv_error']:.4g}  (parameters tuned on all "
                                       "the data, refit per fold: optimistic)"),
    ]
    if report.get("multiclass"):
        rows.insert(2, ("multiclass", f"{report['multiclass']}, {len(report['machines'])} "
                                      "binary machines"))
    if report.get("test") is not None:
        rows.append(("test error", f"{report['test_error']:.4g}  ({report['test']})"))
    for path in report.get("files") or []:
        rows.append(("wrote", path))
    width = max(len(label) for label, _ in rows) + 2
    lines = [f"{label:<{width}}{value}" for label, value in rows]
    for machine in report["machines"][:3]:
        lines.append("")
        lines.append(f"machine {machine['classes'][0]} vs {machine['classes'][1]}: "
                     f"C={machine['C']:.4g}, smooth LOO {machine['smooth_loo_error']:.4g}")
        for name, value in machine["theta"].items():
            lines.append(f"  theta {name:<22}{value:.4g}")
        if "ard_widths" in machine:
            lines.append("  ARD widths " + ", ".join(f"{v:.3g}" for v in machine["ard_widths"]))
    if len(report["machines"]) > 3:
        lines.append(f"(and {len(report['machines']) - 3} more machines: see --json)")
    return "\n".join(lines)
