"""TorchKM's Table 2 protocol on this machine's CPU, side by side with kernelcv (issue 37).

TorchKM (github.com/YikaiZhang95/torchkm, 2026) does exact 10-fold CV of a kernel SVM
over 50 C from one eigendecomposition of K, at one kernel width from its ``sigest``
heuristic. torch is not a kernelcv dependency, so TorchKM runs in its own Python
(``--torchkm-python``, e.g. a venv with ``pip install torch torchkm``):
``benchmarks/torchkm_runner.py`` draws the data of its Table 2 (Gaussian clusters,
``data_gen(n, 5, p, p/2, p/2, 2, 3)``, standardized, n/10 test rows), its width ``sig``,
10 folds and 50 lambda on [1e-3, 1e3], times ``TorchKMSVC(device="cpu")`` with one
thread and writes the data; kernelcv then runs on the same rows and folds, one BLAS
thread:

* ``50 C``: ``KernelSearchCV("svm", {"gamma": [2 sig], "C": C})`` with TorchKM's C
  (``C = 1 / (2 n lambda)``; TorchKM's kernel ``exp(-2 sig |x - x'|^2)`` is scikit-learn's
  ``gamma = 2 sig``) for each ``--methods`` entry (``name`` or ``name:screen``);
* ``15 gamma x 50 C``: the same with ``gamma = 2 sig 2^k``, k = -7..7.

Printed per (n, p, seed): seconds, the chosen C (and gamma), CV and test error.

``--device cuda`` (``make bench-gpu``, issue 38) runs both on the GPU: TorchKM with
``device="cuda"``, kernelcv's ``spectral`` method with ``Execution(device="cuda")``, all
threads; each --methods entry then reads ``FACTORIZATION[:PRECISION]`` (``auto``,
``eigh``, ``cholesky``, ``cholesky:mixed``: :class:`kernelcv.selection.Spectral`'s
``factorization`` and the ``Execution``'s ``precision``). Past ``--peer-limit`` rows
(TorchKM's eigensolver limit, 32,768) TorchKM only draws the data; ``--no-refit`` skips
kernelcv's final fit (its test error is then not measured).

    python benchmarks/bench_torchkm.py --torchkm-python /tmp/tkm/bin/python \
        --sizes 1000,10 2000,10 5000,10 2000,1000 --seeds 0
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import PredefinedSplit

from kernelcv import KernelSearchCV
from kernelcv.selection import Execution, Spectral

RUNNER = Path(__file__).with_name("torchkm_runner.py")
GAMMA_STEPS = range(-7, 8)  # 15 widths around TorchKM's


def torchkm(python, n, p, seed, data_file, exact, device="numpy", data_only=False):
    env = dict(os.environ)
    if device != "cuda":
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    command = [python, str(RUNNER), str(n), str(p), str(seed), data_file]
    if exact:
        command.append("--exact")
    if device == "cuda":
        command.append("--cuda")
    if data_only:
        command.append("--data-only")
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        sys.exit(f"TorchKM failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def kernelcv(data, gammas, entry, device="numpy", refit=True):
    method, _, screen = entry.partition(":")
    precision = "float64"
    if device != "numpy":  # FACTORIZATION[:PRECISION]
        method, screen, precision = Spectral(factorization=method), "", screen or precision
    n = len(data["y"])
    Cs = 1.0 / (2.0 * n * data["lams"])
    search = KernelSearchCV("svm", {"gamma": list(gammas), "C": list(Cs)},
                            cv=PredefinedSplit(data["folds"]), screen=screen or "off",
                            method=None if method == "default" else method, refit=refit,
                            execution=Execution(device=device, precision=precision))
    tic = time.perf_counter()
    search.fit(data["X"], data["y"])
    seconds = time.perf_counter() - tic
    error = (float(np.mean(search.predict(data["X_test"]) != data["y_test"])) if refit
             else float("nan"))
    return {"seconds": seconds, "C": search.best_params_["C"],
            "gamma": search.best_params_["gamma"], "cv_error": 1.0 - search.best_score_,
            "test_error": error}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torchkm-python", required=True,
                        help="a Python with torch and torchkm installed")
    parser.add_argument("--sizes", nargs="+", default=["1000,10", "2000,10"],
                        metavar="N,P")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--methods", nargs="+", default=["default", "rff"])
    parser.add_argument("--grid-methods", nargs="+", default=["default:auto", "rff"],
                        help="methods of the 15 gamma x 50 C search ('none' skips it)")
    parser.add_argument("--exact", action="store_true", help="TorchKM's is_exact=1")
    parser.add_argument("--device", choices=("numpy", "cuda"), default="numpy",
                        help="cuda: both tools on the GPU (kernelcv: method spectral)")
    parser.add_argument("--peer-limit", type=int, default=32768,
                        help="above this n TorchKM only draws the data (its eigh limit)")
    parser.add_argument("--no-refit", action="store_true",
                        help="skip kernelcv's final fit (no test error)")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        n, p = (int(v) for v in size.split(","))
        for seed in args.seeds:
            with tempfile.TemporaryDirectory() as tmp:
                data_file = str(Path(tmp) / "data.npz")
                peer = torchkm(args.torchkm_python, n, p, seed, data_file, args.exact,
                               args.device, data_only=n > args.peer_limit)
                data = dict(np.load(data_file))
            gamma = 2.0 * float(data["sig"])
            results = {} if peer["seconds"] is None else {"TorchKM 50 C": peer}
            refit = not args.no_refit
            for entry in args.methods:
                results[f"kernelcv {entry}, 50 C"] = kernelcv(data, [gamma], entry,
                                                              args.device, refit)
            for entry in args.grid_methods:
                if entry != "none":
                    results[f"kernelcv {entry}, 15 x 50"] = kernelcv(
                        data, [gamma * 2.0**k for k in GAMMA_STEPS], entry, args.device,
                        refit)
            print(f"\nn = {n}, p = {p}, seed {seed}, TorchKM's gamma = {gamma:.4g}"
                  + (f" (TorchKM refuses n > {args.peer_limit})"
                     if peer["seconds"] is None else ""))
            for label, r in results.items():
                ratio = (peer["seconds"] / r["seconds"] if peer["seconds"] is not None
                         else float("nan"))
                print(f"  {label:>28}: {r['seconds']:8.2f} s ({ratio:6.2f}x)  "
                      f"C {r['C']:.4g}  gamma {r.get('gamma', gamma):.4g}  "
                      f"CV {r['cv_error']:.4f}  test {r['test_error']:.4f}")
                rows.append({"n": n, "p": p, "seed": seed, "tool": label, **r})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
