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

from kernelcv import BIF, cross_validate
from kernelcv.cli import main
from kernelcv.criteria.bif import bif_predictions
from kernelcv.criteria.truncation import (
    SLOW_RATE,
    TOLERANCE,
    fold_maxima,
    power_rate,
    tail,
    truncation_error,
)
from kernelcv.kernels import squared_distances
from kernelcv.machines import make_machine
from kernelcv.reading.files import load_data

HEART = (Path(__file__).resolve().parents[2] / "shared" / "datasets" / "libsvm"
         / "heart_scale.svm")
QUIET = pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
ROUNDING = pytest.mark.filterwarnings("ignore:.*BIF value ill-conditioned:RuntimeWarning")
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


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.parametrize("machine", ["lssvm", "l2svm"])
def test_first_five_rows_of_heart_order_5_is_flagged(machine):
    """Issue 18: order 5 gave CV error 0 where exact refit gives 0.8, silently."""
    X, y = _heart_like(5)
    with pytest.warns(RuntimeWarning, match="BIF series not converged at order 5"):
        bif = cross_validate(X, y, machine, gamma=1 / 13, lam=1e-3, folds=5,
                             method=BIF(order=5))
    exact = cross_validate(X, y, machine, gamma=1 / 13, lam=1e-3, folds=5, method="exact")
    assert abs(bif.cv_error - exact.cv_error) > 0.5
    assert bif.unconverged and bif.truncation_error >= abs(bif.cv_error - exact.cv_error)
    assert bif.to_dict()["unconverged"] is True


