"""BIF reports its own reliability: a truncation-error estimate and a flag above tolerance.

The oracle is exact refit CV (``method="exact"``): for krr/lssvm the series limit is
exact, so any difference is truncation. For l2svm the limit (one Newton step) is
compared with order ``"inf"`` instead, since points changing loss piece are not
truncation.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelcv import cross_validate
from kernelcv.cli import main
from kernelcv.criteria.truncation import TOLERANCE, tail, truncation_error
from kernelcv.datasets import load_data

HEART = (Path(__file__).resolve().parents[2] / "shared" / "datasets" / "libsvm"
         / "heart_scale.svm")
QUIET = pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
SOLVER = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _limit(metric, value):
    return TOLERANCE[metric] * (1.0 if metric == "0-1" else abs(value))


def _heart_like(n=270, seed=0):
    """heart_scale when the shared data are there, else a stand-in of the same shape."""
    if HEART.exists():
        X, y = load_data(HEART)
        return X.toarray()[:n], y[:n]
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 13))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    if n < 20:  # heart's first rows alternate; every leave-one-out part keeps both classes
        y = np.resize([1.0, -1.0, 1.0, -1.0, -1.0], n)
    return X, y


@pytest.mark.parametrize("machine", ["lssvm", "l2svm"])
def test_first_five_rows_of_heart_order_5_is_flagged(machine):
    """Issue 18: order 5 gave CV error 0 where exact refit gives 0.8, silently."""
    X, y = _heart_like(5)
    with pytest.warns(RuntimeWarning, match="BIF series not converged at order 5"):
        bif = cross_validate(X, y, machine, gamma=1 / 13, lam=1e-3, folds=5, method="bif",
                             order=5)
    exact = cross_validate(X, y, machine, gamma=1 / 13, lam=1e-3, folds=5, method="exact")
    assert abs(bif.cv_error - exact.cv_error) > 0.5
    assert bif.unconverged and bif.truncation_error >= abs(bif.cv_error - exact.cv_error)
    assert bif.to_dict()["unconverged"] is True


@pytest.mark.parametrize("lam", [1e-12, 1e-14])
def test_auto_order_never_stops_on_a_term_small_because_the_series_has_not_started(lam):
    """Issue 18: order auto at lam <= 1e-12 stopped at order 1 with CV error 0."""
    X, y = _heart_like(120)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto falls back to inf: no unconverged value
        auto = cross_validate(X, y, "l2svm", gamma=1 / 13, lam=lam, folds=10,
                              random_state=0, method="bif", order="auto")
    limit = cross_validate(X, y, "l2svm", gamma=1 / 13, lam=lam, folds=10, random_state=0,
                           method="bif", order="inf")
    assert auto.order_used != 1
    assert auto.cv_error == pytest.approx(limit.cv_error, abs=_limit("0-1", 0))
    assert not auto.unconverged


@QUIET
def test_heart_small_lam_order_5_is_flagged_and_inf_is_not():
    """Issue 18: heart at lam = 1e-5, order 5: 0.052 against an exact 0.196."""
    X, y = _heart_like()
    common = {"gamma": 1 / 13, "lam": 1e-5, "folds": 10, "random_state": 0}
    five = cross_validate(X, y, "lssvm", method="bif", order=5, **common)
    inf = cross_validate(X, y, "lssvm", method="bif", order="inf", **common)
    exact = cross_validate(X, y, "lssvm", method="exact", **common)
    assert abs(five.cv_error - exact.cv_error) > 0.05 and five.unconverged
    assert inf.truncation_error == 0 and not inf.unconverged
    assert inf.cv_error == pytest.approx(exact.cv_error)
    assert exact.truncation_error is None and not exact.unconverged


def test_converged_series_is_not_flagged():
    X, y = _heart_like(100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = cross_validate(X, y, "lssvm", gamma=1 / 13, lam=1.0, folds=5,
                                random_state=0, method="bif", order=8)
    assert not result.unconverged and result.truncation_error < TOLERANCE["0-1"]


def test_cli_cv_warns_once(tmp_path, capsys):
    X, y = _heart_like(5)
    path = tmp_path / "five.npz"
    np.savez(path, X=X, y=y)
    argv = ["cv", str(path), "--machine", "lssvm", "--gamma", str(1 / 13), "--lam", "1e-3",
            "--method", "bif", "--order", "5", "--folds", "5"]
    assert main([*argv, "--json"]) == 0
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if "not converged" in line]
    assert len(lines) == 1 and lines[0].startswith("kernelcv: warning: BIF series")
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "WARNING: BIF series not converged" in captured.out
    assert "not converged" not in captured.err


def test_tail_needs_three_terms_and_a_shrinking_rate():
    one = np.array([1e-9, 0.0])
    assert list(tail([one])) == [math.inf, 0.0]  # a small first term proves nothing
    assert list(tail([one, one])) == [math.inf, 0.0]
    shrinking = [np.array([1.0]), np.array([0.5]), np.array([0.25])]
    assert tail(shrinking)[0] == pytest.approx(2 * 0.25)  # 2 * 0.25 * 0.5 / (1 - 0.5)
    assert tail([np.array([1.0]), np.array([0.1]), np.array([0.09])])[0] == \
        pytest.approx(2 * 0.09 * 0.9 / 0.1)  # the slower of the last two ratios
    assert tail([np.array([1.0]), np.array([1.0]), np.array([1.0])])[0] == math.inf


def test_truncation_error_units():
    predictions = np.array([0.5, -0.05, 2.0, -1.0])
    y = np.array([1.0, 1.0, 1.0, -1.0])
    folds = np.array([0, 0, 1, 1])
    assert truncation_error(predictions, y, folds, [0.1, 0.0], "0-1") == 0.25
    assert truncation_error(predictions, y, folds, [math.inf, 0.0], "0-1") == 0.5
    mse = truncation_error(predictions, y, folds, [0.1, 0.0], "mse")
    assert mse == pytest.approx((2 * 0.5 * 0.1 + 0.01 + 2 * 1.05 * 0.1 + 0.01) / 4)


# lam down to 1e-6: below, the fold-out systems are so ill-conditioned that order "inf"
# itself parts from exact refit CV (not truncation; see docs/reliability.md), and tiny
# lam is covered by the order "auto" test above.
PROBLEMS = st.fixed_dictionaries({
    "n": st.integers(6, 30),
    "d": st.integers(1, 4),
    "seed": st.integers(0, 2**16),
    "log_lam": st.floats(-6, 1),
    "log_gamma": st.floats(-3, 1.5),
    "t": st.integers(2, 40),
    "order": st.sampled_from([1, 2, 3, 5, 8, "auto"]),
})


def _problem(case, regression):
    rng = np.random.default_rng(case["seed"])
    n = case["n"]
    X = rng.normal(size=(n, case["d"]))
    signal = X[:, 0] + np.sin(2 * X[:, -1]) + 0.3 * rng.normal(size=n)
    if regression:
        return X, signal
    y = np.where(signal > np.median(signal), 1.0, -1.0)
    return X, y


@QUIET
@SOLVER
@given(case=PROBLEMS, machine=st.sampled_from(["krr", "lssvm"]))
@settings(max_examples=150, deadline=None, derandomize=True)
def test_square_loss_bif_flags_itself_whenever_off_by_more_than_tolerance(case, machine):
    regression = machine == "krr"
    X, y = _problem(case, regression)
    t = min(case["t"], case["n"]) if regression else min(case["t"], case["n"] // 2)
    options = {"gamma": 10.0 ** case["log_gamma"], "lam": 10.0 ** case["log_lam"],
               "folds": t, "random_state": case["seed"]}
    bif = cross_validate(X, y, machine, method="bif", order=case["order"], **options)
    exact = cross_validate(X, y, machine, method="exact", **options)
    if not (np.isfinite(bif.cv_error) and np.isfinite(exact.cv_error)):
        return
    off = abs(bif.cv_error - exact.cv_error)
    # held-out values at the rounding level (exact ties at 0) have no trustworthy sign
    ties = np.mean(np.abs(exact.predictions) <= 1e-9 * max(1.0, np.max(np.abs(y))))
    allowed = _limit(bif.metric, bif.cv_error) + (ties if bif.metric == "0-1" else 0.0)
    if off > allowed + 1e-9 * max(1.0, exact.cv_error):
        assert bif.unconverged or bif.degenerate, (off, bif.truncation_error)


@QUIET
@SOLVER
@given(case=PROBLEMS)
@settings(max_examples=60, deadline=None)
def test_l2svm_bif_flags_itself_whenever_off_from_its_limit(case):
    X, y = _problem(case, regression=False)
    options = {"gamma": 10.0 ** case["log_gamma"], "lam": 10.0 ** case["log_lam"],
               "folds": min(case["t"], case["n"] // 2), "random_state": case["seed"]}
    bif = cross_validate(X, y, "l2svm", method="bif", order=case["order"], **options)
    limit = cross_validate(X, y, "l2svm", method="bif", order="inf", **options)
    if abs(bif.cv_error - limit.cv_error) > TOLERANCE["0-1"]:
        assert bif.unconverged or bif.degenerate
