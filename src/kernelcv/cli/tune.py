"""The ``kernelcv tune`` subcommand: options and the readable summary.

The work is done by :func:`kernelcv.reports.tune.run_tune` (SLOO-MPS tuning of an LS-SVM
kernel mixture); this module only turns options into its arguments (a
:class:`~kernelcv.reports.command_files.DataFiles`, a
:class:`~kernelcv.estimators.SmoothLOOTuning` and an
:class:`~kernelcv.reports.command_files.Outputs`) and its report into text. Bad input
exits with status 2; optimiser failures are one-line warnings.
"""

from __future__ import annotations

from ..criteria.smooth_loo import DEFAULT_GAMMA_S
from ..estimators.smooth_loo_tuning import SmoothLOOTuning
from ..exceptions import KernelCVError
from ..reading.files import SUPPORTED_FORMATS
from ..reports.command_files import DataFiles, Outputs
from ..reports.tune import run_tune
from ..selection.space.grids import parse_grid
from .options import add_header_argument, budget_arg

EXAMPLES = """examples:
  kernelcv data    # writes data/breast_cancer_train.svm and the other example files
  kernelcv tune data/breast_cancer_train.svm --test data/breast_cancer_test.svm
  kernelcv tune data/wine_train.svm --kernels gaussian --ard --tune-C --out results/
"""


def add_arguments(parser):
    """Declare the options of ``kernelcv tune``."""
    parser.add_argument("data", metavar="DATA",
                        help=f"training data (classification); formats: {SUPPORTED_FORMATS}")
    kern = parser.add_argument_group("kernels")
    kern.add_argument("--kernels", default="gaussian,laplace", metavar="LIST",
                      help="comma list of gaussian (also called rbf, as in the other "
                           "commands), laplace (default: both)")
    kern.add_argument("--betas", default="0.01,0.1,1,10,100", metavar="B",
                      help="widths of every kernel: exp(-||x-x'||^2/beta), "
                           "exp(-||x-x'||_1/beta) (default 0.01,0.1,1,10,100)")
    kern.add_argument("--ard", action="store_true",
                      help="add an ARD Gaussian kernel with one tuned width per feature")
    kern.add_argument("--C", type=float, default=1.0, dest="C",
                      help="cost C of the LS-SVM (larger C, less regularisation): "
                           "H = K + I/C (default 1)")
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
                     help="one-against-one (ovo, default, the paper's) or one-against-rest "
                          "(ovr)")
    opt.add_argument("--seed", type=int, default=0, help="seed of restarts and folds")
    out = parser.add_argument_group("evaluation and output")
    out.add_argument("--folds", type=int, default=10,
                     help="t of the t-fold CV error at the tuned parameters (default 10)")
    out.add_argument("--test", metavar="TESTDATA", help="test data: report the test error")
    out.add_argument("--out", metavar="DIR", help="write report.json here")
    out.add_argument("--json", action="store_true", help="print the report as JSON")
    add_header_argument(out)
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
    kernels = [{"rbf": "gaussian"}.get(k.strip(), k.strip())
               for k in args.kernels.split(",") if k.strip()]
    files = DataFiles(args.data, test=args.test, header=args.header, target=args.target)
    tuning = SmoothLOOTuning(kernels=kernels, betas=betas, ard=args.ard, C=args.C,
                             tune_C=args.tune_C, gamma_s=args.gamma_s,
                             optimizer=args.optimizer, n_restarts=args.restarts,
                             max_iter=args.max_iter)
    return run_tune(files, tuning, fit_intercept=not args.no_intercept,
                    multiclass=args.multiclass, seed=args.seed, folds=args.folds,
                    memory_budget=args.memory_budget, outputs=Outputs(out=args.out))


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