@pytest.mark.filterwarnings("ignore:.*BIF value ill-conditioned:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.parametrize("lam", [1e-12, 1e-14])
def test_auto_order_never_stops_on_a_term_small_because_the_series_has_not_started(lam):
    """Issue 18: order auto at lam <= 1e-12 stopped at order 1 with CV error 0."""
    X, y = _heart_like(120)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto falls back to inf: no unconverged value
        # (n lam = 1.2e-10: the limit's rounding is another matter, flagged on its own)
        warnings.filterwarnings("ignore", message=".*BIF value ill-conditioned")
        warnings.filterwarnings("ignore", message=".*BIF value not certified")
        auto = cross_validate(X, y, "l2svm", gamma=1 / 13, lam=lam, folds=10, random_state=0,
                              method=BIF(order="auto"))
    limit = cross_validate(X, y, "l2svm", gamma=1 / 13, lam=lam, folds=10, random_state=0,
                           method=BIF(order="inf"))
    assert auto.order_used != 1
    assert auto.ill_conditioned  # rounding, not truncation (test_bif_conditioning.py)
    assert auto.cv_error == pytest.approx(limit.cv_error, abs=_limit("0-1", 0))
    assert not auto.unconverged


@QUIET
def test_heart_small_lam_order_5_is_flagged_and_inf_is_not():
    """Issue 18: heart at lam = 1e-5, order 5: 0.052 against an exact 0.196."""
    X, y = _heart_like()
    common = {"gamma": 1 / 13, "lam": 1e-5, "folds": 10, "random_state": 0}
    five = cross_validate(X, y, "lssvm", method=BIF(order=5), **common)
    inf = cross_validate(X, y, "lssvm", method=BIF(order="inf"), **common)
    exact = cross_validate(X, y, "lssvm", method="exact", **common)
    assert abs(five.cv_error - exact.cv_error) > 0.05 and five.unconverged
    assert inf.truncation_error == 0 and not inf.unconverged
    assert inf.cv_error == pytest.approx(exact.cv_error)
    assert exact.truncation_error is None and not exact.unconverged


def test_converged_series_is_not_flagged():
    X, y = _heart_like(100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = cross_validate(X, y, "lssvm", gamma=1 / 13, lam=1.0, folds=5, random_state=0,
                                method=BIF(order=8))
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


def _two_mode_map(fast=0.3, slow=0.99):
    """A linear term map with one slow mode (rate ``slow``) on the last coordinate."""
    rates = np.r_[np.full(9, fast), slow]
    return lambda V: rates[:, None] * V


def test_power_rate_finds_a_slow_mode_the_terms_hide():
    """The terms from a start with almost nothing on the slow mode look fast (0.3): the
    observed-ratio tail is ~0.05 while the true tail is ~1; the power rate from a random
    start sees the slow mode and the tail becomes large."""
    apply = _two_mode_map()
    T = np.r_[np.full(9, 1.0), 0.01][:, None]
    terms = [T]
    for _ in range(2):
        terms.append(apply(terms[-1]))
    history = [np.max(np.abs(term), axis=0) for term in terms]
    true_tail = sum(0.01 * 0.99**k for k in range(3, 3000))
    assert tail(history)[0] < 0.1 * true_tail  # the terms alone miss it
    rate = power_rate(apply, 10, 1)
    assert rate[0] >= 0.95 or rate[0] >= SLOW_RATE
    assert tail(history, rate)[0] >= true_tail or rate[0] >= SLOW_RATE


def test_power_rate_matches_the_spectral_radius_of_a_fast_map():
    apply = _two_mode_map(fast=0.2, slow=0.5)
    assert power_rate(apply, 10, 1)[0] == pytest.approx(0.5, rel=0.02)
    assert list(power_rate(lambda V: 0.0 * V, 4, 2)) == [0.0, 0.0]


def test_a_held_out_term_of_exactly_0_does_not_end_a_series_whose_map_is_not_0():
    history = [np.array([1.0]), np.array([0.5]), np.array([0.0])]
    # it starts from the term before, shrunk by the rate: 2 * (0.5 * 0.5) * 0.5 / 0.5
    assert tail(history)[0] == pytest.approx(0.5)
    assert tail(history, np.array([0.8]))[0] == pytest.approx(2 * 0.4 * 0.8 / 0.2)
    assert tail([np.zeros(1)] * 3, np.array([0.5]))[0] == 0.0  # all terms 0: stopped


def _seed_2845():
    """The example a random run of the property test below found (issue 18): lssvm,
    n = 11, d = 1, gamma = 1, lam = 5.6e-4, 5 folds; order 1 and 2 gave CV error 0 with a
    truncation estimate 0, exact refit CV 0.09 (one point's term shrinks at 0.99 behind a
    neighbour's at 0.3)."""
    X, y = _problem({"seed": 2845, "n": 11, "d": 1}, regression=False)
    return X, y, {"gamma": 1.0, "lam": 5.6e-4, "folds": 5, "random_state": 2845}


@QUIET
@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_property_run_example_lssvm_low_order_is_flagged(order):
    X, y, options = _seed_2845()
    exact = cross_validate(X, y, "lssvm", method="exact", **options)
    bif = cross_validate(X, y, "lssvm", method=BIF(order=order), **options)
    assert abs(bif.cv_error - exact.cv_error) > TOLERANCE["0-1"]
    assert bif.unconverged
    assert bif.truncation_error >= abs(bif.cv_error - exact.cv_error)


def test_slow_series_remainder_is_measured_against_the_limit():
    """Where a fold's rate reaches SLOW_RATE the remainder is |limit - partial sum|,
    not an estimate: compare it with order inf computed separately."""
    X, y, _ = _seed_2845()
    K = np.exp(-squared_distances(X))
    folds, lam = np.arange(11) % 5, 1e-5  # n lam = 1e-4: rates near 1 / (1 + 1e-4)
    machine = make_machine("lssvm")
    fit = machine.fit(K, y, lam)
    partial, _, remainder = bif_predictions(K, y, folds, lam, machine, fit, order=2,
                                            remainder=True)
    limit, _ = bif_predictions(K, y, folds, lam, machine, fit, order="inf")
    assert np.max(remainder) > 0.1
    assert np.allclose(remainder, fold_maxima(limit - partial, folds, 5), atol=1e-12)


def test_truncation_error_units():
    predictions = np.array([0.5, -0.05, 2.0, -1.0])
    y = np.array([1.0, 1.0, 1.0, -1.0])
    folds = np.array([0, 0, 1, 1])
    assert truncation_error(predictions, y, folds, [0.1, 0.0], "0-1") == 0.25
    assert truncation_error(predictions, y, folds, [math.inf, 0.0], "0-1") == 0.5
    mse = truncation_error(predictions, y, folds, [0.1, 0.0], "mse")
    # order inf has no remainder: a held-out value exactly at 0 (a narrow kernel's
    # balanced pair) is not a truncation problem (it was flagged "unconverged")
    at_zero = np.array([0.0, 0.3, 0.0, -1.0])
    assert truncation_error(at_zero, y, folds, [0.0, 0.0], "0-1") == 0.0
    assert truncation_error(at_zero, y, folds, [0.1, 0.0], "0-1") == 0.25
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
@ROUNDING
@SOLVER
@pytest.mark.parametrize("machine", ["krr", "lssvm"])
@given(case=PROBLEMS)
@settings(max_examples=200, deadline=None)
def test_square_loss_bif_flags_itself_whenever_off_by_more_than_tolerance(machine, case):
    check_square_loss_case(case, machine)


@QUIET
@ROUNDING
@SOLVER
@pytest.mark.slow
@pytest.mark.parametrize("machine", ["krr", "lssvm"])
def test_square_loss_bif_flags_on_a_thousand_random_problems(machine):
    """The CI property test's check on 1,000 seeded problems per machine (issue 41)."""
    rng = np.random.default_rng({"krr": 11, "lssvm": 12}[machine])
    orders = [1, 2, 3, 5, 8, "auto"]
    for _ in range(1000):
        check_square_loss_case({
            "n": int(rng.integers(6, 31)), "d": int(rng.integers(1, 5)),
            "seed": int(rng.integers(2**16)), "log_lam": rng.uniform(-6, 1),
            "log_gamma": rng.uniform(-3, 1.5), "t": int(rng.integers(2, 41)),
            "order": orders[int(rng.integers(len(orders)))]}, machine)


def check_square_loss_case(case, machine):
    regression = machine == "krr"
    X, y = _problem(case, regression)
    t = min(case["t"], case["n"]) if regression else min(case["t"], case["n"] // 2)
    options = {"gamma": 10.0 ** case["log_gamma"], "lam": 10.0 ** case["log_lam"],
               "folds": t, "random_state": case["seed"]}
    bif = cross_validate(X, y, machine, method=BIF(order=case["order"]), **options)
    exact = cross_validate(X, y, machine, method="exact", **options)
    if not (np.isfinite(bif.cv_error) and np.isfinite(exact.cv_error)):
        return
    off = abs(bif.cv_error - exact.cv_error)
    # held-out values at the rounding level (exact ties at 0) have no trustworthy sign
    ties = np.mean(np.abs(exact.predictions) <= 1e-9 * max(1.0, np.max(np.abs(y))))
    allowed = _limit(bif.metric, bif.cv_error) + (ties if bif.metric == "0-1" else 0.0)
    if off > allowed + 1e-9 * max(1.0, exact.cv_error):
        assert bif.unconverged or bif.degenerate or bif.ill_conditioned, (
            off, bif.truncation_error)


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@QUIET
@ROUNDING
@SOLVER
@given(case=PROBLEMS)
@settings(max_examples=60, deadline=None)
def test_l2svm_bif_flags_itself_whenever_off_from_its_limit(case):
    X, y = _problem(case, regression=False)
    options = {"gamma": 10.0 ** case["log_gamma"], "lam": 10.0 ** case["log_lam"],
               "folds": min(case["t"], case["n"] // 2), "random_state": case["seed"]}
    bif = cross_validate(X, y, "l2svm", method=BIF(order=case["order"]), **options)
    limit = cross_validate(X, y, "l2svm", method=BIF(order="inf"), **options)
    if abs(bif.cv_error - limit.cv_error) > TOLERANCE["0-1"]:
        assert bif.unconverged or bif.degenerate or bif.ill_conditioned
