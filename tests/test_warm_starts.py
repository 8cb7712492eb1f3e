"""Warm starts across a search's tasks (kernelcv.selection.warm_starts).

The store changes where the Newton solvers start, never what they converge to: records
evaluated with it must equal those evaluated cold (same folds), for binary machines,
stacked one-vs-one pairs and exact confirmations, while the fits it starts need fewer
Newton iterations.
"""

from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernelcv.criteria.stacked_pairs as stacked_pairs
from kernelcv.machines import make_machine
from kernelcv.machines.solver import FitResult
from kernelcv.selection.methods import BIF, ExactRefit
from kernelcv.selection.warm_starts import Start, WarmStarts

SETTING = {"kernel": "rbf", "gamma": 0.5}


def fit_of(values, intercept=0.0):
    alpha = np.asarray(values, dtype=np.float64)
    return FitResult(alpha=alpha, intercept=intercept, decision=alpha.copy(), n_iter=1,
                     converged=True)


def classes(seed, n, k):
    rng = np.random.default_rng(seed)
    codes = np.arange(n) % k
    rng.shuffle(codes)
    X = rng.normal(size=(n, 3)) + rng.normal(scale=1.5, size=(k, 3))[codes]
    folds = np.empty(n, dtype=np.intp)
    for c in range(k):
        members = np.flatnonzero(codes == c)
        folds[members] = rng.permutation(np.arange(members.size) % 5)
    return X, codes, folds


def assert_same_records(ours, cold):
    assert len(ours) == len(cold)
    for a, b in zip(ours, cold, strict=True):
        assert a["lam"] == b["lam"]
        assert a["cv_error"] == b["cv_error"]
        assert a["fold_errors"] == b["fold_errors"]
        assert a["degenerate"] == b["degenerate"]
        assert a["heldout_ratio"] == pytest.approx(b["heldout_ratio"], rel=1e-6, abs=1e-12)


# -- the store ------------------------------------------------------------------------------


def test_nearest_lam_in_log_scale_larger_on_a_tie():
    store = WarmStarts()
    for lam in (1e-4, 1e-2, 1.0):
        store.add(SETTING, 10, lam, fit_of(np.full(10, lam)))
    assert store.nearest(SETTING, 10, 2e-4).alpha[0] == 1e-4
    assert store.nearest(SETTING, 10, 0.5).alpha[0] == 1.0
    assert store.nearest(SETTING, 10, 1e-3).alpha[0] == 1e-2  # 1e-4 and 1e-2 tie: larger
    assert store.nearest(SETTING, 10, 1e-2).alpha[0] == 1e-2


def test_keyed_by_setting_and_rows():
    store = WarmStarts()
    store.add(SETTING, 10, 0.1, fit_of(np.ones(10)))
    assert store.nearest({"kernel": "rbf", "gamma": 2.0}, 10, 0.1) is None
    assert store.nearest(SETTING, 12, 0.1) is None  # a subsample's fit never starts all rows
    assert store.nearest(dict(reversed(SETTING.items())), 10, 0.1) is not None


def test_keeps_coefficients_only_and_copies_them():
    store = WarmStarts()
    alpha = np.arange(4.0)
    store.add(SETTING, 4, 0.1, fit_of(alpha, intercept=0.5))
    alpha[:] = -1.0
    start = store.nearest(SETTING, 4, 0.1)
    assert isinstance(start, Start)
    assert start.alpha.tolist() == [0.0, 1.0, 2.0, 3.0] and start.intercept == 0.5


def test_multiclass_lists_keep_failed_fits_as_none():
    store = WarmStarts()
    store.add(SETTING, 6, 0.1, [fit_of(np.ones(3)), None, fit_of(np.zeros(4))])
    start = store.nearest(SETTING, 6, 0.1)
    assert start[1] is None and start[0].alpha.tolist() == [1.0, 1.0, 1.0]


def test_memory_bound_stops_adding():
    store = WarmStarts(max_floats=25)
    store.add(SETTING, 10, 0.1, fit_of(np.ones(10)))
    store.add(SETTING, 10, 0.2, fit_of(np.ones(10)))
    store.add(SETTING, 10, 0.3, fit_of(np.ones(10)))  # 30 > 25: not kept
    store.add(SETTING, 10, 0.1, fit_of(np.zeros(10)))  # replaces: still 20
    assert len(store) == 2
    assert store.nearest(SETTING, 10, 0.3).alpha[0] == 1.0  # 0.2's fit
    assert store.nearest(SETTING, 10, 0.1).alpha[0] == 0.0


def test_pickled_store_arrives_empty():
    store = WarmStarts(max_floats=100)
    store.add(SETTING, 10, 0.1, fit_of(np.ones(10)))
    copy = pickle.loads(pickle.dumps(store))
    assert len(copy) == 0 and copy.max_floats == 100 and len(store) == 1


