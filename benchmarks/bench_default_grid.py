"""The default grid with and without its widening toward large C, against GridSearchCV and
HalvingGridSearchCV(SVC) on LIBSVM grid.py's default grid.

``KernelSearchCV(make_pipeline(StandardScaler(), SVC()))`` without a ``param_grid``
searches the data-derived gamma grid x lam = 2^i / n, i = -3..11 (C = 2^-12..4), and
widens it toward C = 2^11 where the choice reaches the large-C edge
(kernelcv/selection/after_grid/extension.py). "base" is the same search given its grid
without the reserve (the behaviour before the widening). GridSearchCV and Halving search
LIBSVM grid.py's default, C = 2^-5..2^15 and gamma = 2^3..2^-15 (step 2^2; 110
candidates), the grid a LIBSVM user runs. Same shuffled stratified folds for every tool,
one BLAS thread; each set split 75/25 per seed. Printed per set and split: seconds,
chosen C, whether the choice is on a grid edge, test accuracy, and the ratios
GridSearchCV / widened and Halving / widened.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_default_grid.py \
        --sets cancer wine heart ionosphere sonar australian diabetes --splits 0 1
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_svmlight_file, load_wine
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.model_selection import (
    GridSearchCV,
    HalvingGridSearchCV,
    StratifiedKFold,
    train_test_split,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from kernelcv import KernelSearchCV
from kernelcv.exceptions import GridEdgeWarning
from kernelcv.selection.space.grids import default_lams

DATASETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                        "datasets", "libsvm")
LIBSVM = {"heart": "heart_scale", "ionosphere": "ionosphere_scale", "sonar": "sonar_scale",
          "australian": "australian_scale", "diabetes": "diabetes_scale",
          "german": "german.numer_scale", "fourclass": "fourclass_scale"}


def load(name):
    if name == "cancer":
        return load_breast_cancer(return_X_y=True)
    if name == "wine":
        return load_wine(return_X_y=True)
    path = os.path.join(DATASETS, LIBSVM[name] + ".svm")
    if not os.path.exists(path):
        return None
    X, y = load_svmlight_file(path)
    return X.toarray(), y


def timed(search, X, y, X_test, y_test):
    tic = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, y)
    seconds = time.perf_counter() - tic
    edge = any(issubclass(w.category, GridEdgeWarning) for w in caught)
    return seconds, float(np.mean(search.predict(X_test) == y_test)), edge


def chosen_c(search, n):
    params = search.best_params_
    if "svc__C" in params:
        return params["svc__C"]
    return 1.0 / (2.0 * n * params.get("svc__lam", params.get("lam")))  # older releases


def on_libsvm_edge(search, grid):
    params = search.best_params_
    return any(params[key] in (min(values), max(values)) for key, values in grid.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["cancer", "wine", "heart",
                                                       "ionosphere", "sonar"])
    parser.add_argument("--splits", type=int, nargs="+", default=[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--no-peers", action="store_true",
                        help="skip GridSearchCV and Halving")
    args = parser.parse_args()
    libsvm_grid = {"svc__C": [2.0**k for k in range(-5, 16, 2)],
                   "svc__gamma": [2.0**k for k in range(3, -16, -2)]}
    print(f"{'set':<11}{'split':>6}{'tool':>10}{'s':>8}{'C':>10}{'edge':>6}{'test':>7}"
          f"{'GS/x':>7}{'HV/x':>7}")
    for name in args.sets:
        data = load(name)
        if data is None:
            print(f"{name}: not in {DATASETS}, skipped")
            continue
        X, y = data
        for split in args.splits:
            X_a, X_b, y_a, y_b = train_test_split(X, y, test_size=0.25, random_state=split,
                                                  stratify=y)
            n = len(y_a)
            cv = StratifiedKFold(args.folds, shuffle=True, random_state=split)
            pipe = make_pipeline(StandardScaler(), SVC())
            widened = KernelSearchCV(pipe, cv=cv)
            rows = [("widened", widened) + timed(widened, X_a, y_a, X_b, y_b)]
            gammas = [float(g) for g in sorted(set(widened.cv_results_["param_svc__gamma"]))]
            base = KernelSearchCV(pipe, {"svc__gamma": gammas, "svc__lam": default_lams(n)},
                                  cv=cv)
            rows.append(("base", base) + timed(base, X_a, y_a, X_b, y_b))
            if not args.no_peers:
                for label, cls in (("GS", GridSearchCV), ("Halving", HalvingGridSearchCV)):
                    peer = cls(pipe, libsvm_grid, cv=cv)
                    seconds, accuracy, _ = timed(peer, X_a, y_a, X_b, y_b)
                    rows.append((label, peer, seconds, accuracy,
                                 on_libsvm_edge(peer, libsvm_grid)))
            seconds = {label: s for label, _, s, _, _ in rows}
            for label, search, s, accuracy, edge in rows:
                ratios = ""
                if label == "widened" and "GS" in seconds:
                    ratios = (f"{seconds['GS'] / s:7.1f}{seconds['Halving'] / s:7.1f}")
                print(f"{name:<11}{split:>6}{label:>10}{s:8.2f}{chosen_c(search, n):10.3g}"
                      f"{'yes' if edge else 'no':>6}{accuracy:7.3f}{ratios}", flush=True)


if __name__ == "__main__":
    main()
