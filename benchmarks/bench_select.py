"""Full-grid model selection: kernelcv's grid search against scikit-learn's GridSearchCV.

For each LIBSVM set (../shared/datasets; skipped when absent), split in halves
(stratified, seed 0), search the full default grid on the training half — 21 gamma
(sigma = 2^-10..2^10, gamma = 1/(2 sigma^2)) x 15 lam (2^i/n, i = -3..11), 10 folds,
the same folds for both libraries — refit the best candidate and measure the test error
on the other half:

* KRR: kernelcv's exact closed-form CV (MSE criterion) against
  ``GridSearchCV(KernelRidge, alpha = n lam, scoring="neg_mean_squared_error")``;
* SVM: kernelcv's BIF CV (order inf) of the L2-SVM and of the Huber-smoothed hinge SVM,
  with the default safeguards (exact re-check of degenerate candidates, best 3 confirmed
  by exact refit CV), against ``GridSearchCV(SVC, C = 1/(2 n lam))``.

Seconds include the refit of the best candidate. Ratios are scikit-learn / kernelcv
(target >= 20x) and test errors are 0-1 errors (KRR predicts sign f).

Run: ``.venv/bin/python benchmarks/bench_select.py [--datasets heart_scale ...] [--quick]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, PredefinedSplit, train_test_split
from sklearn.svm import SVC

from kernelcv import grid_search
from kernelcv.estimators import ESTIMATORS
from kernelcv.selection.grids import default_gammas, default_lams
from kernelcv.validation import make_folds

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "libsvm"
SETS = ["australian_scale", "heart_scale", "ionosphere_scale", "breast-cancer_scale",
        "diabetes_scale", "german.numer_scale"]
FOLDS = 10


def load(name):
    path = SHARED / f"{name}.svm"
    if not path.exists():
        return None
    X, y = load_svmlight_file(str(path))
    y = np.where(y > np.min(y), 1.0, -1.0)
    return train_test_split(X.toarray(), y, test_size=0.5, stratify=y, random_state=0)


def timed(fn):
    tic = time.perf_counter()
    out = fn()
    return time.perf_counter() - tic, out


def kernelcv_select(machine, X, y, X_test, y_test, folds, gammas, lams):
    def run():
        result = grid_search(X, y, machine, gammas=gammas, lams=lams, folds=folds)
        params = {k: v for k, v in result.best_params.items() if k != "kernel"}
        model = ESTIMATORS[machine](**params).fit(X, y)
        return result, model

    seconds, (result, model) = timed(run)
    predictions = model.predict(X_test)
    if machine == "krr":
        predictions = np.where(predictions > 0, 1.0, -1.0)
    return seconds, float(np.mean(predictions != y_test)), result


def sklearn_select(estimator, grid, scoring, X, y, X_test, y_test, folds):
    search = GridSearchCV(estimator, grid, scoring=scoring, cv=PredefinedSplit(folds))
    seconds, search = timed(lambda: search.fit(X, y))
    predictions = search.predict(X_test)
    predictions = np.where(predictions > 0, 1.0, -1.0)
    return seconds, float(np.mean(predictions != y_test)), search.best_params_


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=SETS)
    parser.add_argument("--quick", action="store_true",
                        help="heart and ionosphere only, 11 gamma x 8 lam")
    args = parser.parse_args()
    names = ["heart_scale", "ionosphere_scale"] if args.quick else args.datasets
    rows = []
    for name in names:
        split = load(name)
        if split is None:
            print(f"{name}: not found under {SHARED}, skipped")
            continue
        X, X_test, y, y_test = split
        n = X.shape[0]
        gammas, lams = default_gammas(), default_lams(n)
        if args.quick:
            gammas, lams = gammas[5:16], lams[::2]
        folds = make_folds(y, FOLDS, True, 0)
        print(f"\n{name}: train {n} x {X.shape[1]}, test {X_test.shape[0]}, "
              f"{len(gammas)} gamma x {len(lams)} lam, {FOLDS} folds", flush=True)

        krr_grid = {"gamma": gammas, "alpha": [n * lam for lam in lams]}
        sk_krr = sklearn_select(KernelRidge(kernel="rbf"), krr_grid,
                                "neg_mean_squared_error", X, y, X_test, y_test, folds)
        kc_krr = kernelcv_select("krr", X, y, X_test, y_test, folds, gammas, lams)
        svc_grid = {"gamma": gammas, "C": [1.0 / (2 * n * lam) for lam in lams]}
        sk_svc = sklearn_select(SVC(kernel="rbf"), svc_grid, None, X, y, X_test, y_test,
                                folds)
        kc_l2 = kernelcv_select("l2svm", X, y, X_test, y_test, folds, gammas, lams)
        kc_svm = kernelcv_select("svm", X, y, X_test, y_test, folds, gammas, lams)

        for label, sk, kc in (("KRR closed-form vs KernelRidge", sk_krr, kc_krr),
                              ("L2-SVM BIF vs SVC", sk_svc, kc_l2),
                              ("Huber-SVM BIF vs SVC", sk_svc, kc_svm)):
            ratio = sk[0] / kc[0]
            print(f"  {label:32s} sklearn {sk[0]:7.2f} s  kernelcv {kc[0]:6.2f} s  "
                  f"ratio {ratio:6.1f}x  test error {sk[1]:.3f} vs {kc[1]:.3f} "
                  f"(diff {100 * (kc[1] - sk[1]):+.1f} pp)", flush=True)
            rows.append((name, label, sk[0], kc[0], ratio, sk[1], kc[1]))
        print(f"  kernelcv best: krr {kc_krr[2].best_params}, l2svm {kc_l2[2].best_params}, "
              f"svm {kc_svm[2].best_params}")

    if rows:
        print("\n| data | comparison | scikit-learn s | kernelcv s | ratio | "
              "test err sklearn | test err kernelcv |")
        print("|---|---|---|---|---|---|---|")
        for name, label, sk_s, kc_s, ratio, sk_e, kc_e in rows:
            print(f"| {name} | {label} | {sk_s:.2f} | {kc_s:.2f} | {ratio:.1f}x | "
                  f"{sk_e:.3f} | {kc_e:.3f} |")


if __name__ == "__main__":
    main()
