"""The ``kernelcv select`` subcommand: options, progress bar and the readable summary.

The work is done by :func:`kernelcv.reports.select.run_select`; this module only turns
command-line options into its arguments and its report into text.
"""

from __future__ import annotations

import argparse
import re
import sys

from ..exceptions import KernelCVError
from ..kernels import KERNELS
from ..machines import MACHINES, make_machine
from ..reading.files import SUPPORTED_FORMATS
from ..reports.command_files import DataFiles, Outputs
from ..reports.scaling import SCALINGS
from ..reports.select import run_select
from ..selection.granularity import RULES
from ..selection.method_choice import make_method
from ..selection.options import Execution, Safeguards
from ..selection.search import METHODS
from ..selection.space.grids import parse_grid, sigma_to_gamma
from .options import (
    add_device_argument,
    add_header_argument,
    add_machine_arguments,
    budget_arg,
    features_arg,
    format_number,
    order_arg,
)

DEFAULT_TOP = 5


def _grid(text, option, name, integer=False):
    """Parse a grid option; a bad grid is a one-line ``kernelcv: error:`` (exit 2)."""
    if text is None:
        return None
    if integer:  # plain integer ranges such as 1..8 (parse_grid knows power ranges only)
        items = []
        for item in str(text).split(","):
            match = re.fullmatch(r"\s*(\d+)\s*\.\.\s*(\d+)\s*", item)
            if match and int(match.group(1)) <= int(match.group(2)):
                items.extend(str(v) for v in range(int(match.group(1)),
                                                   int(match.group(2)) + 1))
            else:
                items.append(item)
        text = ",".join(items)
    try:
        return parse_grid(text, name, integer=integer)
    except KernelCVError as exc:
        raise KernelCVError(f"argument {option}: {exc}") from None


def _folds_arg(text):
    if text == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--folds must be an integer >= 2 or 'auto', got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"--folds must be at least 2, got {value}")
    return value


EXAMPLES = """examples:
  kernelcv data    # writes data/breast_cancer_train.svm and the other example files
  kernelcv select data/breast_cancer_train.svm --test data/breast_cancer_test.svm \\
      --machine lssvm --scale standard --out results/
  kernelcv select data/wine_train.svm --test data/wine_test.svm --machine l2svm \\
      --multiclass ovr --scale minmax
  kernelcv select data/diabetes_train.svm --machine krr --gamma-grid 2^-12..2^0 \\
      --lam-grid 2^-10..2^2 --folds 5 --json
"""


