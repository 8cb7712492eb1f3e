"""Stacks of SPD systems solved with their Cholesky factors (machines.batched_linalg),
against numpy's LU solve of each system."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelcv.machines.batched_linalg import cholesky_factors, cholesky_solve_each


def spd_stack(rng, P, a):
    A = rng.normal(size=(P, a, a))
    return A @ A.transpose(0, 2, 1) + 0.1 * np.eye(a)


@pytest.mark.parametrize("P, a, k", [(1, 1, 1), (7, 5, 2), (30, 48, 1), (3, 120, 3)])
def test_solutions_match_lu(P, a, k):
    rng = np.random.default_rng(P * 100 + a)
    M, B = spd_stack(rng, P, a), rng.normal(size=(P, a, k))
    factors, ok = cholesky_factors(M)
    assert ok.all()
    assert np.allclose(factors @ factors.transpose(0, 2, 1), M, rtol=1e-12, atol=1e-10)
    X = cholesky_solve_each(factors, B)
    expected = np.linalg.solve(M, B)
    assert np.abs(X - expected).max() <= 1e-9 * max(1.0, np.abs(expected).max())


def test_a_matrix_without_factor_is_flagged_and_left_at_zero():
    rng = np.random.default_rng(1)
    M, B = spd_stack(rng, 4, 6), rng.normal(size=(4, 6, 2))
    M[2] = -M[2]  # negative definite
    factors, ok = cholesky_factors(M)
    assert ok.tolist() == [True, True, False, True]
    assert np.all(factors[2] == 0)
    X = cholesky_solve_each(factors, B, ok)
    assert np.all(X[2] == 0)
    for p in (0, 1, 3):
        assert np.allclose(X[p], np.linalg.solve(M[p], B[p]), rtol=1e-10, atol=1e-12)


def brute_force_cost(sizes, per_item):
    """The cheapest grouping of the sorted sizes into at most three runs (every choice)."""
    from itertools import combinations

    from kernelcv.machines.batched_linalg import GROUP_OVERHEAD_FLOPS

    distinct = np.unique(sizes)
    best = np.inf
    for k in range(3):
        for cuts in combinations(range(distinct.size - 1), k):
            floor, total = -np.inf, 0.0
            for cut in [*cuts, distinct.size - 1]:
                count = np.sum((sizes > floor) & (sizes <= distinct[cut]))
                total += per_item * count * float(distinct[cut]) ** 3 / 3 + GROUP_OVERHEAD_FLOPS
                floor = distinct[cut]
            best = min(best, total)
    return best


@settings(max_examples=80, deadline=None)
@given(sizes=st.lists(st.integers(0, 70), min_size=1, max_size=40),
       per_item=st.sampled_from([1, 10]))
def test_size_groups_partition_the_systems_at_the_least_cost(sizes, per_item):
    from kernelcv.machines.batched_linalg import GROUP_OVERHEAD_FLOPS, size_groups

    sizes = np.array(sizes)
    groups = size_groups(sizes, per_item)
    assert 1 <= len(groups) <= 3
    assert sorted(np.concatenate(groups).tolist()) == list(range(sizes.size))
    assert all(g.size for g in groups)
    cost = sum(per_item * g.size * float(sizes[g].max()) ** 3 / 3 + GROUP_OVERHEAD_FLOPS
               for g in groups)
    assert cost == pytest.approx(brute_force_cost(sizes, per_item), rel=1e-12)
