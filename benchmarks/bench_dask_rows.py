"""Random-feature selection by rows on a Dask LocalCluster against the same command in memory.

Issue 42's protocol: a dense svmlight file of n x 20 rows with a nonlinear boundary
(written under --tmp, never into the repository), then

    kernelcv select FILE --machine svm --method rff --features 100 --folds 5
                    --final linear --save-model MODEL --no-progress

in memory and with ``--scheduler`` on LocalClusters of 1, 2 and 4 worker processes (one
thread each, ``--worker-memory`` each; the cluster is started before the clock starts,
as a user's cluster would be). Each run is a child process (its own BLAS and allocator
state). The table: wall seconds of the command (read, search, final model, save), the
ratio to the in-memory run, the choice, the CV error and its difference from the
in-memory one (which must be below 1e-8), and the time by phase: reading the file,
scattering the partitions, the passes of the search on the workers (Newton, line search,
sums) and the final model, from timers around those functions in the child.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_dask_rows.py
[--sizes 500000,2000000] [--workers 1,2,4] [--tmp /tmp/kernelcv-dask]``; ``--stream``
adds ``--stream`` to the command (with ``--no-memory``: the cluster runs only, since the
squared hinge read from the file in this process rereads it at every pass).
The load average is printed with each row: timings on a shared machine vary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

COMMAND = ["--machine", "svm", "--method", "rff", "--features", "100", "--folds", "5",
           "--final", "linear", "--no-progress"]


def load_avg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def write_data(n: int, folder: Path) -> Path:
    """n x 20 standard normal rows, y = sign(x0 - x1^2 + 0.5 noise + 1), as svmlight."""
    from sklearn.datasets import dump_svmlight_file

    path = folder / f"nonlinear_{n}.svm"
    if not path.exists():
        rng = np.random.default_rng(3)
        X = rng.normal(size=(n, 20))
        y = np.where(X[:, 0] - X[:, 1] ** 2 + 0.5 * rng.normal(size=n) > -1.0, 1, -1)
        dump_svmlight_file(X, y, str(path) + ".part")
        os.replace(str(path) + ".part", path)
    return path


class Phases:
    """Wall seconds inside named functions (wrapped in place; nested calls count once)."""

    def __init__(self):
        self.seconds, self.calls = {}, {}

    def wrap(self, owner, name, label, classmethod_=False):
        original = getattr(owner, name)
        phases = self

        def timed(*args, **kwargs):
            tic = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                phases.seconds[label] = phases.seconds.get(label, 0.0) + \
                    time.perf_counter() - tic
                phases.calls[label] = phases.calls.get(label, 0) + 1

        if classmethod_:
            setattr(owner, name, staticmethod(timed))
        else:
            setattr(owner, name, timed)


def one(args):
    """One run of the command in this process: prints a JSON line."""
    from kernelcv.cli import main
    from kernelcv.random_features import dask_rows, resident
    from kernelcv.reports import select as select_report

    phases = Phases()
    phases.wrap(dask_rows.DaskRows, "scatter", "scatter", classmethod_=True)
    phases.wrap(dask_rows.DaskRows, "map_reduce", "sums passes")
    phases.wrap(resident.ResidentPasses, "newton", "newton passes")
    phases.wrap(resident.ResidentPasses, "line_sums", "line passes")
    phases.wrap(select_report, "fit_final", "final model")
    phases.wrap(select_report, "load_data", "read")
    out = Path(args.tmp) / f"out_{args.how}_{os.getpid()}"
    out.mkdir(parents=True, exist_ok=True)
    argv = ["select", args.path, *COMMAND, "--out", str(out),
            "--save-model", str(out / "model.joblib")] + (["--stream"] if args.stream else [])
    cluster = client = None
    if args.how != "memory":
        import dask
        import distributed

        with dask.config.set({"logging": {"distributed": "error"}}):
            cluster = distributed.LocalCluster(n_workers=int(args.how), threads_per_worker=1,
                                               memory_limit=args.worker_memory,
                                               dashboard_address=None)
            client = distributed.Client(cluster)
        argv += ["--scheduler", cluster.scheduler_address]
    tic = time.perf_counter()
    code = main(argv)
    seconds = time.perf_counter() - tic
    if client is not None:
        client.close()
        cluster.close()
    if code:
        raise SystemExit(f"exit {code}")
    report = json.loads((out / "report.json").read_text())
    print(json.dumps({"seconds": seconds, "best": report["best_params"],
                      "cv_error": report["best_cv_error"],
                      "errors": [c["cv_error"] for c in report["candidates"]],
                      "phases": phases.seconds, "calls": phases.calls,
                      "notes": report["notes"]}))


def run_child(path, how, args) -> dict:
    argv = [sys.executable, __file__, "one", "--path", str(path), "--how", how,
            "--tmp", args.tmp, "--worker-memory", args.worker_memory] + \
        (["--stream"] if args.stream else [])
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{how} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="table", choices=["table", "one"])
    parser.add_argument("--sizes", default="500000")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--tmp", default="/tmp/kernelcv-dask")
    parser.add_argument("--worker-memory", default="auto",
                        help="memory limit of each worker (Dask's 'auto': the machine's "
                             "memory shared out)")
    parser.add_argument("--stream", action="store_true",
                        help="add --stream (the client reads the file in blocks)")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the run without a cluster (the first run is then the "
                             "reference of the CV-error differences)")
    parser.add_argument("--path")
    parser.add_argument("--how")
    args = parser.parse_args()
    if args.mode == "one":
        return one(args)
    folder = Path(args.tmp)
    folder.mkdir(parents=True, exist_ok=True)
    print("| n | how | seconds | vs memory | choice (gamma, C) | CV error | max CV diff | "
          "read | scatter | newton | line | sums | final | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        path = write_data(n, folder)
        reference = None
        runs = ([] if args.no_memory else ["memory"]) + args.workers.split(",")
        for how in runs:
            data = run_child(path, how, args)
            if reference is None:
                reference = data
            diff = float(np.max(np.abs(np.subtract(data["errors"], reference["errors"]))))
            p = data["phases"]
            cells = [f"{p.get(k, 0.0):.1f}" for k in
                     ("read", "scatter", "newton passes", "line passes", "sums passes",
                      "final model")]
            label = "memory" if how == "memory" else f"{how} worker" + ("s" if how != "1" else "")
            print(f"| {n:,} | {label} | {data['seconds']:.1f} | "
                  f"{data['seconds'] / reference['seconds']:.2f} | "
                  f"{data['best']['gamma']:.3g}, {data['best']['C']:.3g} | "
                  f"{data['cv_error']:.5f} | {diff:.1e} | {' | '.join(cells)} | {load_avg()} |",
                  flush=True)
            for note in data["notes"]:
                if "Dask" in note:
                    print(f"  note: {note}")


if __name__ == "__main__":
    main()
