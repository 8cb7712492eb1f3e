"""KernelSearchCV on a user's own grid against GridSearchCV and HalvingGridSearchCV(SVC).

The protocol of issue 37: ``Pipeline(StandardScaler, estimator)``, an 8 C x 8 gamma grid
(or ``--grid default``: 21 gamma x 15 C), the same shuffled stratified folds for every
tool, one BLAS thread (make bench-search-cv sets it). Each data set is split 75/25 once
per ``--splits`` seed; the search runs on the 75 % and the chosen model is scored on the
25 %. kernelcv runs ``KernelSearchCV(make_pipeline(StandardScaler(), SVC()), grid)`` --
the GridSearchCV code with the class name changed -- with each ``--methods`` (default:
its default, ``bif``, and ``spectral``; ``default:auto`` adds ``screen="auto"``).
Printed per (set, folds, split): seconds, the ratios GridSearchCV / kernelcv and
Halving / kernelcv, and test accuracy.

    python benchmarks/bench_search_cv.py --sets cancer wine digits synthetic3000 --folds 5 10
    python benchmarks/bench_search_cv.py --sets imbalanced1000 cancer --class-weight balanced \
        --scoring balanced_accuracy --methods default default:auto
    python benchmarks/bench_search_cv.py --sets cancer synthetic3000 --sample-weight \
        --methods default default:auto
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_classification
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.metrics import balanced_accuracy_score, log_loss
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

SETS = {
    "cancer": lambda: load_breast_cancer(return_X_y=True),
    "wine": lambda: load_wine(return_X_y=True),
    "digits": lambda: load_digits(return_X_y=True),
    "synthetic3000": lambda: make_classification(3000, 20, n_informative=8, flip_y=0.05,
                                                 random_state=0),
    # 9:1 classes, for --class-weight balanced
    "imbalanced1000": lambda: make_classification(1000, 20, n_informative=8, flip_y=0.05,
                                                  weights=[0.9], random_state=0),
}


def grid(kind):
    """8 gamma x 8 C (powers of 4), or the 21 x 15 default of kernelcv select."""
    if kind == "default":
        return {"svc__gamma": [2.0**k for k in range(-15, 6)],
                "svc__C": [2.0**k for k in range(-5, 10)]}
    return {"svc__gamma": [2.0**k for k in range(-12, 4, 2)],
            "svc__C": [2.0**k for k in range(-2, 14, 2)]}


def timed(search, X, y, X_test, y_test, scoring=None, **fit_params):
    tic = time.perf_counter()
    search.fit(X, y, **fit_params)
    seconds = time.perf_counter() - tic
    predicted = search.predict(X_test)
    if scoring == "balanced_accuracy":
        return seconds, float(balanced_accuracy_score(y_test, predicted)), search
    return seconds, float(np.mean(predicted == y_test)), search


def probability_line(gs, kernelcv_search, X, y, X_test, y_test):
    """Test log-loss of SVC(probability=True) at GridSearchCV's choice (Platt scaling on
    its own internal 5-fold CV: 5 more fits) against KernelSearchCV.predict_proba, and
    how often each one's most probable class differs from its predict."""
    svc = clone(gs.best_estimator_).set_params(svc__probability=True,
                                               svc__random_state=0).fit(X, y)
    p_svc = svc.predict_proba(X_test)
    p_ours = kernelcv_search.predict_proba(X_test)
    disagree_svc = np.mean(svc.classes_[p_svc.argmax(1)] != svc.predict(X_test))
    disagree_ours = np.mean(kernelcv_search.classes_[p_ours.argmax(1)]
                            != kernelcv_search.predict(X_test))
    return (f"  test log-loss: SVC(probability=True) {log_loss(y_test, p_svc):.4f} "
            f"(argmax != predict on {100 * disagree_svc:.1f} %), kernelcv "
            f"{log_loss(y_test, p_ours):.4f} ({100 * disagree_ours:.1f} %)")


def run(name, folds, split, grid_kind, methods, class_weight=None, scoring=None,
        sample_weight=False):
    X, y = SETS[name]()
    X, X_test, y, y_test = train_test_split(X, y, test_size=0.25, stratify=y,
                                            random_state=split)
    cv = StratifiedKFold(folds, shuffle=True, random_state=split)
    param_grid = grid(grid_kind)
    rows = {}
    pipe = make_pipeline(StandardScaler(), SVC(class_weight=class_weight))
    # random row weights: scikit-learn takes a Pipeline's as svc__sample_weight
    weights = (np.random.default_rng(split).uniform(0.5, 2.0, len(y)) if sample_weight
               else None)
    theirs = {} if weights is None else {"svc__sample_weight": weights}
    ours = {} if weights is None else {"sample_weight": weights}
    rows["GridSearchCV"] = timed(GridSearchCV(pipe, param_grid, cv=cv, scoring=scoring),
                                 X, y, X_test, y_test, scoring, **theirs)
    rows["Halving"] = timed(HalvingGridSearchCV(pipe, param_grid, cv=cv, scoring=scoring,
                                                random_state=split),
                            X, y, X_test, y_test, scoring, **theirs)
    for entry in methods:  # "method" or "method:screen"
        method, _, screen = entry.partition(":")
        rows[f"kernelcv {entry}"] = timed(
            KernelSearchCV(pipe, param_grid, cv=cv, screen=screen or "off", scoring=scoring,
                           method=None if method == "default" else method),
            X, y, X_test, y_test, scoring, **ours)
    print(f"\n{name} (n = {len(y)}), {folds} folds, split {split}, "
          f"{len(param_grid['svc__gamma'])} x {len(param_grid['svc__C'])} grid")
    for label, (seconds, accuracy, _) in rows.items():
        ratios = ""
        if label.startswith("kernelcv"):
            ratios = (f"  GS/k {rows['GridSearchCV'][0] / seconds:5.2f}x"
                      f"  Halving/k {rows['Halving'][0] / seconds:5.2f}x")
        what = "balanced acc" if scoring == "balanced_accuracy" else "acc"
        print(f"  {label:>18}: {seconds:8.2f} s  test {what} {accuracy:.4f}{ratios}")
    for label in rows:  # the first kernelcv search with probabilities
        if label.startswith("kernelcv"):
            try:
                print(probability_line(rows["GridSearchCV"][2], rows[label][2], X, y,
                                       X_test, y_test))
                break
            except AttributeError:  # method="rff" has no out-of-fold values
                continue


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["cancer", "wine", "digits"],
                        choices=sorted(SETS))
    parser.add_argument("--folds", type=int, nargs="+", default=[5])
    parser.add_argument("--splits", type=int, default=1)
    parser.add_argument("--grid", choices=("8x8", "default"), default="8x8")
    parser.add_argument("--methods", nargs="+", default=["default", "spectral"],
                        help="kernelcv methods, 'name' or 'name:screen'; the first one's "
                             "predict_proba is compared with SVC(probability=True)")
    parser.add_argument("--class-weight", choices=("balanced",), default=None,
                        help="SVC(class_weight=...) for every tool")
    parser.add_argument("--scoring", default=None,
                        help="the scoring of every search (a scikit-learn scorer name); the "
                        "test score printed is balanced accuracy for balanced_accuracy, "
                        "else accuracy")
    parser.add_argument("--sample-weight", action="store_true",
                        help="fit every search with random row weights (uniform 0.5-2)")
    args = parser.parse_args()
    for name in args.sets:
        for folds in args.folds:
            for split in range(args.splits):
                run(name, folds, split, args.grid, args.methods, args.class_weight,
                    args.scoring, args.sample_weight)


if __name__ == "__main__":
    main()
