"""kernelcv's own inner products and squared distances against scikit-learn's pairwise
functions, on dense, sparse and mixed inputs of random shapes, X against itself or Y."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics.pairwise import (
    euclidean_distances,
    laplacian_kernel,
    linear_kernel,
    manhattan_distances,
    polynomial_kernel,
    rbf_kernel,
)

from kernelcv import GramFactory, KernelCVError, make_kernel
from kernelcv.kernels import inner_products, squared_distances, squared_norms

RTOL = 1e-12


def matrix(rng, n, d, density, scale, sparse, index_dtype=np.int32):
    A = rng.normal(scale=scale, size=(n, d)) * (rng.random((n, d)) < density)
    if not sparse:
        return A
    A = sp.csr_matrix(A)
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    return A


def dense(A):
    return A.toarray() if sp.issparse(A) else A


def int32(A):
    """scikit-learn's sparse L1 distances accept only int32 indices (kernelcv converts)."""
    if A is None or not sp.issparse(A):
        return A
    return sp.csr_matrix((A.data, A.indices.astype(np.int32), A.indptr.astype(np.int32)),
                         shape=A.shape)


@st.composite
def pair(draw):
    """(X, Y or None, the scale of the squared norms) with random shapes and formats."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n, m, d = draw(st.integers(1, 25)), draw(st.integers(1, 25)), draw(st.integers(1, 12))
    density = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    X = matrix(rng, n, d, density, scale, draw(st.booleans()), index_dtype)
    Y = None
    if draw(st.booleans()):
        Y = matrix(rng, m, d, density, scale, draw(st.booleans()), index_dtype)
    if draw(st.booleans()) and n > 1:  # duplicate rows: distance exactly 0 at best
        X = sp.vstack([X[:1], X[:-1]]).tocsr() if sp.issparse(X) else np.vstack([X[:1],
                                                                                   X[:-1]])
    norms = np.sum(dense(X) ** 2, axis=1)
    ynorms = norms if Y is None else np.sum(dense(Y) ** 2, axis=1)
    return X, Y, norms[:, None] + ynorms[None, :]


@settings(max_examples=300, deadline=None)
@given(pair())
def test_squared_distances_match_scikit_learn(case):
    X, Y, scale = case
    ours = GramFactory(X, Y, base="sqeuclidean")._base["sqeuclidean"]
    theirs = euclidean_distances(X, Y, squared=True)
    assert ours.dtype == np.float64 and ours.shape == theirs.shape
    # the formula cancels: its rounding is relative to ||x||^2 + ||y||^2
    assert np.all(np.abs(ours - theirs) <= RTOL * scale)
    assert np.all(ours >= 0)
    if Y is None:
        assert np.all(np.diag(ours) == 0)
        assert np.all(np.abs(ours - ours.T) <= RTOL * scale)


@settings(max_examples=300, deadline=None)
@given(pair())
def test_inner_products_and_kernels_match_scikit_learn(case):
    X, Y, scale = case
    factory = GramFactory(X, Y)
    np.testing.assert_allclose(factory.gram(make_kernel("linear")), linear_kernel(X, Y),
                               rtol=RTOL, atol=RTOL * scale.max())
    gamma = 1.0 / max(float(np.median(scale)), 1e-12)
    np.testing.assert_allclose(factory.gram(make_kernel("rbf", gamma)),
                               rbf_kernel(X, Y, gamma=gamma), rtol=RTOL, atol=1e-12)
    poly = factory.gram(make_kernel("poly", gamma, degree=3, coef0=1.0))
    np.testing.assert_allclose(poly, polynomial_kernel(X, Y, degree=3, gamma=gamma, coef0=1.0),
                               rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(factory.gram(make_kernel("laplace", 0.1)),
                               laplacian_kernel(int32(X), int32(Y), gamma=0.1), rtol=RTOL,
                               atol=1e-300)
    np.testing.assert_allclose(factory._base["manhattan"],
                               manhattan_distances(int32(X), int32(Y)),
                               rtol=RTOL, atol=0)


def test_dense_distances_are_scikit_learns_to_the_bit():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(40, 7)), rng.normal(size=(13, 7))
    assert np.array_equal(squared_distances(X, Y), euclidean_distances(X, Y, squared=True))
    assert np.array_equal(squared_distances(X), euclidean_distances(X, squared=True))


def test_helpers_on_mixed_formats():
    rng = np.random.default_rng(2)
    X, Y = matrix(rng, 9, 5, 0.4, 1.0, True), matrix(rng, 6, 5, 0.4, 1.0, False)
    for A, B in ((X, Y), (dense(X), sp.csr_matrix(Y)), (X, sp.csr_matrix(Y))):
        np.testing.assert_allclose(inner_products(A, B), dense(X) @ Y.T, rtol=RTOL)
        assert isinstance(inner_products(A, B), np.ndarray)
    np.testing.assert_allclose(squared_norms(X), np.sum(dense(X) ** 2, axis=1), rtol=RTOL)
    empty_rows = sp.csr_matrix((4, 3))
    assert np.array_equal(squared_norms(empty_rows), np.zeros(4))
    assert np.array_equal(squared_distances(empty_rows), np.zeros((4, 4)))


@pytest.mark.parametrize("X,Y,message", [
    (np.ones((3, 2)), np.ones((2, 3)), "X has 2 features but Y has 3"),
    (np.ones(3), None, "must be 2-D"),
    (np.array([[1.0, np.nan]]), None, "NaN or infinite"),
    (sp.csr_matrix(np.array([[np.inf, 1.0]])), None, "NaN or infinite"),
    ([["a", "b"]], None, "not numeric"),
])
def test_bad_inputs_are_clear_errors(X, Y, message):
    with pytest.raises(KernelCVError, match=message):
        GramFactory(X, Y, base="dot")


@pytest.mark.parametrize("dense_from", [0.0, 2.0])
@pytest.mark.parametrize("d,density", [(8, 0.5), (500, 0.005)])
def test_every_sparse_route_gives_the_product(monkeypatch, dense_from, d, density):
    """Densified (dense_from 0), row blocks of Y made dense (d=8, several 5-entry blocks)
    and the sparse product (d=500, very sparse)."""
    import kernelcv.kernels as kernels

    monkeypatch.setattr(kernels, "DENSE_FROM", dense_from)
    monkeypatch.setattr(kernels, "_DENSE_BLOCK_ENTRIES", 5 * d)
    rng = np.random.default_rng(d)
    X, Y = matrix(rng, 30, d, density, 1.0, True), matrix(rng, 23, d, density, 1.0, True)
    for A, B in ((X, Y), (X, X), (Y, X)):
        product = inner_products(A, B)
        assert product.shape == (A.shape[0], B.shape[0]) and product.flags.c_contiguous
        np.testing.assert_allclose(product, dense(A) @ dense(B).T, rtol=RTOL, atol=1e-14)
