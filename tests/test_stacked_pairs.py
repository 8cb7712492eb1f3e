"""One-vs-one pairs evaluated together (StackedPairs) against each pair on its own.

Oracles: for exact CV an independent refit of every pair on every training part (same
folds); for BIF order inf the one-problem path (``MulticlassCV.stack_pairs = False``),
whose order-inf values are tested against refit CV in test_multiclass.py and
test_criteria.py. Values, errors and flags must agree.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kernelcv.criteria.stacked_pairs as stacked_pairs
import kernelcv.machines.stacked as stacked
from kernelcv.criteria.multiclass import MulticlassCV
from kernelcv.machines import make_machine
from kernelcv.machines.multiclass import binary_problems


@pytest.fixture(autouse=True)
def stack_any_number_of_pairs(monkeypatch):
    """Small problems here: stack their 3-10 pairs (the default waits for 10)."""
    monkeypatch.setattr(stacked, "STACK_MIN_PROBLEMS", 1)


def problem(seed, k, t, n, gamma):
    rng = np.random.default_rng(seed)
    codes = np.arange(n) % k
    rng.shuffle(codes)
    X = rng.normal(size=(n, 3)) + rng.normal(scale=1.5, size=(k, 3))[codes]
    folds = np.empty(n, dtype=np.intp)
    for c in range(k):  # stratified: every class in every fold
        members = np.flatnonzero(codes == c)
        folds[members] = rng.permutation(np.arange(members.size) % t)
    K = np.exp(-gamma * ((X[:, None] - X[None]) ** 2).sum(-1))
    return K, codes, folds


def spec_for(machine, intercept, k):
    return replace(make_machine(machine, fit_intercept=intercept, multiclass="ovo"),
                   n_classes=k)


def evaluate(K, codes, folds, spec, lam, method, stacked, warm=None, **options):
    cv = MulticlassCV(K, codes, folds, spec)
    cv.stack_pairs = stacked
    return cv.evaluate(lam, spec, method, warm=warm, **options)


def refit_decisions(K, codes, folds, spec, lam):
    """Each pair refitted without each fold; every point of that fold predicted."""
    problems = binary_problems(codes, spec.n_classes, "ovo")
    values = np.empty((codes.size, len(problems)))
    for p, pair in enumerate(problems):
        for i in range(int(folds.max()) + 1):
            train = pair.rows[folds[pair.rows] != i]
            fit = spec.fit(K[np.ix_(train, train)],
                           np.where(codes[train] == pair.positive, 1.0, -1.0), lam)
            test = np.flatnonzero(folds == i)
            values[test, p] = K[np.ix_(test, train)] @ fit.alpha + fit.intercept
    return values


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), k=st.integers(3, 5), t=st.integers(2, 7),
       machine=st.sampled_from(["svm", "l2svm"]), intercept=st.booleans(),
       log_lam=st.floats(-4.5, 0), log_gamma=st.floats(-2, 1.5))
def test_order_inf_of_the_stacked_pairs_is_the_one_problem_path(seed, k, t, machine,
                                                                  intercept, log_lam,
                                                                  log_gamma):
    K, codes, folds = problem(seed, k, t, 12 * k, 10.0**log_gamma)
    spec = spec_for(machine, intercept, k)
    lam = 10.0**log_lam
    # along a lam path (warm starts), as the search evaluates a kernel column
    warm_s = warm_o = None
    for step in (3.0, 1.0):
        ours = evaluate(K, codes, folds, spec, lam * step, "bif", True, warm_s, order="inf")
        one = evaluate(K, codes, folds, spec, lam * step, "bif", False, warm_o, order="inf")
        warm_s, warm_o = ours.fit, one.fit
        scale = max(1.0, np.abs(one.decisions).max())
        # both solve the same systems (LU here, Cholesky or a Schur complement there):
        # they agree to the systems' conditioning, far inside 1e-6 on these problems
        assert np.abs(ours.decisions - one.decisions).max() <= 1e-6 * scale
        if np.all(np.abs(one.decisions) > 1e-6 * scale):  # no vote decided by rounding
            assert ours.cv_error == one.cv_error
        assert ours.order_used == one.order_used == "inf"
        assert (ours.unconverged, ours.ill_conditioned, ours.degenerate) == (
            one.unconverged, one.ill_conditioned, one.degenerate)
        uncertain = "BIF value not certified"
        assert ([note for note in ours.notes if uncertain not in note]
                == [note for note in one.notes if uncertain not in note])
        # the certificate's bound counts held-out values within a rounding-level radius
        # of 0 (narrow kernels): the paths may differ on one borderline machine
        flagged = [{note.split(":")[0] for note in notes if uncertain in note}
                   for notes in (ours.notes, one.notes)]
        assert len(flagged[0] ^ flagged[1]) <= 1
        assert ours.heldout_ratio == pytest.approx(one.heldout_ratio, rel=1e-6, abs=1e-12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), k=st.integers(3, 4), t=st.integers(2, 6),
       machine=st.sampled_from(["svm", "l2svm"]), intercept=st.booleans(),
       log_lam=st.floats(-4, 0), log_gamma=st.floats(-2, 1.5))
@example(seed=47, k=4, t=3, machine="l2svm", intercept=True, log_lam=0.0, log_gamma=1.5)
def test_exact_cv_of_the_stacked_pairs_equals_refitting_each_pair(seed, k, t, machine,
                                                                   intercept, log_lam,
                                                                   log_gamma):
    K, codes, folds = problem(seed, k, t, 10 * k, 10.0**log_gamma)
    spec = spec_for(machine, intercept, k)
    lam = 10.0**log_lam
    ours = evaluate(K, codes, folds, spec, lam, "exact", True)
    oracle = refit_decisions(K, codes, folds, spec, lam)
    scale = max(1.0, np.abs(oracle).max())
    assert np.abs(ours.decisions - oracle).max() <= 1e-7 * scale
    one = evaluate(K, codes, folds, spec, lam, "exact", False)
    # The votes agree wherever no pair's held-out value is at rounding level: at the
    # widest gamma with the largest lam (the kernel is nearly the identity) every held-out
    # value is the intercept, ~1e-9, and its sign is rounding.
    firm = np.all(np.abs(oracle) > 1e-7 * scale, axis=1)
    assert np.array_equal(ours.predictions[firm], one.predictions[firm])
    if firm.all():
        assert ours.cv_error == one.cv_error
    assert ours.order_used is None


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
def test_pairs_the_stack_cannot_take_go_through_the_one_problem_path(monkeypatch):
    K, codes, folds = problem(7, 4, 5, 48, 0.3)
    spec = spec_for("svm", True, 4)
    one = evaluate(K, codes, folds, spec, 1e-3, "bif", False, order="inf")
    calls = []
    original = stacked_pairs.StackedPairs.evaluate

    def spy(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        calls.append(result.fallback.copy())
        return result

    monkeypatch.setattr(stacked_pairs.StackedPairs, "evaluate", spy)
    counts = sorted(int(np.sum(spec.loss.derivatives(
        pair.targets(codes), fit.decision)[1] > 0)) for pair, fit in zip(
        binary_problems(codes, 4, "ovo"), one.fit, strict=True))
    assert counts[0] < counts[-1]
    monkeypatch.setattr(stacked_pairs, "max_stacked_active", lambda t: counts[0])
    ours = evaluate(K, codes, folds, spec, 1e-3, "bif", True, order="inf")
    assert calls and calls[0].any() and not calls[0].all()  # some pairs fell back
    assert np.allclose(ours.decisions, one.decisions, rtol=0, atol=1e-7)
    assert ours.cv_error == one.cv_error


def test_a_fold_without_a_pairs_rows_predicts_with_the_full_pair_model():
    rng = np.random.default_rng(2)
    n, t = 40, 4
    codes = np.r_[np.zeros(28, int), np.ones(6, int), np.full(6, 2)]
    X = rng.normal(size=(n, 2)) + 2.0 * codes[:, None]
    folds = np.r_[np.arange(28) % t, [0, 0, 1, 1, 0, 1], [0, 1, 0, 1, 0, 1]]
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    spec = spec_for("svm", True, 3)
    oracle = refit_decisions(K, codes, folds, spec, 1e-2)
    exact = evaluate(K, codes, folds, spec, 1e-2, "exact", True)
    assert np.abs(exact.decisions - oracle).max() <= 1e-7 * max(1.0, np.abs(oracle).max())
    inf = evaluate(K, codes, folds, spec, 1e-2, "bif", True, order="inf")
    one = evaluate(K, codes, folds, spec, 1e-2, "bif", False, order="inf")
    assert np.allclose(inf.decisions, one.decisions, rtol=0, atol=1e-7)
    # pair (1, 2) holds no row in folds 2 and 3: those points get its full model there
    full = spec.fit(K[np.ix_(codes > 0, codes > 0)], np.where(codes[codes > 0] == 2, 1.0, -1.0),
                    1e-2)
    far = folds >= 2
    expected = K[np.ix_(far, codes > 0)] @ full.alpha + full.intercept
    assert np.allclose(inf.decisions[far, 2], expected, rtol=0, atol=1e-7)


@pytest.mark.parametrize("k, rows_per_class, stacked", [(5, 6, True), (4, 6, False),
                                                        (5, 70, False)])
def test_pairs_are_stacked_from_ten_pairs_of_at_most_120_rows(monkeypatch, k,
                                                               rows_per_class, stacked):
    monkeypatch.undo()
    calls = []
    original = stacked_pairs.StackedPairs.evaluate

    def spy(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(stacked_pairs.StackedPairs, "evaluate", spy)
    K, codes, folds = problem(4, k, 3, k * rows_per_class, 0.5)
    evaluate(K, codes, folds, spec_for("svm", True, k), 1e-2, "exact", True)
    assert bool(calls) == stacked


def test_an_ill_conditioned_pair_is_flagged_as_the_one_problem_path_flags_it():
    # lam = 1e-9 (n lam ~ 5e-8): the fold-out systems lose most digits (conditioning
    # check of kernelcv.criteria.conditioning, done per pair on the stacked fit)
    K, codes, folds = problem(20, 5, 5, 60, 10.0**1.5)
    spec = spec_for("svm", True, 5)
    with np.errstate(all="ignore"):
        ours = evaluate(K, codes, folds, spec, 1e-9, "bif", True, order="inf")
        one = evaluate(K, codes, folds, spec, 1e-9, "bif", False, order="inf")
    assert one.ill_conditioned and ours.ill_conditioned

    def machines(notes):
        return [note.split(":")[0] for note in notes if "ill-conditioned" in note]

    # Which machines cross the flag's threshold at lam = 1e-9 depends on rounding, which
    # differs between the two paths and between BLAS kernels (an AMD EPYC flags
    # 'machine 3 vs 1' on the stacked path only): the paths must agree on all machines
    # but at most one borderline one, not bit for bit.
    stacked_flags, one_flags = set(machines(ours.notes)), set(machines(one.notes))
    assert stacked_flags & one_flags
    assert len(stacked_flags ^ one_flags) <= 1


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.parametrize("gamma, lam", [(0.5, 1e-6), (0.5, 1e-10), (30.0, 1e-6)])
def test_a_pair_whose_folds_skip_a_number_is_rounding_checked_without_a_warning(gamma, lam):
    # pair (1, 2) holds rows in folds 0 and 2 only: its full rounding check (forced here by
    # a tiny lam or a narrow kernel) once divided by fold 1's empty count; warnings are
    # errors under pytest. Its flag must be the one-problem path's (renumbered folds).
    rng = np.random.default_rng(2)
    codes = np.r_[np.zeros(28, int), np.ones(6, int), np.full(6, 2)]
    X = rng.normal(size=(40, 2)) + 2.0 * codes[:, None]
    folds = np.r_[np.arange(28) % 4, [0, 0, 2, 2, 0, 2], [0, 2, 0, 2, 0, 2]]
    K = np.exp(-gamma * ((X[:, None] - X[None]) ** 2).sum(-1))
    spec = spec_for("svm", True, 3)
    checked = []
    original = stacked_pairs.StackedPairs._rounding_check

    def spy(self, p, *args):
        checked.append(int(p))
        return original(self, p, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stacked_pairs.StackedPairs, "_rounding_check", spy)
        ours = evaluate(K, codes, folds, spec, lam, "bif", True, order="inf")
    one = evaluate(K, codes, folds, spec, lam, "bif", False, order="inf")
    assert 2 in checked
    assert (ours.ill_conditioned, ours.cv_error) == (one.ill_conditioned, one.cv_error)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), P=st.integers(1, 8), m=st.integers(1, 30),
       share=st.floats(0, 0.95), scale=st.integers(-300, 300))
def test_row_nanmedian_is_numpys_nanmedian(seed, P, m, share, scale):
    rng = np.random.default_rng(seed)
    Q = np.abs(rng.standard_cauchy((P, m))) * 10.0 ** scale
    Q[rng.random((P, m)) < share] = np.nan
    Q[rng.random((P, m)) < 0.05] = np.inf
    Q = Q[~np.all(np.isnan(Q), axis=1)]  # callers pass rows holding a number
    if Q.shape[0]:
        assert np.array_equal(stacked_pairs.row_nanmedian(Q), np.nanmedian(Q, axis=1))


@pytest.mark.parametrize("seed", [0, 1])
def test_fold_systems_solved_in_size_groups_equal_one_group(monkeypatch, seed):
    # classes of very different sizes: the pairs' active sets differ, so the fold systems
    # are solved in several size groups; one group at the largest size is the reference
    rng = np.random.default_rng(seed)
    sizes = [40, 25, 8, 5]
    codes = np.repeat(np.arange(4), sizes)
    X = rng.normal(size=(codes.size, 2)) + 1.2 * codes[:, None]
    folds = np.empty(codes.size, dtype=np.intp)
    for c in range(4):
        members = np.flatnonzero(codes == c)
        folds[members] = rng.permutation(np.arange(members.size) % 5)
    K = np.exp(-0.7 * ((X[:, None] - X[None]) ** 2).sum(-1))
    spec = spec_for("svm", True, 4)
    calls = []
    original = stacked_pairs.size_groups

    def spy(*args, **kwargs):
        groups = original(*args, **kwargs)
        calls.append(len(groups))
        return groups

    import kernelcv.machines.batched_linalg as batched_linalg

    monkeypatch.setattr(batched_linalg, "GROUP_OVERHEAD_FLOPS", 0.0)  # split where sizes differ
    monkeypatch.setattr(stacked_pairs, "size_groups", spy)
    grouped = evaluate(K, codes, folds, spec, 3e-3, "bif", True, order="inf")
    assert max(calls) > 1
    monkeypatch.setattr(stacked_pairs, "size_groups", lambda sizes, per_item=1: [
        np.arange(len(sizes))])
    single = evaluate(K, codes, folds, spec, 3e-3, "bif", True, order="inf")
    assert np.allclose(grouped.decisions, single.decisions, rtol=0, atol=1e-9)
    assert grouped.cv_error == single.cv_error
