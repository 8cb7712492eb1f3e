"""The papers' own result tables beside ``kernelcv bench``'s numbers, cell by cell.

The tables are the CSV files of ``shared/paper_tables`` (long format, one row per cell:
``paper, table, machine, kernel, measure, dataset, method, t, r|epsilon, mean, std,
unit``). A paper cell is *comparable* when the bench ran the same machine and kernel on
the same data set with the same criterion:

=====================  ==============================  ============================
paper table            bench table                     criteria
=====================  ==============================  ============================
001 T1 / T3            ``lssvm-rbf`` / ``lssvm-poly``  CV t, BIF t r=5
001 T5 / T7            ``l2svm`` / ``svm``             CV t, BIF t r=5
001 T9 / T11           ``krr`` / ``svr``               CV t, BIF t r=5 (test MSE)
000 T3 (Gaussian)      ``svm``                         CV t, eps-BIF e, GACV
=====================  ==============================  ============================

("CV t" is the bench's ``exact t=5|10|20``, "BIF t r=5" its ``BIF r=5`` at t = 10 and
``BIF r=5 t=5|20`` where run, "eps-BIF e" its ``eps-BIF e``). Times are not compared (other
hardware). Test errors are compared in % and MSE in the target's own units: the bench
standardises regression targets in its own protocol, so its MSE is multiplied back by the
training half's target variance, split by split.

Verdict of a cell, with the paper's mean m and spread s (its "±", over its 10 splits) and
our mean o over our splits: ``within`` when ``|o - m| <= s``, ``better`` when
``o < m - s``, ``worse`` when ``o > m + s`` (lower is better for both measures).

Reading the tables is O(rows); comparing is O(cells x splits).
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import numpy as np

from ..exceptions import KernelCVError
from .suites import TABLES

ENV_TABLES = "KERNELCV_PAPER_TABLES"
VERDICTS = ("within", "better", "worse")
# (paper, table) -> the bench table that reproduces it
SOURCES = {("001", "1"): "lssvm-rbf", ("001", "3"): "lssvm-poly", ("001", "5"): "l2svm",
           ("001", "7"): "svm", ("001", "9"): "krr", ("001", "11"): "svr",
           ("000", "3"): "svm"}
_KERNELS = {"gaussian": "rbf", "polynomial": "poly"}
_COLUMNS = ("paper", "table", "kernel", "measure", "dataset", "method", "mean", "std")
_APPROXIMATE = ("BIF", "eps-BIF", "GACV")


def default_folders(data_dir=None) -> list[Path]:
    """``paper_tables`` beside the data folder (when given), then ``shared/paper_tables``
    beside the checkout (also where the ``sloo-mps`` table finds its paper's CSV)."""
    places = []
    if data_dir is not None:
        places.append(Path(data_dir).parent / "paper_tables")
    places.append(Path(__file__).resolve().parents[4] / "shared" / "paper_tables")
    return places


def candidate_folders(data_dir=None) -> list[Path]:
    """Where the tables are looked for when no folder is given, in order:
    ``$KERNELCV_PAPER_TABLES`` (alone, when set), else :func:`default_folders`."""
    if os.environ.get(ENV_TABLES):
        return [Path(os.environ[ENV_TABLES])]
    return default_folders(data_dir)


def find_folder(folder=None, data_dir=None):
    """The tables' folder, or None when none of the candidates exists.

    Raises
    ------
    KernelCVError
        When ``folder`` is given explicitly and is not a folder.
    """
    if folder is not None:
        if not Path(folder).is_dir():
            raise KernelCVError(f"--paper-tables {folder}: not a folder (the papers' result "
                                "tables, shared/paper_tables)")
        return Path(folder)
    return next((p for p in candidate_folders(data_dir) if p.is_dir()), None)


def read_cells(folder) -> list[dict]:
    """Every comparable-kind cell of the tables in ``folder`` (test error or test MSE of a
    table listed in :data:`SOURCES` whose kernel the bench table uses).

    Returns
    -------
    list of dict
        ``paper, table, source (file name), bench_table, dataset, criterion, kind
        ("exact"|"approximate"), unit, paper_mean, paper_std``.

    Raises
    ------
    KernelCVError
        A file without the expected columns or with a non-numeric mean/std (file and line
        named).
    """
    cells = []
    for path in sorted(Path(folder).glob("*.csv")):
        try:
            with path.open(newline="") as handle:
                rows = list(csv.DictReader(handle))
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise KernelCVError(f"{path}: cannot read ({exc})") from None
        if not rows or not set(_COLUMNS) <= set(rows[0]):
            continue  # another kind of table (data sets, (t, r) lists)
        for line, row in enumerate(rows, start=2):
            cell = _cell(row, path, line)
            if cell is not None:
                cells.append(cell)
    return cells


def _cell(row, path, line):
    bench_table = SOURCES.get((row["paper"].strip(), row["table"].strip()))
    if bench_table is None or row["measure"] not in ("test_error", "test_mse"):
        return None
    if _KERNELS.get(row["kernel"]) != TABLES[bench_table].kernel:
        return None
    criterion = criterion_name(row)
    if criterion is None:
        return None
    try:
        mean, std = float(row["mean"]), float(row["std"] or 0.0)
    except ValueError:
        raise KernelCVError(f"{path}, line {line}: mean/std not numbers "
                            f"({row['mean']!r}, {row['std']!r})") from None
    if not (math.isfinite(mean) and math.isfinite(std) and std >= 0):
        raise KernelCVError(f"{path}, line {line}: mean/std not finite or std < 0")
    return {"paper": row["paper"], "table": row["table"], "source": path.name,
            "bench_table": bench_table, "dataset": row["dataset"], "criterion": criterion,
            "kind": "approximate" if row["method"] in _APPROXIMATE else "exact",
            "unit": "%" if row["measure"] == "test_error" else "MSE",
            "paper_mean": mean, "paper_std": std}


def criterion_name(row) -> str | None:
    """The bench criterion that reproduces a paper row (None: the bench runs none)."""
    method, t = row["method"], (row.get("t") or "").strip()
    if method == "CV" and t:
        return f"exact t={int(t)}"
    if method == "BIF" and t and (row.get("r") or "").strip() == "5":
        return "BIF r=5" if int(t) == 10 else f"BIF r=5 t={int(t)}"
    if method == "eps-BIF" and (row.get("epsilon") or "").strip():
        return f"eps-BIF {float(row['epsilon']):g}"
    if method == "GACV":
        return "GACV"
    return None


def verdict(ours: float, paper_mean: float, paper_std: float) -> str:
    """``within`` / ``better`` / ``worse`` of our mean against the paper's band m ± s."""
    slack = 1e-9 * max(abs(paper_mean), 1e-300)  # printed decimals vs. float rounding
    if ours > paper_mean + paper_std + slack:
        return "worse"
    if ours < paper_mean - paper_std - slack:
        return "better"
    return "within"


def our_values(entry: dict, criterion: str, unit: str) -> np.ndarray | None:
    """Our per-split test values of one criterion in the paper's unit (% or raw MSE)."""
    values = []
    for record in entry["splits"]:
        result = record["criteria"].get(criterion) or {}
        if "test_error" not in result:
            continue
        scale = 100.0 if unit == "%" else float(record.get("target_variance", 1.0))
        values.append(scale * float(result["test_error"]))
    return np.array(values) if values else None


def compare(report_tables, cells) -> dict:
    """Put our numbers beside the paper cells the bench reproduced.

    Parameters
    ----------
    report_tables : the bench report's ``tables`` (each set entry keeps its ``splits``).
    cells : :func:`read_cells`'s list.

    Returns
    -------
    dict
        ``within, better, worse`` (counts), ``by_kind`` (the counts of exact and
        approximate criteria), ``cells`` (each paper cell with ``ours_mean``,
        ``ours_std``, ``n_splits``, ``difference`` and ``verdict``), ``not_run`` (paper
        cells of a run (set, table) whose criterion the bench did not run).
    """
    entries = {(table["table"], entry["set"]): entry
               for table in report_tables for entry in table["sets"]}
    out, not_run = [], 0
    for cell in cells:
        entry = entries.get((cell["bench_table"], cell["dataset"]))
        if entry is None:
            continue
        values = our_values(entry, cell["criterion"], cell["unit"])
        if values is None:
            not_run += 1
            continue
        mean = float(np.mean(values))
        out.append({**cell, "ours_mean": mean,
                    "ours_std": float(np.std(values, ddof=1)) if values.size > 1 else 0.0,
                    "n_splits": int(values.size), "difference": mean - cell["paper_mean"],
                    "verdict": verdict(mean, cell["paper_mean"], cell["paper_std"])})
    counts = _counts(out)
    by_kind = {kind: _counts([c for c in out if c["kind"] == kind])
               for kind in ("exact", "approximate")}
    return {**counts, "by_kind": by_kind, "cells": out, "not_run": not_run}


def _counts(cells) -> dict:
    return {name: sum(c["verdict"] == name for c in cells) for name in VERDICTS}


def share_within_or_better(summary: dict) -> float | None:
    """Fraction of compared cells within or better than the papers' band."""
    total = sum(summary[name] for name in VERDICTS)
    return None if total == 0 else (summary["within"] + summary["better"]) / total
