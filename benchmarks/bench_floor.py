"""The least a ``kernelcv select`` command can cost on a data set, beside Halving's time.

Issue 14 asks for ``kernelcv select`` to be 5x faster than HalvingGridSearchCV(SVC) in
CLI wall time. This benchmark measures what any such command must spend whatever its
search does, on the same splits, grid and folds as ``bench_select.py``:

* **start-up**: a fresh Python process importing what ``kernelcv select`` and LIBSVM
  (scikit-learn's SVC) need (best of 3);
* **loading**: reading the split's training and test files;
* **final model**: SVC at kernelcv's chosen (gamma, C) fitted on all training rows, with
  the test predictions (best of 2; ``--test`` asks for both);
* **one exact CV**: t SVC fits at that candidate on the split's folds, the least a search
  that checks its choice by refit CV does;

and, in the same run, HalvingGridSearchCV(SVC) and ``kernelcv select --machine svm``
(the latter also gives the chosen candidate). Columns: the floor without any CV (start-up
+ loading + final model) and with one exact CV, against Halving / 5.

Run: ``make bench-floor`` or ``.venv/bin/python benchmarks/bench_floor.py [--datasets
a9a-5000 w8a-5000 ijcnn1-5000] [--seed 0]`` (about 1-2 minutes per set); without
``../shared/datasets`` it says so and exits 0. Not run in CI.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_select import (  # noqa: E402
    DATASETS,
    Loader,
    compile_kernelcv,
    grid_for,
    run_kernelcv,
    run_sklearn,
    thread_env,
    write_split,
)
from kernelcv.reading.files import load_train_test  # noqa: E402
from kernelcv.validation import make_folds  # noqa: E402

IMPORTS = ("import kernelcv.cli.select, kernelcv.reports.select, kernelcv.reading.files, "
           "kernelcv.selection.search, sklearn.svm")


def start_up_seconds(repeats=3):
    """Best wall seconds of a fresh process importing what ``select`` and LIBSVM need."""
    times = []
    for _ in range(repeats):
        tic = time.perf_counter()
        subprocess.run([sys.executable, "-c", IMPORTS], env=thread_env(), check=True)
        times.append(time.perf_counter() - tic)
    return min(times)


def floor_of(name, seed, loader, directory):
    from sklearn.svm import SVC

    X, y, X_test, y_test = loader.split(name, seed)
    gammas, lams, t = grid_for(name, y.shape[0], False)
    folds = make_folds(y, t, True, seed)
    files = write_split(directory, X, y, X_test, y_test, folds)
    halving = run_sklearn("halving", X, y, X_test, y_test, folds, gammas, lams)
    svm = run_kernelcv("svm", files, gammas, lams, [])
    start = start_up_seconds()
    tic = time.perf_counter()
    X_file, y_file, X_test_file, y_test_file = load_train_test(files["train"],
                                                                files["test"])[:4]
    loading = time.perf_counter() - tic
    gamma = float(svm["best"]["gamma"])
    C = 1.0 / (2 * y.shape[0] * float(svm["best"]["lam"]))
    finals = []
    for _ in range(2):
        tic = time.perf_counter()
        SVC(C=C, gamma=gamma).fit(X_file, y_file).predict(X_test_file)
        finals.append(time.perf_counter() - tic)
    tic = time.perf_counter()
    for i in range(int(folds.max()) + 1):
        train = folds != i
        SVC(C=C, gamma=gamma).fit(X_file[train], y_file[train]).predict(X_file[~train])
    cv = time.perf_counter() - tic
    row = {"set": name, "halving": halving["seconds"], "svm": svm["seconds"],
           "start": start, "loading": loading, "final": min(finals), "cv": cv, "folds": t}
    row["floor"] = start + loading + row["final"]
    print(f"{name} split {seed}: Halving {row['halving']:.2f} s (/5 = "
          f"{row['halving'] / 5:.2f}), kernelcv svm {row['svm']:.2f} s; start-up "
          f"{start:.2f} + loading {loading:.2f} + final model {row['final']:.2f} = "
          f"{row['floor']:.2f} s; one exact {t}-fold CV {cv:.2f} s", flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["a9a-5000", "w8a-5000",
                                                           "ijcnn1-5000"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=DATASETS)
    args = parser.parse_args()
    if not (args.data_dir / "libsvm").is_dir():
        print(f"{args.data_dir / 'libsvm'} not found: no shared data sets, benchmark skipped")
        return 0
    loader = Loader(args.data_dir)
    compile_kernelcv()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_floor_") as tmp:
        for name in args.datasets:
            if not loader.exists(name):
                print(f"{name}: not found under {args.data_dir / 'libsvm'}, skipped")
                continue
            rows.append(floor_of(name, args.seed, loader, Path(tmp)))
    print("\n| set | Halving s | Halving ÷ 5 | `svm` s | start-up | loading | final model | "
          "floor without CV | one exact CV | floor with one CV |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['set']} | {r['halving']:.2f} | {r['halving'] / 5:.2f} | {r['svm']:.2f} | "
              f"{r['start']:.2f} | {r['loading']:.2f} | {r['final']:.2f} | {r['floor']:.2f} | "
              f"{r['cv']:.2f} | {r['floor'] + r['cv']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
