"""The LIBSVM start of the Huber machines: LIBSVM solves the smoothed machine's dual, so
its solution is the Newton solver's optimum up to LIBSVM's tolerance; the same optimum as
the Newton solve from zero with far fewer Newton iterations; the Gram matrix untouched."""

import importlib
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification, make_regression
from sklearn.svm import SVC, SVR, _libsvm

from kernelcv import KernelCVError, make_kernel, make_machine
from kernelcv.machines.libsvm_start import libsvm_start

# the module itself (kernelcv.machines re-exports its function under the same name)
libsvm_start_module = importlib.import_module("kernelcv.machines.libsvm_start")


def _classification(n, seed, gamma):
    X, y01 = make_classification(n, 6, flip_y=0.1, random_state=seed)
    return make_kernel("rbf", gamma)(X), 2.0 * y01 - 1


def _objective(machine, K, y, lam, fit):
    alpha = fit.alpha
    return float(np.mean(machine.loss.value(y, fit.decision)) + lam * alpha @ K @ alpha)


@pytest.mark.parametrize("name, epsilon", [("svm", None), ("svr", 0.1), ("svr", 0.01)])
@pytest.mark.parametrize("seed, gamma, lam", [(0, 0.5, 1e-3), (1, 2.0, 1e-4), (2, 0.1, 1e-2)])
def test_start_is_the_huber_optimum_through_libsvms_dual(name, epsilon, seed, gamma, lam):
    """Solved tightly, LIBSVM's dual with the smoothing ridge gives the Huber machine's
    own optimum (the Newton solve from zero, an independent solver) up to LIBSVM's
    tolerance; the unsmoothed start of earlier versions was O(w) = 1e-2 away."""
    if name == "svm":
        K, y = _classification(150, seed, gamma)
        machine = make_machine("svm", fit_intercept=True)
    else:
        X, y = make_regression(150, 4, noise=5.0, random_state=seed)
        y = y / np.std(y)
        K = make_kernel("rbf", gamma)(X)
        machine = make_machine("svr", fit_intercept=True, epsilon=epsilon)
    reference = machine.fit(K, y, lam, start="given", max_iter=500)
    assert reference.converged
    alpha, b = libsvm_start(K, y, lam, machine.loss, fit_intercept=True, tol=1e-12)
    np.testing.assert_allclose(K @ alpha + b, reference.decision, atol=1e-5)
    if name == "svm":  # the unsmoothed hinge's SVC is measurably elsewhere
        svc = SVC(kernel="precomputed", C=1 / (2 * y.size * lam), tol=1e-12).fit(K, y)
        assert np.abs(svc.decision_function(K) - reference.decision).max() > 1e-3


def test_svr_with_a_tube_narrower_than_the_band_starts_from_the_unsmoothed_svr():
    X, y = make_regression(120, 4, noise=5.0, random_state=3)
    y = y / np.std(y)
    K = make_kernel("rbf", 0.5)(X)
    loss = make_machine("svr", epsilon=0.004).loss  # eps < w = 0.01: the bands overlap
    alpha, b = libsvm_start(K, y, 1e-3, loss, fit_intercept=True)
    svr = SVR(kernel="precomputed", C=1 / (2 * y.size * 1e-3), epsilon=0.004, tol=1e-4).fit(K, y)
    np.testing.assert_allclose(K @ alpha + b, svr.predict(K), atol=1e-9)


def test_the_gram_matrix_is_restored_bit_for_bit(monkeypatch):
    K, y = _classification(80, 5, 0.7)
    K[3, 3] = 1.0 + 1e-16 * 3  # a diagonal value that (x + r) - r would not give back
    before = K.copy()
    loss = make_machine("svm").loss
    assert libsvm_start(K, y, 1e-3, loss, fit_intercept=True) is not None
    assert np.array_equal(K, before)

    def broken(*args, **kwargs):
        raise RuntimeError("LIBSVM failed")

    monkeypatch.setattr(_libsvm, "fit", broken)
    with pytest.raises(RuntimeError, match="LIBSVM failed"):
        libsvm_start(K, y, 1e-3, loss, fit_intercept=True)
    assert np.array_equal(K, before)


@pytest.mark.parametrize("name, first_label, weighted", [
    ("svm", 1.0, False), ("svm", -1.0, False), ("svm", 1.0, True), ("svr", None, False),
    ("svr", None, True)])
def test_libsvms_own_binding_gives_svc_and_svrs_start(monkeypatch, name, first_label,
                                                       weighted):
    # the start calls LIBSVM through scikit-learn's binding; where that binding is gone,
    # SVC / SVR themselves: the same (alpha, intercept) either way, whichever class
    # comes first in the data
    if name == "svm":
        K, y = _classification(90, 7, 0.5)
        first = int(np.flatnonzero(y == first_label)[0])
        order = np.r_[first, np.delete(np.arange(y.size), first)]
        K, y = K[np.ix_(order, order)], y[order]
    else:
        X, y = make_regression(90, 4, noise=0.3, random_state=7)
        K = make_kernel("rbf", 0.3)(X)
    machine = make_machine(name)
    if weighted:
        machine = machine.with_sample_weight(np.random.default_rng(0).uniform(0.2, 3, 90))
    direct = libsvm_start(K, y, 1e-3, machine.loss, fit_intercept=True)

    def gone():
        raise AttributeError("no such binding")

    monkeypatch.setattr(libsvm_start_module, "_binding", gone)
    fallback = libsvm_start(K, y, 1e-3, machine.loss, fit_intercept=True)
    np.testing.assert_allclose(direct[0], fallback[0], atol=1e-10)
    assert direct[1] == pytest.approx(fallback[1], abs=1e-10)


def test_a_read_only_gram_matrix_is_not_written():
    K, y = _classification(80, 6, 0.7)
    K.setflags(write=False)
    found = libsvm_start(K, y, 1e-3, make_machine("svm").loss, fit_intercept=True)
    assert found is not None and not K.flags.writeable


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
