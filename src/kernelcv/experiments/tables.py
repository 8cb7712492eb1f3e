"""Markdown and JSON renderings of a ``kernelcv bench`` report (O(size of the report)).

The Markdown has, per machine ("table"), one table of test errors and one of selection
seconds (rows: data sets, columns: criteria, cells ``mean ± std`` over the splits), a
speed table against scikit-learn, the BIF convergence numbers, the cells beside the
papers' tables (:func:`papers_markdown`), the ``sloo-mps`` table
(:func:`kernelcv.experiments.sloo_mps.markdown`) and the skipped sets.
A test-error cell is marked ``↑`` (significantly worse) or ``↓`` (significantly better)
when the paired t statistic against the reference criterion exceeds the threshold.
"""

from __future__ import annotations

import json
import math

from ..reports.io import jsonable
from .sloo_mps import markdown as sloo_markdown


def _num(value, digits=3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if abs(value) >= 100 or (value != 0 and abs(value) < 10 ** -digits):
        return f"{value:.3g}"
    return f"{value:.{digits}f}"


def _cell(entry: dict, key: str, digits=3, mark=False) -> str:
    if entry is None or entry.get(f"{key}_mean") is None:
        return "failed" if entry and entry.get("failures") else "–"
    std = entry[f"{key}_std"]
    text = f"{_num(entry[f'{key}_mean'], digits)} ± {std:.{digits}f}"
    if mark:
        text += {"worse": " ↑", "better": " ↓"}.get(entry.get("significant", ""), "")
    if entry.get("failures"):
        text += f" ({entry['failures']} failed)"
    return text


def _legend(report: dict) -> list[str]:
    protocol = report.get("protocol", "ours")
    if protocol == "ours":
        targets = "MSE of standardised targets"
        machines = ("the LS-SVM tables run kernelcv's LS-SVM without a bias term, the same "
                    "model as KernelRidge (0-1 error of sign f), and the L2-SVM, Huber-SVM "
                    "and SVR tables the papers' bias-free machines.")
    else:
        targets = "MSE in the target's units"
        machines = (f"protocol {protocol}: gamma = 1/(2 sigma), centred targets, SVR tube "
                    "std(y), liver-disorders in its old coding, Huber-SVM eps-BIF at "
                    "eq. 6's order r, "
                    + ("bias-free machines." if protocol.endswith("bias-free")
                       else "machines with a bias term."))
    return [
        f"{report['splits']} random 50/50 splits (seed {report['seed']}); grid "
        f"{report['grid']['description']}; selection on the training half, test error on "
        f"the other half (0-1 error, or {targets}). Cells: mean ± std "
        f"over splits. ↑ / ↓: paired t against **{report['reference']}** above "
        f"{report['t_threshold']:.3f} (significantly worse / better; default threshold: "
        f"one-sided 95% point of Student's t with R - 1 degrees of freedom). Seconds: "
        f"selection only, "
        f"OMP_NUM_THREADS={report['environment'].get('OMP_NUM_THREADS') or 'unset'}. "
        "scikit-learn searches the same grid with alpha = m lam (KernelRidge) or "
        "C = 1 / (2 m lam) (SVC, SVR), m the mean training-fold size, and refits its "
        "choice with m = n; " + machines, ""]


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def to_markdown(report: dict) -> str:
    """The whole report as Markdown (tables plus a short legend)."""
    out = [f"# kernelcv bench ({report['mode']} mode)", ""]
    if report["tables"]:  # the split protocol's legend (absent with only sloo-mps)
        out += _legend(report)
    for table in report["tables"]:
        if not table["sets"]:
            continue
        names = list(dict.fromkeys(c for s in table["sets"] for c in s["criteria"]))
        metric = "0-1 test error" if table["metric"] == "0-1" else "test MSE"
        for key, what, digits in (("test_error", metric, 3), ("seconds", "selection seconds", 2)):
            out += [f"## {table['title']} — {what}", ""]
            rows = []
            for entry in table["sets"]:
                label = f"{entry['set']} ({entry['n_train']})"
                rows.append([label] + [_cell(entry["criteria"].get(name), key, digits,
                                             mark=key == "test_error") for name in names])
            out += _markdown_table(["data (n train)", *names], rows) + [""]
    if report.get("speed"):
        out += ["## Speed against scikit-learn (selection seconds, mean over splits)", ""]
        rows = [[r["table"], r["set"], r["fast"], _num(r["kernelcv_seconds"], 2),
                 _num(r.get("exact_seconds"), 2), r["sklearn"], _num(r["sklearn_seconds"], 2),
                 _ratio(r["ratio"])] for r in report["speed"]]
        out += _markdown_table(["table", "data", "kernelcv criterion", "kernelcv s",
                                "kernelcv exact t=10 s", "scikit-learn", "scikit-learn s",
                                "ratio (sklearn / kernelcv)"], rows) + [""]
    for curve in report.get("convergence", []):
        out += [f"## BIF convergence: {curve['label']} on {curve['set']} "
                f"(gamma = {curve['gamma']:.4g}, lam = {curve['lam']:.4g}, "
                f"{curve['n_folds']} folds, exact CV error {_num(curve['exact_cv_error'])})",
                ""]
        header = ["r", *[str(o) for o in curve["orders"]]]
        rows = [["mean abs prediction gap", *[_num(v, 4) for v in curve["prediction_gap"]]],
                ["abs CV error gap", *[_num(v, 4) for v in curve["cv_gap"]]]]
        out += _markdown_table(header, rows) + [""]
    out += papers_markdown(report.get("papers"))
    out += sloo_markdown(report.get("sloo_mps"))
    if report.get("skipped"):
        out += ["## Skipped", ""]
        out += [f"* {s['set']}: {s['reason']}" for s in report["skipped"]] + [""]
    timings = report["timings"]
    out.append(f"Total run time {timings['total_seconds']:.0f} s wall, "
               f"{timings.get('cpu_seconds') or 0:.0f} s CPU of this process.")
    return "\n".join(out) + "\n"


def papers_markdown(papers) -> list[str]:
    """The "beside the papers" section: counts, then one row per compared cell."""
    if papers is None:
        return ["## Beside the papers", "", "The papers' result tables were not found "
                "(give them with --paper-tables DIR or $KERNELCV_PAPER_TABLES).", ""]
    if not papers["cells"]:
        return []
    total = sum(papers[v] for v in ("within", "better", "worse"))
    share = (papers["within"] + papers["better"]) / total
    out = ["## Beside the papers", "",
           f"{total} cells compared with the papers' tables ({papers['folder']}): "
           f"**{papers['within']} within** the paper's mean ± std, **{papers['better']} "
           f"better**, **{papers['worse']} worse** ({100 * share:.0f} % within or better)."]
    for kind, counts in papers["by_kind"].items():
        out.append(f"{kind.capitalize()} criteria: {counts['within']} within, "
                   f"{counts['better']} better, {counts['worse']} worse.")
    out += ["Test errors in %, MSE in the target's units; the papers' means are over 10 "
            "splits, ours over this run's.", ""]
    rows = [[f"{c['paper']} T{c['table']}", c["bench_table"], c["dataset"], c["criterion"],
             f"{_num(c['paper_mean'], 3)} ± {_num(c['paper_std'], 3)}",
             f"{_num(c['ours_mean'], 3)} ± {_num(c['ours_std'], 3)} ({c['n_splits']})",
             c["verdict"]] for c in papers["cells"]]
    out += _markdown_table(["paper table", "bench table", "data", "criterion", "paper",
                            "ours (splits)", "verdict"], rows) + [""]
    return out


def _ratio(value) -> str:
    return "–" if value is None else f"{value:.1f}×"


def to_json(report: dict) -> str:
    """The report as indented JSON (non-finite floats as null)."""
    return json.dumps(jsonable(report), indent=2, allow_nan=False) + "\n"