def add_arguments(parser):
    """Declare the options of ``kernelcv select``."""
    parser.add_argument("data", metavar="DATA",
                        help=f"training data file; formats: {SUPPORTED_FORMATS}")
    machine = parser.add_argument_group("machine and kernel")
    add_machine_arguments(machine, MACHINES, KERNELS)
    grid = parser.add_argument_group(
        "grids (comma lists; 2^k powers; ranges like 2^-3..2^3)")
    widths = grid.add_mutually_exclusive_group()
    widths.add_argument("--gamma-grid", metavar="G",
                        help="rbf/laplace gamma values; 'data' (default): the powers "
                             "2^(2k+1) from the data's distances, without the kernels that "
                             "are numerically the identity or near-constant (printed in a "
                             "note; docs/grids.md); 'paper': the papers' gamma = "
                             "1/(2 sigma^2), sigma = 2^-10..2^10")
    widths.add_argument("--sigma-grid", metavar="S",
                        help="rbf/laplace widths sigma, as gamma = 1/(2 sigma^2)")
    grid.add_argument("--degree-grid", metavar="D",
                      help="poly degrees, e.g. 1..8 or 2,3,5 (default 1..8)")
    lam_grid = grid.add_mutually_exclusive_group()
    lam_grid.add_argument("--lam-grid", metavar="L",
                          help="lam values (default 2^i/n, i = -3..11)")
    lam_grid.add_argument("--C-grid", dest="c_grid", metavar="C",
                          help="SVC-style C values instead of lam: lam = 1/(2 n C) "
                               "(default with --method rff: 2^-5,2^-3..2^15)")
    grid.add_argument("--gamma", type=float, metavar="G",
                      help="the kernel's gamma, fixed: poly only (default 1); rbf and "
                           "laplace search --gamma-grid")
    grid.add_argument("--coef0", type=float, default=1.0, metavar="C",
                      help="constant of the poly kernel (default 1)")
    cv = parser.add_argument_group("cross-validation")
    source = cv.add_mutually_exclusive_group()
    source.add_argument("--folds", type=_folds_arg, default=10, metavar="T|auto",
                        help="number of folds (default 10), or 'auto' to choose t and the "
                             "BIF order from --epsilon")
    source.add_argument("--fold-ids", metavar="FILE",
                        help="file with one integer fold id per line, line i for sample i")
    cv.add_argument("--seed", type=int, metavar="S",
                    help="seed of the fold assignment and, with --method rff, of the "
                         "feature draw (default 0; with --fold-ids only the features)")
    cv.add_argument("--method", choices=METHODS,
                    help="default: closed-form for krr/lssvm, bif otherwise")
    cv.add_argument("--order", type=order_arg, default="inf", metavar="R",
                    help="BIF order: integer, inf (default) or auto")
    cv.add_argument("--epsilon", type=float, metavar="E",
                    help="tolerated CV approximation error for --folds auto")
    cv.add_argument("--granularity", choices=RULES, default="adaptive",
                    help="with --folds auto: order from the observed series (adaptive, "
                         "default) or from the paper's bound")
    space = parser.add_argument_group(
        "random features (--method rff; default grids gamma = 2^-15,2^-13..2^9, "
        "C = 2^-5..2^15 step 2^2)")
    space.add_argument("--features", type=features_arg, metavar="D|auto",
                       help="number of random features, or auto (default): grow D by "
                            "doubling from 64 until the choice is stable")
    space.add_argument("--max-features", type=int, metavar="D",
                       help="with --features auto: the largest D (default 2048)")
    space.add_argument("--feature-time", type=float, metavar="SECONDS",
                       help="with --features auto: time budget of the growth of D "
                            "(default 60)")
    space.add_argument("--feature-map", choices=("rff", "nystroem"),
                       help="random Fourier features or Nystroem landmarks (default: "
                            "nystroem with --features auto, rff with a fixed D)")
    space.add_argument("--feature-loss", choices=("squared_hinge", "hinge", "square"),
                       help="loss of the linear machine in feature space (default: square "
                            "with --features auto; with a fixed D squared_hinge for "
                            "svm/l2svm, square for krr/lssvm)")
    space.add_argument("--final", choices=("auto", "kernel", "linear"),
                       help="model behind the --test error: exact SVC/kernel fit at the "
                            "chosen values (kernel), the linear model in feature space "
                            "(linear) or auto (kernel up to 100,000 samples; default)")
    space.add_argument("--final-kernel-limit", type=int, metavar="N",
                       help="--final auto: fit the exact kernel machine up to N samples, "
                            "above that the choice in feature space (default 100000)")
    space.add_argument("--final-features", type=int, metavar="D",
                       help="features of a feature-space final model (default: twice the "
                            "search's D)")
    space.add_argument("--refine", choices=("auto", "on", "off"),
                       help="walk the grid from the feature-space choice by exact refit CV "
                            "of the final SVC/kernel machine to a local minimum (auto: up "
                            "to 5,000 samples; default)")
    space.add_argument("--refine-evals", type=int, metavar="N",
                       help="at most N exact refit CVs in the refinement (default 30)")
    space.add_argument("--screen", choices=("auto", "coarse", "halving", "off"),
                       default="auto",
                       help="evaluate the whole grid (off) or walk it coarse to fine: "
                            "every third gamma at 3 lam values, then the neighbourhoods of the 3 "
                            "best points until they are local minima (coarse); halving "
                            "starts that walk from the grid walked on an n/4 subsample; "
                            "auto = halving from 200 samples, else coarse, and off with "
                            "--method rff or --checkpoint (default)")
    safe = parser.add_argument_group("safeguards")
    safe.add_argument("--confirm", type=int, default=3, metavar="K",
                      help="confirm the best K candidates by exact refit CV (default 3)")
    safe.add_argument("--no-safeguards", action="store_true",
                      help="no confirmation and no exact re-check of degenerate candidates")
    run = parser.add_argument_group("running")
    run.add_argument("--n-jobs", type=int, default=1, metavar="N",
                     help="kernel settings evaluated in parallel (joblib; -1 = all cores)")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="Dask scheduler address, e.g. tcp://host:8786")
    run.add_argument("--checkpoint", metavar="FILE",
                     help="record finished kernel settings here; rerun to resume")
    run.add_argument("--stream", action="store_true",
                     help="--method rff: read the training (and test) file in row chunks, "
                          "never whole (out of core); the final model is then fitted in "
                          "feature space")
    run.add_argument("--memory-budget", type=budget_arg, metavar="BYTES",
                     help="memory the dense n x n matrices may use, e.g. 8G")
    add_device_argument(run)
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    data = parser.add_argument_group("data")
    data.add_argument("--scale", choices=SCALINGS, default="none",
                      help="scale each feature, fitted on the training data and applied to "
                           "--test: standard (mean 0, variance 1), minmax ([0, 1]) or none "
                           "(default); sparse data are divided only")
    output = parser.add_argument_group("output")
    output.add_argument("--test", metavar="TESTDATA",
                        help="test data: report the test error of the refit best model")
    output.add_argument("--out", metavar="DIR", help="write report.json (and plots) here")
    output.add_argument("--save-model", metavar="FILE",
                        help="save the refit choice (with --method rff its final model; and "
                             "the --scale fitted on the training data) as an .npz of arrays "
                             "plus a JSON header; load it with kernelcv.load_model(FILE), "
                             "which runs no code from the file")
    output.add_argument("--plot", action="store_true",
                        help="with --out: cv_heatmap.png and cv_curve.png, from the values "
                             "the search computed")
    output.add_argument("--plot-exact", action="store_true",
                        help="--plot, and the curve adds exact refit CV and BIF orders 1 "
                             "and 3 along the kernel parameter (t refits per point)")
    output.add_argument("--top", type=int, default=DEFAULT_TOP, metavar="N",
                        help=f"candidates listed in the summary (default {DEFAULT_TOP})")
    output.add_argument("--json", action="store_true", help="print the report as JSON")
    add_header_argument(output)


