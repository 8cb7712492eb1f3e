"""Model selection of SVMs: ``kernelcv select`` against GridSearchCV and HalvingGridSearchCV.

The benchmark of issue 14. For each LIBSVM binary set under ../shared/datasets/libsvm
(skipped with a message when absent) and each split:

* data: the shared sets whose training half has at most 1,000 rows (SMALL_SETS; the
  ``*_scale`` version where both exist), split in stratified halves with seed s for
  s = 0..``--splits``-1 (default 1 split); and subsamples of a9a, w8a and ijcnn1: a
  stratified training set of 2,000 rows (and, with ``--large``, 5,000) drawn from the
  training file and a stratified test set of 5,000 rows drawn from the ``.t`` file
  (a9a.t, ijcnn1.t; w8a has none, so its test rows are drawn from w8a, disjoint from the
  training rows), ``--subsample-splits`` seeds (default 5);
* grid: the default 21 gamma (sigma = 2^-10..2^10, gamma = 1/(2 sigma^2)) x 15 lam
  (lam = 2^i/n, i = -3..11) of :mod:`kernelcv.selection.space.grids`, 10 stratified folds from
  :func:`kernelcv.validation.make_folds` (seed = the split's seed); for the 5,000-row
  subsamples (and ``--quick``) the 11 x 8 sub-grid gammas[5:16] x lams[::2], and 5 folds
  for the 5,000-row subsamples;
* scikit-learn: ``GridSearchCV(SVC)`` and ``HalvingGridSearchCV(SVC)`` (factor 3,
  resource n_samples, random_state 0) on the same grid with C = 1/(2 n lam) and the
  same folds (``PredefinedSplit``), in this process; seconds of ``fit`` (refit included);
* kernelcv: the command line as a user runs it, ``kernelcv select TRAIN --machine M
  --fold-ids FOLDS --gamma-grid ... --lam-grid ... --test TEST --json --no-progress``
  (plus ``--extra-args``) for each machine of ``--machines`` (default svm l2svm), timed
  with ``time.perf_counter`` around ``subprocess.run``: the whole process, start-up,
  reading the files, the search, the final fit and the test prediction included. Its
  test error and per-stage seconds (every ``*_seconds`` key of the report's
  ``timings``) come from the JSON report;
* limit: the seconds to fit every grid point once on all the training data with
  kernelcv's own solver (Gram matrix per gamma, warm starts along descending lam, no CV)
  -- what any CV method costs at least (about 1/t of exact refit CV);
* ratios GridSearchCV / kernelcv, Halving / kernelcv and kernelcv / limit.

Every timed run has OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = 1 (set
below before numpy is imported, and passed to the kernelcv process). Split files are
written as svmlight to a temporary directory (never into the repository).

Statistics: per set group (each set, all small sets together, the 2,000-row and the
5,000-row subsamples) and machine, a paired t-test over (set, split) pairs
(``scipy.stats.ttest_rel``, alternative "greater": kernelcv's test error above
GridSearchCV's); "n/a" with fewer than two pairs.

Output: progress lines, then a Markdown table (one row per set: median seconds over the
splits, ratios of the medians, mean test errors, limit, per-stage medians) and the t-test
table; ``--json PATH`` writes all raw numbers.

Run: ``make bench-select`` (hours) or ``.venv/bin/python benchmarks/bench_select.py
[--quick] [--datasets heart_scale a9a-2000 ...] [--splits 5] [--large] [--skip-peers |
--peers halving]
[--machines svm] [--extra-args "--confirm 1"] [--json results.json]``.
"""

from __future__ import annotations

import os

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
for _name in THREAD_VARS:  # before numpy / scipy / scikit-learn are imported
    os.environ[_name] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import ttest_rel  # noqa: E402
from sklearn.datasets import dump_svmlight_file, load_svmlight_file, load_svmlight_files  # noqa: E402
from sklearn.experimental import enable_halving_search_cv  # noqa: E402, F401
from sklearn.model_selection import (  # noqa: E402
    GridSearchCV,
    HalvingGridSearchCV,
    PredefinedSplit,
    train_test_split,
)
from sklearn.svm import SVC  # noqa: E402

