"""Figures of ``kernelcv bench``: speed against scikit-learn, BIF convergence in r, the
SLOO-MPS table against the paper, and every reproduced cell against the papers' tables.

All build :class:`matplotlib.figure.Figure` objects directly (no pyplot state) through
:mod:`kernelcv.plotting`, which explains how to install matplotlib when it is missing.
Drawing is O(number of bars / points).
"""

from __future__ import annotations

import math

import numpy as np

from ..exceptions import KernelCVError
from ..plotting import figure_class


def time_ratio_figure(rows: list[dict]):
    """Grouped bars: selection time of scikit-learn / kernelcv per data set and table.

    Parameters
    ----------
    rows : dicts with ``set``, ``table``, ``ratio`` (sklearn seconds / kernelcv seconds of
        the fast criterion, mean over splits) and ``fast`` (the criterion's name).
    """
    rows = [r for r in rows if r.get("ratio") is not None and math.isfinite(r["ratio"])]
    if not rows:
        raise KernelCVError("no timing ratios to plot (every comparison failed or was skipped)")
    Figure = figure_class()
    sets = list(dict.fromkeys(r["set"] for r in rows))
    tables = list(dict.fromkeys(r["table"] for r in rows))
    fig = Figure(figsize=(min(16.0, max(6.0, 1.3 * len(sets) + 2.0)), 4.2))
    ax = fig.add_subplot()
    width = 0.8 / len(tables)
    for k, table in enumerate(tables):
        xs, ys = [], []
        for i, name in enumerate(sets):
            match = [r for r in rows if r["set"] == name and r["table"] == table]
            if match:
                xs.append(i - 0.4 + width * (k + 0.5))
                ys.append(match[0]["ratio"])
        ax.bar(xs, ys, width=width, label=table)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(sets)))
    ax.set_xticklabels(sets, rotation=30, ha="right")
    ax.set_ylabel("scikit-learn seconds / kernelcv seconds")
    ax.set_title("Model-selection time: GridSearchCV vs kernelcv "
                 "(closed-form for KRR/LS-SVM, BIF inf + 3 exact confirmations otherwise)",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def order_figure(curves: list[dict]):
    """|approx - exact| against the BIF order r, one line per (machine, set), two panels.

    Left (log scale): mean |held-out prediction gap|; right (linear): |CV error gap|, the
    quantity that ranks candidates. The series' limit (order "inf") is a dashed line.
    Prediction gaps below 1e-16 are drawn at 1e-16.
    """
    curves = [c for c in curves if c.get("orders")]
    if not curves:
        raise KernelCVError("no convergence curves to plot")
    Figure = figure_class()
    fig = Figure(figsize=(10, 4))
    panels = (("prediction_gap", "mean |f_BIF - f_exact| (held out)", True),
              ("cv_gap", "|CV_BIF - CV_exact|", False))
    for position, (key, label, log) in enumerate(panels, start=1):
        ax = fig.add_subplot(1, 2, position)
        floor = 1e-16 if log else 0.0
        for curve in curves:
            finite = [i for i, o in enumerate(curve["orders"]) if o != "inf"]
            orders = [curve["orders"][i] for i in finite]
            values = np.array([curve[key][i] for i in finite], dtype=np.float64)
            line = ax.plot(orders, np.maximum(values, floor), marker="o",
                           label=f"{curve['label']} ({curve.get('set', '?')})")
            if "inf" in curve["orders"]:
                limit = curve[key][curve["orders"].index("inf")]
                ax.axhline(max(limit, floor), linestyle="--", linewidth=0.8,
                           color=line[0].get_color())
        if log:
            ax.set_yscale("log")
        ax.set_xlabel("BIF order r (dashed: r = inf)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("BIF convergence on the training half of split 1 (10 folds)", fontsize=10)
    fig.axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def sloo_mps_figure(rows: list[dict], schemes=("gaussian", "laplace", "mix")):
    """Grouped bars per data set: our 10-fold CV error (%) for each kernel scheme (solid),
    the paper's (hatched, same colour; absent where the paper has no number) and
    ``GridSearchCV(SVC)``'s (grey). Drawing is O(number of bars).
    """
    if not rows:
        raise KernelCVError("no sloo-mps rows to plot")
    Figure = figure_class()
    fig = Figure(figsize=(min(16.0, max(6.0, 1.2 * len(rows) + 2.0)), 4.2))
    ax = fig.add_subplot()
    bars = 2 * len(schemes) + 1
    width = 0.8 / bars
    colours = ("tab:blue", "tab:orange", "tab:green", "tab:red")
    for k, scheme in enumerate(schemes):
        colour = colours[k % len(colours)]
        ours = [100 * r["schemes"][scheme]["cv_error"] for r in rows]
        xs = [i - 0.4 + width * (2 * k + 0.5) for i in range(len(rows))]
        ax.bar(xs, ours, width=width, color=colour, label=f"{scheme} (ours)")
        paper = [(x + width, (r["paper"] or {}).get(scheme)) for x, r in zip(xs, rows,
                                                                            strict=True)]
        paper = [(x, v) for x, v in paper if v is not None]
        if paper:
            ax.bar([x for x, _ in paper], [v for _, v in paper], width=width, color="white",
                   edgecolor=colour, hatch="//", label=f"{scheme} (paper)")
    ax.bar([i + 0.4 - width / 2 for i in range(len(rows))],
           [100 * r["svc"]["cv_error"] for r in rows], width=width, color="0.6",
           label="GridSearchCV(SVC)")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["set"] for r in rows], rotation=30, ha="right")
    ax.set_ylabel("10-fold CV error (%)")
    ax.set_title("SLOO-MPS (weights tuned on all data, machine refit per fold) vs the paper's "
                 "Table 1 and GridSearchCV(SVC)", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


_VERDICT_COLOURS = {"within": "tab:blue", "better": "tab:green", "worse": "tab:red"}


def papers_figure(cells: list[dict]):
    """Ours against the papers, cell by cell: one panel for test errors (%), one for test
    MSE (log-log). Each point is a compared cell: x the paper's mean with its ± std as a
    horizontal bar (the papers' values, marked), y our mean; colour = verdict; the line
    y = x is agreement. Drawing is O(number of cells).
    """
    if not cells:
        raise KernelCVError("no paper cells to plot")
    Figure = figure_class()
    units = [u for u in ("%", "MSE") if any(c["unit"] == u for c in cells)]
    fig = Figure(figsize=(5.2 * len(units), 4.6))
    for position, unit in enumerate(units, start=1):
        ax = fig.add_subplot(1, len(units), position)
        chosen = [c for c in cells if c["unit"] == unit]
        for name, colour in _VERDICT_COLOURS.items():
            group = [c for c in chosen if c["verdict"] == name]
            if not group:
                continue
            ax.errorbar([c["paper_mean"] for c in group], [c["ours_mean"] for c in group],
                        xerr=[c["paper_std"] for c in group], fmt="o", markersize=4,
                        color=colour, ecolor=colour, elinewidth=0.8, alpha=0.8,
                        label=f"{name} ({len(group)})")
        values = [v for c in chosen for v in (c["paper_mean"], c["ours_mean"]) if v > 0]
        low, high = (min(values), max(values)) if values else (0.1, 1.0)
        ax.plot([low, high], [low, high], color="black", linewidth=0.8)
        if unit == "MSE":
            ax.set_xscale("log")
            ax.set_yscale("log")
        label = "test error (%)" if unit == "%" else "test MSE (target units)"
        ax.set_xlabel(f"paper: {label}, mean ± std")
        ax.set_ylabel(f"kernelcv bench: {label}, mean")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, title="verdict", title_fontsize=8)
    fig.suptitle("kernelcv bench beside the papers' tables (one point per cell)", fontsize=10)
    fig.tight_layout()
    return fig
