"""The ``kernelcv cv`` subcommand: options, :func:`run_cv` and the readable summary.

:func:`run_cv` is the whole library side of the command: it loads the data file (and the
fold ids) and calls :func:`kernelcv.cross_validate`; the rest turns options into its
arguments and its result into text. :func:`problems` lists the reasons not to trust an
estimate, printed as warnings in both output modes.
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np

from ..criteria.certificate import UNCERTIFIED
from ..criteria.conditioning import ILL_CONDITIONED
from ..criteria.result import confusion_summary
from ..criteria.truncation import UNCONVERGED
from ..cv import METHODS, cross_validate
from ..devices import resolve_device
from ..exceptions import KernelCVError
from ..kernels import KERNELS
from ..machines import MACHINES, Machine, make_machine
from ..reading.files import SUPPORTED_FORMATS, load_data, read_fold_ids, read_sample_weights
from ..reports.command_files import DataFiles
from ..reports.scaling import SCALINGS, apply_scaling, fit_scaling, scaling_entry
from ..selection.methods import BIF
from ..selection.spectral_method import Spectral
from .options import (
    add_device_argument,
    add_header_argument,
    add_machine_arguments,
    budget_arg,
    format_number,
    order_arg,
)

__all__ = ["add_arguments", "problems", "render", "run_command", "run_cv"]

DEFAULT_FOLDS = 10
DEFAULT_SEED = 0
_MAX_LISTED_FOLDS = 20


def run_cv(files, *, machine, lam, kernel="rbf", gamma=None, degree=3, coef0=1.0,
           folds=DEFAULT_FOLDS, seed=DEFAULT_SEED, method="exact",
           memory_budget=None) -> dict:
    """Load a data file and estimate the cross-validation error of one kernel machine.

    Parameters
    ----------
    files : :class:`~kernelcv.reports.command_files.DataFiles` or a path
        The data file (see :mod:`kernelcv.reading.files` for the formats) and how to read it:
        ``fold_ids``, a file with one integer fold id per line (instead of ``folds``;
        :func:`kernelcv.reading.files.read_fold_ids`); ``scale``, feature scaling fitted on
        all the data before the CV (the held-out folds' inputs take part in it, as when a
        data set is scaled once with ``svm-scale``); ``header`` and ``target``, a CSV
        file's layout. A test file and streaming are refused.
    machine, lam, kernel, gamma, degree, coef0, method, memory_budget
        As for :func:`kernelcv.cross_validate` (``machine``: a name or a machine object
        of :func:`kernelcv.make_machine`; ``method``: a name or a method object).
    folds : int, default 10
        Number of shuffled folds; ignored when ``files.fold_ids`` is given.
    seed : int or None, default 0
        Seed of the fold assignment (fixed by default so that repeated runs agree).

    Returns
    -------
    dict
        :meth:`kernelcv.CVResult.to_dict` plus ``data`` (the path as given), ``fold_ids``
        (the fold-id path or None), ``seed`` (None when fold ids were given) and, for
        more than two classes, ``multiclass`` (scheme, classes, and the confusion matrix
        and per-class error of the held-out predictions).

    Raises
    ------
    KernelCVError
        For any problem with the files, the data or the settings.
    """
    files = files if isinstance(files, DataFiles) else DataFiles(files)
    files.refuse("kernelcv cv", "test", "stream")
    spec = machine if isinstance(machine, Machine) else make_machine(machine)
    X, y = load_data(files.data, files.header, files.target)
    scaling = fit_scaling(X, files.scale)
    X = apply_scaling(X, scaling)
    if files.fold_ids is not None:
        folds = read_fold_ids(files.fold_ids, y.shape[0])
        seed = None
    weights = (None if files.sample_weight is None
               else read_sample_weights(files.sample_weight, y.shape[0]))
    result = cross_validate(
        X, y, machine=spec, kernel=kernel, gamma=gamma, lam=lam, degree=degree,
        coef0=coef0, folds=folds, method=method, random_state=seed,
        memory_budget=memory_budget, sample_weight=weights)
    summary = result.to_dict()
    summary["device"] = resolve_device(getattr(method, "device", "numpy")).with_precision(
        getattr(method, "precision", "float64")).describe()
    mapping = result.label_mapping
    summary["multiclass"] = None
    if mapping is not None and len(mapping) > 2:
        classes = [mapping[code] for code in sorted(mapping)]
        summary["multiclass"] = {"strategy": spec.multiclass, "classes": classes,
                                 "cv": confusion_summary(y, result.labels, classes)}
    summary["data"] = str(files.data)
    summary["fold_ids"] = None if files.fold_ids is None else str(files.fold_ids)
    summary["sample_weight"] = (None if files.sample_weight is None
                                else str(files.sample_weight))
    summary["seed"] = seed
    summary["scaling"] = scaling_entry(scaling)
    return summary


EXAMPLES = """examples:
  kernelcv data    # writes data/breast_cancer_train.svm and the other example files
  kernelcv cv data/breast_cancer_train.svm --machine lssvm --gamma 0.03 --lam 1e-3 \\
      --method closed-form --scale standard
  kernelcv cv data/breast_cancer_train.svm --machine l2svm --gamma 0.03 --lam 1e-3 \\
      --method bif --order inf --folds 5 --json
  kernelcv cv data/diabetes_train.svm --machine svr --gamma 0.1 --lam 1e-3 \\
      --svr-epsilon 5 --method exact
