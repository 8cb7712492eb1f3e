"""Seconds against n, 1,000 to 20,000 rows: kernelcv select against HalvingGridSearchCV,
GridSearchCV (SVC) and TorchKM on the CPU (issue 37's figure).

Subsamples of a LIBSVM set (``--set``, default ijcnn1; training rows drawn from its
training file, 5,000 test rows from its test file, per seed, as bench_select.py draws
them) or TorchKM's simulated data (``--set torchkm-p10`` / ``torchkm-p1000``: its Table 2
generator, 5 Gaussian clusters per class in p dimensions, standardized, n/10 test rows,
drawn per seed by ``torchkm_runner.py --data-only`` in ``--torchkm-python``), the
same grid for every grid search -- the random-features paper's 13 gamma
(2^-15, 2^-13, ..., 2^9) x 11 C (2^-5, 2^-3, ..., 2^15) -- and the same 5 stratified folds
(``kernelcv.validation.make_folds``, seed = the split's). One BLAS thread everywhere.

* ``kernelcv``: ``kernelcv select TRAIN --machine svm --fold-ids F --gamma-grid ...
  --C-grid ... --test TEST --json`` as a user runs it (a subprocess; start-up, reading,
  search, final model and test included) with its default method, which is chosen by
  size (``--memory-budget``, default the machine's: above it the low-rank feature space;
  ``--kernelcv-args`` adds options, e.g. ``"--method rff"``);
* ``Halving``: ``HalvingGridSearchCV(SVC(cache_size=1000))``, factor 3, ``fit`` seconds;
* ``GridSearchCV(SVC(cache_size=1000))``: run up to ``--grid-max-n`` rows; above, its
  seconds are extrapolated from the two largest runs (a power law in n; marked "~");
* ``TorchKM`` (``--torchkm-python``, a Python with torch and torchkm): its own protocol
  on the same rows and folds -- 50 C at its one ``sigest`` width, not the grid -- up to
  ``--torchkm-max-n`` rows.

Printed: per (n, seed) the seconds and test errors, then medians per n with the ratios
and a paired t-test of the test errors over the seeds (kernelcv worse than each peer);
``--json`` keeps every number, ``--png`` draws seconds against n (log-log).

    python benchmarks/bench_large.py --sizes 1000 2000 5000 10000 20000 --seeds 0 1 2 \
        --torchkm-python /tmp/tkm/bin/python --png docs/figures/large_n_scaling.png
    python benchmarks/bench_large.py --set torchkm-p10 --sizes 5000 10000 --seeds 0 1 2 \
        --grid-max-n 0 --torchkm-max-n 0 --torchkm-python /tmp/tkm/bin/python
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats
from sklearn.datasets import dump_svmlight_file
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.model_selection import GridSearchCV, HalvingGridSearchCV, PredefinedSplit
from sklearn.svm import SVC

from bench_select import LARGE_SOURCES, Loader, thread_env
from kernelcv.random_features.linear_cv import paper_cs, paper_gammas
from kernelcv.validation import make_folds

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
RUNNER = Path(__file__).with_name("torchkm_runner.py")
FOLDS = 5
# TorchKM's simulated data: set name -> dimension p
TORCHKM_SETS = {"torchkm-p10": 10, "torchkm-p1000": 1000}


def grid_text(values):
    return ",".join(repr(float(v)) for v in values)


def run_kernelcv(folder, X, y, X_test, y_test, folds, extra):
    train, test, fold_file = folder / "train.svm", folder / "test.svm", folder / "folds.txt"
    dump_svmlight_file(X, y, str(train))
    dump_svmlight_file(X_test, y_test, str(test))
    fold_file.write_text("\n".join(str(int(f)) for f in folds) + "\n")
    command = [sys.executable, "-m", "kernelcv", "select", str(train), "--machine", "svm",
               "--fold-ids", str(fold_file), "--gamma-grid", grid_text(paper_gammas()),
               "--C-grid", grid_text(paper_cs()), "--test", str(test), "--json",
               "--no-progress", *extra]
    tic = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=thread_env(),
                          check=False)
    seconds = time.perf_counter() - tic
    if done.returncode != 0:
        sys.exit(f"kernelcv select failed: {done.stderr.strip()}")
    report = json.loads(done.stdout)
    return {"seconds": seconds, "test_error": report["test_error"],
            "method": report["method"], "choice": [report["best_params"].get("gamma"),
                                                    report["best_params"].get("C")]}


def run_sklearn(cls, X, y, X_test, y_test, folds, seed):
    grid = {"gamma": list(paper_gammas()), "C": list(paper_cs())}
    options = {"random_state": seed} if cls is HalvingGridSearchCV else {}
    search = cls(SVC(cache_size=1000), grid, cv=PredefinedSplit(folds), **options)
    tic = time.perf_counter()
    search.fit(X, y)
    seconds = time.perf_counter() - tic
    return {"seconds": seconds, "test_error": float(np.mean(search.predict(X_test) != y_test)),
            "choice": [search.best_params_["gamma"], search.best_params_["C"]]}


def run_torchkm(python, folder, X, y, X_test, y_test, folds):
    data = folder / "torchkm.npz"
    np.savez(data, X=X, y=y, X_test=X_test, y_test=y_test, folds=folds)
    done = subprocess.run([python, str(RUNNER), "--data", str(data)], capture_output=True,
                          text=True, env=thread_env(), check=False)
    if done.returncode != 0:
        sys.exit(f"TorchKM failed: {done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"seconds": result["seconds"], "test_error": result["test_error"],
            "choice": [2.0 * result["sig"], result["C"]]}


def torchkm_data(python, n, p, seed, folder):
    """TorchKM's Table 2 data of n training rows (and n/10 test rows) in p dimensions,
    drawn by its own generator for ``seed``: ``(X, y, X_test, y_test)``, labels +-1."""
    data = folder / f"torchkm_{n}_{p}_{seed}.npz"
    done = subprocess.run([python, str(RUNNER), str(n), str(p), str(seed), str(data),
                           "--data-only"], capture_output=True, text=True, env=thread_env(),
                          check=False)
    if done.returncode != 0:
        sys.exit(f"TorchKM's generator failed: {done.stderr[-2000:]}")
    given = np.load(data)
    return given["X"], given["y"], given["X_test"], given["y_test"]


def extrapolate(measured, n):
    """Seconds at n from the two largest measured (n, seconds): a power law."""
    (n1, s1), (n2, s2) = sorted(measured)[-2:]
    exponent = np.log(s2 / s1) / np.log(n2 / n1)
    return float(s2 * (n / n2) ** exponent)


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for tool in sorted({r["tool"] for r in rows}):
        by_n = {}
        for r in rows:
            if r["tool"] == tool:
                by_n.setdefault(r["n"], []).append((r["seconds"], r.get("extrapolated")))
        ns = sorted(by_n)
        seconds = [float(np.median([s for s, _ in by_n[n]])) for n in ns]
        guessed = [any(e for _, e in by_n[n]) for n in ns]
        line, = ax.plot([n for n, g in zip(ns, guessed, strict=True) if not g],
                        [s for s, g in zip(seconds, guessed, strict=True) if not g], marker="o",
                        label=tool)
        if any(guessed):
            first = max((i for i, g in enumerate(guessed) if not g), default=0)
            ax.plot(ns[first:], seconds[first:], linestyle="--", color=line.get_color(),
                    label=f"{tool} (extrapolated)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training rows n")
    ax.set_ylabel("seconds (one BLAS thread)")
    ax.set_title("RBF SVM, 13 γ × 11 C, 5 folds (TorchKM: 50 C, one γ)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="ijcnn1",
                        choices=sorted(LARGE_SOURCES) + sorted(TORCHKM_SETS))
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--grid-max-n", type=int, default=2000,
                        help="GridSearchCV runs up to this n, extrapolated above")
    parser.add_argument("--torchkm-python", help="a Python with torch and torchkm")
    parser.add_argument("--torchkm-max-n", type=int, default=5000)
    parser.add_argument("--kernelcv-args", default="", help="extra kernelcv select options")
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--json")
    parser.add_argument("--png")
    args = parser.parse_args()
    loader = Loader(args.data_dir)
    simulated = args.set in TORCHKM_SETS
    if simulated and not args.torchkm_python:
        sys.exit(f"--set {args.set} draws TorchKM's data: give --torchkm-python")
    if not simulated and not loader.exists(f"{args.set}-{args.sizes[0]}"):
        print(f"{args.data_dir} has no {args.set} files: nothing to run")
        return
    rows = []
    for n in args.sizes:
        for seed in args.seeds:
            results = {}
            with tempfile.TemporaryDirectory() as tmp:
                if simulated:
                    X, y, X_test, y_test = torchkm_data(args.torchkm_python, n,
                                                        TORCHKM_SETS[args.set], seed, Path(tmp))
                else:
                    X, y, X_test, y_test = loader.split(f"{args.set}-{n}", seed)
                folds = make_folds(y, FOLDS, True, seed)
                results["kernelcv"] = run_kernelcv(Path(tmp), X, y, X_test, y_test, folds,
                                                   args.kernelcv_args.split())
                results["Halving"] = run_sklearn(HalvingGridSearchCV, X, y, X_test, y_test,
                                                 folds, seed)
                if n <= args.grid_max_n:
                    results["GridSearchCV"] = run_sklearn(GridSearchCV, X, y, X_test,
                                                          y_test, folds, seed)
                if args.torchkm_python and n <= args.torchkm_max_n:
                    results["TorchKM (50 C, one γ)"] = run_torchkm(
                        args.torchkm_python, Path(tmp), X, y, X_test, y_test, folds)
            print(f"\nn = {n}, seed {seed}")
            for tool, r in results.items():
                print(f"  {tool:>22}: {r['seconds']:8.2f} s  test error {r['test_error']:.4f}"
                      f"  choice {r['choice']}" + (f"  ({r['method']})" if "method" in r
                                                   else ""))
                rows.append({"n": n, "seed": seed, "tool": tool, **r})
    grid_runs = [(r["n"], r["seconds"]) for r in rows if r["tool"] == "GridSearchCV"]
    if len({n for n, _ in grid_runs}) >= 2:
        medians = {}
        for n, s in grid_runs:
            medians.setdefault(n, []).append(s)
        points = [(n, float(np.median(v))) for n, v in medians.items()]
        for n in args.sizes:
            if n > args.grid_max_n:
                rows.append({"n": n, "seed": None, "tool": "GridSearchCV",
                             "seconds": extrapolate(points, n), "test_error": None,
                             "extrapolated": True})
    print("\nmedians (seconds; ratios peer / kernelcv; test errors)")
    for n in args.sizes:
        here = [r for r in rows if r["n"] == n]
        ours = float(np.median([r["seconds"] for r in here if r["tool"] == "kernelcv"]))
        parts = [f"n = {n}: kernelcv {ours:.1f} s"]
        for tool in sorted({r["tool"] for r in here} - {"kernelcv"}):
            seconds = float(np.median([r["seconds"] for r in here if r["tool"] == tool]))
            mark = "~" if any(r.get("extrapolated") for r in here if r["tool"] == tool) else ""
            parts.append(f"{tool} {mark}{seconds:.1f} s ({seconds / ours:.2f}x)")
        print("  " + ", ".join(parts))
        for tool in ("Halving", "GridSearchCV"):
            pairs = [(a["test_error"], b["test_error"]) for a in here for b in here
                     if a["tool"] == "kernelcv" and b["tool"] == tool
                     and a["seed"] == b["seed"] and b["test_error"] is not None]
            if pairs:
                ours_e, theirs = np.array(pairs).T
                p = (stats.ttest_rel(ours_e, theirs, alternative="greater").pvalue
                     if len(pairs) > 1 and np.any(ours_e != theirs) else float("nan"))
                print(f"    test error kernelcv {ours_e.mean():.4f} vs {tool} "
                      f"{theirs.mean():.4f} over {len(pairs)} seeds, p(kernelcv worse) = "
                      f"{p:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.png:
        plot(rows, args.png)


if __name__ == "__main__":
    main()
