"""The ``kernelcv data`` subcommand: write scikit-learn's bundled sets as svmlight files.

A fresh clone has no data file; this writes ``breast_cancer`` (binary), ``wine`` (3
classes) and ``diabetes`` (regression) as ``<name>_train.svm`` / ``<name>_test.svm``
(75/25, stratified for classification, seed 0) with
:func:`kernelcv.demo.write_example_data`, so the README's commands run as written.
scikit-learn is imported only when this command runs.
"""

from __future__ import annotations

__all__ = ["add_arguments", "render", "run_command"]

EXAMPLES = """examples:
  kernelcv data                                   # all three sets into ./data
  kernelcv data --out /tmp/sets breast_cancer
  kernelcv select data/breast_cancer_train.svm --test data/breast_cancer_test.svm \\
      --machine lssvm --scale standard
"""
SETS = ("breast_cancer", "wine", "diabetes")


def add_arguments(parser):
    """Declare the options of ``kernelcv data``."""
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"sets to write (default all: {', '.join(SETS)})")
    parser.add_argument("--out", default="data", metavar="DIR",
                        help="folder to write to (default ./data, created if missing)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run_command(args, parser):
    """Write the files; returns the report of :func:`write_example_data`."""
    from ..demo import write_example_data

    unknown = [name for name in args.names if name not in SETS]
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}; choose from {', '.join(SETS)}")
    return write_example_data(args.out, args.names or None)


def render(report, args=None):
    """One line per set and the files written."""
    lines = [f"{name:<14}{entry['task']:<11}{entry['train']} train / {entry['test']} test "
             f"rows, {entry['features']} features"
             for name, entry in report["sets"].items()]
    lines += [f"wrote {path}" for path in report["files"]]
    return "\n".join(lines)
