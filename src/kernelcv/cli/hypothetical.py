"""The ``kernelcv hypothetical`` subcommand: options and the readable summary.

The work is done by :func:`kernelcv.reports.hypothetical.run_hypothetical`; this module
only turns options into its arguments and its report into text.
"""

from __future__ import annotations

import argparse

from ..exceptions import KernelCVError
from ..reports.hypothetical import MODELS, run_hypothetical
from ..selection.space.grids import parse_grid
from .options import add_header_argument, budget_arg, format_number

EXAMPLES = """examples:
  kernelcv data    # writes data/breast_cancer_train.svm and the other example files
  kernelcv hypothetical data/breast_cancer_train.svm --model enet
  kernelcv hypothetical data/breast_cancer_train.svm --model enet --out results/ --plot
"""


def add_arguments(parser):
    """Declare the options of ``kernelcv hypothetical``."""
    parser.add_argument("data", metavar="DATA", help="training data file")
    parser.add_argument("--model", choices=MODELS, default="enet",
                        help="ridge (alpha path), svm (C values), enet (mu path, default) or "
                             "relevance (mu path over kernel similarities to the objects)")
    parser.add_argument("--mu-grid", metavar="M",
                        help="mu values >= 0 for enet/relevance (e.g. 0,2^-4..2^4)")
    parser.add_argument("--kernels", metavar="K",
                        help="relevance: comma list of kernels, e.g. rbf:0.1,laplace,poly:2 "
                             "(gamma defaults to 1/n_features; poly:DEGREE)")
    parser.add_argument("--gammas", metavar="G",
                        help="relevance: RBF similarities at these gammas (e.g. 2^-4..2^0)")
    parser.add_argument("--similarity", metavar="FILES",
                        help="relevance: comma list of precomputed n x n .npy matrices")
    parser.add_argument("--C", default="1", metavar="C",
                        help="cost C of the SVMs (larger C, less regularisation: ||a||^2 + "
                             "C sum loss), comma list (default 1; enet and relevance use "
                             "the first)")
    parser.add_argument("--alpha-grid", metavar="A",
                        help="ridge: penalties alpha of RSS + alpha ||w||^2 (scikit-learn's "
                             "Ridge alpha; kernelcv select's mean-loss lam is alpha / n); "
                             "default 1e-3..1e3")
    # One meaning per option name: --lam-grid is the mean-loss lam of kernelcv select.
    parser.add_argument("--lam-grid", help=argparse.SUPPRESS)
    parser.add_argument("--noise-var", metavar="S2",
                        help="s2 in the penalty 2 s2 d: a number > 0 or 'auto' (ridge: "
                             "Mallows' Cp, estimated from the least-squares residuals). "
                             "Default: auto for ridge, 0.5 (the paper's form) otherwise")
    reference = parser.add_mutually_exclusive_group()
    reference.add_argument("--loo", action="store_true",
                           help="enet, relevance: add the exact LOO reference (n refits per "
                                "mu: minutes on a few hundred rows; off by default)")
    reference.add_argument("--no-loo", action="store_true",
                           help="the default since 0.2 (kept for scripts)")
    parser.add_argument("--out", metavar="DIR", help="write report.json (and the plot) here")
    parser.add_argument("--plot", action="store_true", help="with --out: hypothetical.png")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--memory-budget", type=budget_arg, metavar="BYTES",
                        help="memory the dense data and similarity matrices may use, e.g. 8G")
    add_header_argument(parser)


def _grid(text, option, name):
    if text is None:
        return None
    try:
        return parse_grid(text, name)
    except KernelCVError as exc:
        raise KernelCVError(f"argument {option}: {exc}") from None


def _mu_grid(text):
    """The mu grid: like the other grids, but 0 (no L1 penalty) is allowed."""
    if text is None:
        return None
    zeros, rest = [], []
    for item in str(text).split(","):
        if item.strip().startswith("-"):
            raise KernelCVError(f"argument --mu-grid: mu must be >= 0, got {item.strip()}")
        try:
            is_zero = float(item) == 0
        except ValueError:
            is_zero = False
        (zeros if is_zero else rest).append(item)
    values = _grid(",".join(rest), "--mu-grid", "mu") if any(i.strip() for i in rest) else []
    return [0.0] * bool(zeros) + values


