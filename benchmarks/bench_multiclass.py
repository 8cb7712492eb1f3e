"""Multiclass model selection: ``kernelcv select`` against GridSearchCV and Halving (SVC).

The benchmark of issue 15. Data: the shared multiclass LIBSVM sets (glass, iris,
vehicle, vowel, wine; skipped with a message when ../shared/datasets is absent) and a
10-class digit set built from scikit-learn's bundled 8 x 8 digits (pixels / 16), each
split in stratified halves with seed s for s = 0..``--splits``-1 (default 5). Grid: the
default 21 gamma x 15 lam (``--quick``: the 11 x 8 sub-grid), 10 stratified folds from
:func:`kernelcv.validation.make_folds` (seed = the split's); scikit-learn's
``GridSearchCV(SVC)`` and ``HalvingGridSearchCV(SVC)`` (SVC is one-vs-one) search the
same grid with ``C = 1/(2 n lam)`` on the same folds; kernelcv is the command line a user
types (``kernelcv select TRAIN --machine svm --multiclass S --fold-ids ... --test TEST
--json``, whole process timed), for each scheme S of ``--schemes`` (default ovo ovr;
``rff-ovo``/``rff-ovr`` run ``--method rff`` with that scheme on the same grid and folds).
Every timed run has one BLAS thread. Output: one line per run, then a Markdown table
(median seconds over splits, ratios of the medians, mean test errors) and a paired t-test
over all (set, split) pairs per scheme (H1: kernelcv's test error above GridSearchCV's,
one-sided).

With ``--repeats R`` every tool runs R times per split, the rounds interleaved (GridSearchCV,
Halving, kernelcv, then again), and each tool's fastest round counts: on a shared machine
whose speed drifts by 10-20 % within minutes, the minimum is the least noisy estimate of
each tool's cost, for the peers as for kernelcv.

Run: ``make bench-multiclass`` or ``.venv/bin/python benchmarks/bench_multiclass.py
[--splits 5] [--quick] [--sets glass vowel digits] [--schemes ovo] [--skip-peers]
[--repeats 3] [--json out.json]``.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"  # before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import ttest_rel  # noqa: E402
from sklearn.datasets import load_digits, load_svmlight_file  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_select import (  # noqa: E402
    DATASETS,
    compile_kernelcv,
    grid_for,
    run_kernelcv,
    run_sklearn,
    write_split,
)
from kernelcv.validation import make_folds  # noqa: E402

SHARED_SETS = {"glass": "libsvm/glass.scale.svm", "iris": "other/iris_libsvm_spark.svm",
               "vehicle": "libsvm/vehicle.scale.svm", "vowel": "libsvm/vowel.scale.svm",
               "wine": "libsvm/wine.scale.svm"}
SETS = [*SHARED_SETS, "digits"]
FOLDS = 10


def load(name):
    """(X, y) of a set, or None when its file is absent."""
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X / 16.0, y.astype(np.float64)
    path = DATASETS / SHARED_SETS[name]
    if not path.exists():
        return None
    X, y = load_svmlight_file(str(path))
    return X.toarray(), y


def run_split(name, seed, X, y, args, directory):
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y,
                                              random_state=seed)
    n = y_tr.shape[0]
    gammas, lams, _ = grid_for(name, n, args.quick)
    codes = np.unique(y_tr, return_inverse=True)[1].astype(np.float64)
    folds = make_folds(codes, FOLDS, True, seed)
    files = write_split(directory, X_tr, y_tr, X_te, y_te, folds)
    k = np.unique(y_tr).size
    print(f"\n{name} split {seed}: train {n} x {X.shape[1]}, {k} classes, test "
          f"{y_te.shape[0]}, {len(gammas)} gamma x {len(lams)} lam, {FOLDS} folds",
          flush=True)
    row = {"set": name, "split": seed, "n": n, "classes": k, "runs": {}}
    # every tool once per round, rounds interleaved; each tool's fastest round is kept (the
    # machine's speed drifts within a run: see --repeats)
    for _ in range(args.repeats):
        if not args.skip_peers:
            for kind in ("grid", "halving"):
                if row["runs"].get(kind, {}).get("error"):
                    continue
                try:
                    result = run_sklearn(kind, X_tr, y_tr, X_te, y_te, folds, gammas, lams)
                except ValueError as error:  # Halving refuses sets too small for its schedule
                    row["runs"][kind] = {"seconds": None, "test_error": None,
                                         "error": str(error)}
                    continue
                _keep_fastest(row["runs"], kind, result)
        for scheme in args.schemes:
            result = run_kernelcv("svm", files, gammas, lams, scheme_options(scheme))
            _keep_fastest(row["runs"], scheme, result)
    if not args.skip_peers:
        for kind in ("grid", "halving"):
            result = row["runs"][kind]
            if result.get("error"):
                print(f"  {kind:8s} failed: {result['error']}", flush=True)
                continue
            print(f"  {kind:8s} {result['seconds']:8.2f} s (cpu {result['cpu_seconds']:.2f})"
                  f"{_rounds(result)}  test error {result['test_error']:.4f}", flush=True)
    for scheme in args.schemes:
        result = row["runs"][scheme]
        error = result["test_error"]
        ratio = ""
        if not args.skip_peers:
            for kind, label in (("grid", "GridSearchCV"), ("halving", "Halving")):
                peer = row["runs"][kind]["seconds"]
                if peer is not None:
                    ratio += f"  {label}/kernelcv {peer / result['seconds']:.1f}x"
        print(f"  svm {scheme:4s} {result['seconds']:8.2f} s (cpu {result['cpu_seconds']:.2f})"
              f"{_rounds(result)}  test error "
              f"{'failed' if error is None else f'{error:.4f}'}{ratio}", flush=True)
    return row


def scheme_options(scheme):
    """Command-line options of a ``--schemes`` entry: ``ovo``/``ovr`` (the default method),
    ``rff-ovo``/``rff-ovr`` (``--method rff`` on the same grid and folds)."""
    if scheme.startswith("rff-"):
        return ["--multiclass", scheme[4:], "--method", "rff"]
    return ["--multiclass", scheme]


def _keep_fastest(runs, key, result):
    """Keep the faster of ``result`` and the run already kept for ``key``; every round's
    seconds are listed in ``round_seconds``."""
    kept = runs.get(key)
    rounds = (kept["round_seconds"] if kept else []) + [result["seconds"]]
    if kept is None or result["seconds"] < kept["seconds"]:
        kept = result
    runs[key] = {**kept, "round_seconds": rounds}


def _rounds(result):
    seconds = result.get("round_seconds", [])
    return "" if len(seconds) < 2 else " (rounds " + ", ".join(f"{s:.2f}" for s in seconds) + ")"


def _median(rows, key, field="seconds"):
    values = [r["runs"][key][field] for r in rows if key in r["runs"]
              and r["runs"][key][field] is not None]
    return statistics.median(values) if values else None


def _mean(rows, key):
    values = [r["runs"][key]["test_error"] for r in rows if key in r["runs"]
              and r["runs"][key]["test_error"] is not None]
    return float(np.mean(values)) if values else None


def _fmt(value, spec=".2f"):
    return "-" if value is None else f"{value:{spec}}"


def tables(rows, schemes, peers):
    keys = (["grid", "halving"] if peers else []) + list(schemes)
    head = ["set (n, k)"] + [f"{k} s" for k in keys]
    if peers:
        head += [f"GS/{s}" for s in schemes] + [f"Halving/{s}" for s in schemes]
    head += [f"err {k}" for k in keys]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in dict.fromkeys(r["set"] for r in rows):
        group = [r for r in rows if r["set"] == name]
        med = {k: _median(group, k) for k in keys}
        cells = [f"{name} ({group[0]['n']}, {group[0]['classes']})"]
        cells += [_fmt(med[k]) for k in keys]
        if peers:
            for peer in ("grid", "halving"):
                cells += [_fmt(med[peer] / med[s], ".1f") + "x" if med[s] and med[peer]
                          else "-" for s in schemes]
        cells += [_fmt(_mean(group, k), ".4f") for k in keys]
        lines.append("| " + " | ".join(cells) + " |")
    if peers:
        lines.append("")
        lines.append("| scheme | pairs | mean error kernelcv - GridSearchCV | p (one-sided) |")
        lines.append("|---|---|---|---|")
        for s in schemes:
            pairs = [(r["runs"][s]["test_error"], r["runs"]["grid"]["test_error"])
                     for r in rows if r["runs"].get(s, {}).get("test_error") is not None
                     and r["runs"]["grid"]["test_error"] is not None]
            ours, theirs = np.array(pairs).T if pairs else (np.array([]), np.array([]))
            p = "n/a"
            if len(pairs) >= 2 and np.any(ours != theirs):
                p = f"{ttest_rel(ours, theirs, alternative='greater').pvalue:.3f}"
            diff = _fmt(float(np.mean(ours - theirs)) if pairs else None, "+.4f")
            lines.append(f"| {s} | {len(pairs)} | {diff} | {p} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=SETS, choices=SETS)
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--schemes", nargs="+", default=["ovo", "ovr"],
                        choices=["ovo", "ovr", "rff-ovo", "rff-ovr"],
                        help="rff-ovo / rff-ovr: method rff (random-feature CV, then its "
                             "exact refinement) with that scheme")
    parser.add_argument("--quick", action="store_true", help="11 x 8 sub-grid")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--repeats", type=int, default=1,
                        help="time every tool this many times per split (rounds "
                             "interleaved) and keep each tool's fastest (default 1)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    compile_kernelcv()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets:
            data = load(name)
            if data is None:
                print(f"{name}: {SHARED_SETS[name]} not under {DATASETS}; skipped")
                continue
            for seed in range(args.splits):
                rows.append(run_split(name, seed, *data, args, Path(tmp)))
    print("\n" + tables(rows, args.schemes, not args.skip_peers))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
