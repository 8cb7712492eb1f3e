"""``run_bench``: the library side of ``kernelcv bench`` (validate, run, checkpoint, write).

For every data set and split (see :mod:`kernelcv.experiments.protocol`) and every table
(machine) of the set's task, each criterion of :mod:`kernelcv.experiments.runners`
selects on the training half and is tested on the other half. Finished (set, table,
split) results are appended to ``OUT/checkpoint.jsonl`` as they complete, so an
interrupted run started again with the same options resumes where it stopped. The
checkpoint's fingerprint holds the mode, seed, grids, ``--confirm`` and the resolved
data folder, but not ``--splits``: records are keyed by (set, table, split, data file
size and mtime), and split s does not depend on R, so a longer run extends a shorter one
and a changed data file is recomputed rather than reused. A damaged checkpoint (an
unreadable header or middle line) is refused with advice to use ``--fresh``; a torn last
line (an interrupted write) is dropped. At the
end ``results.json``, ``results.md``, ``time_ratio.png`` and ``bif_order.png`` are
written atomically.

``protocol="paper"`` (``--protocol paper``) follows the papers' set-up where it differs
from ours (:data:`kernelcv.experiments.suites.PROTOCOLS`). When the papers' own
result tables are found (:mod:`kernelcv.experiments.paper_tables`), every cell the run
reproduces is put beside the paper's mean ± std with a within / better / worse verdict
(report key ``papers``; ``papers.png``); when they are not, ``papers`` is None.

The ``sloo-mps`` table (:mod:`kernelcv.experiments.sloo_mps`) follows another protocol:
no random halves, one 10-fold CV per set and kernel scheme of Bo, Wang & Jiao's Table 1,
on its own sets (``--sets`` may name them; ``--splits``, ``--confirm``, ``--max-train``
and ``--t-threshold`` do not apply). Its finished sets are checkpointed in the same file,
keyed by set, data file and the table's settings; ``sloo_mps.csv`` and ``sloo_mps.png``
are written beside the other outputs.

Bad input — unknown mode, set or table names, sets and tables of different tasks only
(no (set, table) pair to run), a missing data folder, an output path that is not a
writable folder, matplotlib missing — is refused before any work starts. Sets
whose file is missing, or whose training half is larger than the mode allows, are skipped
with a note in the report.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from .. import plotting
from ..exceptions import KernelCVError
from ..reports.io import check_targets, png, write_all
from ..validation import make_folds
from . import figures, sloo_mps, tables
from .bench_files import BenchFiles
from .checkpoint import Checkpoint, file_stamp, fingerprint
from .convergence import order_curve
from .paper_tables import compare as compare_with_papers
from .paper_tables import find_folder as find_paper_tables
from .paper_tables import read_cells as read_paper_cells
from .plan import BenchPlan
from .protocol import (
    default_t_threshold,
    random_splits,
    scale_features,
    standardize_target,
    summarize,
)
from .runners import (
    FOLDS,
    HUBER_WIDTH,
    LSSVM_INTERCEPT,
    REFERENCE,
    criteria_for,
    fast_criterion,
    machine_intercept,
    run_criterion,
    sklearn_criterion,
)
from .suites import (
    DATASETS,
    MODES,
    PROTOCOLS,
    TABLES,
    find_file,
    liver_selector_coding,
    load_set,
    resolve_data_dir,
)

CHECKPOINT = "checkpoint.jsonl"
OUTPUTS = ("results.json", "results.md", "time_ratio.png", "bif_order.png")
SLOO_OUTPUTS = (sloo_mps.CSV_NAME, sloo_mps.FIGURE)  # when the sloo-mps table runs
PAPERS_FIGURE = "papers.png"  # when the papers' tables are found and a cell compares
_CONVERGENCE_MACHINES = {"classification": ("lssvm-rbf", "l2svm", "svm"),
                         "regression": ("krr", "svr")}


def run_bench(plan: BenchPlan | None = None, files: BenchFiles | None = None, *, n_jobs=1,
              progress=None) -> dict:
    """Run the papers' protocol for every (set, table) and write the tables and figures.

    Parameters
    ----------
    plan : BenchPlan or None, default None
        What to run: mode, splits, seed, sets, tables, max_train, confirm, t_threshold,
        protocol (:class:`kernelcv.experiments.plan.BenchPlan`, checked when made; None:
        ``BenchPlan()``, the quick mode).
    files : BenchFiles or None, default None
        Where: data_dir, out, paper_folder, and the figures and fresh flags
        (:class:`kernelcv.experiments.bench_files.BenchFiles`; None: ``BenchFiles()``).
    n_jobs : int, default 1
        Workers for both libraries' searches.
    progress : callable or None, default None
        ``progress(message)``, called before each piece of work.

    Returns
    -------
    dict
        The JSON-able report (see :func:`kernelcv.experiments.tables.to_markdown`).

    Raises
    ------
    KernelCVError
        For bad input (see the module's notes), before any work.
    """
    tic, cpu_tic = time.perf_counter(), time.process_time()
    plan = BenchPlan() if plan is None else plan
    files = BenchFiles() if files is None else files
    for value, kind in ((plan, BenchPlan), (files, BenchFiles)):
        if not isinstance(value, kind):
            raise KernelCVError(f"run_bench takes a {kind.__name__}, got "
                                f"{type(value).__name__}")
    mode, seed, confirm, protocol = plan.mode, plan.seed, plan.confirm, plan.protocol
    spec = MODES[mode]
    splits, max_train = plan.n_splits, plan.train_limit
    set_names, table_names = plan.set_names, plan.table_names
    proto = PROTOCOLS[protocol]
    sloo_sets = None if plan.sets is None else [s for s in set_names if s in sloo_mps.SETS]
    paper_tables = [t for t in table_names if t in TABLES]
    paper_sets = [s for s in set_names if s in DATASETS] if paper_tables else []
    t_threshold = (default_t_threshold(splits) if plan.t_threshold is None
                   else float(plan.t_threshold))
    folder = resolve_data_dir(files.data_dir)
    paper_folder = find_paper_tables(files.paper_folder, folder)
    paper_cells = [] if paper_folder is None else read_paper_cells(paper_folder)
    out = Path(files.out)
    _check_output(out)
    if files.figures:
        try:
            plotting.figure_class()  # fails now, with advice, if matplotlib is missing
        except KernelCVError as exc:
            raise KernelCVError(f"{exc} (or run without figures: --no-figures)") from None

    # not `splits` (records are keyed by split) nor max_train (only decides what is run)
    config = {"mode": mode, "seed": seed, "confirm": confirm, "protocol": protocol,
              "gammas": spec.gammas(proto.width),
              "lam_exponents": spec.lam_exponents, "degrees": list(spec.degree_grid(proto)),
              "data_dir": str(folder.resolve()), "lssvm_intercept": LSSVM_INTERCEPT,
              "version": 3}
    if proto.eps_rule != "adaptive":  # ours' checkpoints keep their fingerprint
        config["eps_rule"] = proto.eps_rule
    out.mkdir(parents=True, exist_ok=True)
    store = Checkpoint(out / CHECKPOINT, fingerprint(config), files.fresh)
    say = progress or (lambda message: None)

    report_tables = {name: {"table": name, "title": TABLES[name].title,
                            "machine": TABLES[name].machine, "kernel": TABLES[name].kernel,
                            "metric": "0-1" if TABLES[name].task == "classification"
                            else "MSE", "sets": []} for name in paper_tables}
    skipped, set_seconds, first_split = [], {}, {}
    for name in paper_sets:
        data = DATASETS[name]
        found = find_file(data, folder)
        if found is None:
            skipped.append({"set": name, "reason": "file not found under "
                            f"{folder} (looked for {', '.join(f for f, _ in data.files)})"})
            say(f"{name}: skipped (file not found)")
            continue
        todo = [t for t in paper_tables if TABLES[t].task == data.task]
        if not todo:
            continue
        path, scaled = found
        stamp = file_stamp(path)
        X, y = load_set(data, path)
        if name == "liver-disorders" and proto.liver_coding == "selector":
            X, y = liver_selector_coding(X, y)
        n_train = y.shape[0] - y.shape[0] // 2
        if n_train > max_train:
            skipped.append({"set": name, "reason": f"training half of {n_train} samples is "
                            f"above the {mode} mode's limit of {max_train}; raise it with "
                            "--max-train"})
            say(f"{name}: skipped (training half {n_train} > {max_train})")
            continue
        set_tic, set_cpu = time.perf_counter(), time.process_time()
        classifier = data.task == "classification"
        per_table = {t: [] for t in todo}
        for s, (train, test) in enumerate(random_splits(y, splits, seed, classifier)):
            X_tr, X_te, y_tr, y_te = X[train], X[test], y[train], y[test]
            if not scaled:
                X_tr, X_te = scale_features(X_tr, X_te)
            variance = 1.0  # of the target's units per unit of the fitted target
            if not classifier and proto.targets == "standardize":
                variance = float(np.std(y_tr)) ** 2 or 1.0
                y_tr, y_te = standardize_target(y_tr, y_te)
            elif not classifier:
                y_tr, y_te = y_tr - np.mean(y_tr), y_te - np.mean(y_tr)
            # t is capped at the training size (leave-one-out) on the tiniest sets
            fold_sets = {t: make_folds(y_tr, min(t, y_tr.shape[0]), classifier, seed + s)
                         for t in FOLDS}
            if s == 0:
                first_split[name] = (X_tr, y_tr, fold_sets[10])
            for t in todo:
                key = f"{name}|{t}|{s}|{stamp}"
                record = store.get(key)
                if record is None:
                    say(f"{name} split {s + 1}/{splits}: {t}")
                    record = _run_table(TABLES[t], X_tr, y_tr, X_te, y_te, fold_sets,
                                        seed + s, spec, confirm, n_jobs, proto)
                    record["target_variance"] = variance  # MSE back in target units
                    store.add(key, record)
                per_table[t].append(record)
        set_seconds[name] = {"wall": time.perf_counter() - set_tic,
                             "cpu": time.process_time() - set_cpu}
        for t in todo:
            records = [r["criteria"] for r in per_table[t]]
            report_tables[t]["sets"].append({
                "set": name, "file": str(path), "n_train": int(X_tr.shape[0]),
                "n_test": int(X_te.shape[0]), "n_features": int(X.shape[1]),
                "criteria": summarize(records, REFERENCE, t_threshold),
                "splits": per_table[t]})

    sloo = None
    if sloo_mps.TABLE in table_names:
        sloo = sloo_mps.run_sloo_table(sloo_sets, folder, mode, seed, n_jobs, store,
                                       file_stamp, say)
        skipped += sloo["skipped"]
    speed = _speed_rows(report_tables)
    convergence = _convergence(report_tables, first_split, spec, proto, say)
    papers = (None if paper_folder is None else
              {"folder": str(paper_folder),
               **compare_with_papers(report_tables.values(), paper_cells)})
    report = {
        "mode": mode, "protocol": protocol, "splits": splits, "seed": seed,
        "reference": REFERENCE, "papers": papers,
        "t_threshold": t_threshold, "data_dir": str(folder), "out": str(out),
        "grid": _grid_description(spec, proto), "max_train": max_train, "confirm": confirm,
        "tables": list(report_tables.values()), "speed": speed,
        "convergence": convergence, "sloo_mps": sloo, "skipped": skipped,
        "environment": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                        "cpu_count": os.cpu_count(), "n_jobs": n_jobs},
        "timings": {"set_seconds": set_seconds},
    }
    report["timings"]["total_seconds"] = time.perf_counter() - tic
    report["timings"]["cpu_seconds"] = time.process_time() - cpu_tic
    report["files"] = _write_outputs(out, report, files.figures)
    return report


def _run_table(table, X, y, X_test, y_test, fold_sets, seed, spec, confirm, n_jobs,
               proto) -> dict:
    grid = {"lams": spec.lams(X.shape[0])}
    if table.kernel == "poly":
        grid["degrees"] = list(spec.degree_grid(proto))
    else:
        grid["gammas"] = spec.gammas(proto.width)
    tube = proto.svr_tube if proto.svr_tube is not None else float(np.std(y)) or 1.0
    huber = HUBER_WIDTH if proto.svr_huber_ratio is None else proto.svr_huber_ratio * tube
    tic = time.perf_counter()
    results = {c.name: run_criterion(c, table.machine, table.kernel, grid, X, y, X_test,
                                     y_test, fold_sets, seed, confirm=confirm, n_jobs=n_jobs,
                                     svr_tube=tube, svr_huber=huber,
                                     intercept=proto.intercept)
               for c in criteria_for(table.machine, proto.eps_rule_for(table.machine))}
    return {"criteria": results, "wall_seconds": time.perf_counter() - tic}


def _speed_rows(report_tables) -> list[dict]:
    rows = []
    for table in report_tables.values():
        fast, sk = fast_criterion(table["machine"]), sklearn_criterion(table["machine"])
        for entry in table["sets"]:
            a, b = entry["criteria"].get(fast), entry["criteria"].get(sk)
            if not a or not b or not a["seconds_mean"] or b["seconds_mean"] is None:
                continue
            exact = entry["criteria"].get(REFERENCE) or {}
            rows.append({"table": table["table"], "set": entry["set"], "fast": fast,
                         "sklearn": sk, "kernelcv_seconds": a["seconds_mean"],
                         "exact_seconds": exact.get("seconds_mean"),
                         "sklearn_seconds": b["seconds_mean"],
                         "ratio": b["seconds_mean"] / a["seconds_mean"]})
    return rows


def _convergence(report_tables, first_split, spec, proto, say) -> list[dict]:
    """BIF order curves on the first set of each task, at split 1's reference choice
    (gamma, lam) and at the grid's largest gamma and smallest lam (the hard corner)."""
    curves = []
    for task, names in _CONVERGENCE_MACHINES.items():
        for name in names:
            table = report_tables.get(name)
            if table is None or not table["sets"]:
                continue
            entry = table["sets"][0]
            chosen = entry["splits"][0]["criteria"].get(REFERENCE, {})
            params = chosen.get("best_params")
            if not params or entry["set"] not in first_split:
                continue
            say(f"convergence in r: {name} on {entry['set']}")
            X, y, folds = first_split[entry["set"]]
            points = {("exact-CV choice", params["gamma"], params["lam"]),
                      ("largest gamma, smallest lam", max(spec.gammas(proto.width)),
                       min(spec.lams(y.shape[0])))}
            for tag, gamma, lam in sorted(points, key=lambda p: p[0] != "exact-CV choice"):
                curve = order_curve(
                    X, y, table["machine"], gamma=gamma, lam=lam, fold_ids=folds,
                    orders=spec.orders,
                    fit_intercept=machine_intercept(table["machine"], proto.intercept))
                curves.append({**curve, "label": f"{name}, {tag}", "set": entry["set"],
                               "task": task})
    return curves


def _grid_description(spec, proto) -> dict:
    gammas, degrees = spec.gammas(proto.width), spec.degree_grid(proto)
    sig = "sigma = 2^-10..2^10 (21)" if spec.sigma_exponents is None else (
        f"sigma = 2^{min(spec.sigma_exponents)}..2^{max(spec.sigma_exponents)} "
        f"({len(gammas)})")
    sig += " with gamma = 1/(2 sigma)" if proto.width == "sigma" else ""
    lam = "lam = 2^i/n, i = -3..11 (15)" if spec.lam_exponents is None else (
        f"lam = 2^i/n, i = {', '.join(map(str, spec.lam_exponents))}")
    return {"gammas": gammas, "lam_exponents": spec.lam_exponents or list(range(-3, 12)),
            "degrees": list(degrees),
            "description": f"{sig} x {lam}; poly degree {min(degrees)}..{max(degrees)} "
                           "(gamma 1, coef0 1)"}


def _check_output(out: Path):
    if out.exists() and not out.is_dir():
        raise KernelCVError(f"--out {out}: exists and is not a folder")
    check_targets(out, (CHECKPOINT, *OUTPUTS, *SLOO_OUTPUTS, PAPERS_FIGURE))
    parent = out if out.exists() else out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        raise KernelCVError(f"--out {out}: cannot write to {parent}")


def _write_outputs(out: Path, report: dict, with_figures: bool) -> list[str]:
    payloads = {"results.md": tables.to_markdown(report).encode()}
    sloo = report.get("sloo_mps") or {"rows": []}
    if sloo["rows"]:
        payloads[sloo_mps.CSV_NAME] = sloo_mps.to_csv(sloo).encode()
    if with_figures:
        if report["speed"]:
            payloads["time_ratio.png"] = png(figures.time_ratio_figure(report["speed"]))
        if report["convergence"]:
            payloads["bif_order.png"] = png(figures.order_figure(report["convergence"]))
        if sloo["rows"]:
            payloads[sloo_mps.FIGURE] = png(figures.sloo_mps_figure(sloo["rows"]))
        if (report.get("papers") or {}).get("cells"):
            payloads[PAPERS_FIGURE] = png(figures.papers_figure(report["papers"]["cells"]))
    names = ["results.json", *payloads]
    report["files"] = [str(out / name) for name in names]
    payloads["results.json"] = tables.to_json(report).encode()
    write_all(out, payloads)
    return report["files"]