class _Progress:
    """A tqdm bar per stage on stderr; silent when tqdm is missing or stderr is no TTY."""

    def __init__(self, enabled):
        self.enabled = enabled and sys.stderr.isatty()
        self.bars = {}

    def __call__(self, stage, done, total):
        if not self.enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            self.enabled = False
            return
        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=stage, unit="task",
                                          file=sys.stderr, leave=False)
        bar.total = total
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    def close(self):
        for bar in self.bars.values():
            bar.close()


def run_command(args, parser):
    """Turn the parsed options into a :func:`run_select` call."""
    if args.confirm < 0:
        parser.error("argument --confirm: must be >= 0")
    if args.n_jobs == 0:
        parser.error("argument --n-jobs: must not be 0")
    if args.top < 0:
        parser.error("argument --top: must be >= 0")
    if args.seed is not None and args.fold_ids is not None and args.method != "rff":
        parser.error("argument --seed: not allowed with argument --fold-ids (except with "
                     "--method rff, where it seeds the feature draw)")
    if args.gamma is not None and args.kernel in ("rbf", "laplace"):
        raise KernelCVError(f"--gamma fixes the gamma of the poly kernel; for the "
                            f"{args.kernel} kernel give --gamma-grid (or --sigma-grid)")
    named = args.gamma_grid is not None and args.gamma_grid.strip() in ("data", "paper")
    gammas = args.gamma_grid.strip() if named else _grid(args.gamma_grid, "--gamma-grid",
                                                         "gamma")
    if args.sigma_grid is not None:
        gammas = [sigma_to_gamma(s) for s in _grid(args.sigma_grid, "--sigma-grid", "sigma")]
    degrees = _grid(args.degree_grid, "--degree-grid", "degree", integer=True)
    lams = _grid(args.lam_grid, "--lam-grid", "lam")
    cs = _grid(args.c_grid, "--C-grid", "C")
    feature_options = {"features": args.features, "feature_map": args.feature_map,
                       "feature_loss": args.feature_loss, "final": args.final,
                       "max_features": args.max_features, "feature_time": args.feature_time,
                       "final_kernel_limit": args.final_kernel_limit,
                       "final_features": args.final_features,
                       "refine": {"on": True, "off": False}.get(args.refine, args.refine),
                       "refine_evals": args.refine_evals}
    if args.method != "rff":
        given = [f"--{k.replace('_', '-')}" for k, v in feature_options.items()
                 if v is not None]
        if given:
            raise KernelCVError(f"{', '.join(given)} belong(s) to --method rff")
    if args.refine_evals is not None and args.refine_evals < 1:
        raise KernelCVError(f"argument --refine-evals: must be at least 1, got "
                            f"{args.refine_evals}")
    for option, value in (("--final-kernel-limit", args.final_kernel_limit),
                          ("--final-features", args.final_features),
                          ("--max-features", args.max_features)):
        if value is not None and value < 1:
            raise KernelCVError(f"argument {option}: must be at least 1, got {value}")
    if args.feature_time is not None and not args.feature_time > 0:
        raise KernelCVError(f"argument --feature-time: must be positive, got "
                            f"{args.feature_time}")
    if args.features not in (None, "auto") and (args.max_features is not None
                                                or args.feature_time is not None):
        raise KernelCVError("--max-features and --feature-time belong to --features auto")
    if args.features not in (None, "auto") and args.features < 1:
        raise KernelCVError(f"argument --features: the number of random features must be "
                            f"at least 1, got {args.features}")
    feature_options = {k: v for k, v in feature_options.items() if v is not None}
    progress = _Progress(not args.no_progress)
    try:
        method = make_method(args.method, args.machine, folds=args.folds,
                             epsilon=args.epsilon, granularity=args.granularity,
                             order=args.order, **feature_options)
        machine = make_machine(args.machine, huber_width=args.huber_width,
                               epsilon=args.svr_epsilon,
                               fit_intercept=False if args.no_intercept else None,
                               multiclass=args.multiclass, class_weight=args.class_weight)
        files = DataFiles(args.data, test=args.test, fold_ids=args.fold_ids,
                          header=args.header, target=args.target, scale=args.scale,
                          stream=args.stream, sample_weight=args.sample_weight)
        return run_select(
            files, machine=machine, kernel=args.kernel, gammas=gammas, degrees=degrees,
            lams=lams, Cs=cs, kernel_params=_kernel_params(args), method=method,
            folds=args.folds, seed=0 if args.seed is None else args.seed,
            screen=args.screen,
            safeguards=Safeguards(confirm=0 if args.no_safeguards else args.confirm,
                                  recheck_degenerate=not args.no_safeguards),
            execution=Execution(n_jobs=args.n_jobs, scheduler=args.scheduler,
                                checkpoint=args.checkpoint, progress=progress,
                                memory_budget=args.memory_budget, device=args.device,
                                precision=args.precision),
            outputs=Outputs(out=args.out, plot=args.plot, plot_exact=args.plot_exact,
                            save_model=args.save_model,
                            argv=getattr(args, "_argv", None)))
    finally:
        progress.close()


