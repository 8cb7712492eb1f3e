"""Reading a CSV data file: the header decision, the numbers, and what went wrong where.

A CSV data file has one sample per row, numeric features and a target column: the last
column, or the one ``target`` names -- a header name, or a column number counted as the
error messages count them (1 = the first, -1 = the last; a header name that looks like a
number wins). Targets are numbers, or text labels for classification (``"cat"``, ``"dog"``,
kept as strings and mapped to classes by the searches); a target column that mixes numbers
and text is an error naming the first text cell (a typo is not taken for a label).
Its first row may be a header; ``header`` says whether:

``"yes"``
    The first row is a header and is skipped, whatever it holds.
``"no"``
    The first row is a sample (a cell that is not a number is an error).
``"auto"`` (default)
    Decided from the first row, and the decision is logged at INFO level on the
    ``kernelcv.reading.files`` logger (the command line prints it as a ``kernelcv: note:``):

    The target column is left out of this decision (it may hold text labels), and a
    ``target`` given by name makes the row holding it the header.

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

from ..exceptions import KernelCVError

__all__ = ["HEADERS", "parse_csv"]

#: Values of the ``header`` argument.
HEADERS = ("auto", "yes", "no")

logger = logging.getLogger("kernelcv.reading.files")


def parse_csv(path, text, header="auto", target=None):
    """``X`` (float64, n x d) and ``y`` (the target column) of a CSV file's decoded text.

    ``target``: None (the last column), a header name, or a column number (1 = first, -1
    = last). ``y`` is float64 when every target cell is a number, else an array of the
    stripped strings.

    Raises
    ------
    KernelCVError
        For an empty file, a header with no rows, fewer than two columns, a ragged row, a
        cell that is not a number, an unknown target column, a target column that mixes
        numbers and text, or an "almost numeric" first row under ``"auto"``; the message
        names the file, the line and the column.
    """
    if header not in HEADERS:
        raise KernelCVError(f"header must be one of {', '.join(HEADERS)}, got {header!r}")
    rows = [(number, line) for number, line in enumerate(text.splitlines(), start=1)
            if line.strip()]
    if not rows:
        raise KernelCVError(f"{path}: the file is empty (no rows)")
    first = rows[0][1].split(",")
    named = _names_target(target)
    if header == "no" and named:
        raise KernelCVError(f"{path}: target {target!r} is a column name, but --header no "
                            "says the file has no header row; give the column's number")
    names = None
    if header == "yes" or (header == "auto" and (
            named or _is_header(path, *rows[0], skip=_target_column(path, target, None,
                                                                    len(first))))):
        names = first
        rows = rows[1:]
        if not rows:
            raise KernelCVError(f"{path}: the file has a header row but no data rows")
    width = len(rows[0][1].split(","))
    if width < 2:
        raise KernelCVError(
            f"{path}, line {rows[0][0]}: need at least two columns (features, then the "
            "target in the last column)")
    column = _target_column(path, target, names, width)
    try:  # fast path; the slow scan below only runs to explain a failure
        table = np.loadtxt(io.StringIO("\n".join(line for _, line in rows)),
                           delimiter=",", dtype=np.float64, ndmin=2, comments=None)
        y = table[:, column].copy()
    except ValueError as exc:
        _explain_failure(path, rows, width, skip=column)
        y = _text_labels(path, rows, column)
        if y is None:
            raise KernelCVError(f"{path}: not a valid CSV file ({_one_line(exc)})") from None
        try:
            table = np.loadtxt(io.StringIO("\n".join(line for _, line in rows)),
                               delimiter=",", dtype=np.float64, ndmin=2, comments=None,
                               usecols=[j for j in range(width) if j != column])
        except ValueError:
            raise KernelCVError(f"{path}: not a valid CSV file ({_one_line(exc)})") from None
        table = np.insert(table, column, 0.0, axis=1)
    if column != 0:
        _warn_pandas_index(path, names, table[:, 0])
    return np.delete(table, column, axis=1), y


def _names_target(target) -> bool:
    """Whether ``target`` is a column name (text that is not an integer)."""
    if target is None:
        return False
    try:
        int(str(target).strip())
    except ValueError:
        return True
    return False


def _target_column(path, target, names, width) -> int:
    """The 0-based index of the target column among ``width`` columns."""
    if target is None:
        return width - 1
    text = str(target).strip()
    if names is not None:
        stripped = [cell.strip() for cell in names]
        if stripped.count(text) > 1:
            raise KernelCVError(f"{path}: the header has {stripped.count(text)} columns "
                                f"named {text!r}; give the target's column number")
        if text in stripped:
            return stripped.index(text)
    try:
        number = int(text)
    except ValueError:
        if names is None:
            raise KernelCVError(f"{path}: target {text!r} names a column, but the file has "
                                "no header row; give its number (1 = first, -1 = last) or "
                                "--header yes") from None
        shown = ", ".join(repr(c) for c in stripped[:8]) + (", ..." if width > 8 else "")
        raise KernelCVError(f"{path}: no column named {text!r}; the header has {shown}") \
            from None
    if number == 0 or abs(number) > width:
        raise KernelCVError(f"{path}: there is no column {number}: the file has {width} "
                            f"columns (1..{width}, or -1..-{width} from the end)")
    return number - 1 if number > 0 else width + number


def _text_labels(path, rows, column):
    """The target column as strings; every cell must be text (none a number). None when
    every cell is a number (the failure was elsewhere)."""
    cells = [(number, line.split(",")[column].strip()) for number, line in rows]
    for number, cell in cells:
        if not cell:
            raise KernelCVError(f"{path}, line {number}, column {column + 1}: the target is "
                                "empty")
    numeric = [(number, cell) for number, cell in cells if _number(cell) is not None]
    if len(numeric) == len(cells):
        return None
    if numeric:
        number, cell = next((n, c) for n, c in cells if _number(c) is None)
        raise KernelCVError(
            f"{path}, line {number}, column {column + 1}: the target {cell!r} is text but "
            f"{len(numeric)} other targets are numbers (line {numeric[0][0]}: "
            f"{numeric[0][1]!r}); labels must be all numbers or all text")
    return np.array([cell for _, cell in cells])


def _number(cell):
    try:
        return float(cell)
    except ValueError:
        return None


def _is_header(path, number, line, skip=None) -> bool:
    """The ``"auto"`` decision on the first row (see the module docstring), leaving out
    the target column ``skip``; logged."""
    cells = [cell for j, cell in enumerate(line.split(",")) if j != skip]
    values = [_number(cell) for cell in cells]
    numeric = [j for j, v in enumerate(values) if v is not None]
    counted = [cells[j].strip() for j in numeric]
    pandas_names = bool(counted) and counted == [str(k) for k in range(len(counted))]
    row = line.split(",")
    shown = ", ".join(cell.strip() for cell in row[:6]) + (", ..." if len(row) > 6 else "")
    if len(numeric) == len(cells):
        if pandas_names and len(row) >= 3:
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
    column = bad + 1 if skip is None or bad < skip else bad + 2
    raise KernelCVError(
        f"{path}, line {number}: the first row is almost numeric ({len(numeric)} of "
        f"{len(cells)} feature cells are numbers, but column {column}, "
        f"{cells[bad].strip()!r}, "
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


def _explain_failure(path, rows, width, skip=None):
    """Raise an error naming the first ragged row or non-numeric feature cell (the
    target column ``skip`` aside), if there is one."""
    for number, line in rows:
        cells = line.split(",")
        if len(cells) != width:
            raise KernelCVError(
                f"{path}, line {number}: has {len(cells)} columns but the first data row "
                f"has {width}")
        for j, cell in enumerate(cells):
            if j != skip and _number(cell) is None:
                shown = cell.strip()
                what = "an empty cell" if not shown else f"{shown!r} is not a number"
                raise KernelCVError(f"{path}, line {number}, column {j + 1}: {what}")


def _one_line(exc):
    return " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
