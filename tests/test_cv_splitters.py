"""cross_validate takes scikit-learn splitters as folds (issue 18: ``folds=KFold(5)`` said
"fold ids must be one integer per sample").

The oracle: the same splits written out as explicit fold ids (test indices of split k get
id k), which cross_validate has always taken; the CV error and held-out values must be
identical. Splitters whose test sets do not partition the samples are refused in one line.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    LeaveOneOut,
    ShuffleSplit,
    StratifiedKFold,
)

from kernelcv import cross_validate, cross_validate_path
from kernelcv.exceptions import KernelCVError


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 3))
    y = np.where(X[:, 0] + 0.4 * rng.normal(size=30) > 0, 1.0, -1.0)
    groups = np.arange(30) % 6
    return X, y, groups


def _explicit_ids(splitter, X, y, groups=None):
    ids = np.empty(y.size, dtype=int)
    for k, (_, test) in enumerate(splitter.split(X, y, groups)):
        ids[test] = k
    return ids


@pytest.mark.parametrize("splitter", [KFold(5), KFold(4, shuffle=True, random_state=1),
                                      StratifiedKFold(5), LeaveOneOut()],
                         ids=["KFold(5)", "KFold-shuffled", "StratifiedKFold(5)", "LOO"])
@pytest.mark.parametrize("method", ["exact", "closed-form"])
def test_a_splitter_gives_the_same_result_as_its_fold_ids(problem, splitter, method):
    X, y, _ = problem
    common = {"gamma": 0.3, "lam": 1e-2, "method": method}
    ours = cross_validate(X, y, "lssvm", folds=splitter, **common)
    reference = cross_validate(X, y, "lssvm", folds=_explicit_ids(splitter, X, y), **common)
    assert ours.cv_error == reference.cv_error
    assert np.array_equal(ours.predictions, reference.predictions)
    assert ours.n_folds == splitter.get_n_splits(X, y)


def test_group_k_fold_with_groups(problem):
    X, y, groups = problem
    splitter = GroupKFold(3)
    ours = cross_validate(X, y, "krr", gamma=0.3, lam=1e-2, folds=splitter, groups=groups)
    ids = _explicit_ids(splitter, X, y, groups)
    reference = cross_validate(X, y, "krr", gamma=0.3, lam=1e-2, folds=ids)
    assert ours.cv_error == reference.cv_error
    assert all(np.unique(ids[groups == g]).size == 1 for g in np.unique(groups))


@pytest.mark.parametrize(("folds", "groups", "match"), [
    (GroupKFold(3), None, "GroupKFold failed"),
    (ShuffleSplit(3, test_size=0.2, random_state=0), None, "partition the samples"),
    (5, np.arange(30) % 6, "groups are used only by a splitter"),
])
def test_unusable_splits_are_one_line_errors(problem, folds, groups, match):
    X, y, _ = problem
    with pytest.raises(KernelCVError, match=match):
        cross_validate(X, y, "krr", gamma=0.3, lam=1e-2, folds=folds, groups=groups)


# ----------------------------------------------------------- malformed (train, test) pairs


def _pairs_with(first_train, first_test, n=20):
    idx = np.arange(n)
    return [(first_train, first_test), (idx[:5], idx[5:])]


@pytest.mark.parametrize("pairs, words", [
    # a test row in the training set, same sizes (was accepted silently)
    (_pairs_with(np.r_[np.arange(6, 20), 0], np.arange(5)), "not the complement"),
    (_pairs_with(np.arange(5, 20), np.r_[np.arange(4), 99]), "outside 0..19"),  # IndexError
    (_pairs_with(np.arange(5, 20), np.r_[np.arange(1, 5), -20]), "outside 0..19"),  # wrapped
    (_pairs_with(np.arange(5, 20.0), np.arange(5.0)), "must be integers"),  # IndexError
    (_pairs_with(np.ones(7, dtype=bool), np.arange(5)), "mask has 7 entries"),
])
def test_malformed_split_pairs_are_one_line_errors(pairs, words):
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    with pytest.raises(KernelCVError, match=words):
        cross_validate(X, y, machine="l2svm", gamma=0.5, lam=0.1, folds=pairs,
                                method="exact")


@pytest.mark.parametrize("folds", ["auto", "ten"])
def test_a_string_is_not_taken_for_a_splitter(folds):
    # a str has a split method: it was called as a splitter (TypeError from str.split)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.sign(X[:, 0])
    with pytest.raises(KernelCVError, match="number of folds, fold ids or a splitter"):
        cross_validate(X, y, "krr", gamma=1.0, lam=0.1, folds=folds)
    with pytest.raises(KernelCVError, match="number of folds, fold ids or a splitter"):
        cross_validate_path(X, y, [0.1], "krr", gamma=1.0, folds=folds)
