"""SLOO-MPS (smooth-LOO tuning of a 10-kernel LS-SVM mixture) against grid searches.

The paper's Table 1 protocol (Bo, Wang & Jiao): the ten-fold CV error of the tuned model.
For each data set (in ``/work/shared/datasets`` or ``$KERNELCV_DATASETS``):

* **SLOO**: ``SmoothLOOLSSVMClassifier`` with the 10-weight mixture (Gaussian + Laplace,
  beta in {0.01, 0.1, 1, 10, 100}), one-against-one, conjugate gradients; tuned once on
  the whole set, then 10-fold CV with the tuned weights refit on each training part.
* **(a) weight grid**: the same 10 weights at theta in {0.1, 1, 10} each. The full grid has
  3^10 = 59049 points per binary machine, far too many; a uniform random subsample of
  ``--grid-points`` points (seeded, the all-ones point always included) is evaluated by the
  *exact* closed-form LOO error (ties broken by the smooth LOO error), and the time of the
  full grid is extrapolated linearly. Then the same 10-fold CV.
* **(b) GridSearchCV(SVC)**: RBF SVC over gamma = 2^-15, 2^-13, ..., 2^3 (10 values) x
  C = 2^-5, 2^-3, ..., 2^15 (11 values) on the same 10 folds.

With ``--test`` (default on) each method is also tuned on a stratified half of the data
and its test error measured on the other half. Printed: seconds, iterations, seconds per
iteration, CV and test errors and time ratios. Run with ``OMP_NUM_THREADS=1``.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_tune.py [--quick] [--sets heart,wine]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold, train_test_split
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import SVC

from kernelcv.criteria.smooth_loo import loo_error, smooth_loo_value
from kernelcv.estimators._smooth_loo import (
    SmoothLOOLSSVMClassifier,
    _machines,
    _problem,
    fixed_parameter_cv,
)
from kernelcv.reading.files import load_data

ROOT = Path(os.environ.get("KERNELCV_DATASETS", "/work/shared/datasets"))
# name: (file under ROOT, rescale to [-1, 1]?)
SETS = {
    "australian": ("libsvm/australian_scale.svm", False),
    "breast-cancer": ("libsvm/breast-cancer_scale.svm", False),
    "german": ("libsvm/german.numer_scale.svm", False),
    "glass": ("libsvm/glass.scale.svm", False),
    "heart": ("libsvm/heart_scale.svm", False),
    "ionosphere": ("libsvm/ionosphere_scale.svm", False),
    "liver": ("libsvm/liver-disorders.svm", True),
    "vehicle": ("libsvm/vehicle.scale.svm", False),
    "vowel": ("libsvm/vowel.scale.svm", False),
    "wine": ("libsvm/wine.scale.svm", False),
}
QUICK_SETS = ("heart", "wine", "ionosphere", "glass")
THETA_GRID = (0.1, 1.0, 10.0)
SVC_GAMMAS = [2.0**k for k in range(-15, 4, 2)]
SVC_CS = [2.0**k for k in range(-5, 16, 2)]


def load(name):
    path, rescale = SETS[name]
    X, y = load_data(ROOT / path)
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)
    if rescale:
        X = MinMaxScaler((-1, 1)).fit_transform(X)
    return X, y


def folds_of(y, t=10, seed=0):
    smallest = int(np.min(np.unique(y, return_counts=True)[1]))
    splitter = (StratifiedKFold(t, shuffle=True, random_state=seed) if smallest >= t
                else KFold(t, shuffle=True, random_state=seed))
    ids = np.empty(y.size, dtype=int)
    for i, (_, part) in enumerate(splitter.split(np.zeros(y.size), y)):
        ids[part] = i
    return ids


def sloo(X, y, args):
    model = SmoothLOOLSSVMClassifier(n_restarts=args.restarts, max_iter=args.max_iter,
                                     optimizer=args.optimizer, random_state=0)
    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    seconds = time.perf_counter() - tic
    return model, seconds, int(np.sum(model.n_iter_))


def weight_grid(X, y, n_points, seed=0):
    """Best point of a random subsample of the 3^10 theta grid, per binary machine, by
    exact LOO error; returns a fitted model with those weights, seconds, points."""
    model = SmoothLOOLSSVMClassifier(random_state=0)
    spec = model._check_params()
    rng = np.random.default_rng(seed)
    m = len(spec.components)
    codes = rng.choice(3**m, size=n_points - 1, replace=False)
    ones = sum(3**i for i in range(m))  # all digits 1 -> theta = 1
    codes = np.unique(np.r_[ones, codes])
    digits = (codes[:, None] // 3 ** np.arange(m)) % 3
    points = np.log(np.array(THETA_GRID)[digits] ** 2)
    classes, y_index = np.unique(y, return_inverse=True)
    from kernelcv.criteria.smooth_loo import SmoothLOOObjective, distance_bases

    tic = time.perf_counter()
    bases = distance_bases(spec, X)
    chosen = []
    for machine in _machines(classes.size, "ovo"):
        idx, y_pm = _problem(machine, y_index)
        sub = {k: v[np.ix_(idx, idx)] for k, v in bases.items()}
        objective = SmoothLOOObjective(X[idx], y_pm, spec, bases=sub)
        scores = []
        for p in points:
            fit = objective.fit(p)
            scores.append((loo_error(fit.loo, y_pm), smooth_loo_value(fit.loo, y_pm)))
        chosen.append(points[min(range(len(points)), key=lambda i: scores[i])])
    seconds = time.perf_counter() - tic
    model.n_features_in_ = X.shape[1]
    model._fit(X, classes, y_index, spec, fixed=chosen)
    return model, seconds, len(points)


def svc_grid(X, y, fold_ids):
    splits = [(np.flatnonzero(fold_ids != f), np.flatnonzero(fold_ids == f))
              for f in np.unique(fold_ids)]
    search = GridSearchCV(SVC(kernel="rbf"), {"gamma": SVC_GAMMAS, "C": SVC_CS}, cv=splits,
                          n_jobs=1)
    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    return search, time.perf_counter() - tic


def run_set(name, args):
    X, y = load(name)
    fold_ids = folds_of(y)
    row = {"set": name, "n": int(y.size), "d": int(X.shape[1]),
           "classes": int(np.unique(y).size)}
    model, seconds, iters = sloo(X, y, args)
    row.update(sloo_seconds=seconds, sloo_iterations=iters,
               sloo_ms_per_iteration=1000 * seconds / max(iters, 1),
               sloo_loo=model.loo_error_, sloo_cv=fixed_parameter_cv(model, X, y, fold_ids)[0])
    grid_model, grid_seconds, n_points = weight_grid(X, y, args.grid_points)
    row.update(grid_points=n_points, grid_seconds=grid_seconds,
               grid_full_seconds=grid_seconds * 3**10 / n_points,
               grid_loo=grid_model.loo_error_,
               grid_cv=fixed_parameter_cv(grid_model, X, y, fold_ids)[0])
    search, svc_seconds = svc_grid(X, y, fold_ids)
    row.update(svc_seconds=svc_seconds, svc_cv=1.0 - search.best_score_,
               svc_params=search.best_params_)
    if args.test:
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y,
                                                  random_state=0)
        model, _, _ = sloo(X_tr, y_tr, args)
        grid_model, _, _ = weight_grid(X_tr, y_tr, args.grid_points)
        search, _ = svc_grid(X_tr, y_tr, folds_of(y_tr))
        row.update(sloo_test=float(np.mean(model.predict(X_te) != y_te)),
                   grid_test=float(np.mean(grid_model.predict(X_te) != y_te)),
                   svc_test=float(np.mean(search.predict(X_te) != y_te)))
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"only {', '.join(QUICK_SETS)}, 1 restart, 30 iterations, "
                             "20 grid points")
    parser.add_argument("--sets", help="comma list of data sets (default: all found)")
    parser.add_argument("--restarts", type=int, default=1)
    parser.add_argument("--max-iter", type=int, default=50)
    parser.add_argument("--optimizer", default="cg", choices=("cg", "lbfgs"))
    parser.add_argument("--grid-points", type=int, default=60)
    parser.add_argument("--no-test", dest="test", action="store_false")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.max_iter, args.grid_points = min(args.max_iter, 30), 20
    names = args.sets.split(",") if args.sets else list(QUICK_SETS if args.quick else SETS)
    if not ROOT.is_dir():
        print(f"no data sets at {ROOT}; set KERNELCV_DATASETS", file=sys.stderr)
        return 1
    rows = []
    for name in names:
        if not (ROOT / SETS[name][0]).exists():
            print(f"{name}: {SETS[name][0]} not found, skipped", file=sys.stderr)
            continue
        row = run_set(name, args)
        rows.append(row)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v)
                          for k, v in row.items()}), file=sys.stderr, flush=True)
    print(table(rows, args))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def table(rows, args):
    head = ("| set (n, classes) | SLOO s (iters, ms/iter) | weight grid s "
            f"({args.grid_points} pts) / full 3^10 est. | SVC grid s | SVC/SLOO | "
            "10-fold CV SLOO / grid / SVC | test SLOO / grid / SVC |")
    lines = [head, "|" + "---|" * 7]
    for r in rows:
        test = (f"{r['sloo_test']:.3f} / {r['grid_test']:.3f} / {r['svc_test']:.3f}"
                if "sloo_test" in r else "-")
        lines.append(
            f"| {r['set']} ({r['n']}, {r['classes']}) | {r['sloo_seconds']:.1f} "
            f"({r['sloo_iterations']}, {r['sloo_ms_per_iteration']:.0f}) | "
            f"{r['grid_seconds']:.1f} / {r['grid_full_seconds']:.0f} | "
            f"{r['svc_seconds']:.1f} | {r['svc_seconds'] / r['sloo_seconds']:.2f} | "
            f"{r['sloo_cv']:.3f} / {r['grid_cv']:.3f} / {r['svc_cv']:.3f} | {test} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