"""


def add_arguments(parser):
    """Declare the options of ``kernelcv cv``."""
    parser.add_argument("data", metavar="DATA",
                        help=f"data file; formats: {SUPPORTED_FORMATS}")
    machine = parser.add_argument_group("machine and kernel")
    add_machine_arguments(machine, MACHINES, KERNELS)
    machine.add_argument("--gamma", type=float, metavar="G",
                         help="the kernel's gamma: width of rbf and laplace (required "
                              "there; rbf: exp(-G ||x - x'||^2)), scale of poly (default 1)")
    machine.add_argument("--lam", type=float, required=True, metavar="L",
                         help="regularisation of (1/n) sum loss + L ||f||^2")
    machine.add_argument("--degree", type=int, default=3, metavar="D",
                         help="degree of the poly kernel (default: %(default)s)")
    machine.add_argument("--coef0", type=float, default=1.0, metavar="C",
                         help="constant of the poly kernel (default 1)")
    machine.add_argument("--epsilon", type=float, help=argparse.SUPPRESS)

    folds = parser.add_argument_group("folds")
    source = folds.add_mutually_exclusive_group()
    source.add_argument("--folds", type=int, metavar="T",
                        help=f"number of shuffled (stratified) folds (default: {DEFAULT_FOLDS})")
    source.add_argument("--fold-ids", metavar="FILE",
                        help="file with one integer fold id per line, line i for sample i")
    folds.add_argument("--seed", type=int, metavar="S",
                       help=f"seed of the shuffled folds (default: {DEFAULT_SEED})")

    method = parser.add_argument_group("method")
    method.add_argument("--method", required=True, choices=METHODS,
                        help="exact refits, closed-form (krr, lssvm) or the bif approximation")
    method.add_argument("--order", type=order_arg, default="inf", metavar="R",
                        help="bif order: a positive integer, 'inf' or 'auto' "
                             "(default: inf, as kernelcv select: held-out values formed "
                             "directly, never degenerate; bif only)")
    method.add_argument("--memory-budget", type=budget_arg, metavar="BYTES",
                        help="refuse when dense n x n matrices would exceed this, e.g. 8G "
                             "(default: $KERNELCV_MEMORY_BUDGET or half the RAM)")
    add_device_argument(method)
    parser.add_argument("--scale", choices=SCALINGS, default="none",
                        help="scale each feature before the CV: standard, minmax or none "
                             "(default; see kernelcv select --help)")
    parser.add_argument("--json", action="store_true",
                        help="print the result as one JSON object")
    add_header_argument(parser)


def run_command(args, parser):
    """Turn the parsed options into a :func:`run_cv` call."""
    if args.seed is not None and args.fold_ids is not None:
        parser.error("argument --seed: not allowed with argument --fold-ids")
    if args.epsilon is not None:
        parser.error("argument --epsilon: the insensitivity of svr is --svr-epsilon (as in "
                     "kernelcv select, where --epsilon is the tolerated CV error of "
                     "--folds auto)")
    with warnings.catch_warnings():
        # reported once, with the other problems of the estimate (see problems())
        for head in (UNCONVERGED, ILL_CONDITIONED, UNCERTIFIED):
            warnings.filterwarnings("ignore", message=f".*{head}", category=RuntimeWarning)
        files = DataFiles(args.data, fold_ids=args.fold_ids, header=args.header,
                          target=args.target, scale=args.scale,
                          sample_weight=args.sample_weight)
        machine = make_machine(args.machine, huber_width=args.huber_width,
                               epsilon=args.svr_epsilon,
                               fit_intercept=False if args.no_intercept else None,
                               multiclass=args.multiclass, class_weight=args.class_weight)
        return run_cv(
            files, machine=machine, lam=args.lam, kernel=args.kernel, gamma=args.gamma,
            degree=args.degree, coef0=args.coef0,
            folds=DEFAULT_FOLDS if args.folds is None else args.folds,
            seed=DEFAULT_SEED if args.seed is None else args.seed,
            method=_method(args), memory_budget=args.memory_budget)


def _method(args):
    """The CV method of the options: BIF with its order, spectral on its device."""
    if args.method == BIF.name:
        method = BIF(order=args.order)
    elif args.method == Spectral.name:
        method = Spectral(device=args.device, precision=args.precision)
    else:
        method = args.method
    if args.device in ("cpu", "cuda") and args.method != Spectral.name:
        raise KernelCVError(f"--device {args.device} runs --method spectral only (one "
                            f"eigendecomposition per kernel), not {args.method}")
    if args.precision != "float64" and args.method != Spectral.name:
        raise KernelCVError(f"--precision {args.precision} runs --method spectral only, "
                            f"not {args.method}")
    return method


def render(summary, args=None):
    """The readable summary: settings, CV error, fold errors, time and warnings."""
    params = dict(summary.get("params") or {})
    machine = params.pop("machine", "?")
    kernel = params.pop("kernel", "?")
    lam = params.pop("lam", None)
    params.pop("multiclass", None)  # shown on its own row
    machine_extra = []
    if "fit_intercept" in params:
        machine_extra.append("with intercept" if params.pop("fit_intercept")
                             else "no intercept")
    for key in ("huber_width", "epsilon"):
        if key in params:
            machine_extra.append(f"{key}={_num(params.pop(key))}")
    kernel_extra = [f"{key}={_num(value)}" for key, value in params.items()]

    method = summary["method"]
    if method == "bif":
        order, used = summary.get("order"), summary.get("order_used")
        if used in (None, order):
            method += f"  (order {order})"
        else:
            method += f"  (order {order}, used {used})"
    if summary.get("fold_ids"):
        fold_source = f"from {summary['fold_ids']}"
    else:
        fold_source = f"shuffled, seed {summary.get('seed')}"
    metric = summary.get("metric")
    metric_name = {"0-1": "0-1 error", "mse": "mean squared error"}.get(metric, metric)
    seconds = f"{summary['seconds']:.3g} s"
    if summary.get("fit_seconds"):
        seconds += f"  (full fit {summary['fit_seconds']:.3g} s)"

    rows = [
        ("data", f"{summary['data']}  ({summary['n_samples']} samples)"),
        ("machine", _joined(machine, machine_extra)),
        ("kernel", _joined(kernel, kernel_extra)),
        ("lam", _num(lam)),
        ("method", method),
        ("folds", f"{summary['folds']}  ({fold_source})"),
        ("CV error", f"{_num(summary['cv_error'])}  ({metric_name})"),
        ("fold errors", _fold_errors(summary.get("fold_errors") or [])),
        ("seconds", seconds),
    ]
    entry = summary.get("multiclass")
    if entry:
        rows.insert(1, ("classes", f"{len(entry['classes'])}, {entry['strategy']}"))
        rows.append(("per class", ", ".join(
            f"{label}: {'-' if e is None else _num(e)}" for label, e in
            zip(entry["classes"], entry["cv"]["per_class_error"], strict=True))))
    width = max(len(label) for label, _ in rows) + 2
    lines = [f"{label:<{width}}{value}" for label, value in rows]
    for problem in problems(summary):
        lines.append(f"WARNING: {problem}")
    return "\n".join(lines)



def _joined(head, extra):
    return head if not extra else f"{head}  ({', '.join(extra)})"


def _fold_errors(errors):
    if not errors:
        return "-"
    if len(errors) <= _MAX_LISTED_FOLDS:
        return " ".join(f"{e:.3g}" for e in errors)
    values = np.asarray(errors, dtype=float)
    return (f"min {values.min():.3g}, median {np.median(values):.3g}, "
            f"max {values.max():.3g}  (over {values.size} folds)")


def _degenerate_advice(summary):
    text = ("degenerate result: many held-out values are below the rounding level of "
            "'full fit + correction' (median held-out ratio "
            f"{summary.get('heldout_ratio', 0.0):.2g}); the kernel width is probably too "
            "small.")
    return text + (" The approximate value is not trustworthy; rerun with --method exact "
                   "or --order inf.")


def problems(summary):
    """Reasons not to trust the estimate, one sentence each."""
    problems = []
    error = summary.get("cv_error")
    if error is None or not math.isfinite(error):
        problems.append("the CV error is not a finite number: the held-out errors "
                        "overflowed (put X and y on a reasonable scale, e.g. standardize "
                        "them) or the computation broke down numerically (try a larger "
                        "--lam" + ("" if summary.get("method") == "exact"
                                   else " or --method exact") + ").")
    if summary.get("degenerate"):
        problems.append(_degenerate_advice(summary))
    if summary.get("unconverged"):
        problems.append(next((n for n in summary.get("notes", [])
                              if n.startswith(UNCONVERGED)),
                             "the BIF series did not converge; use --order inf"))
    if summary.get("uncertified"):
        problems.append(next((n for n in summary.get("notes", []) if UNCERTIFIED in n),
                             "the BIF value is not certified; use --method exact"))
    if summary.get("ill_conditioned"):
        problems.append(next((n for n in summary.get("notes", []) if ILL_CONDITIONED in n),
                             "the BIF value is ill-conditioned; use --method exact"))
    return problems


def _num(value):
    return format_number(value, digits=6)
