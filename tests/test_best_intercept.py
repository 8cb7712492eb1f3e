"""The intercept-only step of the Newton solver: exact from the knots, as the bisection.

When no point is on a quadratic piece the solver first moves b alone to the minimiser
of ``sum_j loss(y_j, F0_j + b)``. Up to KNOT_SCAN_MAX_ROWS rows that minimiser comes from
the knots in one pass; the oracle is the bracketing bisection used above that size, and
the objective itself (scipy's bounded scalar minimiser as a third opinion).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

import kernelcv.machines.solver as solver
from kernelcv.machines import make_machine


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 60), machine=st.sampled_from(["svm", "svr"]),
       log_width=st.floats(-3, -0.5), log_spread=st.floats(-2, 1))
def test_the_knot_scan_finds_the_bisections_minimiser(seed, n, machine, log_width,
                                                       log_spread):
    rng = np.random.default_rng(seed)
    loss = make_machine(machine, huber_width=10.0**log_width).loss
    y = rng.choice([-1.0, 1.0], n) if machine == "svm" else rng.normal(size=n)
    F0 = rng.normal(scale=10.0**log_spread, size=n)
    b0 = float(rng.normal())
    found = solver._best_intercept(loss, y, F0, b0)
    saved = solver.KNOT_SCAN_MAX_ROWS
    try:
        solver.KNOT_SCAN_MAX_ROWS = 0
        bisected = solver._best_intercept(loss, y, F0, b0)
    finally:
        solver.KNOT_SCAN_MAX_ROWS = saved

    def objective(b):
        return float(loss.value(y, F0 + b).sum())

    best = objective(bisected)
    assert objective(found) <= best + 1e-12 * max(1.0, abs(best))
    scipy_best = minimize_scalar(objective, bounds=(-50, 50), method="bounded",
                                 options={"xatol": 1e-10}).fun
    assert objective(found) <= scipy_best + 1e-9 * max(1.0, abs(scipy_best))


def test_a_balanced_start_stays_put():
    loss = make_machine("svm").loss
    y = np.array([1.0, -1.0])
    F0 = np.array([5.0, -5.0])  # both far outside the margin: zero slope at b0 = 0.3
    assert solver._best_intercept(loss, y, F0, 0.3) == 0.3