from kernelcv.kernels import GramFactory, make_kernel  # noqa: E402
from kernelcv.machines import make_machine  # noqa: E402
from kernelcv.selection.space.grids import default_gammas, default_lams  # noqa: E402
from kernelcv.validation import make_folds  # noqa: E402

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
# The shared binary sets whose stratified training half has at most 1,000 rows.
SMALL_SETS = ["australian_scale", "breast-cancer_scale", "diabetes_scale",
              "fourclass_scale", "german.numer_scale", "heart_scale", "ionosphere_scale",
              "liver-disorders_scale", "sonar_scale", "a1a"]
QUICK_SETS = ["heart_scale", "ionosphere_scale"]
# Large sets: (training file, test file or None = disjoint rows of the training file).
LARGE_SOURCES = {"a9a": ("a9a.svm.gz", "a9a.t.svm.gz"), "w8a": ("w8a.svm.gz", None),
                 "ijcnn1": ("ijcnn1.svm.gz", "ijcnn1.t.svm.gz")}
SUBSAMPLE_TEST = 5000
FOLDS = 10
LARGE_FOLDS = 5  # the 5,000-row subsamples


def subsample_sets(large):
    sizes = (2000, 5000) if large else (2000,)
    return [f"{name}-{size}" for size in sizes for name in LARGE_SOURCES]


def _binary(y):
    return np.where(y > np.min(y), 1.0, -1.0)


class Loader:
    """Reads each shared file once; gives (X, y, X_test, y_test) per set and seed."""

    def __init__(self, root):
        self.libsvm = root / "libsvm"
        self._cache = {}

    def _files(self, *names):
        key = tuple(names)
        if key not in self._cache:
            paths = [str(self.libsvm / name) for name in names]
            arrays = load_svmlight_files(paths) if len(paths) > 1 else load_svmlight_file(
                paths[0])
            self._cache[key] = arrays
        return self._cache[key]

    def exists(self, name):
        if "-" in name and name.split("-")[0] in LARGE_SOURCES:
            train, test = LARGE_SOURCES[name.split("-")[0]]
            return all((self.libsvm / f).exists() for f in (train, test) if f)
        return (self.libsvm / f"{name}.svm").exists()

    def split(self, name, seed):
        base, _, size = name.rpartition("-")
        if base in LARGE_SOURCES:
            return self._subsample(base, int(size), seed)
        X, y = self._files(f"{name}.svm")
        X, y = X.toarray(), _binary(y)
        X, X_test, y, y_test = train_test_split(X, y, test_size=0.5, stratify=y,
                                                random_state=seed)
        return X, y, X_test, y_test

    def _subsample(self, base, size, seed):
        train_file, test_file = LARGE_SOURCES[base]
        if test_file is None:
            X_all, y_all = self._files(train_file)
            y_all = _binary(y_all)
            rest, test = train_test_split(np.arange(y_all.size), test_size=SUBSAMPLE_TEST,
                                          stratify=y_all, random_state=seed)
            train, _ = train_test_split(rest, train_size=size, stratify=y_all[rest],
                                        random_state=seed)
            X_tr, y_tr, X_te, y_te = X_all, y_all, X_all, y_all
        else:
            X_tr, y_tr, X_te, y_te = self._files(train_file, test_file)
            y_tr, y_te = _binary(y_tr), _binary(y_te)
            train, _ = train_test_split(np.arange(y_tr.size), train_size=size,
                                        stratify=y_tr, random_state=seed)
            test, _ = train_test_split(np.arange(y_te.size), train_size=SUBSAMPLE_TEST,
                                       stratify=y_te, random_state=seed)
        return (X_tr[train].toarray(), y_tr[train], X_te[test].toarray(), y_te[test])