# -- evaluations with the store equal cold ones ------------------------------------------------


def binary_problem(seed, n):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y, np.arange(n) % 5


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(30, 90),
       log_gamma=st.floats(-4, 2), machine=st.sampled_from(["svm", "l2svm"]),
       intercept=st.booleans())
def test_binary_tasks_with_the_store_equal_cold_tasks(seed, n, log_gamma, machine,
                                                      intercept):
    X, y, folds = binary_problem(seed, n)
    spec = make_machine(machine, fit_intercept=intercept)
    setting = {"kernel": "rbf", "gamma": float(2.0**log_gamma)}
    rounds = [[2.0**-2 / n, 2.0**4 / n], [2.0**0 / n], [2.0**-4 / n, 2.0**2 / n]]
    store = WarmStarts()
    for lams in rounds:  # the screen's rounds: later tasks start from earlier fits
        ours = BIF().evaluate_setting(X, y, folds, setting, lams, machine=spec,
                                      warm_starts=store)
        cold = BIF().evaluate_setting(X, y, folds, setting, lams, machine=spec)
        assert_same_records(ours, cold)
    assert len(store) == 5


def count_stacked_iterations(monkeypatch):
    calls = []
    original = stacked_pairs.fit_stacked

    def counting(*args, **kwargs):
        stack = original(*args, **kwargs)
        calls.append(int(stack.n_iter.max()))
        return stack

    monkeypatch.setattr(stacked_pairs, "fit_stacked", counting)
    return calls


def test_one_vs_one_rounds_start_warm_and_agree(monkeypatch):
    """Ten stacked pairs (five classes): a second round's first lam starts from the first
    round's fit at the nearest lam, takes fewer iterations than a cold start, and the
    records equal the cold ones."""
    X, codes, folds = classes(3, 150, 5)
    spec = replace(make_machine("svm", multiclass="ovo"), n_classes=5)
    setting = {"kernel": "rbf", "gamma": 0.5}
    n = codes.size
    store = WarmStarts()
    BIF().evaluate_setting(X, codes, folds, setting, [2.0 / n], machine=spec,
                           warm_starts=store)
    calls = count_stacked_iterations(monkeypatch)
    ours = BIF().evaluate_setting(X, codes, folds, setting, [0.5 / n], machine=spec,
                                  warm_starts=store)
    warm_iterations = calls[0]
    cold = BIF().evaluate_setting(X, codes, folds, setting, [0.5 / n], machine=spec)
    cold_iterations = calls[-1]
    assert_same_records(ours, cold)
    assert warm_iterations < cold_iterations


@pytest.mark.parametrize("multiclass", [False, True])
def test_exact_confirmation_from_the_store_equals_a_cold_one(multiclass):
    if multiclass:
        X, y, folds = classes(5, 120, 5)
        spec = replace(make_machine("svm", multiclass="ovo"), n_classes=5)
    else:
        X, y, folds = binary_problem(5, 80)
        spec = make_machine("svm")
    lam = 1.0 / y.size
    store = WarmStarts()
    BIF().evaluate_setting(X, y, folds, SETTING, [lam], machine=spec, warm_starts=store)
    ours = ExactRefit().exact_candidate(X, y, folds, SETTING, lam, 5, machine=spec,
                                        warm_starts=store)
    cold = ExactRefit().exact_candidate(X, y, folds, SETTING, lam, 5, machine=spec)
    assert ours["cv_error"] == cold["cv_error"]
    assert ours["fold_errors"] == cold["fold_errors"]
    assert ours.get("heldout_codes") == cold.get("heldout_codes")


def test_threads_share_the_store_safely():
    """The threading backend's workers add and look up at once."""
    import threading

    store = WarmStarts()
    errors = []

    def work(offset):
        try:
            for i in range(300):
                lam = 2.0 ** -((i + offset) % 40)
                store.add(SETTING, 5, lam, fit_of(np.full(5, lam)))
                found = store.nearest(SETTING, 5, lam)
                assert found is not None and found.alpha.shape == (5,)
        except Exception as exc:  # noqa: BLE001 - reported by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store) == 40


def test_a_threaded_search_equals_a_sequential_one():
    from kernelcv.selection.options import Execution, SearchSpace
    from kernelcv.selection.search import run_search

    X, y, folds = binary_problem(11, 80)
    spec = make_machine("svm")
    space = SearchSpace.grid("rbf", [0.25, 1.0, 4.0], lams=[0.5 / 80, 2.0 / 80, 8.0 / 80])
    one = run_search(X, y, spec, BIF(), space, folds=folds)
    two = run_search(X, y, spec, BIF(), space, folds=folds,
                     execution=Execution(n_jobs=2, backend="threading"))
    assert [c["cv_error"] for c in one.candidates] == [c["cv_error"] for c in two.candidates]
    assert one.best["gamma"] == two.best["gamma"] and one.best["lam"] == two.best["lam"]
