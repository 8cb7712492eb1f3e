"""Products with the Gram matrix that read only the rows they need (machines.gram_products)
against the full products, and the order-inf step and its certificate built on them
against refit CV."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelcv.criteria.bif import bif_predictions
from kernelcv.criteria.exact import refit_predictions
from kernelcv.criteria.result import heldout_rounding
from kernelcv.kernels import make_kernel
from kernelcv.machines import gram_products, make_machine
from kernelcv.machines.gram_products import kernel_times, nonzero_rows, rows_times
from kernelcv.validation import make_folds


@pytest.fixture(autouse=True)
def _gather_at_every_size(monkeypatch):
    """The tests' problems are small: gathers from the first row, not from 400."""
    monkeypatch.setattr(gram_products, "GATHER_MIN_ROWS", 0)


def _gram(n, seed, gamma=0.5):
    X = np.random.default_rng(seed).normal(size=(n, 3))
    return make_kernel("rbf", gamma=gamma)(X)


def _sparse(n, k, share, seed):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(n, k)) if k else rng.normal(size=n)
    V[rng.random(n) >= share] = 0.0
    return V


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), k=st.integers(0, 6), share=st.floats(0.0, 1.0),
       seed=st.integers(0, 10_000))
def test_kernel_times_equals_the_full_product(n, k, share, seed):
    K = _gram(n, seed)
    V = _sparse(n, k, share, seed + 1)
    ours = kernel_times(K, V)
    assert ours.shape == (K @ V).shape
    assert np.allclose(ours, K @ V, rtol=1e-12, atol=1e-12)
    rows = np.flatnonzero(np.random.default_rng(seed).random(n) < 0.5)
    assert np.allclose(rows_times(K, rows, V), (K @ V)[rows], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("share", [0.05, 0.9])
@pytest.mark.parametrize("k", [0, 5])
def test_few_nonzero_rows_read_only_those_rows_of_k(share, k):
    """With few non-zero rows only those rows of K are read (the other rows are NaN here
    and the product stays finite and right); with many, one full product (NaN shows)."""
    K = _gram(200, 3)
    V = _sparse(200, k, share, 4)
    rows = nonzero_rows(V)
    poisoned = K.copy()
    poisoned[np.setdiff1d(np.arange(200), rows)] = np.nan
    result = kernel_times(poisoned, V)
    if share < 0.1:
        assert np.allclose(result, K @ V, rtol=1e-12, atol=1e-12)
        superset = np.union1d(rows, np.arange(0, 200, 7))
        assert np.allclose(kernel_times(K, V, superset), K @ V, rtol=1e-12, atol=1e-12)
    else:
        assert np.isnan(result).any()
        assert np.allclose(kernel_times(K, V), K @ V, rtol=1e-12, atol=1e-12)


def test_all_zero_coefficients_give_zeros_without_reading_k():
    K = np.full((5, 5), np.nan)  # never read
    assert np.array_equal(kernel_times(K, np.zeros((5, 2))), np.zeros((5, 2)))
    assert np.array_equal(kernel_times(K, np.zeros(5)), np.zeros(5))


def test_nonzero_rows_keeps_nan_rows():
    V = np.array([[0.0, 0.0], [0.0, np.nan], [1.0, 0.0]])
    assert list(nonzero_rows(V)) == [1, 2]
    assert list(nonzero_rows(np.array([0.0, 2.0, 0.0]))) == [1]


def test_heldout_ratio_without_the_noise_share_is_the_same_ratio():
    K = _gram(120, 5, gamma=2.0)
    alpha = _sparse(120, 0, 0.1, 6)
    folds = make_folds(np.where(np.arange(120) % 2, 1.0, -1.0), 5, True, 0)
    ratio, share = heldout_rounding(K, alpha, 0.3, folds, 10.0)
    quick_ratio, nan = heldout_rounding(K, alpha, 0.3, folds, 10.0, noise=False)
    assert np.isclose(quick_ratio, ratio, rtol=1e-12)
    assert np.isnan(nan) and 0.0 <= share <= 1.0


def _objective(K, y, lam, machine, fit):
    """``(1/n) sum loss(y, K alpha + b) + lam alpha' K alpha``."""
    F = K @ fit.alpha + fit.intercept
    return float(np.mean(machine.loss.value(y, F)) + lam * fit.alpha @ K @ fit.alpha)


@pytest.mark.parametrize("gamma, C", [(0.5, 1.0), (0.05, 100.0), (4.0, 10.0)])
def test_order_inf_and_its_certificate_are_those_of_full_products(monkeypatch, gamma, C):
    """A 300-row problem whose fit has few support vectors: from one full fit, the
    order-inf values and the certificate's bounds with gathered rows equal those of full
    products (the shares patched to -1: K read whole); the fits of both reach the same
    objective; the refit values lie inside the bounds (a guarantee, so a wrong product
    would show)."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 2))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1.0, -1.0)
    y[rng.random(300) < 0.03] *= -1
    K = make_kernel("rbf", gamma=gamma)(X)
    folds = make_folds(y, 5, True, 1)
    machine = make_machine("svm")
    lam = 1.0 / (2 * 300 * C)
    fit = machine.fit(K, y, lam)
    assert np.count_nonzero(fit.alpha) < gram_products.GATHER_MAX_SHARE * 300  # gathered

    def run():
        values, _, bounds = bif_predictions(K, y, folds, lam, machine, fit, order="inf",
                                            enclosure=True)
        return values, bounds

    values, (lower, upper) = run()
    with monkeypatch.context() as patch:
        patch.setattr(gram_products, "GATHER_MAX_SHARE", -1.0)
        patch.setattr(gram_products, "GATHER_MAX_SHARE_VECTOR", -1.0)
        full_values, (full_lower, full_upper) = run()
        full_fit = machine.fit(K, y, lam)
    scale = np.abs(full_values).max()
    assert np.allclose(values, full_values, rtol=1e-10, atol=1e-12 * scale)
    finite = np.isfinite(full_lower) & np.isfinite(full_upper)
    assert np.array_equal(finite, np.isfinite(lower) & np.isfinite(upper))
    assert np.allclose(lower[finite], full_lower[finite], rtol=1e-9, atol=1e-11 * scale)
    assert np.allclose(upper[finite], full_upper[finite], rtol=1e-9, atol=1e-11 * scale)
    assert np.isclose(_objective(K, y, lam, machine, fit),
                      _objective(K, y, lam, machine, full_fit), rtol=1e-12)
    exact = refit_predictions(K, y, folds, lam, machine, full_fit=fit)[0]
    slack = 1e-7 * np.maximum(1.0, np.abs(exact))
    assert np.all(lower - slack <= exact) and np.all(exact <= upper + slack)