def _noise_var(text):
    """``--noise-var``: None (the model's default), "auto" or a positive number."""
    if text is None or text.strip().lower() == "auto":
        return None if text is None else "auto"
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise KernelCVError(f"argument --noise-var: expected a number > 0 or 'auto', "
                            f"got {text!r}")
    return value


def _kernels(args):
    specs = [k.strip() for k in (args.kernels or "").split(",") if k.strip()]
    specs += [f"rbf:{g!r}" for g in (_grid(args.gammas, "--gammas", "gamma") or [])]
    if (specs or args.similarity) and args.model != "relevance":
        raise KernelCVError("--kernels, --gammas and --similarity need --model relevance")
    files = [f.strip() for f in (args.similarity or "").split(",") if f.strip()]
    return specs or None, files or None


def run_command(args, parser):
    """Turn the parsed options into a :func:`run_hypothetical` call."""
    if args.plot and args.out is None:
        parser.error("argument --plot: requires --out DIR")
    if args.lam_grid is not None:
        parser.error("argument --lam-grid: the ridge penalty here is --alpha-grid (RSS + "
                     "alpha ||w||^2); --lam-grid is kernelcv select's mean-loss lam = "
                     "alpha / n")
    kernels, similarities = _kernels(args)
    return run_hypothetical(
        args.data, model=args.model, mus=_mu_grid(args.mu_grid),
        Cs=_grid(args.C, "--C", "C"), lams=_grid(args.alpha_grid, "--alpha-grid", "alpha"),
        noise_var=_noise_var(args.noise_var), loo=args.loo, out=args.out, plot=args.plot,
        kernels=kernels, similarities=similarities, memory_budget=args.memory_budget,
        header=args.header, target=args.target)


def render(report, args=None):
    """The readable summary: data, model, chosen structural parameter and the path."""
    lines = [f"data      {report['data']}  ({report['n_samples']} samples, "
             f"{report['n_features']} features)",
             f"model     {report['model']}  ({report['seconds']:.3g} s)"]
    if report["model"] == "ridge":
        lines.append(f"best alpha {report['best_lam']:.4g}  (LOO: {report['best_lam_loo']:.4g}; "
                     f"s2 {report['noise_var']:.4g}; free intercept)")
        header, rows = ("alpha", "criterion", "d", "LOO MSE", "GCV"), zip(
            report["lams"], report["criterion"], report["effective_dimension"],
            report["loo_mse"], report["gcv"], strict=True)
    elif report["model"] == "svm":
        lines.append(f"best C    {report['best_C']:.4g}")
        header = ("C", "criterion", "d", "n_support", "train err")
        rows = [(c["C"], c["criterion"], c["effective_dimension"], c["n_support"],
                 c["train_error"]) for c in report["candidates"]]
    else:
        loo = report["loo_error"] or [None] * len(report["mus"])
        what = "features"
        if report["model"] == "relevance":
            what = (f"(kernel, object) pairs: {len(report['best_objects'])} objects, "
                    f"{len(report['best_kernels'])} of {len(report['kernels'])} kernels")
        loo_choice = ("" if report["best_mu_loo"] is None
                      else f"; LOO choice: {report['best_mu_loo']}")
        lines.append(f"best mu   {report['best_mu']:.4g}  ({len(report['best_relevant'])} "
                     f"relevant {what}{loo_choice})")
        lines += [f"note      {note}" for note in report["notes"]]
        header = ("mu", "criterion", "d", "relevant", "LOO err")
        rows = zip(report["mus"], report["criterion"], report["effective_dimension"],
                   report["n_relevant"], loo, strict=True)
    lines += [f"wrote     {path}" for path in report["files"]]
    lines.append("")
    lines.append("  ".join(f"{h:>10}" for h in header))
    for row in rows:
        lines.append("  ".join(f"{_num(v):>10}" for v in row))
    return "\n".join(lines)


def _num(value):
    return format_number(value)
