"""The LIBSVM start of the Huber machines: same optimum as the Newton solve from zero,
far fewer Newton iterations; the start itself is LIBSVM's decision function."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification, make_regression
from sklearn.svm import SVC

from kernelcv import KernelCVError, make_kernel, make_machine
from kernelcv.machines.libsvm_start import libsvm_start


def _classification(n, seed, gamma):
    X, y01 = make_classification(n, 6, flip_y=0.1, random_state=seed)
    return make_kernel("rbf", gamma)(X), 2.0 * y01 - 1


def _objective(machine, K, y, lam, fit):
    alpha = fit.alpha
    return float(np.mean(machine.loss.value(y, fit.decision)) + lam * alpha @ K @ alpha)


def test_start_is_libsvms_decision_function():
    K, y = _classification(120, 0, 0.5)
    lam = 1e-3
    alpha, b = libsvm_start(K, y, lam, make_machine("svm").loss, fit_intercept=True)
    svc = SVC(kernel="precomputed", C=1 / (2 * y.size * lam)).fit(K, y)
    np.testing.assert_allclose(K @ alpha + b, svc.decision_function(K), atol=1e-8)


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(["svm", "svr"]), intercept=st.booleans(),
       n=st.integers(30, 90), seed=st.integers(0, 10**6),
       log_gamma=st.floats(-3, 2), log_lam=st.floats(-5, -0.5))
def test_same_optimum_as_newton_from_zero(name, intercept, n, seed, log_gamma, log_lam):
    lam, gamma = 10.0**log_lam, 10.0**log_gamma
    if name == "svm":
        K, y = _classification(n, seed % 1000, gamma)
    else:
        X, y = make_regression(n, 4, noise=5.0, random_state=seed % 1000)
        y = y / np.std(y)
        K = make_kernel("rbf", gamma)(X)
    machine = make_machine(name, fit_intercept=intercept)
    reference = machine.fit(K, y, lam, start="given")
    started = machine.fit(K, y, lam, start="libsvm")
    assert reference.converged and started.converged
    scale = max(1.0, float(np.abs(reference.decision).max()))
    # The objective is strictly convex in K alpha, not in b: when no point is on a
    # quadratic piece it is flat in b over an interval (balanced classes, large lam), so
    # the optimum is compared through the objective and K alpha.
    assert abs(_objective(machine, K, y, lam, started)
               - _objective(machine, K, y, lam, reference)) <= 1e-9 * scale
    np.testing.assert_allclose(K @ started.alpha, K @ reference.alpha, atol=1e-7 * scale)


def test_fewer_newton_iterations_on_a_narrow_kernel():
    K, y = _classification(400, 3, 2.0)  # narrow: many points end in the smoothed band
    machine = make_machine("svm")
    cold = machine.fit(K, y, 1e-4, start="given")
    started = machine.fit(K, y, 1e-4, start="libsvm")
    assert started.n_iter <= 5 < cold.n_iter


def test_auto_start_from_the_row_threshold(monkeypatch):
    import kernelcv.machines as machines

    calls = []
    real = machines.libsvm_start
    monkeypatch.setattr(machines, "libsvm_start", lambda *a: calls.append(1) or real(*a))
    K, y = _classification(80, 1, 0.5)
    make_machine("svm").fit(K, y, 1e-3)
    assert calls == []  # below LIBSVM_START_MIN_ROWS
    monkeypatch.setattr(machines, "LIBSVM_START_MIN_ROWS", 50)
    make_machine("svm").fit(K, y, 1e-3)
    make_machine("l2svm").fit(K, y, 1e-3)  # squared hinge: LIBSVM does not solve it
    assert calls == [1]


def test_losses_without_libsvm_counterpart_and_bad_start():
    K, y = _classification(40, 2, 0.5)
    assert libsvm_start(K, y, 1e-2, make_machine("l2svm").loss, True) is None
    assert libsvm_start(K, np.ones(40), 1e-2, make_machine("svm").loss, True) is None
    with pytest.raises(KernelCVError, match="start must be"):
        make_machine("svm").fit(K, y, 1e-2, start="smo")


def test_multiclass_binary_problems_start_from_libsvm_from_fewer_rows(monkeypatch):
    """A multiclass machine's binary problems use the start from
    LIBSVM_START_MIN_ROWS_MULTICLASS rows; the fit is the same optimum as from zero."""
    import kernelcv.machines as machines

    calls = []
    real = machines.libsvm_start
    monkeypatch.setattr(machines, "libsvm_start", lambda *a: calls.append(1) or real(*a))
    n = machines.LIBSVM_START_MIN_ROWS_MULTICLASS
    assert n < machines.LIBSVM_START_MIN_ROWS
    K, y = _classification(n, 3, 2.0)
    binary = make_machine("svm")
    multiclass = replace(binary, n_classes=3, multiclass="ovr")
    assert multiclass.is_multiclass
    reference = binary.fit(K, y, 1e-3)
    assert calls == []
    started = multiclass.fit(K, y, 1e-3)
    assert calls == [1]
    assert started.n_iter < reference.n_iter
    np.testing.assert_allclose(started.decision, reference.decision, atol=1e-7)
    calls.clear()
    multiclass.fit(K[:n - 1, :n - 1], y[:n - 1], 1e-3)
    assert calls == []
    calls.clear()
    warm = multiclass.fit(K, y, 2e-3, alpha0=started.alpha, intercept0=started.intercept)
    assert calls == []  # a warm start from a neighbouring lam is kept below 1000 rows
    np.testing.assert_allclose(warm.decision, binary.fit(K, y, 2e-3).decision, atol=1e-7)


def test_exact_cv_without_the_unused_full_fit(monkeypatch):
    """evaluate_lam(method="exact", full_fit=False) skips the full-data fit when the
    refits start from LIBSVM (a search's confirmation): the same held-out values and
    fold errors as with it, one fit fewer; a machine whose refits start from the full
    fit (l2svm) still makes it."""
    import kernelcv.machines as machines
    from kernelcv.criteria.evaluate import evaluate_lam
    from kernelcv.validation import make_folds

    monkeypatch.setattr(machines, "LIBSVM_START_MIN_ROWS", 50)
    calls = []
    real = machines.fit_kernel_machine
    monkeypatch.setattr(machines, "fit_kernel_machine",
                        lambda K, *a, **k: calls.append(K.shape[0]) or real(K, *a, **k))
    K, y = _classification(120, 4, 1.0)
    folds = make_folds(y, 5, True, 0)
    machine = make_machine("svm")
    with_fit = evaluate_lam(K, y, folds, 1e-3, machine, "exact")
    assert calls.count(120) == 1 and len(calls) == 6
    calls.clear()
    without = evaluate_lam(K, y, folds, 1e-3, machine, "exact", full_fit=False)
    assert 120 not in calls and len(calls) == 5
    np.testing.assert_array_equal(without.predictions, with_fit.predictions)
    np.testing.assert_array_equal(without.fold_errors, with_fit.fold_errors)
    assert without.cv_error == with_fit.cv_error and without.fit is None
    assert np.isnan(without.heldout_ratio) and not without.degenerate
    calls.clear()
    l2svm = evaluate_lam(K, y, folds, 1e-3, make_machine("l2svm"), "exact", full_fit=False)
    assert calls.count(120) == 1 and l2svm.fit is not None
