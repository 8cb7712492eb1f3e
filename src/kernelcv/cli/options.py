"""What the subcommands share: argparse ``type=`` converters and number formatting.

Each converter turns a library validation error into :class:`argparse.ArgumentTypeError`, so a bad
value is reported by argparse as a usage error (one line, exit status 2).
"""

from __future__ import annotations

import argparse

from ..cv import parse_order
from ..devices import DEVICES, PRECISIONS
from ..exceptions import KernelCVError
from ..memory import parse_bytes


def order_arg(text):
    """A BIF order: a positive integer, ``inf`` or ``auto`` (:func:`kernelcv.cv.parse_order`)."""
    try:
        return parse_order(text)
    except KernelCVError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def features_arg(text):
    """A number of random features (an integer) or ``auto`` (the adaptive count)."""
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--features must be an integer >= 1 or 'auto', got {text!r}") from None


def budget_arg(text):
    """A memory budget such as ``8G``; checked here, passed on as the text."""
    try:
        parse_bytes(text)
    except KernelCVError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def format_number(value, digits: int = 4) -> str:
    """A value for a printed table: ``-`` for None, floats with ``digits`` significant digits."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def add_machine_arguments(group, machines, kernels):
    """The machine options ``kernelcv cv`` and ``kernelcv select`` share, with one help:
    ``--machine``, ``--kernel``, ``--huber-width``, ``--svr-epsilon``, ``--no-intercept``,
    ``--multiclass``, ``--class-weight`` and ``--sample-weight``."""
    group.add_argument("--machine", required=True, choices=machines,
                       help="krr, lssvm, l2svm, svm (Huber hinge) or svr (Huber eps-SVR)")
    group.add_argument("--kernel", default="rbf", choices=kernels, help="default: rbf")
    group.add_argument("--huber-width", type=float, default=0.01, metavar="H",
                       help="Huber band of svm/svr (default 0.01)")
    group.add_argument("--svr-epsilon", type=float, default=0.1, metavar="E",
                       help="insensitivity of svr (default 0.1)")
    group.add_argument("--no-intercept", action="store_true",
                       help="fit lssvm, l2svm, svm or svr without their intercept (the "
                            "papers' bias-free machines; krr never has one)")
    group.add_argument("--multiclass", choices=("ovo", "ovr"), default="ovo",
                       help="more than two classes: one machine per pair of classes (ovo, "
                            "as SVC; default) or per class against the rest (ovr)")
    group.add_argument("--class-weight", type=parse_class_weight, default=None,
                       metavar="W", help="classifiers: 'balanced' (n / (classes x count)) "
                       "or LABEL:WEIGHT,... (other classes weigh 1), as SVC's class_weight")
    group.add_argument("--sample-weight", metavar="FILE",
                       help="file with one weight (>= 0) per line, line i for training row "
                            "i, multiplying its loss term (as fit's sample_weight)")


def parse_class_weight(text):
    """``--class-weight``: ``"balanced"`` or ``LABEL:WEIGHT,...`` as ``(label, weight)``
    pairs (labels as written; they are matched to the data's labels, numbers by value)."""
    if text == "balanced":
        return text
    pairs = []
    for item in str(text).split(","):
        label, colon, weight = item.strip().rpartition(":")
        try:
            value = float(weight)
        except ValueError:
            value = None
        if not colon or not label or value is None:
            raise argparse.ArgumentTypeError(
                f"{text!r}: give 'balanced' or LABEL:WEIGHT pairs, e.g. 1:5,-1:1")
        pairs.append((label, value))
    return tuple(pairs)


def add_device_argument(group):
    """``--device {numpy,cpu,cuda,auto}``: where the spectral method's linear algebra runs,
    and ``--precision {float64,mixed}`` (:mod:`kernelcv.devices`)."""
    group.add_argument("--device", choices=DEVICES, default="numpy",
                       help="where --method spectral runs its Gram matrices, "
                            "factorizations and MM steps: numpy (default), torch's cpu or "
                            "cuda (pip install 'kernelcv[gpu]'), or auto (cuda when torch "
                            "sees a GPU, else numpy)")
    group.add_argument("--precision", choices=PRECISIONS, default="float64",
                       help="--method spectral: float64 (default), or mixed: float32 MM "
                            "steps for each (kernel, lam) whose ridge systems are well "
                            "conditioned (kappa <= 1e3), float64 for the rest")


def add_header_argument(parser):
    """``--header {auto,yes,no}`` and ``--target COLUMN``: how a CSV file is read."""
    parser.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                        help="CSV files: is the first row a header? auto (default) decides "
                             "and says so in a note; an almost numeric first row is an "
                             "error, not a header")
    parser.add_argument("--target", metavar="COLUMN",
                        help="CSV files: the target column, a header name or a number (1 = "
                             "first, -1 = last; default: the last); class labels may be "
                             "text")
