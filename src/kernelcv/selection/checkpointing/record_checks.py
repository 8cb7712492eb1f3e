"""What a well-formed search record is: the checks applied to records read back from a file.

A checkpoint (:mod:`kernelcv.selection.checkpointing.checkpoint`) is a text file that
outlives the run that wrote it; before a record read from it is used, it must look like
one that a search could have produced: the right types, values in range, and numbers
that agree with each other (the CV error is the fold-size-weighted mean of the fold
errors; a 0-1 fold error is a whole number of mistakes over the fold's size). Each check
returns the first problem found as a short text, or ``None`` for a record that passes.
"""

from __future__ import annotations

import math
import numbers

#: The flags a BIF value may carry (truncation error, rounding error, certified distance
#: from exact refit CV above tolerance), as in the candidates' records.
BIF_FLAGS = ("unconverged", "ill_conditioned", "uncertified")

__all__ = ["check_exact", "check_setting_records"]

# Relative and absolute tolerance of the recomputed CV error (sums in another order).
_RTOL = 1e-9
_ATOL = 1e-12


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_count(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _error_problem(value, name, max_error, allow_inf=False) -> str | None:
    """A CV error: a number in [0, max_error] (inf only where ``allow_inf``)."""
    if not _is_number(value) or math.isnan(value):
        return f"{name} is not a number ({value!r})"
    if value < 0 or (value > max_error and not (allow_inf and math.isinf(value))):
        return f"{name} = {value!r} is outside [0, {max_error:g}]"
    return None


def _close(a, b) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= _ATOL + _RTOL * max(abs(a), abs(b))


def _folds_problem(record, n_samples, max_error) -> str | None:
    """``fold_errors``, ``fold_sizes``, ``n_folds`` and ``cv_error`` of one record agree."""
    errors, sizes, n_folds = record["fold_errors"], record["fold_sizes"], record["n_folds"]
    if not _is_count(n_folds) or n_folds < 2:
        return f"n_folds = {n_folds!r} is not an integer >= 2"
    if errors is None and sizes is None:
        return None
    if not isinstance(errors, list) or len(errors) != n_folds:
        return f"fold_errors is not a list of {n_folds} numbers"
    if not isinstance(sizes, list) or len(sizes) != n_folds:
        return f"fold_sizes is not a list of {n_folds} counts"
    for size in sizes:
        if not _is_count(size) or size < 1:
            return f"fold size {size!r} is not a positive integer"
    if n_samples is not None and sum(sizes) != n_samples:
        return f"the fold sizes add up to {sum(sizes)}, not the {n_samples} samples"
    for error, size in zip(errors, sizes, strict=True):
        problem = _error_problem(error, "a fold error", max_error, allow_inf=True)
        if problem:
            return problem
        if max_error == 1.0 and math.isfinite(error) and \
                abs(error * size - round(error * size)) > 1e-6:
            return f"fold error {error!r} is no whole number of mistakes in {size} samples"
    cv_error = record["cv_error"]
    if cv_error is not None:
        mean = math.fsum(e * s for e, s in zip(errors, sizes, strict=True)) / sum(sizes)
        if not _close(cv_error, mean):
            return (f"cv_error {cv_error!r} is not the mean of its fold errors "
                    f"({mean!r})")
    return None


def _record_problem(record, lam, n_samples, max_error) -> str | None:
    """The first problem of one lam's record (None when it is well formed)."""
    if not isinstance(record, dict):
        return "a record is not a JSON object"
    for key in ("lam", "score", "cv_error", "fold_errors", "fold_sizes", "n_folds",
                "degenerate", "seconds"):
        if key not in record:
            return f"a record lacks {key!r}"
    if not _is_number(record["lam"]) or not _close(float(record["lam"]), float(lam)):
        return f"lam {record['lam']!r} is not the grid's {lam!r}"
    score = record["score"]
    if not _is_number(score) or math.isnan(score):
        return f"score is not a number ({score!r})"
    for flag in ("degenerate", *BIF_FLAGS):  # the BIF flags are optional
        if flag in record and not isinstance(record[flag], bool):
            return f"{flag} is not true/false ({record[flag]!r})"
    seconds = record["seconds"]
    if not _is_number(seconds) or not 0 <= seconds < math.inf:
        return f"seconds = {seconds!r} is not a time"
    cv_error = record["cv_error"]
    if cv_error is not None:
        problem = _error_problem(cv_error, "cv_error", max_error, allow_inf=True)
        if problem:
            return problem
        if not _close(score, cv_error):
            return f"score {score!r} differs from cv_error {cv_error!r}"
    return _folds_problem(record, n_samples, max_error)


def check_setting_records(records, lams, n_samples=None, max_error=math.inf) -> str | None:
    """The first problem of one kernel setting's records, or None.

    Parameters
    ----------
    records : the list read back, one record per lam.
    lams : the lam values of the setting in the search's grid, in order.
    n_samples : the number of training samples (the fold sizes must add up to it).
    max_error : 1 for a 0-1 error (also: whole numbers of mistakes per fold), else inf.
    """
    if not isinstance(records, list):
        return "the records are not a list"
    if lams is not None and len(records) != len(lams):
        return f"{len(records)} records for {len(lams)} lam values"
    for position, record in enumerate(records):
        lam = record.get("lam") if lams is None and isinstance(record, dict) else \
            (lams[position] if lams is not None else None)
        problem = _record_problem(record, lam, n_samples, max_error)
        if problem:
            return problem
    return None


def check_exact(result, n_samples=None, max_error=math.inf) -> str | None:
    """The first problem of an exact refit result (a confirmation), or None."""
    if not isinstance(result, dict):
        return "the exact result is not a JSON object"
    for key in ("cv_error", "fold_errors", "fold_sizes", "seconds"):
        if key not in result:
            return f"the exact result lacks {key!r}"
    seconds = result["seconds"]
    if not _is_number(seconds) or not 0 <= seconds < math.inf:
        return f"seconds = {seconds!r} is not a time"
    problem = _error_problem(result["cv_error"], "cv_error", max_error, allow_inf=True)
    if problem:
        return problem
    errors = result["fold_errors"]
    n_folds = len(errors) if isinstance(errors, list) else None
    return _folds_problem({**result, "n_folds": n_folds}, n_samples, max_error)
