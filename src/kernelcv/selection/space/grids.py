"""Search grids: the default grids of the papers, parsing and validation.

Defaults (as in the BIF and granularity papers):

* RBF/Laplace width ``sigma`` in ``{2^-10, ..., 2^10}``, i.e. ``gamma = 1 / (2 sigma^2)``
  in ``{2^-21, 2^-19, ..., 2^19}`` (21 values);
* ``lam`` in ``{2^i / n : i = -3, ..., 11}`` (15 values), SVC's C = 1 / (2 n lam) from
  2^-12 to 4; a search's default grid holds ``2^i / n``, i = -12..-4 (C = 8 .. 2^11) in
  reserve, evaluated where the choice reaches the large-C edge
  (:mod:`kernelcv.selection.after_grid.extension`);
* polynomial degree ``1..8``.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ...exceptions import KernelCVError


def default_gammas() -> list[float]:
    """``gamma = 1 / (2 sigma^2)`` for ``sigma = 2^k``, ``k = 10, 9, ..., -10`` (ascending)."""
    return [1.0 / (2.0 * 4.0**k) for k in range(10, -11, -1)]


def default_lams(n_samples: int) -> list[float]:
    """``lam = 2^i / n`` for ``i = -3, ..., 11``."""
    return [2.0**i / n_samples for i in range(-3, 12)]


def reserve_lams(n_samples: int) -> list[float]:
    """``lam = 2^i / n`` for ``i = -12, ..., -4`` (C = 2^11 .. 8): the default grid's
    reserve toward large C."""
    return [2.0**i / n_samples for i in range(-12, -3)]


def default_degrees() -> list[int]:
    """Polynomial degrees 1 to 8."""
    return list(range(1, 9))


def sigma_to_gamma(sigma: float) -> float:
    """``gamma = 1 / (2 sigma^2)`` (scikit-learn's gamma from the papers' width)."""
    return 1.0 / (2.0 * sigma * sigma)


_POWER = re.compile(r"^\s*([0-9.eE+-]+)\s*\^\s*([+-]?\d+)\s*$")


def _parse_number(text: str, name: str) -> float:
    match = _POWER.match(text)
    try:
        if match:
            return float(match.group(1)) ** int(match.group(2))
        return float(text)
    except (ValueError, OverflowError):
        raise KernelCVError(f"{name} grid: cannot read {text.strip()!r} as a number") from None


def parse_grid(text: str, name: str, *, integer: bool = False) -> list[float] | list[int]:
    """Read a grid from the command line.

    Accepted forms, which can be mixed in one comma-separated list:

    * numbers: ``0.1,1,10``;
    * powers: ``2^-3,2^0,2^3``;
    * power ranges: ``2^-3..2^3`` (every integer exponent from -3 to 3), with a step
      in the exponent after a colon: ``2^-5..2^15:2`` (-5, -3, ..., 15; LIBSVM grid.py's
      ``-log2c -5,15,2``); the end is included when the steps reach it.

    Raises
    ------
    KernelCVError
        For an empty grid, unreadable items, or values that :func:`check_grid` rejects.
    """
    values: list[float] = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        if ".." in item:
            low, high = item.split("..", 1)
            high, colon, step_text = high.partition(":")
            step = 1
            if colon:
                try:
                    step = int(step_text)
                except ValueError:
                    step = 0
                if step < 1:
                    raise KernelCVError(f"{name} grid: the step of {item!r} must be a whole "
                                        "number >= 1 (the exponent's increment)")
            a, b = _POWER.match(low), _POWER.match(high)
            if not (a and b) or float(a.group(1)) != float(b.group(1)):
                raise KernelCVError(
                    f"{name} grid: a range must look like 2^-3..2^3 or 2^-5..2^15:2 (same "
                    f"base), got {item!r}")
            base, lo, hi = float(a.group(1)), int(a.group(2)), int(b.group(2))
            if lo > hi:
                raise KernelCVError(f"{name} grid: empty range {item!r} (start after end)")
            values.extend(base**k for k in range(lo, hi + 1, step))
        else:
            values.append(_parse_number(item, name))
    return check_grid(values, name, integer=integer)


def check_grid(values, name: str, *, integer: bool = False) -> list[float] | list[int]:
    """Validate a grid: non-empty, finite, strictly positive; duplicates removed.

    Returns the values as Python floats (or ints with ``integer=True``), in the given order.
    """
    if values is None:
        raise KernelCVError(f"{name} grid is empty")
    try:
        array = np.asarray(list(np.atleast_1d(values)), dtype=np.float64)
    except (TypeError, ValueError):
        raise KernelCVError(f"{name} grid must contain numbers, got {values!r}") from None
    if array.size == 0:
        raise KernelCVError(f"{name} grid is empty")
    bad = [float(v) for v in array if not (math.isfinite(v) and v > 0)]
    if bad:
        raise KernelCVError(f"{name} grid values must be finite and > 0, got {bad[0]:g}")
    if integer:
        if np.any(array != np.round(array)):
            raise KernelCVError(f"{name} grid values must be whole numbers")
        out = [int(v) for v in array]
    else:
        out = [float(v) for v in array]
    unique = list(dict.fromkeys(out))
    return unique
