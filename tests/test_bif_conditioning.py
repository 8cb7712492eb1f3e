"""BIF values at tiny n*lam: rounding, not truncation, and the ill_conditioned flag.

The oracle is refit CV in exact rational arithmetic (``fractions.Fraction``) on the same
float64 Gram matrix and folds: at lam = 1e-12 float64 refits themselves still agree with
it (that is what the warning advises), while order ``"inf"`` -- the Newton step from the
full fit, divided by ``2 lam`` -- can be off by far more than any tolerance.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelcv import BIF, cross_validate
from kernelcv.cli import main
from kernelcv.criteria.conditioning import ILL_CONDITIONED, relative_rounding
from kernelcv.criteria.truncation import TOLERANCE
from kernelcv.exceptions import KernelCVError
from kernelcv.kernels import squared_distances
from kernelcv.machines.solver import Factorisation, cholesky_with_jitter

QUIET = pytest.mark.filterwarnings(f"ignore:.*{ILL_CONDITIONED}:RuntimeWarning")
# At n lam <= 1e-10 the Newton fit's stationarity test sits below the rounding of the
# gradient: the square loss iterates to max_iter and warns, though its first step was exact.
SOLVER = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _solve_rational(A, b):
    """Gauss-Jordan elimination in exact rational arithmetic."""
    rows = [list(row) + [value] for row, value in zip(A, b, strict=True)]
    size = len(rows)
    for c in range(size):
        pivot = next(r for r in range(c, size) if rows[r][c] != 0)
        rows[c], rows[pivot] = rows[pivot], rows[c]
        for r in range(size):
            if r != c and rows[r][c] != 0:
                factor = rows[r][c] / rows[c][c]
                rows[r] = [a - factor * p for a, p in zip(rows[r], rows[c], strict=True)]
    return [rows[r][size] / rows[r][r] for r in range(size)]


def _rational_refit_cv(K, y, folds, lam, intercept):
    """Held-out values of KRR (``intercept`` False) or LS-SVM refits, exactly.

    Fold-out model on the m retained points: ``(K_RR + m lam I) alpha = y_R`` (with
    ``1' alpha = 0`` and the intercept b bordering it for LS-SVM), ``f_S = K_SR alpha + b``.
    """
    predictions = np.zeros(y.shape[0])
    lam = Fraction(lam)
    for fold in np.unique(folds):
        kept, out = np.flatnonzero(folds != fold), np.flatnonzero(folds == fold)
        m = kept.size
        A = [[Fraction(K[a, b]) + (m * lam if a == b else 0) for b in kept] for a in kept]
        rhs = [Fraction(v) for v in y[kept]]
        if intercept:
            A = [row + [Fraction(1)] for row in A] + [[Fraction(1)] * m + [Fraction(0)]]
            rhs.append(Fraction(0))
        solution = _solve_rational(A, rhs)
        b = solution[m] if intercept else 0
        for j in out:
            predictions[j] = float(sum(Fraction(K[j, r]) * a
                                       for r, a in zip(kept, solution, strict=False)) + b)
    return predictions


def _problem(seed, n, d, gamma, machine, t):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, 0] + 0.3 * rng.normal(size=n)
    if machine == "lssvm":
        y = np.where(y > np.median(y), 1.0, -1.0)
    folds = rng.permutation(np.arange(n) % t)
    return X, y, np.exp(-gamma * squared_distances(X)), folds


def _true_error(machine, y, truth):
    if machine == "krr":
        return float(np.mean((y - truth) ** 2)), 0.0
    return float(np.mean(np.where(truth >= 0, 1.0, -1.0) != y)), float(
        np.mean(np.abs(truth) <= 1e-9))


def _off(result, machine, y, truth):
    error, ties = _true_error(machine, y, truth)
    if machine == "krr":
        return abs(result.cv_error - error) > TOLERANCE["mse"] * error
    return abs(result.cv_error - error) > TOLERANCE["0-1"] + ties


CASES = [(7, "krr", 0.13, 3), (8, "lssvm", 0.03, 3), (10, "krr", 0.06, 5)]


@SOLVER
@pytest.mark.parametrize(("n", "machine", "gamma", "t"), CASES)
def test_order_inf_at_tiny_lam_is_flagged_and_exact_refit_stays_right(n, machine, gamma, t):
    X, y, K, folds = _problem(n, n, 1, gamma, machine, t)
    lam = 1e-12
    truth = _rational_refit_cv(K, y, folds, lam, machine == "lssvm")
    with pytest.warns(RuntimeWarning, match=ILL_CONDITIONED):
        inf = cross_validate(X, y, machine, gamma=gamma, lam=lam, folds=folds,
                             method=BIF(order="inf"))
    assert _off(inf, machine, y, truth)  # the issue: order inf is wrong here
    assert inf.ill_conditioned and inf.rounding_error > 0
    assert inf.to_dict()["ill_conditioned"] is True
    assert any(ILL_CONDITIONED in note for note in inf.notes)
    exact = cross_validate(X, y, machine, gamma=gamma, lam=lam, folds=folds, method="exact")
    assert np.max(np.abs(exact.predictions - truth)) <= 1e-3 * np.max(np.abs(truth))
    assert not _off(exact, machine, y, truth)
    assert not exact.ill_conditioned and exact.rounding_error is None


@pytest.mark.parametrize(("n", "machine", "gamma", "t"), CASES)
def test_order_inf_at_moderate_lam_is_not_flagged(n, machine, gamma, t):
    X, y, K, folds = _problem(n, n, 1, gamma, machine, t)
    truth = _rational_refit_cv(K, y, folds, 1e-4, machine == "lssvm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inf = cross_validate(X, y, machine, gamma=gamma, lam=1e-4, folds=folds,
                             method=BIF(order="inf"))
    assert not inf.ill_conditioned and inf.rounding_error < 1e-6 * inf.cv_error
    assert np.allclose(inf.predictions, truth, rtol=1e-6, atol=1e-9)


def test_relative_rounding_of_a_jittered_or_absent_factor():
    K = np.ones((3, 3))
    cho, _ = cholesky_with_jitter(np.eye(3))
    h = np.full(3, 2.0)
    jittered = SimpleNamespace(factor=Factorisation(np.arange(3), cho, jitter=1e-12))
    assert relative_rounding(K, jittered, h, 1e-3, 2) == np.inf
    assert relative_rounding(K, SimpleNamespace(factor=None), h, 1e-3, 2) == 0.0
    clean = SimpleNamespace(factor=Factorisation(np.arange(3), cho))
    small, tiny = (relative_rounding(K, clean, h, lam, 2) for lam in (1e-3, 1e-9))
    assert 0 < small < tiny  # grows as lam shrinks


@QUIET
@SOLVER
@given(seed=st.integers(0, 2**16), n=st.integers(6, 9), machine=st.sampled_from(
    ["krr", "lssvm"]), log_lam=st.floats(-16, -4), log_gamma=st.floats(-2.5, 1),
    t=st.integers(2, 4))
@settings(max_examples=40, deadline=None)
def test_order_inf_flags_itself_whenever_rounding_moves_it_off_exact(seed, n, machine,
                                                                    log_lam, log_gamma, t):
    gamma, lam = 10.0**log_gamma, 10.0**log_lam
    X, y, K, folds = _problem(seed, n, 2, gamma, machine, t)
    try:
        inf = cross_validate(X, y, machine, gamma=gamma, lam=lam, folds=folds,
                             method=BIF(order="inf"))
    except KernelCVError:  # a fold whose training part has one class
        return
    truth = _rational_refit_cv(K, y, folds, lam, machine == "lssvm")
    if _off(inf, machine, y, truth):
        assert inf.ill_conditioned, (inf.cv_error, _true_error(machine, y, truth))


@QUIET
@SOLVER
def test_cli_cv_shows_the_ill_conditioned_warning_once(tmp_path, capsys):
    X, y, _, _ = _problem(7, 7, 1, 0.13, "krr", 3)
    path = tmp_path / "tiny.npz"
    np.savez(path, X=X, y=y)
    argv = ["cv", str(path), "--machine", "krr", "--gamma", "0.13", "--lam", "1e-12",
            "--method", "bif", "--order", "inf", "--folds", "3"]
    assert main([*argv, "--json"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if ILL_CONDITIONED in line]
    assert len(lines) == 1 and lines[0].startswith("kernelcv: warning:")
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert f"WARNING: {ILL_CONDITIONED}" in captured.out
    assert ILL_CONDITIONED not in captured.err