def _kernel_params(args) -> dict:
    """The poly kernel's fixed parameters given on the command line."""
    params = {"coef0": args.coef0}
    if args.gamma is not None:
        params["gamma"] = args.gamma
    return params


def render(report, args=None):
    """The readable summary: settings, best candidate, test error and the top candidates.

    ``args.top`` candidates are listed (default 5).
    """
    top = DEFAULT_TOP if args is None else args.top
    param = report.get("param_name")
    metric = {"0-1": "0-1 error", "mse": "MSE"}.get(report["metric"], report["metric"])
    best = report["best_params"]
    method = report["method"]
    if method == "rff":
        space = report["feature_space"]
        grown = " (adaptive)" if space.get("adaptive") else ""
        method += (f"  (D = {space['features']}{grown} {space['feature_map']} features, "
                   f"seed {space['feature_seed']}, {space['feature_loss']} loss, memory ~"
                   f"{space['memory_estimate'] / 2**20:.3g} MiB)")
    if method == "bif":
        method += "  (folds auto, granularity " + str(report.get("granularity")) + ")" \
            if report["folds"] == "auto" else f"  (order {report['order']})"
    timings = report["timings"]
    n_candidates = len(report["candidates"])
    rows = [
        ("data", f"{report['data']}  ({report['n_samples']} samples)"),
        ("machine", f"{report['machine']}, {report['kernel']} kernel"
                    + ("" if report.get("fit_intercept") is None else
                       ", with intercept" if report["fit_intercept"] else ", no intercept")),
        ("method", method),
        *([("scaling", f"{report['scaling']['kind']}, fitted on the training data"
                       + ("" if report["scaling"]["centred"] else " (sparse: divided only)"))]
          if report.get("scaling") else []),
        ("folds", f"{report['folds']}  (from {report['fold_ids']})" if report.get("fold_ids")
         else f"{report['folds']}  (shuffled, seed {report.get('seed')})"),
        ("candidates", f"{n_candidates}  ({_seconds(timings['total_seconds'])} total, "
                       f"{_seconds(timings['search_seconds'])} search, " + (
                           f"{_seconds(timings['refine_seconds'])} refinement)"
                           if report["method"] == "rff" else
                           f"{_seconds(timings['confirm_seconds'])} safeguards)")),
        ("best", "none: every CV error is infinite or NaN (see the warning)"
         if report.get("none_finite") else
         "  ".join(f"{k}={_num(v)}" for k, v in best.items() if k != "kernel")
         + (f"  (C={_num(_C(report, best['lam']))})" if _by_C(report) else "")),
        ("best CV error", f"{_num(report['best_cv_error'])}  ({metric})"),
    ]
    if report.get("test") is not None:
        model = ""
        if report.get("final_model"):
            model = {"kernel": ", exact kernel fit", "linear": ", linear model in feature "
                     f"space, D = {report.get('final_features')}"}[report["final_model"]]
            rows.append(("final fit", _seconds(timings["final_seconds"])))
        rows.append(("test error", f"{_num(report['test_error'])}  ({metric}, "
                                   f"{report['test']}{model})"))
    if report.get("confirmed"):
        rows.append(("confirmed", f"{len(report['confirmed'])} best candidates by exact "
                                  "refit CV"))
    if report.get("refined"):
        pruned = sum(report["candidates"][i]["status"] == "pruned" for i in report["refined"])
        rows.append(("refined", f"{len(report['refined'])} candidates by exact refit CV"
                                + (f", {pruned} of them stopped early" if pruned else "")
                                + f" ({_seconds(timings['refine_seconds'])})"))
    if report.get("rechecked"):
        rows.append(("rechecked", f"{len(report['rechecked'])} degenerate candidates by "
                                  "exact refit CV"))
    rows.extend(_multiclass_rows(report.get("multiclass")))
    for path in [*(report.get("files") or []), *([report["saved_model"]]
                                                 if report.get("saved_model") else [])]:
        rows.append(("wrote", path))
    width = max(len(label) for label, _ in rows) + 2
    lines = [f"{label:<{width}}{value}" for label, value in rows]
    lines.append("")
    lines.extend(_table(report, param, top))
    return "\n".join(lines)


