"""Large-n random-feature selection: the default command, out of core and on a cluster.

Sub-commands (ijcnn1 from ../shared/datasets; generated data go to --tmp, never the repo):

``default``  ``kernelcv select ijcnn1.svm.gz --machine svm --method rff --folds 5 --test
             ijcnn1.t.svm.gz`` as a user types it (a child process: wall seconds and peak
             RSS), with the D the adaptive count reached, its path, the choice and the
             test accuracy from report.json.
``scaling``  ijcnn1 replicated to n rows with N(0, 0.01^2) noise on every value (written
             as an uncompressed .npz under --tmp), then for each n, each in a child
             process (peak RSS from getrusage): the search in memory (X loaded), out of
             core (``--stream`` semantics: the .npz read a chunk of rows at a time) and on
             a 2-worker LocalCluster (partitions scattered from the stream); fixed D and a
             reduced grid, so that the time is the cost of the same work at every n. A
             table and ``--png`` (search seconds against n; peak RSS against n).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_rff_large.py MODE [options]``.
Timings on a shared machine vary; the script prints the load average with each row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from kernelcv import Execution, FeatureSpace

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "libsvm"
TRAIN, TEST = SHARED / "ijcnn1.svm.gz", SHARED / "ijcnn1.t.svm.gz"


def load_avg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def child(argv) -> tuple[float, float, str]:
    """Run argv; (wall seconds, getrusage's peak RSS MiB of the child, stdout)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        tic = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - tic
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode:
            raise SystemExit(f"{' '.join(map(str, argv))} failed:\n{err.read()[-2000:]}")
        return seconds, usage.ru_maxrss / 1024, out.read()


def peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM of /proc/self/status, reset by exec, unlike
    getrusage's maxrss, which a child forked from a large parent inherits)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def mode_default(args):
    out = Path(tempfile.mkdtemp(prefix="kernelcv-default-"))
    argv = [sys.executable, "-m", "kernelcv", "select", str(TRAIN), "--machine", "svm",
            "--method", "rff", "--folds", "5", "--test", str(TEST), "--out", str(out),
            "--no-progress"]
    print(f"load {load_avg()}: {' '.join(argv[2:])}")
    for run in range(args.runs):
        seconds, rss, _ = child(argv)
        report = json.loads((out / "report.json").read_text())
        space, t = report["feature_space"], report["timings"]
        best = report["best_params"]
        print(f"run {run + 1}: D = {space['features']} ({space['stop']}; sizes "
              f"{[p['features'] for p in space['path']]}), gamma 2^{np.log2(best['gamma']):.0f}"
              f", C 2^{np.log2(best['C']):.0f}, test accuracy {1 - report['test_error']:.4f};"
              f" wall {seconds:.1f} s (search {t['search_seconds']:.1f}, final SVC "
              f"{t['final_seconds']:.1f}, test {t['test_seconds']:.1f}); peak RSS "
              f"{rss:.0f} MiB; load {load_avg()}", flush=True)


# ------------------------------------------------------------------------ scaling


def replicate(n, folder, seed=0) -> Path:
    """ijcnn1 replicated to n rows plus N(0, 0.01^2) noise, as folder/ijcnn1_{n}.npz
    (uncompressed: written through a memory map, never whole in memory)."""
    path = folder / f"ijcnn1_{n}.npz"
    if path.exists():
        return path
    from kernelcv.reading.files import load_data

    X0, y0 = load_data(TRAIN)
    X0 = X0.toarray()
    rng = np.random.default_rng(seed)
    xpath, ypath = folder / f"X_{n}.npy", folder / f"y_{n}.npy"
    X = np.lib.format.open_memmap(xpath, mode="w+", dtype=np.float64, shape=(n, X0.shape[1]))
    y = np.empty(n)
    for start in range(0, n, 100_000):
        rows = np.arange(start, min(start + 100_000, n)) % X0.shape[0]
        X[start:start + rows.size] = X0[rows] + rng.normal(0.0, 0.01, (rows.size,
                                                                       X0.shape[1]))
        y[start:start + rows.size] = y0[rows]
    X.flush()
    del X
    np.save(ypath, y)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        archive.write(xpath, "X.npy")
        archive.write(ypath, "y.npy")
    xpath.unlink()
    ypath.unlink()
    return path


def search_kwargs(args):
    method = FeatureSpace(features=args.features, feature_map="nystroem",
                          feature_loss="square", refine=False)
    return {"method": method, "gammas": [2.0**k for k in (-3, -1, 1, 3)], "folds": 5}


def mode_one(args):
    """One search in this process (a child of ``scaling``): prints a JSON line."""
    from kernelcv import grid_search
    from kernelcv.reading.rowchunks import NpzSource

    kwargs = search_kwargs(args)
    how = args.how[0]
    if how == "memory":
        with np.load(args.path) as archive:
            X, y = archive["X"], archive["y"]
        tic = time.perf_counter()
        result = grid_search(X, y, "svm", **kwargs)
    elif how == "stream":
        tic = time.perf_counter()
        result = grid_search(NpzSource(args.path), None, "svm", **kwargs)
    else:
        import dask
        import distributed

        with dask.config.set({"distributed.worker.memory.pause": False,
                              "distributed.worker.memory.terminate": False,
                              "logging": {"distributed": "error"}}):
            cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                               memory_limit=args.worker_memory,
                                               dashboard_address=None)
            client = distributed.Client(cluster)
        tic = time.perf_counter()
        result = grid_search(NpzSource(args.path), None, "svm", **kwargs,
                             execution=Execution(scheduler=client))
        seconds = time.perf_counter() - tic
        workers = max(client.run(peak_rss_mib).values())
        client.close()
        cluster.close()
    if how != "cluster":
        seconds, workers = time.perf_counter() - tic, None
    print(json.dumps({"seconds": seconds, "best": result.best_params,
                      "cv_error": result.best_cv_error, "rss": peak_rss_mib(),
                      "worker_rss": workers, "estimate": result.config.get("memory_estimate")}))


