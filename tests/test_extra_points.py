"""Extra points of every held-out-prediction criterion (for one-vs-one multiclass CV).

``evaluate_lam(..., extra=(K_extra, extra_fold_ids))`` returns, besides the held-out values
on the sample, the fold-out models' values at m points off the sample: id i -> the model
fitted without fold i (approximated as the criterion approximates fold i's own members),
id -1 -> the full fit. Oracles: explicit refits on the retained rows (the slow exact
answer) and, for the approximations, the criterion's own held-out values when the extra
points are copies of training points with their own fold ids.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelcv import KernelCVError, make_kernel, make_machine
from kernelcv.criteria.closed_form import ClosedFormCV
from kernelcv.criteria.evaluate import evaluate_lam

MACHINES = [("krr", False), ("lssvm", False), ("lssvm", True), ("l2svm", False),
            ("l2svm", True), ("svm", False), ("svm", True), ("svr", False), ("svr", True)]
SQUARE = [("krr", False), ("lssvm", False), ("lssvm", True)]


def problem(seed, n, t, m, gamma, name, unequal=True):
    """Gram matrix, targets, fold ids (unequal sizes when asked), extra rows and ids."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + m, 3))
    score = X[:, 0] + 0.6 * np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=n + m)
    y = score if name in ("krr", "svr") else np.where(score > 0, 1.0, -1.0)
    kernel = make_kernel("rbf", gamma)
    X_train, X_extra = X[:n], X[n:]
    fold_ids = rng.permutation(np.arange(n) % t)
    if unequal:
        fold_ids[rng.choice(n, size=n // 5, replace=False)] = 0  # fold 0 larger
        fold_ids[:t] = np.arange(t)  # every fold keeps a member
    extra_ids = rng.integers(-1, t, size=m)
    return kernel(X_train), y[:n], fold_ids, kernel(X_extra, X_train), extra_ids


def machine_of(name, intercept):
    return make_machine(name, fit_intercept=None if name == "krr" else intercept)


def explicit_refit(K, y, fold_ids, lam, machine, K_extra, extra_ids):
    """The slow exact answer: one cold refit per fold, predicted at its extra points.

    Also says where that answer is unique: with an intercept, a Huber loss with no
    retained point strictly inside a quadratic piece is flat in ``b`` over an interval
    (whose ends have a point on a kink), and two solvers may stop at different ends of it.
    """
    out = np.empty(extra_ids.shape[0])
    unique = np.ones(extra_ids.shape[0], dtype=bool)
    for i in range(int(fold_ids.max()) + 1):
        train = fold_ids != i
        fit = machine.fit(K[np.ix_(train, train)], y[train], lam, start="given")
        at = extra_ids == i
        out[at] = K_extra[np.ix_(at, train)] @ fit.alpha + fit.intercept
        if machine.fit_intercept:
            unique[at] = _strictly_quadratic(machine.loss, y[train], fit.decision)
    full = machine.fit(K, y, lam, start="given")
    free = extra_ids < 0
    out[free] = K_extra[free] @ full.alpha + full.intercept
    return out, full, unique


def _strictly_quadratic(loss, y, F):
    """Whether some point lies strictly inside a quadratic piece (so ``b`` is unique)."""
    step = 1e-8 * max(1.0, float(np.max(np.abs(F))))
    inside = loss.derivatives(y, F)[1] > 0
    for shift in (-step, step):
        inside &= loss.derivatives(y, F + shift)[1] > 0
    return bool(inside.any())


def rel(a, b, scale):
    return float(np.max(np.abs(a - b), initial=0.0)) / max(scale, 1e-300)


common = dict(seed=st.integers(0, 10**6), n=st.integers(12, 40), t=st.integers(2, 6),
              m=st.integers(1, 8), log_gamma=st.floats(-1.5, 0.5),
              unequal=st.booleans())


@settings(max_examples=30, deadline=None)
@given(which=st.sampled_from(MACHINES), log_lam=st.floats(-4, 0), **common)
def test_exact_equals_explicit_refit(which, seed, n, t, m, log_gamma, unequal, log_lam):
    name, intercept = which
    K, y, fold_ids, K_extra, extra_ids = problem(seed, n, t, m, 10**log_gamma, name, unequal)
    machine = machine_of(name, intercept)
    lam = 10.0**log_lam
    ev = evaluate_lam(K, y, fold_ids, lam, machine, "exact", extra=(K_extra, extra_ids))
    expected, full, unique = explicit_refit(K, y, fold_ids, lam, machine, K_extra,
                                            extra_ids)
    scale = max(np.max(np.abs(expected)), np.max(np.abs(full.decision)))
    assert ev.extra_predictions.shape == (m,)
    assert rel(ev.extra_predictions[unique], expected[unique], scale) < 1e-10
    # training rows as extra points with their own ids: the refits' held-out values
    S = np.random.default_rng(seed + 1).choice(n, size=min(n, 7), replace=False)
    copy = evaluate_lam(K, y, fold_ids, lam, machine, "exact", extra=(K[S], fold_ids[S]))
    assert rel(copy.extra_predictions, copy.predictions[S], scale) < 1e-12


@settings(max_examples=30, deadline=None)
@given(which=st.sampled_from(SQUARE), log_lam=st.floats(-5, 0), loo=st.booleans(),
       **common)
def test_closed_form_equals_exact_refit(which, seed, n, t, m, log_gamma, unequal, log_lam,
                                        loo):
    name, intercept = which
    K, y, fold_ids, K_extra, extra_ids = problem(seed, n, t, m, 10**log_gamma, name, unequal)
    if loo:
        fold_ids = np.arange(n)
        extra_ids = np.random.default_rng(seed).integers(-1, n, size=m)
    machine = machine_of(name, intercept)
    lam = 10.0**log_lam
    closed = ClosedFormCV(K, fold_ids, fit_intercept=machine.fit_intercept)
    assert closed.leave_one_out == loo
    ev = evaluate_lam(K, y, fold_ids, lam, machine, "closed-form", closed=closed,
                      extra=(K_extra, extra_ids))
    expected, _, exact_extra = _exact(K, y, fold_ids, lam, machine, K_extra, extra_ids)
    scale = max(np.max(np.abs(exact_extra)), np.max(np.abs(expected)))
    assert rel(ev.extra_predictions, exact_extra, scale) < 1e-8
    # training rows as extra points with their own ids: the held-out values themselves
    S = np.random.default_rng(seed + 1).choice(n, size=min(n, 7), replace=False)
    copy = evaluate_lam(K, y, fold_ids, lam, machine, "closed-form", closed=closed,
                        extra=(K[S], fold_ids[S]))
    assert rel(copy.extra_predictions, copy.predictions[S], scale) < 1e-9


def _exact(K, y, fold_ids, lam, machine, K_extra, extra_ids):
    ev = evaluate_lam(K, y, fold_ids, lam, machine, "exact", extra=(K_extra, extra_ids))
    return ev.predictions, ev.fit, ev.extra_predictions


@settings(max_examples=30, deadline=None)
@given(which=st.sampled_from(MACHINES), log_lam=st.floats(-4, 0), **common)
def test_order_inf(which, seed, n, t, m, log_gamma, unequal, log_lam):
    name, intercept = which
    K, y, fold_ids, K_extra, extra_ids = problem(seed, n, t, m, 10**log_gamma, name, unequal)
    machine = machine_of(name, intercept)
    lam = 10.0**log_lam
    S = np.random.default_rng(seed + 1).choice(n, size=min(n, 9), replace=False)
    copy = evaluate_lam(K, y, fold_ids, lam, machine, "bif", order="inf",
                        extra=(K[S], fold_ids[S]))
    scale = np.max(np.abs(copy.fit.decision))
    assert rel(copy.extra_predictions, copy.predictions[S], scale) < 1e-9
    if (name, intercept) in SQUARE:  # one Newton step is the refit: exact off the sample
        ev = evaluate_lam(K, y, fold_ids, lam, machine, "bif", order="inf",
                          extra=(K_extra, extra_ids))
        _, _, expected = _exact(K, y, fold_ids, lam, machine, K_extra, extra_ids)
        assert rel(ev.extra_predictions, expected, max(scale, np.max(np.abs(expected)))) < 1e-8


@settings(max_examples=25, deadline=None)
@given(which=st.sampled_from(MACHINES), log_lam=st.floats(-3, 0), **common)
def test_finite_orders_reproduce_held_out_values_at_training_copies(
        which, seed, n, t, m, log_gamma, unequal, log_lam):
    name, intercept = which
    K, y, fold_ids, _, _ = problem(seed, n, t, m, 10**log_gamma, name, unequal)
    machine = machine_of(name, intercept)
    lam = 10.0**log_lam
    rng = np.random.default_rng(seed + 1)
    S = rng.choice(n, size=min(n, 9), replace=False)
    extra_ids = fold_ids[S].copy()
    extra_ids[0] = -1  # and one full-fit point
    fit = machine.fit(K, y, lam)
    for order in (1, 2, 3, 4, 5, 6, "auto"):
        ev = evaluate_lam(K, y, fold_ids, lam, machine, "bif", order=order,
                          extra=(K[S], extra_ids))
        scale = np.max(np.abs(ev.fit.decision))
        assert rel(ev.extra_predictions[1:], ev.predictions[S[1:]], scale) < 1e-9, order
        assert rel(ev.extra_predictions[:1], fit.decision[S[:1]], scale) < 1e-10, order


@pytest.mark.parametrize("which", SQUARE)
def test_order_200_approaches_the_refit_off_the_sample(which):
    """Large n lam: rho ~ 1/(1 + n lam) is small and 200 terms reach rounding level."""
    name, intercept = which
    K, y, fold_ids, K_extra, extra_ids = problem(3, 30, 4, 6, 0.5, name)
    machine = machine_of(name, intercept)
    lam = 0.05
    _, _, expected = _exact(K, y, fold_ids, lam, machine, K_extra, extra_ids)
    errors = []
    for order in (1, 3, 200):
        ev = evaluate_lam(K, y, fold_ids, lam, machine, "bif", order=order,
                          extra=(K_extra, extra_ids))
        assert ev.order_used == order
        errors.append(rel(ev.extra_predictions, expected, np.max(np.abs(expected))))
    assert errors[2] < 1e-8
    assert errors[2] <= errors[1] <= errors[0]


@pytest.mark.parametrize("method, order", [("exact", 5), ("closed-form", 5), ("bif", 2),
                                           ("bif", "auto"), ("bif", "inf")])
@pytest.mark.parametrize("intercept", [False, True])
def test_id_minus_one_is_the_full_fit(method, order, intercept):
    name = "lssvm" if (method == "closed-form" or intercept) else "l2svm"
    K, y, fold_ids, K_extra, _ = problem(7, 25, 3, 5, 0.3, name)
    machine = make_machine(name, fit_intercept=intercept)
    lam = 1e-2
    closed = ClosedFormCV(K, fold_ids, intercept) if method == "closed-form" else None
    ev = evaluate_lam(K, y, fold_ids, lam, machine, method, order=order, closed=closed,
                      extra=(K_extra, np.full(5, -1)))
    if closed is None:
        alpha, b = ev.fit.alpha, ev.fit.intercept
        full = machine.fit(K, y, lam)
        assert np.array_equal(full.alpha, alpha)
    else:
        alpha, b = closed.full_fit(y, lam)
    np.testing.assert_allclose(ev.extra_predictions, K_extra @ alpha + b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["exact", "closed-form", "bif"])
def test_no_extra_points_changes_nothing(method):
    K, y, fold_ids, K_extra, extra_ids = problem(11, 30, 4, 6, 0.4, "lssvm")
    machine = make_machine("lssvm")
    closed = ClosedFormCV(K, fold_ids, True) if method == "closed-form" else None
    for order in (3, "auto", "inf") if method == "bif" else (5,):
        base = evaluate_lam(K, y, fold_ids, 1e-2, machine, method, order=order, closed=closed)
        none = evaluate_lam(K, y, fold_ids, 1e-2, machine, method, order=order,
                            closed=closed, extra=None)
        with_extra = evaluate_lam(K, y, fold_ids, 1e-2, machine, method, order=order,
                                  closed=closed, extra=(K_extra, extra_ids))
        empty = evaluate_lam(K, y, fold_ids, 1e-2, machine, method, order=order,
                             closed=closed, extra=(np.zeros((0, 30)), np.zeros(0, int)))
        assert base.extra_predictions is None and none.extra_predictions is None
        assert empty.extra_predictions.shape == (0,)
        for ev in (none, with_extra, empty):
            assert np.array_equal(ev.predictions, base.predictions)
            assert ev.cv_error == base.cv_error
            assert np.array_equal(ev.fold_errors, base.fold_errors)
            assert (ev.order_used, ev.degenerate, ev.heldout_ratio, ev.notes) == (
                base.order_used, base.degenerate, base.heldout_ratio, base.notes)


@pytest.mark.parametrize("extra, message", [
    ((np.zeros((3, 19)), np.zeros(3, int)), "shape"),
    ((np.zeros(20), np.zeros(1, int)), "shape"),
    ((np.zeros((3, 20)), np.zeros(4, int)), "shape"),
    ((np.zeros((3, 20)), np.array([0, 1, 3])), "-1..2"),
    ((np.zeros((3, 20)), np.array([0, -2, 1])), "-1..2"),
    ((np.zeros((3, 20)), np.array([0.0, 1.0, 2.0])), "integers"),
    (np.zeros((3, 20)), "tuple"),
])
def test_malformed_extra_points_raise(extra, message):
    K, y, fold_ids, _, _ = problem(1, 20, 3, 1, 0.5, "krr")
    with pytest.raises(KernelCVError, match=message):
        evaluate_lam(K, y, fold_ids, 1e-2, make_machine("krr"), "exact", extra=extra)
