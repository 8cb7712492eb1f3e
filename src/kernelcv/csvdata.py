"""Reading a CSV data file: the header decision, the numbers, and what went wrong where.

A CSV data file has one sample per row and the target in the last column. Its first row
may be a header; ``header`` says whether:

``"yes"``
    The first row is a header and is skipped, whatever it holds.
``"no"``
    The first row is a sample (a cell that is not a number is an error).
``"auto"`` (default)
    Decided from the first row, and the decision is logged at INFO level on the
    ``kernelcv.datasets`` logger (the command line prints it as a ``kernelcv: note:``):

    * every cell a name (no cell is a number): a header;
    * the numeric cells are the integers 0, 1, 2, ... in order -- the column names
      pandas writes for an unnamed DataFrame (``DataFrame(a).to_csv(index=False)``
      writes ``0,1,2,...``, with ``index=True`` ``,0,1,...``): a header, at least three
      columns wide when every cell is such a number (``0,1`` may well be a sample);
    * every cell a number otherwise: a sample;
    * some cells numbers, others not: an error, since a typo in the first sample
      (``1.5,2.3,l.2,1``) must not silently become a header; the message names the
      cell, and ``header="yes"`` reads such a row as a header.

A first column that looks like a pandas index (an empty or ``Unnamed: 0`` header cell
above the values 0, 1, ..., n-1) is kept as a feature, with a warning.
"""

from __future__ import annotations

import io
import logging
import warnings

import numpy as np

from .exceptions import KernelCVError

__all__ = ["HEADERS", "parse_csv"]

#: Values of the ``header`` argument.
HEADERS = ("auto", "yes", "no")

logger = logging.getLogger("kernelcv.datasets")


def parse_csv(path, text, header="auto"):
    """``X`` (float64, n x d) and ``y`` (the last column) of a CSV file's decoded text.

    Raises
    ------
    KernelCVError
        For an empty file, a header with no rows, fewer than two columns, a ragged row, a
        cell that is not a number, or an "almost numeric" first row under ``"auto"``;
        the message names the file, the line and the column.
    """
    if header not in HEADERS:
        raise KernelCVError(f"header must be one of {', '.join(HEADERS)}, got {header!r}")
    rows = [(number, line) for number, line in enumerate(text.splitlines(), start=1)
            if line.strip()]
    if not rows:
        raise KernelCVError(f"{path}: the file is empty (no rows)")
    names = None
    if header == "yes" or (header == "auto" and _is_header(path, *rows[0])):
        names = rows[0][1].split(",")
        rows = rows[1:]
        if not rows:
            raise KernelCVError(f"{path}: the file has a header row but no data rows")
    width = len(rows[0][1].split(","))
    if width < 2:
        raise KernelCVError(
            f"{path}, line {rows[0][0]}: need at least two columns (features, then the "
            "target in the last column)")
    try:  # fast path; the slow scan below only runs to explain a failure
        table = np.loadtxt(io.StringIO("\n".join(line for _, line in rows)),
                           delimiter=",", dtype=np.float64, ndmin=2, comments=None)
    except ValueError as exc:
        _explain_failure(path, rows, width)
        raise KernelCVError(f"{path}: not a valid CSV file ({_one_line(exc)})") from None
    _warn_pandas_index(path, names, table[:, 0])
    return table[:, :-1].copy(), table[:, -1].copy()


def _number(cell):
    try:
        return float(cell)
    except ValueError:
        return None


def _is_header(path, number, line) -> bool:
    """The ``"auto"`` decision on the first row (see the module docstring); logged."""
    cells = line.split(",")
    values = [_number(cell) for cell in cells]
    numeric = [j for j, v in enumerate(values) if v is not None]
    counted = [cells[j].strip() for j in numeric]
    pandas_names = bool(counted) and counted == [str(k) for k in range(len(counted))]
    shown = ", ".join(cell.strip() for cell in cells[:6]) + (", ..." if len(cells) > 6 else "")
    if len(numeric) == len(cells):
        if pandas_names and len(cells) >= 3:
            logger.info(f"{path}: first row ({shown}) read as a header: the column names "
                        "0, 1, 2, ... that pandas writes; give --header no if it is a "
                        "sample")
            return True
        logger.info(f"{path}: first row read as a sample (every cell is a number); give "
                    "--header yes if it is a header")
        return False
    if not numeric or pandas_names:
        logger.info(f"{path}: first row ({shown}) read as a header; give --header no if "
                    "it is a sample")
        return True
    bad = next(j for j, v in enumerate(values) if v is None)
    raise KernelCVError(
        f"{path}, line {number}: the first row is almost numeric ({len(numeric)} of "
        f"{len(cells)} cells are numbers, but column {bad + 1}, {cells[bad].strip()!r}, "
        "is not): a typo in the first sample is not taken for a header; fix the cell, or "
        "give --header yes if the row is a header")


def _warn_pandas_index(path, names, first_column):
    """Warn when the first column is 0..n-1 under an empty / ``Unnamed: 0`` name."""
    if names is None or names[0].strip() not in ("", "Unnamed: 0"):
        return
    if np.array_equal(first_column, np.arange(first_column.shape[0])):
        warnings.warn(
            f"{path}: the first column looks like a pandas index (no name, values 0, 1, "
            "..., n-1); it is used as a feature: write the file with index=False or drop "
            "the column", UserWarning, stacklevel=4)


def _explain_failure(path, rows, width):
    """Raise an error naming the first ragged row or non-numeric cell, if there is one."""
    for number, line in rows:
        cells = line.split(",")
        if len(cells) != width:
            raise KernelCVError(
                f"{path}, line {number}: has {len(cells)} columns but the first data row "
                f"has {width}")
        for j, cell in enumerate(cells):
            if _number(cell) is None:
                shown = cell.strip()
                what = "an empty cell" if not shown else f"{shown!r} is not a number"
                raise KernelCVError(f"{path}, line {number}, column {j + 1}: {what}")


def _one_line(exc):
    return " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