def mode_scaling(args):
    folder = Path(args.tmp)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"fixed D = {args.features} Nystroem, square loss, 4 gammas x 11 C, 5 folds; "
          "times: search only (the data already loaded for 'memory')")
    print("| n | how | search s | peak RSS MiB (client; workers) | estimate MiB | choice "
          "(gamma, C) | CV error | load |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        tic = time.perf_counter()
        path = replicate(n, folder)
        print(f"(generated {path.name}: {time.perf_counter() - tic:.0f} s)", flush=True)
        for how in args.how:
            if how == "memory" and n > args.memory_max:
                continue
            argv = [sys.executable, __file__, "one", "--path", str(path), "--how", how,
                    "--features", str(args.features), "--worker-memory", args.worker_memory]
            # a fresh process per run: its peak RSS is its own
            _, _, out = child(argv)
            data = json.loads(out.strip().splitlines()[-1])
            rss = data["rss"]
            rows.append((n, how, data["seconds"], rss))
            estimate = "-" if how == "memory" or data["estimate"] is None else \
                f"{data['estimate'] / 2**20:.0f}"
            workers = "" if data["worker_rss"] is None else \
                f" (workers {data['worker_rss']:.0f})"
            print(f"| {n:,} | {how} | {data['seconds']:.1f} | {rss:.0f}{workers} | {estimate} | "
                  f"2^{np.log2(data['best']['gamma']):.0f}, 2^{np.log2(data['best']['C']):.0f}"
                  f" | {data['cv_error']:.4f} | {load_avg()} |", flush=True)
        if not args.keep:
            path.unlink()
    if args.png:
        _png(rows, args.png)
        print(f"wrote {args.png}")


LABELS = {"memory": "in memory (n x D features)", "stream": "out of core (--stream)",
          "cluster": "LocalCluster, 2 workers (client)"}


def _png(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for index, how in enumerate(dict.fromkeys(r[1] for r in rows)):
        mine = sorted((r for r in rows if r[1] == how), key=lambda r: r[0])
        label = LABELS.get(how, how)
        left.plot([r[0] for r in mine], [r[2] for r in mine], "o-", color=f"C{index}",
                  label=label)
        right.plot([r[0] for r in mine], [r[3] for r in mine], "o-", color=f"C{index}",
                   label=label)
    ns = np.array(sorted({r[0] for r in rows}), dtype=float)
    first = min(r[2] for r in rows if r[0] == ns[0])
    left.plot(ns, first * ns / ns[0], "k-", lw=0.6, label="linear in n")
    right.plot(ns, ns * 22 * 8 / 2**20, "k:", lw=0.8, label="X alone (float64)")
    left.set(xscale="log", yscale="log", xlabel="n (rows)", ylabel="search seconds",
             title="rff search time against n")
    right.set(xscale="log", yscale="log", xlabel="n (rows)", ylabel="peak RSS (MiB)",
              title="peak memory of the search process (VmHWM)")
    for ax in (left, right):
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["default", "scaling", "one"])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000,
                                                                  5_000_000])
    parser.add_argument("--how", nargs="+", default=["memory", "stream", "cluster"])
    parser.add_argument("--memory-max", type=int, default=5_000_000)
    parser.add_argument("--features", type=int, default=128)
    parser.add_argument("--worker-memory", default="1GB")
    parser.add_argument("--tmp", default=os.path.join(tempfile.gettempdir(), "kernelcv-large"))
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--png", default=None)
    parser.add_argument("--path")
    args = parser.parse_args()
    {"default": mode_default, "scaling": mode_scaling, "one": mode_one}[args.mode](args)


if __name__ == "__main__":
    main()
