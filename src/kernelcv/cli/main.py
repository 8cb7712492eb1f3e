"""The ``kernelcv`` command line.

Each subcommand is a thin shell around one library function that returns a plain dict:
the shell parses options, calls that function, and prints the dict either as one JSON
object (``--json``) or as an aligned, readable summary::

    kernelcv cv heart_scale.svm --machine lssvm --gamma 0.05 --lam 1e-3 --method bif
    kernelcv select heart_scale.svm --machine l2svm --out results --plot

Exit status: 0 on success, 2 for bad input (a usage error, an unreadable file, invalid
data or settings); the error is one line on stderr starting with ``kernelcv: error:``.
Remarks (label mapping) and Python warnings are one-line ``kernelcv: note:`` and
``kernelcv: warning:`` messages on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import _cli_bench, _cli_hypothetical, _cli_select, _cli_tune
from ._cli_options import budget_arg, order_arg
from .cv import METHODS, cross_validate
from .datasets import SUPPORTED_FORMATS, load_data, read_fold_ids
from .exceptions import KernelCVError
from .kernels import KERNELS
from .machines import CLASSIFIERS, MACHINES
from .reports.io import jsonable

__all__ = ["build_parser", "main", "run_cv"]

PROG = "kernelcv"
DEFAULT_FOLDS = 10
DEFAULT_SEED = 0
EXIT_OK = 0
EXIT_ERROR = 2
_MAX_LISTED_FOLDS = 20


# --------------------------------------------------------------------------------------
# library-level functions (one per subcommand, each returns a JSON-friendly dict)
# --------------------------------------------------------------------------------------


def run_cv(data, *, machine, lam, kernel="rbf", gamma=None, degree=3, coef0=1.0,
           huber_width=0.01, epsilon=0.1, fit_intercept=None, folds=DEFAULT_FOLDS,
           seed=DEFAULT_SEED, fold_ids=None, method="exact", order=5,
           memory_budget=None) -> dict:
    """Load a data file and estimate the cross-validation error of one kernel machine.

    Parameters
    ----------
    data : str or os.PathLike
        Data file (see :mod:`kernelcv.datasets` for the formats).
    machine, lam, kernel, gamma, degree, coef0, huber_width, epsilon, fit_intercept, method,
    order, memory_budget
        As for :func:`kernelcv.cross_validate`.
    folds : int, default 10
        Number of shuffled folds; ignored when ``fold_ids`` is given.
    seed : int or None, default 0
        Seed of the fold assignment (fixed by default so that repeated runs agree).
    fold_ids : str or os.PathLike, optional
        File with one integer fold id per line (see :func:`kernelcv.datasets.read_fold_ids`).

    Returns
    -------
    dict
        :meth:`kernelcv.CVResult.to_dict` plus ``data`` (the path as given), ``fold_ids``
        (the fold-id path or None) and ``seed`` (None when fold ids were given).

    Raises
    ------
    KernelCVError
        For any problem with the files, the data or the settings.
    """
    X, y = load_data(data)
    if fold_ids is not None:
        folds = read_fold_ids(fold_ids, y.shape[0])
        seed = None
    result = cross_validate(
        X, y, machine=machine, kernel=kernel, gamma=gamma, lam=lam, degree=degree,
        coef0=coef0, huber_width=huber_width, epsilon=epsilon, fit_intercept=fit_intercept,
        folds=folds, method=method, order=order, random_state=seed,
        memory_budget=memory_budget)
    summary = result.to_dict()
    summary["data"] = str(data)
    summary["fold_ids"] = None if fold_ids is None else str(fold_ids)
    summary["seed"] = seed
    return summary


# --------------------------------------------------------------------------------------
# subcommands
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """A subcommand: how to declare its options, run it, and render its result."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, argparse.ArgumentParser], dict]
    render: Callable[[dict, argparse.Namespace], str]


def _add_cv_arguments(parser):
    parser.add_argument("data", metavar="DATA",
                        help=f"data file; formats: {SUPPORTED_FORMATS}")
    machine = parser.add_argument_group("machine and kernel")
    machine.add_argument("--machine", required=True, choices=MACHINES,
                         help=f"kernel machine (classifiers: {', '.join(CLASSIFIERS)})")
    machine.add_argument("--kernel", default="rbf", choices=KERNELS,
                         help="kernel function (default: %(default)s)")
    machine.add_argument("--gamma", type=float, metavar="G",
                         help="kernel width, required for rbf and laplace "
                              "(rbf: exp(-G ||x - x'||^2))")
    machine.add_argument("--lam", type=float, required=True, metavar="L",
                         help="regularisation of (1/n) sum loss + L ||f||^2")
    machine.add_argument("--degree", type=int, default=3, metavar="D",
                         help="degree of the poly kernel (default: %(default)s)")
    machine.add_argument("--coef0", type=float, default=1.0, metavar="C",
                         help="constant of the poly kernel (default: %(default)s)")
    machine.add_argument("--huber-width", type=float, default=0.01, metavar="H",
                         help="smoothing width of svm and svr (default: %(default)s)")
    machine.add_argument("--epsilon", type=float, default=0.1, metavar="E",
                         help="insensitivity of svr (default: %(default)s)")
    machine.add_argument("--no-intercept", action="store_true",
                         help="fit lssvm without a bias term")

    folds = parser.add_argument_group("folds")
    source = folds.add_mutually_exclusive_group()
    source.add_argument("--folds", type=int, metavar="T",
                        help=f"number of shuffled (stratified) folds (default: {DEFAULT_FOLDS})")
    source.add_argument("--fold-ids", metavar="FILE",
                        help="file with one integer fold id per line, one line per sample")
    folds.add_argument("--seed", type=int, metavar="S",
                       help=f"seed of the shuffled folds (default: {DEFAULT_SEED})")

    method = parser.add_argument_group("method")
    method.add_argument("--method", required=True, choices=METHODS,
                        help="exact refits, closed-form (krr, lssvm) or the bif approximation")
    method.add_argument("--order", type=order_arg, default=5, metavar="R",
                        help="bif order: a positive integer, 'inf' or 'auto' "
                             "(default: %(default)s; bif only)")
    method.add_argument("--memory-budget", type=budget_arg, metavar="BYTES",
                        help="refuse when dense n x n matrices would exceed this, e.g. 8G "
                             "(default: $KERNELCV_MEMORY_BUDGET or half the RAM)")
    parser.add_argument("--json", action="store_true",
                        help="print the result as one JSON object")


