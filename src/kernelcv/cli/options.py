"""What the subcommands share: argparse ``type=`` converters and number formatting.

Each converter turns a library validation error into :class:`argparse.ArgumentTypeError`, so a bad
value is reported by argparse as a usage error (one line, exit status 2).
"""

from __future__ import annotations

import argparse

from ..cv import parse_order
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


def add_header_argument(parser):
    """``--header {auto,yes,no}``: whether a CSV file's first row is a header."""
    parser.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                        help="CSV files: is the first row a header? auto (default) decides "
                             "and says so in a note; an almost numeric first row is an "
                             "error, not a header")
