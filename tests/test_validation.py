"""Bad input to the Python API: one KernelCVError with a readable message, never numpy's."""

import numpy as np
import pytest

import kernelcv as kc
from flat_options import as_objects

rng = np.random.default_rng(0)
X = rng.normal(size=(40, 3))
Y = np.where(X[:, 0] > 0, 1, -1)


def cv(X=X, y=Y, **kwargs):
    options = {"machine": "l2svm", "gamma": 0.5, "lam": 1e-2, "folds": 4, "random_state": 0}
    options.update(kwargs)
    machine, options = as_objects(options.pop("machine"), options, machine_epsilon=True)
    return kc.cross_validate(X, y, machine, **options)


def with_nan(X):
    X = X.copy()
    X[3, 1] = np.nan
    return X


@pytest.mark.parametrize("kwargs, message", [
    ({"X": with_nan(X)}, "NaN or infinite"),
    ({"X": np.where(X > 1, np.inf, X)}, "NaN or infinite"),
    ({"X": np.empty((0, 3)), "y": np.empty(0)}, "empty"),
    ({"y": np.ones(40)}, "only one"),
    ({"y": np.where(np.arange(40) == 7, 2, np.arange(40) % 2)}, "lacks 1 of the 3"),
    ({"y": Y[:-1]}, "40 samples but y has 39"),
    ({"X": X[:, 0]}, "2-D"),
    ({"folds": 1}, "at least 2 folds"),
    ({"folds": 41}, "cannot make 41 folds from 40"),
    ({"folds": np.arange(39)}, "one integer per sample"),
    ({"folds": np.where(Y > 0, 0, 1)}, "only one class"),
    ({"gamma": 0.0}, "gamma"),
    ({"gamma": None}, "needs gamma"),
    ({"lam": -1.0}, "lam must be a positive"),
    ({"lam": float("nan")}, "lam must be a positive"),
    ({"method": "magic"}, "unknown method"),
    ({"machine": "svc"}, "unknown machine"),
    ({"method": "closed-form"}, "closed-form' is exact only for krr and lssvm"),
    ({"method": "bif", "order": 0}, "order must be"),
    ({"method": "bif", "order": "many"}, "order must be"),
    ({"memory_budget": "10K"}, "memory budget"),
    ({"machine": "krr", "y": np.where(np.arange(40) == 2, np.nan, 1.0)}, "NaN"),
])
def test_bad_input_raises_clear_error(kwargs, message):
    with pytest.raises(kc.KernelCVError, match=message):
        cv(**kwargs)


def test_labels_are_mapped_and_reported():
    labels = np.where(Y > 0, "spam", "ham")
    result = cv(y=labels)
    assert result.label_mapping == {-1: "ham", 1: "spam"}
    assert any("mapped to -1/+1" in note for note in result.notes)
    same = cv(y=np.where(Y > 0, 1.0, -1.0))
    assert same.cv_error == result.cv_error and same.notes == []


def test_seed_reproduces_folds_and_folds_are_stratified():
    first, second = cv(method="exact"), cv(method="exact")
    np.testing.assert_array_equal(first.predictions, second.predictions)
    other = cv(method="exact", random_state=1)
    assert not np.array_equal(first.predictions, other.predictions)


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
def test_sparse_input_equals_dense():
    import scipy.sparse as sp

    dense = cv(method="bif", order=3)
    sparse = cv(X=sp.csr_matrix(X), method="bif", order=3)
    np.testing.assert_allclose(sparse.predictions, dense.predictions, rtol=1e-10, atol=1e-12)


def test_laplace_on_sparse_int64_indices():
    import scipy.sparse as sp

    A = sp.csr_matrix(X)
    A.indices = A.indices.astype(np.int64)
    A.indptr = A.indptr.astype(np.int64)
    sparse = cv(X=A, kernel="laplace", method="exact")
    dense = cv(kernel="laplace", method="exact")
    np.testing.assert_allclose(sparse.predictions, dense.predictions, rtol=1e-10)


def test_absurdly_small_lam_is_an_error_not_nan():
    with np.errstate(all="ignore"):
        with pytest.raises(kc.KernelCVError, match="non-finite|singular"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cv(machine="krr", lam=1e-300, method="bif", order=5)


def test_linear_kernel_rejects_bad_gamma():
    with pytest.raises(kc.KernelCVError, match="gamma"):
        cv(kernel="linear", gamma=-5.0)
