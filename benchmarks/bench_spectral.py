"""The spectral engine (exact CV of every lam and fold from one eigh per kernel) against
the other kernelcv methods and against GridSearchCV / HalvingGridSearchCV(SVC), on the
same grid and the same folds, in one run.

Run with one BLAS thread (make bench-spectral does), e.g.

    python benchmarks/bench_spectral.py --sizes 569 2500 --machines l2svm svm

Data: breast cancer (scikit-learn) for n <= 569, make_classification (20 features, 5 %
flipped labels) above; standardised. Grid: ``--gammas`` gamma values x ``--lams`` lam
values ``2^i / n``; 10 stratified folds. Printed per (n, machine): seconds of each
method, the ratios GridSearchCV / spectral and Halving / spectral, the chosen (gamma, lam)
and its CV error, and the largest difference of spectral's CV errors from exact refit CV
(where the exact method was run). A ``--methods`` entry ``spectral:FACTORIZATION[:PRECISION]``
runs ``Spectral(factorization=...)`` with ``Execution(precision=...)`` (issue 38), e.g.
``spectral:eigh spectral:cholesky spectral:cholesky:mixed``; its CV errors are compared
with the first spectral entry's.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.model_selection import GridSearchCV, HalvingGridSearchCV, PredefinedSplit
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from kernelcv import Safeguards
from kernelcv.selection import Execution, Spectral
from kernelcv.selection.search import grid_search
from kernelcv.validation import make_folds


def data(n, seed=0):
    if n <= 569:
        X, y = load_breast_cancer(return_X_y=True)
        X, y = X[:n], y[:n]
    else:
        X, y = make_classification(n, 20, n_informative=8, flip_y=0.05, random_state=seed)
    return StandardScaler().fit_transform(X), np.where(y > 0, 1.0, -1.0)


def run(n, machine, methods, gammas, lam_exponents, peers):
    X, y = data(n)
    lams = [2.0**i / n for i in lam_exponents]
    folds = make_folds(y, 10, True, 0)
    rows = {}
    for method in methods:
        name, _, variant = method.partition(":")
        factorization, _, precision = variant.partition(":")
        chosen = Spectral(factorization=factorization) if factorization else name
        tic = time.perf_counter()
        result = grid_search(X, y, machine, method=chosen, gammas=gammas, lams=lams,
                             folds=folds,
                             safeguards=Safeguards(confirm=3 if method == "bif" else 0),
                             execution=Execution(precision=precision or "float64"))
        seconds = time.perf_counter() - tic
        errors = {(c["gamma"], c["lam"]): c["cv_error"] for c in result.candidates}
        rows[method] = (seconds, result.best_params, result.best_cv_error, errors)
    split = PredefinedSplit(folds)
    grid = {"gamma": gammas, "C": [1.0 / (2 * n * lam) for lam in lams]}
    if "grid" in peers:
        tic = time.perf_counter()
        GridSearchCV(SVC(), grid, cv=split).fit(X, y)
        rows["GridSearchCV"] = (time.perf_counter() - tic, None, None, None)
    if "halving" in peers:
        tic = time.perf_counter()
        HalvingGridSearchCV(SVC(), grid, cv=split, random_state=0).fit(X, y)
        rows["Halving"] = (time.perf_counter() - tic, None, None, None)
    record = {"n": n, "machine": machine,
              "seconds": {name: row[0] for name, row in rows.items()}}
    first = next((m for m in methods if m.startswith("spectral")), None)
    base = rows[first][0] if first else None
    print(f"\nn = {n}, {machine}, {len(gammas)} gamma x {len(lams)} lam, 10 folds")
    for name, (seconds, best, error, _) in rows.items():
        ratio = f"  {first} is {seconds / base:5.2f}x faster" if base and name != first \
            else ""
        chosen = "" if best is None else f"  best {best}  CV {error:.4f}"
        print(f"  {name:>12}: {seconds:8.2f} s{ratio}{chosen}")
    if first and "exact" in rows:
        a, b = rows[first][3], rows["exact"][3]
        print(f"  largest |{first} - exact| CV error: "
              f"{max(abs(a[k] - b[k]) for k in a):.2e}")
    for other in methods:
        if other.startswith("spectral") and other != first:
            a, b = rows[first][3], rows[other][3]
            print(f"  largest |{other} - {first}| CV error: "
                  f"{max(abs(a[k] - b[k]) for k in a):.2e}")
    return record


def plot(records, path):
    """Seconds against n, log-log, one line per tool (matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    tools = sorted({tool for r in records for tool in r["seconds"]})
    for tool in tools:
        points = sorted((r["n"], r["seconds"][tool]) for r in records if tool in r["seconds"])
        ax.plot(*zip(*points, strict=True), marker="o", label=tool)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training rows n")
    ax.set_ylabel("seconds (one BLAS thread)")
    ax.set_title(f"{records[0]['machine']}: the whole grid, same folds")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[569, 2500])
    parser.add_argument("--machines", nargs="+", default=["l2svm"])
    parser.add_argument("--methods", nargs="+", default=["spectral", "bif", "exact"])
    parser.add_argument("--peers", nargs="*", default=["grid", "halving"])
    parser.add_argument("--gammas", type=float, nargs="+",
                        default=[2.0**k for k in range(-9, -2, 2)])
    parser.add_argument("--lams", type=int, nargs="+", default=list(range(-3, 12, 2)),
                        help="exponents i of lam = 2^i / n")
    parser.add_argument("--json", help="write the seconds of every run to this file")
    parser.add_argument("--png", help="plot seconds against n into this file")
    args = parser.parse_args()
    records = [run(n, machine, args.methods, args.gammas, args.lams, args.peers)
               for n in args.sizes for machine in args.machines]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(records, handle, indent=1)
    if args.png:
        plot(records, args.png)


if __name__ == "__main__":
    main()
