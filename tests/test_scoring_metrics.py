"""The held-out scores' metrics against scikit-learn's functions of the same name."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics

from kernelcv.criteria.scoring import METRICS, SCORES, HeldoutScore


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 40),
       name=st.sampled_from(SCORES), ties=st.booleans())
def test_every_score_is_scikit_learns(seed, n, name, ties):
    rng = np.random.default_rng(seed)
    score = HeldoutScore(name)
    if score.for_classifiers:
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        y[:2] = [-1.0, 1.0]
        values = rng.normal(size=n)
        if ties:
            values = np.round(values, 0)
        if name != "roc_auc":
            values = np.where(values >= 0, 1.0, -1.0)
    else:
        y = rng.normal(size=n)
        if ties:
            y = np.round(y)
        values = y + rng.normal(size=n)
    expected = float(getattr(metrics, METRICS[name])(y, values))
    expected = -expected if name.startswith("neg_") else expected
    assert score._score(y, values) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_constant_targets_give_scikit_learns_r2():
    y = np.ones(5)
    for predicted in (np.ones(5), np.zeros(5)):
        assert HeldoutScore("r2")._score(y, predicted) == metrics.r2_score(y, predicted)


def test_r2_of_one_sample_is_nan_as_in_scikit_learn():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = metrics.r2_score([1.0], [2.0])
    assert np.isnan(expected) and np.isnan(HeldoutScore("r2")._score(np.array([1.0]),
                                                                     np.array([2.0])))
