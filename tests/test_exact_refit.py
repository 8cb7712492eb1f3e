"""Exact refit CV, the oracle of every criterion: its training blocks are copied into one
buffer shared by the folds, and its held-out values must equal fits made on fresh copies
of each training block (unequal folds, so the buffer is reused at different sizes)."""

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from kernelcv import make_machine
from kernelcv.criteria.exact import BLOCK_ROWS, refit_predictions, training_block

rng = np.random.default_rng(11)


def test_training_block_equals_fancy_indexing():
    K = rng.normal(size=(BLOCK_ROWS * 2 + 37, BLOCK_ROWS * 2 + 37))
    rows = np.sort(rng.choice(K.shape[0], BLOCK_ROWS + 101, replace=False))
    out = np.empty((rows.size, rows.size))
    assert training_block(K, rows, out) is out
    assert np.array_equal(out, K[np.ix_(rows, rows)])


@pytest.mark.parametrize("name", ["svm", "l2svm", "svr", "krr"])
def test_refits_equal_fits_on_fresh_blocks(name):
    n = 90
    X = rng.normal(size=(n, 3))
    y = np.sign(X[:, 0] + 0.3 * rng.normal(size=n)) if name in ("svm", "l2svm") \
        else X[:, 0] + 0.1 * rng.normal(size=n)
    K = rbf_kernel(X, gamma=0.4)
    fold_ids = np.repeat([0, 1, 2, 3], [10, 35, 20, 25])
    rng.shuffle(fold_ids)
    machine = make_machine(name)
    lam = 1e-3
    predictions, _ = refit_predictions(K, y, fold_ids, lam, machine)
    for i in range(4):
        train, test = fold_ids != i, fold_ids == i
        fit = machine.fit(K[np.ix_(train, train)].copy(), y[train], lam)
        expected = K[np.ix_(test, train)] @ fit.alpha + fit.intercept
        np.testing.assert_allclose(predictions[test], expected, rtol=1e-9, atol=1e-10)
