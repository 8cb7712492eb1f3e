"""make_folds: kernelcv's own shuffled (stratified) fold assignment.

Properties over random sizes, fold counts, class balances and seeds: fold sizes and, when
stratified, per-class counts per fold differ by at most one; every id 0..t-1 is used; the
same seed gives the same folds; every training part of a classifier holds both classes.
scikit-learn's StratifiedKFold / KFold serve as an independent reference: the multiset of
per-fold class counts is theirs, and so is the assignment itself for the same seed (kernelcv
keeps scikit-learn's folds, so results and checkpoints made before stay valid).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import KFold, StratifiedKFold

from kernelcv.exceptions import KernelCVError
from kernelcv.validation import make_folds


@st.composite
def labelled(draw, stratifiable=None):
    """(y in +-1, t, seed); ``stratifiable``: both classes have >= t members (True), at
    least one has fewer (False) or either (None)."""
    t = draw(st.integers(2, 12))
    if stratifiable is None:
        n_neg = draw(st.integers(0, 60))
        n_pos = draw(st.integers(0 if n_neg >= t else t - n_neg, 60))
    elif stratifiable:
        n_neg = draw(st.integers(t, 60))
        n_pos = draw(st.integers(t, 60))
    else:
        n_neg = draw(st.integers(0, t - 1))
        n_pos = draw(st.integers(max(t - n_neg, 0), 60))
    y = np.array([-1.0] * n_neg + [1.0] * n_pos)
    y = y[np.random.default_rng(draw(st.integers(0, 2**16))).permutation(y.size)]
    return y, t, draw(st.integers(0, 2**32 - 1))


def spread(values):
    return int(np.max(values) - np.min(values))


def per_fold_class_counts(y, ids, t):
    """(t, 2) counts: column 0 the -1 class, column 1 the +1 class."""
    return np.stack([np.bincount(ids[y < 0], minlength=t),
                     np.bincount(ids[y > 0], minlength=t)], axis=1)


@settings(max_examples=200, deadline=None)
@given(labelled(stratifiable=True))
def test_stratified_folds_balance_sizes_and_classes(case):
    y, t, seed = case
    ids = make_folds(y, t, True, seed)
    assert ids.dtype == np.int64 and ids.shape == y.shape
    assert set(ids.tolist()) == set(range(t))
    counts = per_fold_class_counts(y, ids, t)
    assert spread(counts.sum(axis=1)) <= 1
    assert spread(counts[:, 0]) <= 1 and spread(counts[:, 1]) <= 1
    for i in range(t):
        retained = y[ids != i]
        assert np.any(retained > 0) and np.any(retained < 0)


@settings(max_examples=200, deadline=None)
@given(labelled(stratifiable=True))
def test_stratified_counts_match_scikit_learn(case):
    y, t, seed = case
    ids = make_folds(y, t, True, seed)
    ours = sorted(map(tuple, per_fold_class_counts(y, ids, t).tolist()))
    reference = StratifiedKFold(t, shuffle=True, random_state=seed)
    theirs = sorted((int(np.sum(y[test] < 0)), int(np.sum(y[test] > 0)))
                    for _, test in reference.split(np.zeros(y.size), y))
    assert ours == theirs


def sklearn_ids(splitter, y):
    ids = np.empty(y.size, dtype=np.int64)
    for i, (_, test) in enumerate(splitter.split(np.zeros(y.size), y)):
        ids[test] = i
    return ids


@settings(max_examples=200, deadline=None)
@given(labelled(stratifiable=True))
def test_stratified_assignment_is_scikit_learns(case):
    y, t, seed = case
    reference = sklearn_ids(StratifiedKFold(t, shuffle=True, random_state=seed), y)
    assert np.array_equal(make_folds(y, t, True, seed), reference)
    assert np.array_equal(make_folds(y, t, True, np.random.RandomState(seed)), reference)


@settings(max_examples=200, deadline=None)
@given(labelled(), st.booleans())
def test_plain_assignment_is_scikit_learns(case, classifier):
    y, t, seed = case
    if classifier and min(np.sum(y > 0), np.sum(y < 0)) >= t:
        return  # stratified: the test above
    try:
        ids = make_folds(y, t, classifier, seed)
    except KernelCVError:
        return
    assert np.array_equal(ids, sklearn_ids(KFold(t, shuffle=True, random_state=seed), y))


def test_none_draws_from_numpys_global_state_as_scikit_learn_does():
    y = np.where(np.arange(50) % 4 == 0, 1.0, -1.0)
    saved = np.random.get_state()  # noqa: NPY002 - the legacy global state is the point
    try:
        np.random.seed(7)  # noqa: NPY002
        ours = make_folds(y, 5, True, None)
        np.random.seed(7)  # noqa: NPY002
        assert np.array_equal(ours, sklearn_ids(StratifiedKFold(5, shuffle=True), y))
    finally:
        np.random.set_state(saved)  # noqa: NPY002


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 200), st.integers(2, 20), st.integers(0, 2**32 - 1))
def test_regression_folds_balance_sizes_and_match_kfold(n, t, seed):
    t = min(t, n)
    ids = make_folds(np.linspace(-1.0, 1.0, n), t, False, seed)
    assert set(ids.tolist()) == set(range(t))
    sizes = np.bincount(ids, minlength=t)
    assert spread(sizes) <= 1
    assert sorted(sizes.tolist()) == sorted(len(test) for _, test in KFold(t).split(ids))


@settings(max_examples=200, deadline=None)
@given(labelled(stratifiable=False))
def test_classes_too_small_to_stratify_give_plain_shuffled_folds(case):
    y, t, seed = case
    try:
        ids = make_folds(y, t, True, seed)
    except KernelCVError as exc:  # a fold holding all of the small class
        assert "only one class" in str(exc)
        return
    assert set(ids.tolist()) == set(range(t))
    sizes = np.bincount(ids, minlength=t)
    assert spread(sizes) <= 1
    assert sorted(sizes.tolist()) == sorted(len(test) for _, test in KFold(t).split(ids))
    for i in range(t):
        retained = y[ids != i]
        assert np.any(retained > 0) and np.any(retained < 0)


@settings(max_examples=200, deadline=None)
@given(labelled())
def test_any_balance_either_works_or_names_the_one_class_fold(case):
    y, t, seed = case
    try:
        ids = make_folds(y, t, True, seed)
    except KernelCVError as exc:
        assert "only one class" in str(exc)
        assert min(np.sum(y > 0), np.sum(y < 0)) < t  # stratified folds never fail
        return
    assert set(ids.tolist()) == set(range(t))
    assert spread(np.bincount(ids, minlength=t)) <= 1
    for i in range(t):
        retained = y[ids != i]
        assert np.any(retained > 0) and np.any(retained < 0)


@settings(max_examples=100, deadline=None)
@given(labelled(), st.booleans())
def test_same_seed_same_folds(case, classifier):
    y, t, seed = case
    t = min(t, y.size)
    try:
        first = make_folds(y, t, classifier, seed)
    except KernelCVError:
        return
    assert np.array_equal(first, make_folds(y, t, classifier, seed))
    assert np.array_equal(first, make_folds(y, t, classifier, np.int64(seed)))
    # a Generator shuffles differently: its folds may fail where the integer seed's did
    # not, but two equal Generators give the same outcome
    outcomes = []
    for _ in range(2):
        try:
            outcomes.append(make_folds(y, t, classifier, np.random.default_rng(seed)))
        except KernelCVError as exc:
            outcomes.append(str(exc))
    assert type(outcomes[0]) is type(outcomes[1])
    assert (outcomes[0] == outcomes[1]) if isinstance(outcomes[0], str) else \
        np.array_equal(outcomes[0], outcomes[1])


def test_seeds_differ_and_random_state_objects_are_accepted():
    y = np.where(np.arange(100) % 3 == 0, 1.0, -1.0)
    assert not np.array_equal(make_folds(y, 5, True, 0), make_folds(y, 5, True, 1))
    for state in (None, np.random.RandomState(3), np.random.default_rng(3)):
        ids = make_folds(y, 5, True, state)
        assert spread(per_fold_class_counts(y, ids, 5)[:, 1]) <= 1
    assert np.array_equal(make_folds(y, 5, True, np.random.RandomState(3)),
                          make_folds(y, 5, True, np.random.RandomState(3)))


@pytest.mark.parametrize("state", [-1, 2**32, 1.5, "0", True])
def test_bad_random_state_is_a_clear_error(state):
    with pytest.raises(KernelCVError, match="random_state must be"):
        make_folds(np.arange(10.0), 2, False, state)


def test_errors_are_unchanged():
    y = np.where(np.arange(40) % 2 == 0, 1.0, -1.0)
    with pytest.raises(KernelCVError, match="at least 2 folds"):
        make_folds(y, 1, True, 0)
    with pytest.raises(KernelCVError, match="cannot make 41 folds from 40"):
        make_folds(y, 41, True, 0)
    with pytest.raises(KernelCVError, match="only one class"):
        make_folds(y, np.where(y > 0, 0, 1), True, 0)