def _run_cv_command(args, parser):
    if args.seed is not None and args.fold_ids is not None:
        parser.error("argument --seed: not allowed with argument --fold-ids")
    return run_cv(
        args.data, machine=args.machine, lam=args.lam, kernel=args.kernel, gamma=args.gamma,
        degree=args.degree, coef0=args.coef0, huber_width=args.huber_width,
        epsilon=args.epsilon, fit_intercept=False if args.no_intercept else None,
        folds=DEFAULT_FOLDS if args.folds is None else args.folds,
        seed=DEFAULT_SEED if args.seed is None else args.seed, fold_ids=args.fold_ids,
        method=args.method, order=args.order, memory_budget=args.memory_budget)


def _render_cv(summary, args=None):
    params = dict(summary.get("params") or {})
    machine = params.pop("machine", "?")
    kernel = params.pop("kernel", "?")
    lam = params.pop("lam", None)
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
    width = max(len(label) for label, _ in rows) + 2
    lines = [f"{label:<{width}}{value}" for label, value in rows]
    for problem in _problems(summary):
        lines.append(f"WARNING: {problem}")
    return "\n".join(lines)


def _add_select_arguments(parser):
    _cli_select.add_arguments(parser, f"formats: {SUPPORTED_FORMATS}")


COMMANDS = (
    Command("cv", "estimate the cross-validation error of one kernel machine",
            _add_cv_arguments, _run_cv_command, _render_cv),
    Command("select", "choose the kernel parameter and lam by (approximate) CV",
            _add_select_arguments, _cli_select.run_command,
            lambda report, args: _cli_select.render(report, top=args.top)),
    Command("hypothetical", "non-enumerative (hypothetical) CV for ridge, SVM, elastic-net SVM",
            _cli_hypothetical.add_arguments, _cli_hypothetical.run_command,
            lambda report, args: _cli_hypothetical.render(report)),
    Command("tune", "tune many kernel parameters of LS-SVM by a smooth leave-one-out error",
            _cli_tune.add_arguments, _cli_tune.run_command, _cli_tune.render),
    Command("bench", "reproduce the papers' experiments against scikit-learn",
            _cli_bench.add_arguments, _cli_bench.run_command, _cli_bench.render),
)


# --------------------------------------------------------------------------------------
# formatting helpers
# --------------------------------------------------------------------------------------


def _num(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


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
    text = (f"degenerate result: held-out kernel predictions are negligible next to the "
            f"training fit (median ratio {summary.get('heldout_ratio', 0.0):.2g}); the "
            "kernel width is probably too small.")
    if summary["method"] == "exact":
        return text + " The exact estimate is still correct, but the model is useless."
    return text + " The approximate value is not trustworthy; rerun with --method exact."


def _problems(summary):
    """Reasons not to trust the estimate, one sentence each."""
    problems = []
    error = summary.get("cv_error")
    if error is None or not math.isfinite(error):
        problems.append("the CV error is not a finite number (the computation broke down "
                        "numerically); try a larger --lam or --method exact.")
    if summary.get("degenerate"):
        problems.append(_degenerate_advice(summary))
    return problems


_jsonable = jsonable  # plain JSON types; non-finite floats become null


# --------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one subparser per command."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Select hyperparameters of kernel machines by fast approximate "
                    "cross-validation.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        sub = commands.add_parser(command.name, help=command.help,
                                  description=command.help[:1].upper() + command.help[1:])
        command.add_arguments(sub)
        sub.set_defaults(_command=command, _parser=sub)
    return parser


def _version():
    try:
        from importlib.metadata import version

        return version("kernelcv")
    except Exception:  # not installed: the version is only informative
        return "unknown"


def _say(kind, message):
    text = " ".join(str(message).split())
    print(f"{PROG}: {kind}: {text}", file=sys.stderr)


def _report_warnings(caught):
    seen = set()
    for item in caught:
        text = " ".join(str(item.message).split())
        key = (item.category, text)
        if key in seen:
            continue
        seen.add(key)
        _say("warning", f"{text} ({item.category.__name__})")


def _error_message(exc):
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc) or type(exc).__name__


def main(argv=None) -> int:
    """Run the command line; return the exit status (0 success, 2 bad input)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    command = args._command
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            summary = command.run(args, args._parser)
        except SystemExit as exc:  # a usage error found after parsing
            return exc.code if isinstance(exc.code, int) else EXIT_ERROR
        except (KernelCVError, OSError) as exc:
            _report_warnings(caught)
            _say("error", _error_message(exc))
            return EXIT_ERROR
    _report_warnings(caught)
    for note in summary.get("notes") or []:
        if not str(note).startswith("degenerate"):
            _say("note", note)
    if args.json:
        if command.name == "cv":
            for problem in _problems(summary):
                _say("warning", problem)
        text = json.dumps(_jsonable(summary), indent=2, allow_nan=False)
    else:
        text = command.render(summary, args)
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `kernelcv select ... | head`: the reader left early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK
