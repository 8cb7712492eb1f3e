"""Class probabilities: KernelSearchCV(SVC()).predict_proba against SVC(probability=True).

For each set (scikit-learn's breast cancer, wine, digits and a 1,500-row
make_classification), a stratified half is the training data. Both searches cover the
same 6 x 6 grid of (C, gamma) in a Pipeline with StandardScaler, with the same 5 folds:

* ``KernelSearchCV(make_pipeline(StandardScaler(), SVC()), grid, cv=5)``. Its
  probabilities scale the chosen model's out-of-fold decision values, so they cost no
  extra fit.
* ``GridSearchCV(make_pipeline(StandardScaler(), SVC(probability=True)), grid, cv=5)``.
  This is LIBSVM's Platt scaling, with an internal 5-fold CV in every fit.

Printed for each: test log-loss, test error, the share of test rows where the most
probable class is not the predicted one (scikit-learn issue 13211), and wall seconds.

``--scoring neg_log_loss`` chooses by log-loss in both searches: kernelcv's cross-fitted
held-out log-loss (no extra fit), GridSearchCV's of SVC's Platt probabilities per fold.

Run ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_probabilities.py``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_classification
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from kernelcv import KernelSearchCV

GRID = {"svc__C": [2.0**k for k in range(-1, 11, 2)],
        "svc__gamma": [2.0**k for k in range(-11, 1, 2)]}


def sets():
    yield "breast cancer", *load_breast_cancer(return_X_y=True)
    yield "wine", *load_wine(return_X_y=True)
    yield "digits", *load_digits(return_X_y=True)
    yield "make_classification", *make_classification(1500, 20, n_informative=8,
                                                      n_classes=3, random_state=0)


def measure(search, X_train, y_train, X_test, y_test):
    tic = time.perf_counter()
    search.fit(X_train, y_train)
    seconds = time.perf_counter() - tic
    p = search.predict_proba(X_test)
    predicted = search.predict(X_test)
    classes = search.classes_
    disagree = float(np.mean(classes[np.argmax(p, axis=1)] != predicted))
    return (log_loss(y_test, p, labels=classes), float(np.mean(predicted != y_test)),
            disagree, seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scoring", choices=("neg_log_loss",), default=None,
                        help="the scoring of both searches (default: accuracy)")
    scoring = parser.parse_args().scoring
    print(f"{'set (train n, k)':28} {'tool':18} {'log-loss':>9} {'error':>7} "
          f"{'argmax != predict':>18} {'seconds':>8}")
    for name, X, y in sets():
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, train_size=0.5, stratify=y, random_state=0)
        folds = StratifiedKFold(5, shuffle=True, random_state=0)
        label = f"{name} ({len(y_train)}, {len(np.unique(y))})"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = measure(KernelSearchCV(make_pipeline(StandardScaler(), SVC()), GRID,
                                          cv=folds, scoring=scoring),
                           X_train, y_train, X_test, y_test)
            svc = measure(GridSearchCV(make_pipeline(StandardScaler(), SVC(probability=True,
                                                                               random_state=0)),
                                       GRID, cv=folds, scoring=scoring),
                          X_train, y_train, X_test, y_test)
        for tool, row in (("KernelSearchCV", ours), ("GridSearchCV+Platt", svc)):
            print(f"{label:28} {tool:18} {row[0]:9.4f} {row[1]:7.4f} {row[2]:18.4f} "
                  f"{row[3]:8.2f}")
        print(f"{'':28} {'time ratio':18} {svc[3] / ours[3]:9.1f}x")


if __name__ == "__main__":
    main()
