"""Seconds of exact, closed-form and BIF cross-validation against one full fit and scikit-learn.

For n in {500, 1000, 2000} (synthetic, scikit-learn's make_classification) and the
LIBSVM breast-cancer set (683 x 10 from ../shared/datasets, skipped when absent), at one
(gamma, lam) and 10 folds, per machine:

* ``fit``: one full-data fit;
* ``exact``: refit CV; ``closed-form`` (krr, lssvm); ``bif`` at r = 5 and r = inf;
* the same over a path of 15 lam values (warm starts along lam for the full fits);
* the ratios of the issue's targets: BIF CV / one fit (target <= 1.5 for l2svm and svm)
  and exact / BIF (target >= 5 at n = 2000); closed-form KRR over 15 lam values vs refit
  CV over the same 15 values (target >= 5);
* scikit-learn's ``cross_val_score`` with ``KernelRidge`` / ``SVC`` on the same folds,
  for scale.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_cv.py [--sizes 500 1000]``.
Pin BLAS threads (e.g. ``OMP_NUM_THREADS=1``) for steadier numbers.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file, make_classification
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import PredefinedSplit, cross_val_score
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from kernelcv import BIF, cross_validate_path, make_kernel, make_machine
from kernelcv._threads import separate_blas_pools
from kernelcv.criteria.bif import bif_predictions
from kernelcv.criteria.closed_form import ClosedFormCV
from kernelcv.criteria.exact import refit_predictions
from kernelcv.validation import make_folds

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "libsvm"
FOLDS = 10


def seconds(fn, repeat=1):
    best = float("inf")
    for _ in range(repeat):
        tic = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - tic)
    return best, out


def datasets(sizes):
    for n in sizes:
        X, y = make_classification(n, 10, n_informative=5, flip_y=0.05, random_state=0)
        yield f"synthetic n={n}", StandardScaler().fit_transform(X), 2.0 * y - 1
    path = SHARED / "breast-cancer_scale.svm"
    if path.exists():
        X, y = load_svmlight_file(str(path))
        yield "breast-cancer 683", X.toarray(), np.where(y > 0, 1.0, -1.0)
    else:
        print(f"(skipping breast-cancer: {path} not found)")


def bench_kernelcv(name, X, y, repeat):
    n, d = X.shape
    gamma, lam = 1.0 / d, 1.0 / n
    ids = make_folds(y, FOLDS, classifier=True, random_state=0)
    K = make_kernel("rbf", gamma)(X)
    print(f"\n== {name}: gamma = {gamma:.3g}, lam = {lam:.3g} (lam*n = 1), {FOLDS}-fold ==")
    print(f"{'machine':8} {'fit':>8} {'exact':>8} {'closed':>8} {'bif r=5':>8} {'bif inf':>8}"
          f" {'bif5/fit':>9} {'exact/bif5':>11}")
    for machine_name in ("krr", "lssvm", "l2svm", "svm"):
        # the papers' bias-free l2svm/svm (kernelcv fits an intercept by default)
        machine = make_machine(machine_name, fit_intercept=(
            False if machine_name in ("l2svm", "svm") else None))
        t_fit, fit = seconds(lambda m=machine: m.fit(K, y, lam), repeat)
        t_exact, _ = seconds(lambda m=machine, f=fit: refit_predictions(K, y, ids, lam, m, f))
        t_closed = float("nan")
        if machine_name in ("krr", "lssvm"):
            t_closed, _ = seconds(lambda m=machine: ClosedFormCV(
                K, ids, m.fit_intercept).predictions(y, lam), repeat)
        t_b5, _ = seconds(lambda m=machine, f=fit: bif_predictions(K, y, ids, lam, m, f, 5),
                          repeat)
        t_binf, _ = seconds(lambda m=machine, f=fit: bif_predictions(K, y, ids, lam, m, f,
                                                                     "inf"), repeat)
        bif5 = t_fit + t_b5
        print(f"{machine_name:8} {t_fit:8.3f} {t_exact:8.3f} {t_closed:8.3f} {bif5:8.3f} "
              f"{t_fit + t_binf:8.3f} {bif5 / t_fit:9.2f} {t_exact / bif5:11.1f}")
    # closed-form KRR over 15 lam values vs refit over the same values
    lams = [2.0**i / n for i in range(-3, 12)]
    t_path, _ = seconds(lambda: cross_validate_path(X, y, lams, "krr", gamma=gamma, folds=ids,
                                                    method="closed-form"))
    t_refit, _ = seconds(lambda: cross_validate_path(X, y, lams, "krr", gamma=gamma, folds=ids,
                                                     method="exact"))
    print(f"krr over 15 lam: closed-form {t_path:.2f} s, refit {t_refit:.2f} s, "
          f"ratio {t_refit / t_path:.1f}x")
    for machine_name in ("l2svm", "svm"):
        bias_free = make_machine(machine_name, fit_intercept=False)
        t_exact, _ = seconds(lambda m=bias_free: cross_validate_path(
            X, y, lams, m, gamma=gamma, folds=ids, method="exact"))
        t_bif, _ = seconds(lambda m=bias_free: cross_validate_path(
            X, y, lams, m, gamma=gamma, folds=ids, method=BIF(order=5)))
        print(f"{machine_name} over 15 lam (warm starts along lam): exact {t_exact:.2f} s, "
              f"bif r=5 {t_bif:.2f} s, ratio {t_exact / t_bif:.1f}x")
    return ids


def bench_sklearn(X, y, ids):
    n, d = X.shape
    gamma, lam = 1.0 / d, 1.0 / n
    split = PredefinedSplit(ids)
    t_skr, _ = seconds(lambda: cross_val_score(KernelRidge(alpha=n * lam, kernel="rbf",
                                                           gamma=gamma), X, y, cv=split))
    t_svc, _ = seconds(lambda: cross_val_score(SVC(C=1 / (2 * n * lam), gamma=gamma), X, y,
                                               cv=split))
    print(f"scikit-learn on the same folds, one setting: KernelRidge {t_skr:.3f} s, "
          f"SVC {t_svc:.3f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--repeat", type=int, default=3,
                        help="best of this many runs for the fast methods")
    args = parser.parse_args()
    for name, X, y in datasets(args.sizes):
        # kernelcv's public functions separate the BLAS pools themselves; the low-level
        # calls timed here need it done explicitly. scikit-learn is timed outside it.
        with separate_blas_pools():
            ids = bench_kernelcv(name, X, y, args.repeat)
        bench_sklearn(X, y, ids)


if __name__ == "__main__":
    main()
