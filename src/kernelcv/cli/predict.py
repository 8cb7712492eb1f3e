"""The ``kernelcv predict`` subcommand: a saved model's predictions on a data file
(:func:`kernelcv.reports.predict.run_predict`), as LIBSVM's ``svm-predict``."""

from __future__ import annotations

from .options import add_header_argument

__all__ = ["add_arguments", "render", "run_command"]

EXAMPLES = """examples:
  kernelcv select data/breast_cancer_train.svm --machine l2svm --save-model model.npz
  kernelcv predict model.npz data/breast_cancer_test.svm --output predictions.txt
  kernelcv predict model.npz data/breast_cancer_test.svm --values   # decision values
  kernelcv predict model.npz data/breast_cancer_test.svm --proba    # class probabilities
"""


def add_arguments(parser):
    """Declare the options of ``kernelcv predict``."""
    parser.add_argument("model", metavar="MODEL",
                        help="a model written by kernelcv select --save-model")
    parser.add_argument("data", metavar="DATA",
                        help="rows to predict (svmlight, CSV or npz); their targets score "
                             "the predictions")
    parser.add_argument("--output", metavar="FILE",
                        help="write the predictions to this file, one per line (default: "
                             "print them)")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--values", action="store_true",
                       help="decision values instead of labels (one column per binary "
                            "machine)")
    shown.add_argument("--proba", action="store_true",
                       help="class probabilities after each label, as svm-predict -b 1: a "
                            "first line 'labels C1 C2 ...', then 'LABEL P1 P2 ...' per row "
                            "(the model's calibration on out-of-fold values)")
    add_header_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run_command(args, parser):
    """Predict; returns the report of :func:`run_predict`."""
    from ..reports.predict import run_predict

    return run_predict(args.model, args.data, out=args.output, values=args.values,
                       proba=args.proba, header=args.header, target=args.target)


def render(report, args=None):
    """The predictions (unless written to a file), then the score line."""
    lines = list(report["predictions"] or [])
    if report["accuracy"] is not None:
        correct = round(report["accuracy"] * report["n_samples"])
        lines.append(f"accuracy {report['accuracy']:.4f} ({correct}/{report['n_samples']}) "
                     f"on {report['data']}")
        if report.get("log_loss") is not None:
            lines.append(f"log-loss {report['log_loss']:.4f} (nats per row)")
    elif report["mse"] is not None:
        lines.append(f"mean squared error {report['mse']:.6g} on {report['data']}")
    if report["out"] is not None:
        lines.append(f"wrote {report['n_samples']} predictions to {report['out']}")
    return "\n".join(lines)
