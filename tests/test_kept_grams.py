"""The Gram matrices a search's GramFactory keeps (kernelcv.kernels.kept_grams_within):
a kept matrix is the one a fresh computation gives, the least recently used goes first,
the count fits the memory budget, and a search that revisits kernel settings (a
screening walk, LIBSVM's start raising and restoring the diagonal, the exact
confirmations) chooses exactly what it chooses without any kept matrix and leaves the
kept matrices unchanged."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.metrics.pairwise import rbf_kernel

from kernelcv import GramFactory, grid_search, make_kernel
from kernelcv.kernels import MAX_KEPT_GRAMS, kept_grams_within
from kernelcv.selection import methods as methods_module

rng = np.random.default_rng(3)
X = rng.normal(size=(40, 3))


def test_kept_gram_is_returned_again_and_least_recent_goes_first():
    factory = GramFactory(X, kept_grams=2)
    first = factory.gram(make_kernel("rbf", 0.5))
    np.testing.assert_allclose(first, rbf_kernel(X, gamma=0.5), rtol=1e-12)
    assert factory.gram(make_kernel("rbf", 0.5)) is first
    second = factory.gram(make_kernel("rbf", 2.0))
    assert factory.gram(make_kernel("rbf", 0.5)) is first  # 0.5 is now the most recent
    factory.gram(make_kernel("rbf", 8.0))  # drops 2.0, the least recently used
    assert factory.gram(make_kernel("rbf", 0.5)) is first
    again = factory.gram(make_kernel("rbf", 2.0))
    assert again is not second and np.array_equal(again, second)


def test_factory_without_kept_grams_returns_new_arrays():
    factory = GramFactory(X)
    assert factory.gram(make_kernel("rbf", 0.5)) is not factory.gram(make_kernel("rbf", 0.5))


@pytest.mark.parametrize("n, in_use, budget, expected", [
    (1000, 3.0, 8 * 1000 * 1000 * 3.5, 0),  # half a matrix to spare: none kept
    (1000, 3.0, 8 * 1000 * 1000 * 5.0, 2),
    (1000, 3.0, 8 * 1000 * 1000 * 100.0, MAX_KEPT_GRAMS),
    (1000, 3.0, 8 * 1000 * 1000 * 2.0, 0),  # the task alone is above the budget
])
def test_kept_grams_fit_the_budget(n, in_use, budget, expected):
    assert kept_grams_within(n, n, in_use, int(budget)) == expected


def _search(X, y, kept):
    """A screened svm search from 1,000 rows (LIBSVM's start), recording every Gram
    matrix the search's factory handed out."""
    handed = []
    original = GramFactory.gram

    def spy(self, kernel):
        gram = original(self, kernel)
        if gram.shape[0] == X.shape[0]:
            handed.append((kernel, gram, self.kept_grams))
        return gram

    patch = pytest.MonkeyPatch()
    patch.setattr(GramFactory, "gram", spy)
    if not kept:
        patch.setattr(methods_module, "kept_grams_within", lambda *args: 0)
    try:
        result = grid_search(X, y, "svm", gammas=[0.01, 0.03, 0.1, 0.3, 1.0],
                             Cs=[0.1, 1.0, 10.0, 100.0], folds=5, screen="coarse")
    finally:
        patch.undo()
    return result, handed


def test_search_with_kept_grams_equals_the_search_without():
    X_big, y_big = make_classification(n_samples=1000, n_features=6, n_informative=4,
                                       flip_y=0.05, random_state=1)
    with_kept, handed = _search(X_big, y_big, kept=True)
    without, handed_fresh = _search(X_big, y_big, kept=False)
    assert all(k > 0 for _, _, k in handed) and all(k == 0 for _, _, k in handed_fresh)
    # the walk and the confirmations came back to a setting: a kept matrix was reused
    kernels = [kernel for kernel, _, _ in handed]
    assert len(set(kernels)) < len(kernels)
    assert [c["lam"] for c in with_kept.candidates] == [c["lam"] for c in without.candidates]
    for a, b in zip(with_kept.candidates, without.candidates, strict=True):
        assert (a["gamma"], a["cv_error"], a["fold_errors"], a.get("exact_error")) == (
            b["gamma"], b["cv_error"], b["fold_errors"], b.get("exact_error"))
    assert with_kept.best_index == without.best_index
    # nothing the search did changed a kept matrix (LIBSVM's start restores the diagonal)
    factory = GramFactory(X_big)
    for kernel, gram, _ in handed:
        assert np.array_equal(gram, factory.gram(kernel))

