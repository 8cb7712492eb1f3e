"""Kernels against scikit-learn's pairwise kernels, dense and sparse, and the memory budget."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import (
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)

from kernelcv import GramFactory, KernelCVError, MemoryBudgetError, make_kernel
from kernelcv.memory import check_dense_budget, parse_bytes

rng = np.random.default_rng(0)
X = rng.normal(size=(30, 4))
Y = rng.normal(size=(7, 4))


@pytest.mark.parametrize("sparse", [False, True])
def test_kernels_match_sklearn(sparse):
    A = sp.csr_matrix(X) if sparse else X
    B = sp.csr_matrix(Y) if sparse else Y
    cases = [
        (make_kernel("rbf", 0.3), rbf_kernel(X, Y, gamma=0.3)),
        (make_kernel("laplace", 0.2), laplacian_kernel(X, Y, gamma=0.2)),
        (make_kernel("poly", 0.5, degree=3, coef0=1.0),
         polynomial_kernel(X, Y, degree=3, gamma=0.5, coef0=1.0)),
        (make_kernel("linear"), linear_kernel(X, Y)),
    ]
    for kernel, expected in cases:
        np.testing.assert_allclose(kernel(A, B), expected, rtol=1e-12, atol=1e-12)


def test_factory_reuses_distances_across_gamma():
    factory = GramFactory(X, base="sqeuclidean")
    base = factory._base["sqeuclidean"]
    for gamma in (0.01, 1.0, 100.0):
        np.testing.assert_allclose(factory.gram(make_kernel("rbf", gamma)),
                                   rbf_kernel(X, gamma=gamma), rtol=1e-12, atol=1e-300)
    assert factory._base["sqeuclidean"] is base
    assert np.all(np.diag(base) == 0)


@pytest.mark.parametrize("kwargs", [
    {"name": "rbf", "gamma": 0}, {"name": "rbf", "gamma": -1}, {"name": "rbf"},
    {"name": "laplace", "gamma": float("nan")}, {"name": "poly", "gamma": 1, "degree": 0},
    {"name": "poly", "gamma": 1, "degree": 2.5}, {"name": "sigmoid", "gamma": 1},
])
def test_bad_kernel_parameters(kwargs):
    with pytest.raises(KernelCVError):
        make_kernel(**kwargs)


def test_memory_budget_refuses_with_estimate():
    assert parse_bytes("1.5K") == 1536 and parse_bytes("2G") == 2 * 2**30
    with pytest.raises(MemoryBudgetError, match="needs about 7.5 GiB"):
        check_dense_budget(10_000, 10_000, 10, "test", budget="1G")
    assert check_dense_budget(100, 100, 1, "test", budget="1M") == 80_000
    with pytest.raises(MemoryBudgetError):
        GramFactory(X, memory_budget=1000)
    with pytest.raises(KernelCVError):
        parse_bytes("lots")