def grid_for(name, n, quick):
    gammas, lams = default_gammas(), default_lams(n)
    large = name.endswith("-5000")
    if quick or large:
        gammas, lams = gammas[5:16], lams[::2]
    return gammas, lams, LARGE_FOLDS if large else FOLDS


def thread_env():
    """The kernelcv process's environment: one BLAS thread, and bytecode caching on.

    ``PYTHONDONTWRITEBYTECODE`` (set in some development shells) would make every
    kernelcv process recompile its ~60 modules (~0.08 s), which an installed package
    never does; :func:`compile_kernelcv` writes the bytecode once before any timing.
    """
    env = {**os.environ, **{name: "1" for name in THREAD_VARS}}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_kernelcv():
    """Write kernelcv's bytecode caches (as ``pip install`` does) before timing it."""
    import compileall

    import kernelcv

    compileall.compile_dir(Path(kernelcv.__file__).parent, quiet=1)


def kernelcv_command():
    script = Path(sys.executable).with_name("kernelcv")
    if script.exists():
        return [str(script)]
    found = shutil.which("kernelcv")
    return [found] if found else [sys.executable, "-m", "kernelcv"]


def grid_text(values):
    return ",".join(repr(float(v)) for v in values)  # repr: shortest exact round trip


def run_kernelcv(machine, files, gammas, lams, extra):
    command = [*kernelcv_command(), "select", str(files["train"]), "--machine", machine,
               "--fold-ids", str(files["folds"]), "--gamma-grid", grid_text(gammas),
               "--lam-grid", grid_text(lams), "--test", str(files["test"]), "--json",
               "--no-progress", *extra]
    tic, cpu = time.perf_counter(), children_cpu_seconds()
    done = subprocess.run(command, env=thread_env(), capture_output=True, text=True,
                          check=False)
    seconds = time.perf_counter() - tic
    cpu_seconds = children_cpu_seconds() - cpu
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        print(f"    kernelcv {machine} failed (exit {done.returncode}): {message}",
              flush=True)
        return {"seconds": seconds, "cpu_seconds": cpu_seconds, "test_error": None,
                "stages": {}, "error": message}
    report = json.loads(done.stdout[done.stdout.index("{"):])
    stages = {key: float(value) for key, value in report.get("timings", {}).items()
              if key.endswith("_seconds") and value is not None}
    best = report.get("best_params") or report.get("best")
    return {"seconds": seconds, "cpu_seconds": cpu_seconds,
            "test_error": report.get("test_error"), "stages": stages, "best": best}


