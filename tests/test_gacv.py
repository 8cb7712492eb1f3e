"""GACV of the hinge SVM (Wahba, Lin & Zhang, 2000) against exact leave-one-out refits."""

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.datasets import make_classification

from kernelcv.criteria.exact import refit_predictions
from kernelcv.criteria.gacv import gacv, gacv_path
from kernelcv.exceptions import KernelCVError
from kernelcv.kernels import make_kernel
from kernelcv.machines import make_machine
from kernelcv.machines.solver import FitResult

N = 80
LAMS = 2.0 ** np.arange(-3, 10) / N  # the grid 2^i / n, i = -3..9


def _data(random_state=0):
    X, y = make_classification(N, 5, n_informative=3, flip_y=0.1, random_state=random_state)
    return X, 2.0 * y - 1


def _hinge(margin):
    return np.maximum(0.0, 1.0 - margin)


def _loo_hinge(K, y, lam, machine, fit, delete_term):
    """Per-point exact leave-one-out hinge losses by n refits.

    ``delete_term=True``: the i-th loss term is deleted and the others keep weight 1/n (the
    leave-one-out that GACV approximates): kernelcv's mean-loss refit at ``lam n/(n-1)``.
    ``delete_term=False``: kernelcv's own convention (mean over the n-1 points, same lam).
    """
    n = y.shape[0]
    lam_refit = lam * n / (n - 1) if delete_term else lam
    predictions, _ = refit_predictions(K, y, np.arange(n), lam_refit, machine, fit)
    return _hinge(y * predictions)


@pytest.fixture(scope="module")
def svm():
    # The bias-free machine, for which GACV bounds the LOO hinge from above; GACV with the
    # (default) intercept is tested in tests/test_intercept.py.
    return make_machine("svm", fit_intercept=False)


# --- 1. against exact leave-one-out -------------------------------------------------------

@pytest.mark.parametrize("gamma", [0.2, 1.0])
def test_gacv_trend_follows_loo_hinge(svm, gamma):
    """Rank agreement and argmin of GACV vs the exact LOO hinge over lam = 2^i / n.

    Measured on make_classification(80, 5, informative 3, flip_y 0.1) with an RBF kernel,
    10 random states x gamma in {0.05, 0.2, 1}: Spearman median 0.29 (range -0.54..0.96);
    the GACV argmin is 1..5 grid steps (mean 3.2) to the right of (larger lam than) the LOO
    argmin; the LOO hinge at GACV's choice is 1.05..2.07x its minimum (median 1.27).
    GACV is conservative at small lam (it bounds the LOO hinge from above, see the next
    test), hence the shift. Here (random_state 0): gamma 0.2 -> rho 0.31, shift 2, ratio
    1.26; gamma 1 -> rho 0.50, shift 3, ratio 1.09.
    """
    X, y = _data(0)
    K = make_kernel("rbf", gamma)(X)
    scores = gacv_path(K, y, LAMS, svm)
    loo = np.array([_loo_hinge(K, y, lam, svm, svm.fit(K, y, lam), delete_term=False).mean()
                    for lam in LAMS])
    rho = spearmanr(scores, loo)[0]
    shift = int(np.argmin(scores)) - int(np.argmin(loo))
    assert rho >= 0.2
    assert 0 <= shift <= 3
    assert loo[np.argmin(scores)] <= 1.35 * loo.min()
    # Above the GACV minimiser both curves rise together towards the null-model loss 1.
    right = slice(int(np.argmin(scores)), None)
    assert spearmanr(scores[right], loo[right])[0] >= 0.95


def test_gacv_bounds_loo_hinge_from_above(svm):
    """Bias-free SVM: |f_i - f_i^[-i]| <= |alpha_i| K_ii, so every GACV term >= LOO term.

    A polynomial kernel gives a non-constant diagonal K_ii. The bound is exact, so it is
    checked point by point (to rounding), at every lam of the grid.
    """
    X, y = _data(1)
    K = make_kernel("poly", gamma=0.2, degree=2, coef0=1.0)(X)
    diag = np.diag(K)
    assert np.ptp(diag) > 0.5
    for lam in LAMS:
        fit = svm.fit(K, y, lam)
        margin = y * fit.decision
        weight = np.where(margin < -1, 2.0, 1.0)
        terms = _hinge(margin) + weight * np.abs(fit.alpha) * diag
        loo = _loo_hinge(K, y, lam, svm, fit, delete_term=True)
        assert np.all(loo <= terms + 1e-9)
        value = gacv(K, y, fit, lam, machine=svm)
        assert value == pytest.approx(terms.mean(), rel=1e-12)
        assert value >= loo.mean()
        # and above the training hinge loss: the added terms are non-negative
        assert value >= _hinge(margin).mean()


