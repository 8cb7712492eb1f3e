"""``make demo``: compare the CV methods on scikit-learn's breast-cancer data (n = 569).

Part 1 evaluates one (gamma, lam) with every method and prints value and seconds.
Part 2 selects (gamma, lam) on a small grid with each method, then reports the exact
10-fold CV error of each choice, so a fast method's choice can be judged by the truth.
Part 3 tunes a model as a user would: ``KernelSearchCV`` on a scaled training split (75 %),
its test accuracy on the other 25 %, and the time of ``GridSearchCV(SVC)`` on the same
grid and folds beside it. Runs in about a minute on two cores.

:func:`write_example_data` writes scikit-learn's bundled sets as train/test svmlight
files (``kernelcv data``), so the README's command-line examples run on a fresh clone.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from .cv import cross_validate, cross_validate_path
from .estimators import KernelSearchCV, LSSVMClassifier
from .reading.files import load_demo_data
from .selection.methods import BIF, ExactRefit

FOLDS = 10
SEED = 0


def _row(cells, widths):
    return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                     for i, (c, w) in enumerate(zip(cells, widths, strict=True)))


def one_setting(X, y, gamma, lam):
    """Every method at one (gamma, lam): CV error and seconds, per machine."""
    runs = [
        ("krr", "exact", None), ("krr", "closed-form", None), ("krr", "bif", 5),
        ("lssvm", "exact", None), ("lssvm", "closed-form", None), ("lssvm", "bif", "inf"),
        ("l2svm", "exact", None), ("l2svm", "bif", 5), ("l2svm", "bif", "inf"),
        ("l2svm", "bif", "auto"),
        ("svm", "exact", None), ("svm", "bif", 5), ("svm", "bif", "inf"),
    ]
    widths = (8, 12, 6, 10, 9, 8)
    print(_row(("machine", "method", "order", "CV error", "seconds", "vs exact"), widths))
    exact_seconds = {}
    for machine, method, order in runs:
        with warnings.catch_warnings(record=True) as caught:  # one line below the row
            warnings.simplefilter("always", RuntimeWarning)
            result = cross_validate(X, y, machine, "rbf", gamma=gamma, lam=lam, folds=FOLDS,
                                    random_state=SEED, method=_method(method, order))
        if method == ExactRefit.name:
            exact_seconds[machine] = result.seconds
        speed = exact_seconds[machine] / result.seconds
        metric = "MSE" if result.metric == "mse" else ""
        print(_row((machine, method, result.order_used or "-",
                    f"{result.cv_error:.4f}{metric and ' ' + metric}", f"{result.seconds:.3f}",
                    f"{speed:.1f}x"), widths))
        for warning in caught:
            print(f"  (warning: {str(warning.message).split(': ', 1)[-1]})")


def _method(name, order):
    """The method object of a row: BIF with its order, or the method's name."""
    return BIF(order=order) if name == BIF.name else name


def grid_selection(X, y, machine, methods, gammas, lams):
    """Select (gamma, lam) with each method; judge each choice by exact CV."""
    widths = (8, 12, 8, 9, 12, 13, 9)
    print(_row(("machine", "method", "gamma", "lam*n", "its CV err", "exact CV err",
                "seconds"), widths))
    n = y.shape[0]
    for method, order in methods:
        tic = time.perf_counter()
        best = None
        with warnings.catch_warnings(record=True) as caught:  # summarised below the row
            warnings.simplefilter("always", RuntimeWarning)
            paths = [(gamma, cross_validate_path(X, y, lams, machine, "rbf", gamma=gamma,
                                                 folds=FOLDS, random_state=SEED,
                                                 method=_method(method, order)))
                     for gamma in gammas]
        for gamma, path in paths:
            for result in path:
                key = (result.cv_error, -result.params["lam"])
                if best is None or key < best[0]:
                    best = (key, gamma, result)
        seconds = time.perf_counter() - tic
        _, gamma, result = best
        truth = cross_validate(X, y, machine, "rbf", gamma=gamma, lam=result.params["lam"],
                               folds=FOLDS, random_state=SEED, method="exact")
        label = method if method != BIF.name else f"bif r={order}"
        print(_row((machine, label, f"{gamma:g}", f"{result.params['lam'] * n:g}",
                    f"{result.cv_error:.4f}", f"{truth.cv_error:.4f}", f"{seconds:.2f}"),
                   widths))
        if caught:
            print(f"  ({len(caught)} warnings: the order-{order} series had not converged at "
                  "the smallest lam values; order inf, the default, forms the held-out "
                  "values directly)")


# scikit-learn's bundled sets that kernelcv data writes: loader name and task.
EXAMPLE_SETS = {"breast_cancer": "binary", "wine": "multiclass", "diabetes": "regression"}
TEST_SHARE = 0.25


def _bundled(name):
    from sklearn import datasets  # the estimators layer imports it anyway

    return getattr(datasets, f"load_{name}")(return_X_y=True)


def train_test(name, seed=SEED):
    """A bundled set split 75/25 (stratified for classification), seeded."""
    from sklearn.model_selection import train_test_split

    X, y = _bundled(name)
    stratify = None if EXAMPLE_SETS[name] == "regression" else y
    return train_test_split(X, y, test_size=TEST_SHARE, stratify=stratify,
                            random_state=seed)