def children_cpu_seconds():
    """User + system CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# The scikit-learn searches the benchmark can run: kind -> (ratio label, column label,
# name).
PEERS = {"grid": ("GS", "GridSearchCV", "GridSearchCV(SVC)"),
         "halving": ("Halving", "Halving", "HalvingGridSearchCV(SVC)")}


def run_sklearn(kind, X, y, X_test, y_test, folds, gammas, lams):
    n = y.shape[0]
    grid = {"gamma": list(gammas), "C": [1.0 / (2 * n * lam) for lam in lams]}
    cv = PredefinedSplit(folds)
    if kind == "grid":
        search = GridSearchCV(SVC(kernel="rbf"), grid, cv=cv)
    else:
        search = HalvingGridSearchCV(SVC(kernel="rbf"), grid, factor=3, cv=cv,
                                     resource="n_samples", random_state=0)
    tic, cpu = time.perf_counter(), time.process_time()
    search.fit(X, y)
    seconds, cpu_seconds = time.perf_counter() - tic, time.process_time() - cpu
    error = float(np.mean(search.predict(X_test) != y_test))
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "test_error": error,
            "best": search.best_params_}


def limit_seconds(machine, X, y, gammas, lams):
    """One fit per grid point on all the data, warm-started along descending lam."""
    spec = make_machine(machine)
    tic = time.perf_counter()
    factory = GramFactory(X)
    for gamma in gammas:
        K = factory.gram(make_kernel("rbf", gamma))
        alpha, intercept = None, 0.0
        for lam in sorted(lams, reverse=True):
            fit = spec.fit(K, y, lam, alpha0=alpha, intercept0=intercept)
            alpha, intercept = fit.alpha, fit.intercept
    return time.perf_counter() - tic


def write_split(directory, X, y, X_test, y_test, folds):
    files = {"train": directory / "train.svm", "test": directory / "test.svm",
             "folds": directory / "folds.txt"}
    dump_svmlight_file(X, y, str(files["train"]), zero_based=False)
    dump_svmlight_file(X_test, y_test, str(files["test"]), zero_based=False)
    np.savetxt(files["folds"], folds, fmt="%d")
    return files


def run_split(name, seed, data, args, extra, directory):
    X, y, X_test, y_test = data
    n, d = X.shape
    gammas, lams, t = grid_for(name, n, args.quick)
    folds = make_folds(y, t, True, seed)
    files = write_split(directory, X, y, X_test, y_test, folds)
    print(f"\n{name} split {seed}: train {n} x {d}, test {X_test.shape[0]}, "
          f"{len(gammas)} gamma x {len(lams)} lam, {t} folds", flush=True)
    row = {"set": name, "split": seed, "n": n, "d": d, "n_test": int(X_test.shape[0]),
           "grid": [len(gammas), len(lams)], "folds": t, "machines": {}}
    for kind in args.peers:
        label = PEERS[kind][2]
        result = run_sklearn(kind, X, y, X_test, y_test, folds, gammas, lams)
        row[kind] = result
        print(f"  {label:26s} {result['seconds']:8.2f} s (cpu {result['cpu_seconds']:.2f})"
              f"  test error "
              f"{result['test_error']:.4f}  best {result['best']}", flush=True)
    for machine in args.machines:
        result = run_kernelcv(machine, files, gammas, lams, extra)
        result["limit_seconds"] = limit_seconds(machine, X, y, gammas, lams)
        row["machines"][machine] = result
        stages = ", ".join(f"{k[:-8]} {v:.2f}" for k, v in result["stages"].items())
        error = result["test_error"]
        error_text = "failed" if error is None else f"{error:.4f}"
        ratios = "".join(f"  {PEERS[kind][1]}/kernelcv "
                         f"{row[kind]['seconds'] / result['seconds']:.1f}x" for kind in args.peers)
        print(f"  kernelcv select {machine:9s} {result['seconds']:8.2f} s "
              f"(cpu {result['cpu_seconds']:.2f})  test error "
              f"{error_text}  limit {result['limit_seconds']:.2f} s "
              f"(kernelcv/limit {result['seconds'] / result['limit_seconds']:.1f}x)"
              f"{ratios}\n    stages: {stages}", flush=True)
    return row


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _mean(values):
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def _fmt(value, spec=".2f", suffix=""):
    return "–" if value is None else f"{value:{spec}}{suffix}"


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def summary_table(rows, machines, peers):
    """One row per set; ``peers`` the scikit-learn searches run (keys of :data:`PEERS`)."""
    names = list(dict.fromkeys(row["set"] for row in rows))
    short = [PEERS[kind][0] for kind in peers]
    header = ["set", "n", "d", "splits"] + [f"{PEERS[kind][1]} s" for kind in peers]
    for m in machines:
        header += [f"{m} s"] + [f"{label}/{m}" for label in short]
        header += [f"{m} limit s", f"{m}/limit"]
    header += [f"err {label}" for label in short] + [f"err {m}" for m in machines]
    header += [f"{m} stages s" for m in machines]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in names:
        group = [row for row in rows if row["set"] == name]
        cells = [name, str(group[0]["n"]), str(group[0]["d"]), str(len(group))]
        peer_seconds = [_median([r[kind]["seconds"] for r in group]) for kind in peers]
        cells += [_fmt(seconds) for seconds in peer_seconds]
        for m in machines:
            kc = _median([r["machines"][m]["seconds"] for r in group])
            limit = _median([r["machines"][m]["limit_seconds"] for r in group])
            cells.append(_fmt(kc))
            cells += [_fmt(_ratio(seconds, kc), ".1f", "×") for seconds in peer_seconds]
            cells += [_fmt(limit), _fmt(_ratio(kc, limit), ".1f", "×")]
        cells += [_fmt(_mean([r[kind]["test_error"] for r in group]), ".3f") for kind in peers]
        cells += [_fmt(_mean([r["machines"][m]["test_error"] for r in group]), ".3f")
                  for m in machines]
        for m in machines:
            keys = list(dict.fromkeys(k for r in group for k in r["machines"][m]["stages"]))
            cells.append(", ".join(
                f"{k[:-8]} {_median([r['machines'][m]['stages'].get(k) for r in group]):.2f}"
                for k in keys) or "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cpu_table(rows, machines, peers):
    """CPU seconds (user + system) and their ratios: on a machine shared with other jobs
    wall time grows with the load, CPU time of these single-threaded runs much less."""
    names = list(dict.fromkeys(row["set"] for row in rows))
    short = [PEERS[kind][0] for kind in peers]
    header = ["set"] + [f"{PEERS[kind][1]} cpu s" for kind in peers]
    for m in machines:
        header += [f"{m} cpu s"] + [f"{label}/{m} cpu" for label in short]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in names:
        group = [row for row in rows if row["set"] == name]
        peer_cpu = [_median([r[kind].get("cpu_seconds") for r in group]) for kind in peers]
        cells = [name] + [_fmt(cpu) for cpu in peer_cpu]
        for m in machines:
            kc = _median([r["machines"][m].get("cpu_seconds") for r in group])
            cells += [_fmt(kc)] + [_fmt(_ratio(cpu, kc), ".1f", "×") for cpu in peer_cpu]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def groups_of(rows):
    names = list(dict.fromkeys(row["set"] for row in rows))
    groups = [(name, [r for r in rows if r["set"] == name]) for name in names]
    for label, keep in (("all small sets", lambda r: r["set"] in SMALL_SETS),
                        ("subsamples n = 2,000", lambda r: r["set"].endswith("-2000")),
                        ("subsamples n = 5,000", lambda r: r["set"].endswith("-5000"))):
        members = [r for r in rows if keep(r)]
        if len({r["set"] for r in members}) > 1:
            groups.append((label, members))
    return groups


def ttest_table(rows, machines, reference="grid"):
    """Paired t-test per (set group, machine): kernelcv's test error > the ``reference``
    search's (GridSearchCV's, or Halving's when GridSearchCV was not run)?"""
    # The difference beside p: a constant difference of a test point or two makes the t
    # statistic explode (p ~ 1e-28 for 0.04 pp on three subsamples).
    label = PEERS[reference][0]
    lines = [f"| set group | machine | pairs | mean err {label} | mean err kernelcv | "
             "difference (pp) | p (kernelcv worse) | significantly worse at 5 % |",
             "|---|---|---|---|---|---|---|---|"]
    tests = []
    for label, members in groups_of(rows):
        for m in machines:
            pairs = [(r["machines"][m]["test_error"], r[reference]["test_error"])
                     for r in members if r["machines"][m]["test_error"] is not None]
            kc = np.array([p[0] for p in pairs])
            gs = np.array([p[1] for p in pairs])
            if len(pairs) < 2:
                p_value, verdict = None, "n/a"
            elif np.all(kc == gs):
                p_value, verdict = None, "n/a (identical errors)"
            else:
                p_value = float(ttest_rel(kc, gs, alternative="greater").pvalue)
                verdict = "yes" if p_value < 0.05 else "no"
            difference = (100 * float(np.mean(kc - gs))) if pairs else None
            tests.append({"group": label, "machine": m, "pairs": len(pairs),
                          "difference_pp": difference, "p_value": p_value, "worse": verdict})
            lines.append(f"| {label} | {m} | {len(pairs)} | {_fmt(_mean(list(gs)), '.4f')} | "
                         f"{_fmt(_mean(list(kc)), '.4f')} | {_fmt(difference, '+.2f')} | "
                         f"{_fmt(p_value, '.3g')} | {verdict} |")
    return "\n".join(lines), tests


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", metavar="NAME",
                        help=f"sets to run (default: {' '.join(SMALL_SETS)} and the "
                             "subsamples a9a-2000 w8a-2000 ijcnn1-2000; with --large also "
                             "a9a-5000 w8a-5000 ijcnn1-5000)")
    parser.add_argument("--splits", type=int, default=1,
                        help="splits (seeds 0..S-1) of each small set (default 1)")
    parser.add_argument("--subsample-splits", type=int, default=5,
                        help="splits (seeds) of each a9a/w8a/ijcnn1 subsample (default 5)")
    parser.add_argument("--machines", nargs="+", default=["svm", "l2svm"],
                        choices=["svm", "l2svm", "lssvm"])
    parser.add_argument("--large", action="store_true",
                        help="also the 5,000-row subsamples (11 x 8 grid, 5 folds)")
    parser.add_argument("--quick", action="store_true",
                        help="heart_scale and ionosphere_scale, 11 gamma x 8 lam, 1 split")
    parser.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS),
                        help="the scikit-learn searches to run beside kernelcv (default: "
                             "both; GridSearchCV takes 3-8 min per 2,000-row split)")
    parser.add_argument("--skip-peers", action="store_true",
                        help="kernelcv only (no GridSearchCV / HalvingGridSearchCV)")
    parser.add_argument("--extra-args", default="",
                        help='extra arguments of kernelcv select, e.g. "--confirm 1"')
    parser.add_argument("--data-dir", type=Path, default=DATASETS,
                        help=f"the shared datasets directory (default {DATASETS})")
    parser.add_argument("--json", metavar="PATH", type=Path, help="write all raw numbers here")
    args = parser.parse_args()
    if args.skip_peers:
        args.peers = []

    if not (args.data_dir / "libsvm").is_dir():
        print(f"{args.data_dir / 'libsvm'} not found: no shared data sets, benchmark skipped")
        return 0
    if args.quick:
        names, small_splits, large_splits = QUICK_SETS, 1, 1
    else:
        names = args.datasets or SMALL_SETS + subsample_sets(args.large)
        small_splits, large_splits = args.splits, args.subsample_splits
    extra = shlex.split(args.extra_args)
    loader = Loader(args.data_dir)
    compile_kernelcv()
    print(f"kernelcv: {' '.join(kernelcv_command())}; machines {' '.join(args.machines)}; "
          f"threads: " + ", ".join(f"{v}=1" for v in THREAD_VARS), flush=True)

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_select_") as tmp:
        directory = Path(tmp)
        for name in names:
            if not loader.exists(name):
                print(f"{name}: not found under {args.data_dir / 'libsvm'}, skipped")
                continue
            base = name.rpartition("-")[0]
            splits = large_splits if base in LARGE_SOURCES else small_splits
            for seed in range(splits):
                data = loader.split(name, seed)
                rows.append(run_split(name, seed, data, args, extra, directory))

    if not rows:
        print("nothing measured")
        return 0
    peers = args.peers
    print("\nMedian seconds over splits (ratios of the medians), mean test errors (0-1):\n")
    print(summary_table(rows, args.machines, peers))
    tests = []
    if peers:
        print("\nCPU seconds (user + system; less sensitive than wall time to other jobs):\n")
        print(cpu_table(rows, args.machines, peers))
        reference = "grid" if "grid" in peers else "halving"
        table, tests = ttest_table(rows, args.machines, reference)
        print(f"\nPaired t-test over splits, H1: kernelcv's test error > "
              f"{PEERS[reference][2]}'s:\n")
        print(table)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "ttests": tests,
                                         "extra_args": extra}, indent=1, default=str))
        print(f"\nraw numbers written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
