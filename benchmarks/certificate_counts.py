"""How often BIF values of the SVM machines are off exact CV, and how often flagged.

Random small problems (n 20-120, 1-6 features, 2-10 folds, lam 1e-6..10, gamma
1e-2.5..1e1.5, with and without intercept), BIF order inf against exact refit CV on the
same folds. A value is *off* when it differs from the exact CV error by more than the
tolerance (0.01 of 0-1 error, 1 % of the MSE); *flagged* when it carries
``uncertified``, ``ill_conditioned``, ``unconverged`` or ``degenerate``. The table counts
off values with no flag (must be 0) and flagged values that were not off (the price of
a guaranteed bound).

    python benchmarks/certificate_counts.py [--problems 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from kernelcv import BIF, cross_validate, make_machine


def problem(rng, machine):
    n = int(rng.integers(20, 121))
    d = int(rng.integers(1, 7))
    X = rng.normal(size=(n, d))
    signal = X[:, 0] + np.sin(2 * X[:, -1]) + 0.3 * rng.normal(size=n)
    y = signal if machine == "svr" else np.where(signal > np.median(signal), 1.0, -1.0)
    options = {"gamma": 10.0 ** rng.uniform(-2.5, 1.5), "lam": 10.0 ** rng.uniform(-6, 1),
               "folds": int(rng.integers(2, 11)), "random_state": int(rng.integers(2**31)),
               "fit_intercept": bool(rng.integers(0, 2))}
    return X, y, options


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"{'machine':8} {'problems':>8} {'off':>5} {'flagged':>8} {'off, no flag':>13} "
          f"{'flagged, not off':>17} {'seconds':>8}")
    for machine in ("l2svm", "svm", "svr"):
        rng = np.random.default_rng(args.seed)
        counts = dict.fromkeys(("off", "flagged", "silent", "false_alarm"), 0)
        tic = time.perf_counter()
        for _ in range(args.problems):
            X, y, options = problem(rng, machine)
            spec = make_machine(machine, fit_intercept=options.pop("fit_intercept"))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bif = cross_validate(X, y, spec, method=BIF(order="inf"), **options)
                exact = cross_validate(X, y, spec, method="exact", **options)
            limit = 0.01 * (1.0 if bif.metric == "0-1" else abs(exact.cv_error))
            off = not abs(bif.cv_error - exact.cv_error) <= limit
            flagged = bif.uncertified or bif.ill_conditioned or bif.unconverged or \
                bif.degenerate
            counts["off"] += off
            counts["flagged"] += flagged
            counts["silent"] += off and not flagged
            counts["false_alarm"] += flagged and not off
        print(f"{machine:8} {args.problems:8d} {counts['off']:5d} {counts['flagged']:8d} "
              f"{counts['silent']:13d} {counts['false_alarm']:17d} "
              f"{time.perf_counter() - tic:8.1f}")


if __name__ == "__main__":
    main()