def _multiclass_rows(entry):
    """Per-class errors of the choice (exact CV, and test) for a multiclass report."""
    if not entry:
        return []
    k = len(entry["classes"])
    machines = k * (k - 1) // 2 if entry["strategy"] == "ovo" else k
    rows = [("multiclass", f"{k} classes, {entry['strategy']} ({machines} machines per "
                           "candidate); confusion matrices in --json / --plot")]
    for name in ("cv", "test"):
        summary = entry.get(name)
        if summary is None:
            continue
        errors = ", ".join(f"{label}: {'-' if e is None else _num(e)}" for label, e in
                           zip(entry["classes"], summary["per_class_error"], strict=True))
        rows.append((f"{name} per class", errors))
    return rows


def _by_C(report) -> bool:
    """Whether the lam grid was given as SVC's C (--C-grid)."""
    return (report.get("grid") or {}).get("lam_source") == "C"


def _C(report, lam) -> float:
    """SVC's C of a lam on the report's training rows: C = 1 / (2 n lam)."""
    return 1.0 / (2.0 * report["n_samples"] * lam)


def _exact(candidate):
    """The exact CV error, or its bound for a refit stopped early (status pruned)."""
    if candidate["exact_error"] is None and candidate.get("exact_error_at_least") is not None:
        return f">={_num(candidate['exact_error_at_least'])}"
    return _num(candidate["exact_error"])


def _rank(candidate):
    """The trusted rank (by exact error where computed; 1 = the chosen candidate), or the
    score's rank in a report without it."""
    return candidate.get("trusted_rank", candidate["rank"])


def _table(report, param, top):
    ranked = sorted(report["candidates"], key=lambda c: (_rank(c), c["setting"], c["lam"]))
    best_index = report["best_index"]
    chosen = report["candidates"][best_index]
    shown = ranked[:top]
    if chosen not in shown:
        shown.append(chosen)
    by_C = _by_C(report)  # a --C-grid search shows SVC's C, the user's own values
    header = ["rank", param or "kernel", "C" if by_C else "lam", "score", "exact", "status",
              "seconds"]
    body = []
    for c in shown:
        mark = "*" if c is chosen else ""
        body.append([f"{_rank(c)}{mark}", _num(c[param]) if param else c["kernel"],
                     _num(_C(report, c["lam"]) if by_C else c["lam"]), _num(c["score"]),
                     _exact(c), c["status"], _seconds(c["seconds"])])
    widths = [max(len(str(row[i])) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(f"{v:>{w}}" for v, w in zip(row, widths, strict=True)) for row in body]
    lines.append("(* chosen; ranked by the exact refit CV error where computed, else by "
                 "score, the criterion's value)")
    return lines



def _seconds(value):
    return f"{value:.3g} s"


def _num(value):
    return format_number(value)


def resume_hint(args):
    """After Ctrl-C: where the finished kernel settings were kept, if anywhere."""
    if args.checkpoint is None:
        return None
    return (f"the checkpoint {args.checkpoint} keeps the finished kernel settings: run the "
            "same command again to resume")
