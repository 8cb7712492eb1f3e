"""The held-out scores' metrics against scikit-learn's functions of the same name."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics

from kernelcv.criteria.scoring import (
    METRICS,
    PROBABILITY_SCORES,
    SCORES,
    VALUE_SCORES,
    HeldoutScore,
)

# Scores of arrays (the probability scores fit a scale first: tests/test_probability_scores.py)
ARRAY_SCORES = [name for name in SCORES if name not in PROBABILITY_SCORES]


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 40),
       name=st.sampled_from(ARRAY_SCORES), ties=st.booleans())
def test_every_score_is_scikit_learns(seed, n, name, ties):
    rng = np.random.default_rng(seed)
    score = HeldoutScore(name)
    if score.for_classifiers:
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        y[:2] = [-1.0, 1.0]
        values = rng.normal(size=n)
        if ties:
            values = np.round(values, 0)
        if name not in VALUE_SCORES:
            values = np.where(values >= 0, 1.0, -1.0)
    else:
        y = rng.normal(size=n)
        if ties:
            y = np.round(y)
        values = y + rng.normal(size=n)
    assert score._score(y, values) == pytest.approx(_sklearn(name, y, values), rel=1e-12,
                                                    abs=1e-12)


def _sklearn(name, y, values):
    import warnings

    function, keywords = METRICS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero_division: 0.0 with a warning there
        expected = float(getattr(metrics, function)(y, values, **keywords))
    return -expected if name.startswith("neg_") else expected


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 40), k=st.integers(3, 6),
       name=st.sampled_from([s for s in ARRAY_SCORES if s.endswith(("_macro", "_micro",
                                                                    "_weighted"))]
                            + ["matthews_corrcoef", "accuracy", "balanced_accuracy"]))
def test_averaged_scores_of_several_classes_are_scikit_learns(seed, n, k, name):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    predicted = np.where(rng.random(n) < 0.6, y, rng.integers(0, k, size=n))
    assert HeldoutScore(name)._score(y, predicted) == pytest.approx(
        _sklearn(name, y, predicted), rel=1e-12, abs=1e-12)


def test_binary_scores_refuse_more_classes_and_name_the_averaged_ones():
    from kernelcv.exceptions import KernelCVError

    with pytest.raises(KernelCVError, match="f1_macro"):
        HeldoutScore("f1").check(True, 3)
    with pytest.raises(KernelCVError, match="two classes"):
        HeldoutScore("average_precision").check(True, 3)
    HeldoutScore("f1_weighted").check(True, 3)


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
