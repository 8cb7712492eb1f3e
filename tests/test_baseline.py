"""A search whose best candidate is worse than the constant prediction says so."""

from __future__ import annotations

import numpy as np
import pytest

from kernelcv.selection.after_grid.baseline import baseline_error
from kernelcv.selection.search import grid_search


def test_baseline_error_is_the_refit_cv_error_of_the_training_majority_and_mean():
    y = np.array([1, 1, 1, -1, -1, 1, 1, -1, 1, 1])
    folds = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0, 1])
    # fold 0 held out: training part (fold 1) 1,-1,1,-1,1 -> majority 1; fold 1 held out:
    # training part 1,1,-1,1,1 -> 1; errors: the -1 rows, 3 of 10
    assert baseline_error(y, folds, True) == pytest.approx(0.3)
    targets = np.arange(10.0)
    expected = np.mean([(targets[k] - targets[folds != folds[k]].mean()) ** 2
                        for k in range(10)])
    assert baseline_error(targets, folds, False) == pytest.approx(expected)


def test_a_grid_without_a_useful_model_is_noted():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 5))
    y = np.where(rng.random(60) < 0.7, 1, -1)  # labels unrelated to X
    # a wide kernel and a tiny lam interpolate the noise: 0.35 against the majority's 0.28
    result = grid_search(X, y, "l2svm", gammas=[1.0], lams=[1e-8], folds=5, method="exact")
    assert any("worse than predicting each training part's majority class" in note
               for note in result.notes)


def test_a_useful_model_gets_no_such_note():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    result = grid_search(X, y, "l2svm", gammas=[0.5], lams=[1e-2], folds=5)
    assert not any("majority class" in note for note in result.notes)