def test_gacv_is_exact_and_tends_to_training_loss_for_large_lam(svm):
    """All margins on the linear piece of the hinge: the left-out fit is the full fit minus
    alpha_i k(., x_i), so GACV equals the LOO hinge; GACV - training hinge <= max K_ii/(n lam).
    """
    X, y = _data(2)
    K = make_kernel("rbf", 0.5)(X)
    n = y.shape[0]
    gaps = []
    for lam in LAMS[-4:]:
        fit = svm.fit(K, y, lam)
        margin = y * fit.decision
        assert np.all((margin >= -1) & (margin < 1 - svm.loss.width))
        value = gacv(K, y, fit, lam, machine=svm)
        loo = _loo_hinge(K, y, lam, svm, fit, delete_term=True)
        assert value == pytest.approx(loo.mean(), rel=1e-10)
        gap = value - _hinge(margin).mean()
        assert 0 <= gap <= np.max(np.diag(K)) / (n * lam)
        gaps.append(gap)
    assert np.all(np.diff(gaps) < 0)
    assert gaps[-1] < 1e-2


# --- 2. the formula, piece by piece --------------------------------------------------------

def _gacv_loop(diag, y, alpha, decision, lam):
    """GACV from the dual weights u_i = 2 n lam y_i alpha_i, one point at a time."""
    n = len(y)
    total = 0.0
    for i in range(n):
        u = 2 * n * lam * y[i] * alpha[i]
        assert -1e-9 <= u <= 1 + 1e-9
        m = y[i] * decision[i]
        total += max(0.0, 1.0 - m)
        if m < -1:
            total += 2 * u * diag[i] / (2 * n * lam)
        elif u > 0:
            total += u * diag[i] / (2 * n * lam)
    return total / n


def test_gacv_hand_computed(svm):
    # n = 3, 2 n lam = 3; margins -2 (u = 1, weight 2), 0 (u = 1), 3 (u = 0)
    y = np.array([1.0, -1.0, 1.0])
    decision = np.array([-2.0, 0.0, 3.0])
    alpha = np.array([1.0, -1.0, 0.0]) / 3.0
    K = np.diag([1.0, 2.0, 4.0])
    fit = FitResult(alpha=alpha, intercept=0.0, decision=decision, n_iter=0, converged=True)
    # hinge 3 + 1 + 0; penalties 2 * (1/3) * 1 + (1/3) * 2 + 0
    assert gacv(K, y, fit, 0.5, machine=svm) == pytest.approx(16 / 9, rel=1e-14)


def test_gacv_every_region_against_loop(svm):
    """Margins in every region: beyond -1, exactly -1, inside the margin, in the Huber band
    on both sides of 1 and beyond it; alpha set by the optimality condition."""
    w = svm.loss.width
    margin = np.array([-3.0, -1.0 - 1e-9, -1.0, -0.4, 0.5, 1 - w / 2, 1.0, 1 + w / 2, 1 + w,
                       1.7])
    n = margin.size
    rng = np.random.default_rng(5)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    decision = y * margin
    lam = 0.07
    g, _ = svm.loss.derivatives(y, decision)
    alpha = -g / (2 * n * lam)
    diag = rng.uniform(0.5, 3.0, n)
    K = np.diag(diag) + 0.1  # only the diagonal matters
    fit = FitResult(alpha=alpha, intercept=0.0, decision=decision, n_iter=0, converged=True)
    expected = _gacv_loop(diag + 0.1, y, alpha, decision, lam)
    assert gacv(K, y, fit, lam, machine=svm) == pytest.approx(expected, rel=1e-13)
    # the two points just below -1 carry weight 2, the one at -1 weight 1
    u = 2 * n * lam * y * alpha
    np.testing.assert_allclose(u[:8], [1, 1, 1, 1, 1, 0.75, 0.5, 0.25], atol=1e-12)
    np.testing.assert_allclose(u[8:], 0.0, atol=0)


