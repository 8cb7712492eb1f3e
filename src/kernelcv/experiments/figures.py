"""Figures of ``kernelcv bench``: speed against scikit-learn, BIF convergence in r, and the
SLOO-MPS table against the paper.

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
