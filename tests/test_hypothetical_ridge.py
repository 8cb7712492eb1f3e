"""Ridge instantiation of hypothetical CV: Theorems 3 and 4, LOO and GCV agreement."""

import numpy as np
import pytest

from kernelcv.exceptions import KernelCVError
from kernelcv.hypothetical.ridge import (
    effective_dimension,
    estimate_noise_var,
    ridge_criterion,
    ridge_fit,
    ridge_path,
)


def _data(seed, n=60, p=20, informative=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    coef = np.zeros(p)
    informative = min(informative, p)
    coef[:informative] = rng.standard_normal(informative)
    return X, X @ coef + rng.standard_normal(n)


def _brute_loo(X, y, lam):
    n, p = X.shape
    errors = []
    for i in range(n):
        keep = np.arange(n) != i
        a = np.linalg.solve(X[keep].T @ X[keep] + lam * np.eye(p), X[keep].T @ y[keep])
        errors.append((y[i] - X[i] @ a) ** 2)
    return float(np.mean(errors))


def test_effective_dimension_is_the_hat_trace_in_both_notations():
    X, _ = _data(0, n=30, p=6)
    B = np.diag([0.5, 1.0, 2.0, 0.1, 3.0, 0.0])
    hat = X @ np.linalg.inv(X.T @ X + B) @ X.T
    # the paper's transposed form Tr[X~ X~' (X~ X~' + B)^-1] with X~ = X'
    paper = np.trace(X.T @ X @ np.linalg.inv(X.T @ X + B))
    assert effective_dimension(X, B) == pytest.approx(np.trace(hat), rel=1e-12)
    assert effective_dimension(X, B) == pytest.approx(paper, rel=1e-12)
    assert 0 < effective_dimension(X, B) < 6


@pytest.mark.parametrize("fixed", [0, 1, 3])
def test_aic_limit_counts_free_coefficients(fixed):
    """Theorem 4: B -> 0 on the free coefficients, inf on k fixed ones -> d = p - k."""
    X, y = _data(1, n=40, p=8)
    penalties = np.full(8, 1e-9)
    penalties[:fixed] = np.inf
    assert effective_dimension(X, penalties) == pytest.approx(8 - fixed, abs=1e-6)
    # a huge finite penalty behaves like inf
    penalties[:fixed] = 1e12
    assert effective_dimension(X, penalties) == pytest.approx(8 - fixed, abs=1e-6)
    # the criterion becomes AIC: RSS of least squares on the free columns + 2 s2 (p - k)
    penalties[:fixed] = np.inf
    res = ridge_criterion(X, y, penalties, noise_var=0.7)
    free = X[:, fixed:]
    ols = np.linalg.lstsq(free, y, rcond=None)[0]
    aic = np.sum((y - free @ ols) ** 2) + 2 * 0.7 * (8 - fixed)
    assert res["criterion"] == pytest.approx(aic, rel=1e-7)
    assert np.all(res["coef"][:fixed] == 0)


def test_large_penalty_gives_zero_dimension_and_default_is_paper_formula():
    X, y = _data(2, n=30, p=5)
    assert effective_dimension(X, np.full(5, 1e12)) == pytest.approx(0, abs=1e-8)
    res = ridge_criterion(X, y, np.ones(5))
    assert res["criterion"] == pytest.approx(res["rss"] + res["effective_dimension"])


def test_closed_form_loo_matches_brute_force_refits():
    X, y = _data(3, n=25, p=6)
    lams = [1e-2, 1.0, 30.0]
    path = ridge_path(X, y, lams)
    brute = [_brute_loo(X, y, lam) for lam in lams]
    np.testing.assert_allclose(path["loo_mse"], brute, rtol=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_criterion_argmin_is_near_loo_argmin(seed):
    """Cp-scaled criterion vs brute-force LOO on a 25-value path (60 x 20, 5 informative).

    Measured over seeds 0..7: the criterion picks the LOO arg-min or a neighbour, and its
    choice has LOO error within 0.35 % of the best (GCV picks the same value).
    """
    X, y = _data(seed)
    lams = np.logspace(-3, 3, 25)
    path = ridge_path(X, y, lams, noise_var=estimate_noise_var(X, y))
    loo = np.array([_brute_loo(X, y, lam) for lam in lams])
    pick = int(np.argmin(path["criterion"]))
    assert abs(pick - int(np.argmin(loo))) <= 1
    assert loo[pick] <= 1.01 * loo.min()
    assert loo[int(np.argmin(path["gcv"]))] <= 1.01 * loo.min()


def test_ridge_fit_matches_normal_equations():
    X, y = _data(4, n=20, p=4)
    B = np.array([[2.0, 0.5, 0, 0], [0.5, 1.0, 0, 0], [0, 0, 0.3, 0], [0, 0, 0, 0]])
    a, _ = ridge_fit(X, y, B)
    np.testing.assert_allclose(a, np.linalg.solve(X.T @ X + B, X.T @ y), rtol=1e-10)


@pytest.mark.parametrize("B, match", [
    (np.array([1.0, -1.0, 1.0]), ">= 0"),
    (np.ones(4), "3 features"),
    (np.array([[1.0, 2.0, 0], [0, 1.0, 0], [0, 0, 1.0]]), "symmetric"),
    (np.diag([1.0, -2.0, 1.0]), "semi-definite"),
])
def test_bad_regulariser_is_reported(B, match):
    X, y = _data(5, n=10, p=3)
    with pytest.raises(KernelCVError, match=match):
        ridge_criterion(X, y, B)


def test_singular_system_and_bad_inputs_are_reported():
    X, y = _data(6, n=4, p=6)
    with pytest.raises(KernelCVError, match="singular"):
        ridge_criterion(X, y, np.zeros(6))
    with pytest.raises(KernelCVError, match="noise_var"):
        ridge_criterion(X, y, np.ones(6), noise_var=0)
    with pytest.raises(KernelCVError, match="lams"):
        ridge_path(X, y, [-1.0])
    X[0, 0] = np.nan
    with pytest.raises(KernelCVError, match="finite"):
        ridge_criterion(X, y, np.ones(6))


def _intercept_data(seed, n=60, p=15, offset=7.0, noise=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    coef = np.zeros(p)
    coef[:4] = rng.standard_normal(4)
    return X, X @ coef + offset + noise * rng.standard_normal(n)


def _brute_loo_intercept(Z, B, y):
    errors = []
    for i in range(Z.shape[0]):
        keep = np.arange(Z.shape[0]) != i
        w = np.linalg.solve(Z[keep].T @ Z[keep] + B, Z[keep].T @ y[keep])
        errors.append((y[i] - Z[i] @ w) ** 2)
    return float(np.mean(errors))


@pytest.mark.parametrize("seed", range(3))
def test_auto_noise_var_is_scale_invariant_and_near_loo(seed):
    """Mallows' Cp ("auto"): y * 100 picks the same lam, near the brute-force LOO choice.

    The paper's fixed s2 = 0.5 is not scale-invariant: on y * 100 it drifts to the
    least-regularised lam of the path.
    """
    from kernelcv.hypothetical.ridge import intercept_design

    X, y = _intercept_data(seed)
    Z, B0 = intercept_design(X)
    lams = np.logspace(-3, 3, 19)
    small = ridge_path(Z, y, lams, B0=B0, noise_var="auto")
    large = ridge_path(Z, 100.0 * y, lams, B0=B0, noise_var="auto")
    assert large["noise_var"] == pytest.approx(1e4 * small["noise_var"], rel=1e-9)
    assert small["best_lam"] == large["best_lam"]
    np.testing.assert_allclose(large["criterion"], 1e4 * small["criterion"], rtol=1e-9)
    loo = np.array([_brute_loo_intercept(Z, lam * np.diag(B0), y) for lam in lams])
    np.testing.assert_allclose(small["loo_mse"], loo, rtol=1e-9)
    pick = int(np.argmin(small["criterion"]))
    assert abs(pick - int(np.argmin(loo))) <= 2
    assert loo[pick] <= 1.02 * loo.min()
    fixed = ridge_path(Z, 100.0 * y, lams, B0=B0, noise_var=0.5)
    assert fixed["best_lam"] == lams[0] != large["best_lam"]


def test_auto_noise_var_is_the_least_squares_estimate_and_falls_back_when_p_ge_n():
    X, y = _data(7, n=30, p=5)
    path = ridge_path(X, y, [0.1, 1.0], noise_var="auto")
    a = np.linalg.lstsq(X, y, rcond=None)[0]
    assert path["noise_var"] == pytest.approx(np.sum((y - X @ a) ** 2) / 25, rel=1e-10)
    assert path["noise_var"] == pytest.approx(estimate_noise_var(X, y), rel=1e-12)
    np.testing.assert_allclose(path["criterion"], path["rss"] + 2 * path["noise_var"]
                               * path["effective_dimension"], rtol=1e-12)
    X, y = _data(8, n=12, p=20)  # n <= rank X: the least-regularised lam with n - d >= 1
    lams = np.array([10.0, 1e-6, 1.0])
    path = ridge_path(X, y, lams, noise_var="auto")
    ok = [i for i in np.argsort(lams) if 12 - path["effective_dimension"][i] >= 1]
    i = ok[0]
    assert lams[i] == 1.0
    assert path["noise_var"] == pytest.approx(
        path["rss"][i] / (12 - path["effective_dimension"][i]), rel=1e-12)
    with pytest.raises(KernelCVError, match="noise_var='auto' cannot estimate"):
        ridge_path(X, y, [1e-8], noise_var="auto")
    with pytest.raises(KernelCVError, match="noise_var"):
        ridge_path(X, y, [1.0], noise_var="cp")


def test_auto_noise_var_on_housing_matches_the_loo_choice():
    """housing_scale: s2 = 0.5 picks lam = 0.01 (LOO: 1); "auto" picks the LOO lam."""
    import os

    from kernelcv.hypothetical.ridge import DEFAULT_LAMS, intercept_design
    from kernelcv.reading.files import load_data

    path = "/work/shared/datasets/libsvm/housing_scale.svm"
    if not os.path.exists(path):
        pytest.skip("the shared data sets are not available")
    X, y = load_data(path)
    Z, B0 = intercept_design(X.toarray() if hasattr(X, "toarray") else X)
    for scale in (1.0, 100.0):
        res = ridge_path(Z, scale * y, DEFAULT_LAMS, B0=B0, noise_var="auto")
        assert res["best_lam"] == res["best_lam_loo"] == 1.0


def test_targets_too_large_to_square_are_one_line_not_an_arbitrary_best():
    # issue 41: y near 1e300 gave an all-inf criterion, an arbitrary best and only
    # numpy's overflow warnings
    import warnings

    from kernelcv.reports.hypothetical import run_hypothetical

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = 1e300 * X[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no overflow warning before the error
        with pytest.raises(KernelCVError, match="y's values reach .*subtract its mean"):
            run_hypothetical((X, y), model="ridge", loo=False)