def test_gacv_of_a_real_fit_against_loop(svm):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(25, 2))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=25) > 0, 1.0, -1.0)
    K = make_kernel("rbf", 0.7)(X)
    for lam in (1e-3, 3e-2, 1.0):
        fit = svm.fit(K, y, lam)
        expected = _gacv_loop(np.diag(K), y, fit.alpha, fit.decision, lam)
        assert gacv(K, y, fit, lam, machine="svm") == pytest.approx(expected, rel=1e-12)


def test_gacv_path_matches_single_fits_in_input_order(svm):
    X, y = _data(3)
    X, y = X[:40], y[:40]
    K = make_kernel("rbf", 0.3)(X)
    lams = np.array([0.1, 1e-3, 3.0, 0.01, 0.3])
    path = gacv_path(K, y, lams, svm)
    single = [gacv(K, y, svm.fit(K, y, lam), lam, machine=svm) for lam in lams]
    np.testing.assert_allclose(path, single, rtol=1e-8)
    assert gacv_path(K, y, [0.1], svm)[0] == pytest.approx(single[0], rel=1e-8)


# --- 3. bad input --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_problem(svm):
    X, y = _data(4)
    X, y = X[:20], y[:20]
    K = make_kernel("rbf", 0.3)(X)
    return K, y, svm.fit(K, y, 0.05)


@pytest.mark.parametrize("machine", ["l2svm", "krr", "lssvm", "svr",
                                     make_machine("l2svm")])
def test_gacv_rejects_other_machines(small_problem, machine):
    K, y, fit = small_problem
    with pytest.raises(KernelCVError, match="'svm'"):
        gacv(K, y, fit, 0.05, machine=machine)
    with pytest.raises(KernelCVError, match="'svm'"):
        gacv_path(K, y, [0.05], machine)


def test_gacv_rejects_unknown_machine(small_problem):
    K, y, fit = small_problem
    with pytest.raises(KernelCVError, match="unknown machine"):
        gacv(K, y, fit, 0.05, machine="svc")
    with pytest.raises(KernelCVError, match="Machine"):
        gacv(K, y, fit, 0.05, machine=3)


def test_gacv_rejects_mismatched_shapes(small_problem, svm):
    K, y, fit = small_problem
    with pytest.raises(KernelCVError, match="Gram matrix"):
        gacv(K[:-1, :-1], y, fit, 0.05, machine=svm)
    with pytest.raises(KernelCVError, match="Gram matrix"):
        gacv(K[:, :-1], y, fit, 0.05, machine=svm)
    with pytest.raises(KernelCVError, match="Gram matrix"):
        gacv(K, y[:-1], fit, 0.05, machine=svm)
    with pytest.raises(KernelCVError, match="1-d"):
        gacv(K, y[:, None], fit, 0.05, machine=svm)
    short = FitResult(alpha=fit.alpha[:-1], intercept=0.0, decision=fit.decision, n_iter=0,
                      converged=True)
    with pytest.raises(KernelCVError, match="one entry per training point"):
        gacv(K, y, short, 0.05, machine=svm)
    with pytest.raises(KernelCVError, match="FitResult"):
        gacv(K, y, fit.alpha, 0.05, machine=svm)
    with pytest.raises(KernelCVError, match="Gram matrix"):
        gacv_path(K[:-1, :-1], y, [0.05], svm)


def test_gacv_rejects_bad_labels_and_lam(small_problem, svm):
    K, y, fit = small_problem
    with pytest.raises(KernelCVError, match=r"-1 and \+1"):
        gacv(K, (y + 1) / 2, fit, 0.05, machine=svm)
    for lam in (0.0, -1.0, np.nan, np.inf, "a"):
        with pytest.raises(KernelCVError, match="lam"):
            gacv(K, y, fit, lam, machine=svm)
    for lams in ([], [0.1, 0.0], [[0.1, 0.2]]):
        with pytest.raises(KernelCVError, match="lam"):
            gacv_path(K, y, lams, svm)


def test_gacv_rejects_fit_from_another_lam_or_width(small_problem, svm):
    K, y, fit = small_problem
    assert np.isfinite(gacv(K, y, fit, 0.05, machine=svm))
    for lam in (0.05 * 1.01, 0.05 / 1.01):
        with pytest.raises(KernelCVError, match="not the minimiser"):
            gacv(K, y, fit, lam, machine=svm)
    wide = make_machine("svm", huber_width=0.3)
    with pytest.raises(KernelCVError, match="not the minimiser"):
        gacv(K, y, fit, 0.05, machine=wide)
    assert np.isfinite(gacv(K, y, wide.fit(K, y, 0.05), 0.05, machine=wide))
