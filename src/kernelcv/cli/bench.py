"""The ``kernelcv bench`` subcommand: the papers' experiments against scikit-learn.

The work is done by :func:`kernelcv.experiments.run_bench`; this module turns options
into its arguments (a :class:`~kernelcv.experiments.BenchPlan` and a
:class:`~kernelcv.experiments.BenchFiles`), prints progress lines to stderr and renders
a short summary::

    kernelcv bench --quick --out results/bench
    kernelcv bench --sets heart,sonar --tables l2svm,svm --splits 10 --out results/bench
    kernelcv bench --quick --tables sloo-mps --out results/sloo   # SLOO-MPS, Table 1
    kernelcv bench --quick --protocol paper --out results/paper   # like for like
"""

from __future__ import annotations

import argparse
import os
import sys

from ..experiments.bench import CHECKPOINT, OUTPUTS, SLOO_OUTPUTS, run_bench
from ..experiments.bench_files import BenchFiles
from ..experiments.paper_tables import ENV_TABLES
from ..experiments.plan import ALL_SETS, ALL_TABLES, BenchPlan
from ..experiments.suites import ENV_DATA, MODES, PROTOCOLS


def _names(text):
    return [item.strip() for item in str(text).split(",") if item.strip()]


def _positive_int(minimum):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _threshold(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


EXAMPLES = """examples:
  kernelcv bench --quick                    # the papers' tables, small, in minutes
  kernelcv bench --quick --tables sloo-mps --out bench-results
"""


def add_arguments(parser):
    """Declare the options of ``kernelcv bench``."""
    what = parser.add_argument_group("what to run")
    what.add_argument("--quick", action="store_true",
                      help=f"quick mode: {MODES['quick'].splits} splits, 7 x 7 grid, small "
                           "sets (a few minutes); default is the full mode "
                           f"({MODES['full'].splits} splits, the papers' 21 x 15 grid)")
    what.add_argument("--splits", type=_positive_int(2), default=None, metavar="R",
                      help="number of random 50/50 train/test splits (default: the mode's)")
    what.add_argument("--seed", type=int, default=0, help="seed of splits and folds")
    what.add_argument("--sets", type=_names, default=None, metavar="NAMES",
                      help=f"comma-separated data sets (known: {', '.join(ALL_SETS)})")
    what.add_argument("--tables", type=_names, default=None, metavar="NAMES",
                      help=f"comma-separated tables (known: {', '.join(ALL_TABLES)}; "
                           "sloo-mps: the SLOO-MPS paper's 10-fold CV table, on its own "
                           "sets)")
    what.add_argument("--max-train", type=_positive_int(10), default=None, metavar="N",
                      help="skip sets whose training half is larger (default: 200 quick, "
                           "600 full)")
    what.add_argument("--confirm", type=_positive_int(0), default=0, metavar="K",
                      help="confirm the best K candidates of approximate searches by exact "
                           "CV (default 0: judge the approximations alone)")
    what.add_argument("--protocol", choices=tuple(PROTOCOLS), default="ours",
                      help="ours (default): gamma = 1/(2 sigma^2), standardised regression "
                           "targets, SVR tube 0.1; paper: the papers' printed set-up, "
                           "gamma = 1/(2 sigma), targets in their units (centred), SVR tube "
                           "std(y) with Huber width 0.01 x tube, liver-disorders in its "
                           "old coding, machines with a bias term, polynomial degree "
                           "1..10 in full mode, the Huber-SVM's eps-BIF at eq. 6's order; "
                           "paper-bias-free: paper with the bias-free machines (all: "
                           "lam = 2^i/n)")
    what.add_argument("--t-threshold", type=_threshold, default=None, metavar="T",
                      help="|paired t| above which a difference is significant (default: "
                           "the one-sided 95%% point of Student's t with R - 1 degrees of "
                           "freedom, 1.833 at the papers' R = 10)")
    where = parser.add_argument_group("input and output")
    where.add_argument("--data-dir", default=None, metavar="DIR",
                       help=f"folder with libsvm/*.svm files (default: ${ENV_DATA}, else "
                            "shared/datasets beside the checkout)")
    where.add_argument("--paper-tables", default=None, metavar="DIR",
                       help=f"the papers' result tables (CSV) to put beside ours (default: "
                            f"${ENV_TABLES}, else paper_tables beside the data folder or "
                            "shared/paper_tables beside the checkout; none found: no "
                            "comparison)")
    where.add_argument("--out", default="kernelcv-bench", metavar="DIR",
                       help=f"output folder for {', '.join(OUTPUTS)} (with sloo-mps also "
                            f"{', '.join(SLOO_OUTPUTS)}) and the checkpoint (default "
                            "./kernelcv-bench)")
    where.add_argument("--fresh", action="store_true",
                       help="discard the checkpoint of an earlier run in --out")
    where.add_argument("--no-figures", action="store_true", help="write no PNG files")
    where.add_argument("--n-jobs", type=_positive_int(1), default=1,
                       help="parallel workers for both libraries' searches")
    where.add_argument("--json", action="store_true", help="print the report as JSON")
    where.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run_command(args, parser):
    """Run the command; return its report dict."""
    def progress(message):
        print(f"kernelcv: bench: {message}", file=sys.stderr, flush=True)

    plan = BenchPlan(mode="quick" if args.quick else "full", splits=args.splits,
                     seed=args.seed, sets=args.sets, tables=args.tables,
                     max_train=args.max_train, confirm=args.confirm,
                     t_threshold=args.t_threshold, protocol=args.protocol)
    files = BenchFiles(data_dir=args.data_dir, out=args.out, paper_folder=args.paper_tables,
                       figures=not args.no_figures, fresh=args.fresh)
    report = run_bench(plan, files, n_jobs=args.n_jobs,
                       progress=None if args.quiet else progress)
    report["notes"] = [f"{s['set']}: skipped, {s['reason']}" for s in report["skipped"]]
    if report["papers"] is None:
        report["notes"].append("the papers' result tables were not found: no side-by-side "
                               "(give them with --paper-tables DIR)")
    return report


def resume_hint(args):
    """After Ctrl-C: the checkpoint in ``--out`` keeps the finished splits."""
    path = os.path.join(args.out, CHECKPOINT)
    if not os.path.exists(path):
        return None
    return (f"{path} keeps the finished splits: run the same command again to resume")


def render(report, args=None):
    """The readable summary: test errors of the main criteria and the speed ratios."""
    head = f"kernelcv bench ({report['mode']}"
    if report["tables"]:
        head += (f", {report['splits']} splits) — {report['timings']['total_seconds']:.0f} s; "
                 f"reference {report['reference']}, |t| > {report['t_threshold']:.3f} marked")
    else:
        head += f") — {report['timings']['total_seconds']:.0f} s"
    lines = [head]
    for table in report["tables"]:
        for entry in table["sets"]:
            parts = []
            for name, value in entry["criteria"].items():
                if value["test_error_mean"] is None:
                    parts.append(f"{name} failed")
                    continue
                mark = {"worse": "↑", "better": "↓"}.get(value["significant"], "")
                parts.append(f"{name} {value['test_error_mean']:.3f}{mark}")
            lines.append(f"  {table['table']:10s} {entry['set']:16s} " + "; ".join(parts))
    sloo = report.get("sloo_mps") or {"rows": []}
    for row in sloo["rows"]:
        parts = []
        for scheme, value in row["schemes"].items():
            paper = (row["paper"] or {}).get(scheme)
            parts.append(f"{scheme} {100 * value['cv_error']:.2f}"
                         + ("" if paper is None else f" (paper {paper:.2f})"))
        parts.append(f"SVC grid {100 * row['svc']['cv_error']:.2f}")
        lines.append(f"  sloo-mps   {row['set']:16s} 10-fold CV % " + "; ".join(parts))
    if sloo["rows"]:
        lines.append("  sloo-mps: weights tuned on all the data, machine refit per fold "
                     "(the paper's measure; optimistic)")
    for row in report["speed"]:
        lines.append(f"  speed {row['table']:10s} {row['set']:16s} {row['sklearn']} "
                     f"{row['sklearn_seconds']:.2f} s / {row['fast']} "
                     f"{row['kernelcv_seconds']:.2f} s = {row['ratio']:.1f}x")
    papers = report.get("papers")
    if papers and papers["cells"]:
        total = sum(papers[v] for v in ("within", "better", "worse"))
        lines.append(f"  papers: {total} cells beside the papers' tables: {papers['within']} "
                     f"within, {papers['better']} better, {papers['worse']} worse "
                     f"({100 * (papers['within'] + papers['better']) / total:.0f} % within "
                     f"or better; protocol {report['protocol']})")
        lines.extend(_verdict_table(papers["cells"]))
    lines.append("files: " + ", ".join(report["files"]))
    return "\n".join(lines)


def _verdict_table(cells) -> list[str]:
    """The papers' cells beside ours, one line each: paper table, data set, criterion,
    the paper's mean +- std, ours (splits) and the verdict."""
    rows = [(f"{c['paper']} T{c['table']}", str(c["dataset"]), str(c["criterion"]),
             f"{c['paper_mean']:.3g} ± {c['paper_std']:.2g}",
             f"{c['ours_mean']:.3g} ± {c['ours_std']:.2g} ({c['n_splits']})",
             str(c["verdict"])) for c in cells]
    header = ("paper", "data", "criterion", "paper mean ± std", "ours (splits)", "verdict")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["    " + "  ".join(f"{value:<{width}}" for value, width in
                                zip(row, widths, strict=True)).rstrip()
            for row in [header, *rows]]