def write_example_data(out, names=None) -> dict:
    """Write ``<name>_train.svm`` and ``<name>_test.svm`` for scikit-learn's bundled sets.

    Parameters
    ----------
    out : folder (created if missing).
    names : subset of :data:`EXAMPLE_SETS` (default all: breast_cancer, binary, 569 rows;
        wine, 3 classes, 178 rows; diabetes, regression, 442 rows).

    Returns
    -------
    dict
        ``{"folder": out, "files": [...], "sets": {name: {"task", "train", "test",
        "features"}}}``; the split is 75/25, stratified for classification, seed 0.
    """
    from sklearn.datasets import dump_svmlight_file

    names = list(EXAMPLE_SETS) if names is None else list(names)
    os.makedirs(out, exist_ok=True)
    report = {"folder": os.fspath(out), "files": [], "sets": {}}
    for name in names:
        X_train, X_test, y_train, y_test = train_test(name)
        paths = []
        for part, X, y in (("train", X_train, y_train), ("test", X_test, y_test)):
            path = os.path.join(os.fspath(out), f"{name}_{part}.svm")
            dump_svmlight_file(X, y, path, zero_based=False)
            paths.append(path)
        report["files"].extend(paths)
        report["sets"][name] = {"task": EXAMPLE_SETS[name], "train": int(y_train.shape[0]),
                                "test": int(y_test.shape[0]), "features": int(X.shape[1])}
    return report


def tuned_model(seed=SEED):
    """Part 3: KernelSearchCV on the scaled breast-cancer training split, against
    GridSearchCV(SVC) on the same grid and folds; prints both with test accuracies."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X_train, X_test, y_train, y_test = train_test("breast_cancer", seed)
    gammas = [2.0**k for k in range(-10, 3)]
    Cs = [2.0**k for k in range(-2, 11)]
    folds = StratifiedKFold(FOLDS, shuffle=True, random_state=seed)
    print(f"\n3. A tuned model: breast cancer, {y_train.size} training / {y_test.size} test "
          f"rows, StandardScaler, {len(gammas)} gamma x {len(Cs)} C, {FOLDS} folds")
    widths = (34, 10, 8, 9, 9, 9)
    print(_row(("search", "gamma", "C", "CV acc", "test acc", "seconds"), widths))
    tic = time.perf_counter()
    ours = KernelSearchCV(make_pipeline(StandardScaler(), LSSVMClassifier()),
                          {"lssvmclassifier__gamma": gammas, "lssvmclassifier__C": Cs},
                          cv=folds).fit(X_train, y_train)
    ours_seconds = time.perf_counter() - tic
    tic = time.perf_counter()
    reference = GridSearchCV(make_pipeline(StandardScaler(), SVC()),
                             {"svc__gamma": gammas, "svc__C": Cs}, cv=folds,
                             n_jobs=1).fit(X_train, y_train)
    reference_seconds = time.perf_counter() - tic
    for label, search, seconds, prefix in (
            ("KernelSearchCV(LS-SVM, closed-form)", ours, ours_seconds, "lssvmclassifier"),
            ("GridSearchCV(SVC)", reference, reference_seconds, "svc")):
        best = search.best_params_
        print(_row((label, f"{best[prefix + '__gamma']:g}", f"{best[prefix + '__C']:g}",
                    f"{search.best_score_:.4f}", f"{search.score(X_test, y_test):.4f}",
                    f"{seconds:.2f}"), widths))
    print(f"KernelSearchCV took {ours_seconds:.2f} s, GridSearchCV(SVC) "
          f"{reference_seconds:.2f} s ({reference_seconds / ours_seconds:.1f}x); the tuned "
          f"model: StandardScaler + {ours.best_estimator_[-1]}")
    return {"ours_seconds": ours_seconds, "reference_seconds": reference_seconds,
            "test_accuracy": float(np.mean(ours.predict(X_test) == y_test))}


def main() -> None:
    X, y = load_demo_data()
    n, d = X.shape
    gamma, lam = 1.0 / d, 1.0 / n
    print(f"breast cancer (scikit-learn), n = {n}, d = {d}, {FOLDS}-fold CV, seed {SEED}")
    print(f"\n1. One setting: rbf gamma = {gamma:.4g}, lam = {lam:.4g} (lam*n = 1); "
          "0-1 error for classifiers, MSE for krr")
    one_setting(X, y, gamma, lam)
    gammas = [g / d for g in (0.25, 1.0, 4.0)]
    lams = [2.0**i / n for i in range(-3, 8, 2)]
    print(f"\n2. Grid selection over {len(gammas)} gamma x {len(lams)} lam "
          "(lam*n = 2^-3..2^7); ties go to the larger lam")
    grid_selection(X, y, "l2svm", [("exact", 5), ("bif", 5), ("bif", "inf")], gammas, lams)
    grid_selection(X, y, "lssvm", [("exact", 5), ("closed-form", 5)], gammas, lams)
    tuned_model()
    print("\nTimings include the kernel matrix. See README for conventions "
          "(lam vs scikit-learn alpha/C).")


if __name__ == "__main__":
    main()
