"""Granularity selection (eq. 6) and the adaptive order rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernelcv.exceptions import KernelCVError
from kernelcv.selection.granularity import (
    adaptive_tolerance,
    bound_rule,
    error_bound,
    granularity_table,
)


def _eq6_by_search(epsilon, delta, lam, kappa):
    """Independent reference: the smallest m with delta/2 + kappa/(lam m^2) <= epsilon."""
    m = 1
    while delta / 2 + kappa / (lam * m * m) > epsilon * (1 + 1e-12):
        m += 1
    return m


@pytest.mark.parametrize("epsilon", [0.05, 0.1, 0.2, 0.5])
@pytest.mark.parametrize("lam", [1e-3, 1e-2, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("delta", [0.0, 0.01, 0.05])
def test_eq6_matches_the_smallest_balanced_choice(epsilon, lam, delta):
    choice = bound_rule(epsilon, delta=delta, lam=lam)
    m = _eq6_by_search(epsilon, delta, lam, 1.0)
    assert choice.n_folds == m + 1
    assert choice.order == max(m - 1, 1)
    assert choice.bound <= epsilon * (1 + 1e-12)
    assert choice.bound == pytest.approx(error_bound(choice.n_folds, choice.order, delta=delta,
                                                     lam=lam, kappa=1.0))
    assert not choice.capped


def test_kappa_scales_like_one_over_lam():
    a = bound_rule(0.1, delta=0.0, lam=0.01, kappa=4.0)
    b = bound_rule(0.1, delta=0.0, lam=0.0025, kappa=1.0)
    assert (a.n_folds, a.order) == (b.n_folds, b.order)


def test_looser_tolerance_and_larger_lam_need_fewer_folds():
    table = granularity_table([0.05, 0.1, 0.5], [0.01, 0.1, 1.0], delta=0.01)
    folds = np.array([row["n_folds"] for row in table]).reshape(3, 3)
    assert np.all(np.diff(folds, axis=0) <= 0)  # epsilon grows down the rows
    assert np.all(np.diff(folds, axis=1) <= 0)  # lam grows along the columns
    assert folds[0, 0] > folds[-1, -1]
    # One row, recomputed by hand: epsilon 0.1, lam 0.01, delta 0.01.
    row = next(r for r in table if r["epsilon"] == 0.1 and r["lam"] == 0.01)
    m = math.ceil(math.sqrt(1 / (0.01 * (0.1 - 0.005))))
    assert (row["n_folds"], row["order"]) == (m + 1, m - 1)


def test_cap_at_leave_one_out_raises_the_order():
    free = bound_rule(0.1, delta=0.0, lam=1e-4)
    capped = bound_rule(0.1, delta=0.0, lam=1e-4, n_samples=50)
    assert free.n_folds > 50
    assert capped.capped and capped.n_folds == 50
    assert capped.order > free.order
    assert capped.bound <= 0.1 * (1 + 1e-12)
    # One order less would break the bound.
    assert error_bound(50, capped.order - 1, delta=0.0, lam=1e-4, kappa=1.0) > 0.1


def test_epsilon_at_or_below_half_the_huber_width_is_refused():
    with pytest.raises(KernelCVError, match="too small"):
        bound_rule(0.005, delta=0.01, lam=0.1)
    with pytest.raises(KernelCVError, match="too small"):
        bound_rule(0.004, delta=0.01, lam=0.1)
    with pytest.raises(KernelCVError):
        bound_rule(float("nan"), delta=0.01, lam=0.1)
    with pytest.raises(KernelCVError):
        bound_rule(0.1, delta=0.01, lam=0.0)
    assert adaptive_tolerance(0.1, 0.01) == pytest.approx(0.095)
