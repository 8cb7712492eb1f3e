"""The grid-search driver against brute-force cross_validate on the same folds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from flat_options import as_objects
from kernelcv import BIF, Execution, GranularityRule, Safeguards, cross_validate
from kernelcv.criteria.evaluate import evaluate_lam
from kernelcv.exceptions import KernelCVError
from kernelcv.kernels import make_kernel
from kernelcv.machines import make_machine
from kernelcv.reading.files import make_synthetic
from kernelcv.selection.granularity import adaptive_tolerance, bound_rule
from kernelcv.selection.search import grid_search
from kernelcv.selection.space.grids import check_grid, default_gammas, default_lams, parse_grid
from kernelcv.validation import make_folds

GAMMAS = [0.02, 0.1, 0.5]
LAMS = [1e-3, 1e-2, 1e-1]


@pytest.fixture(scope="module")
def binary():
    X, y = make_synthetic(90, n_features=4, random_state=3)
    return X, y


@pytest.fixture(scope="module")
def folds(binary):
    X, y = binary
    return make_folds(np.where(y > 0, 1.0, -1.0), 5, True, 0)


def _brute(X, y, machine, folds, method="exact", **options):
    spec, options = as_objects(machine, {"method": method, **options}, machine_epsilon=True)
    return {(g, lam): cross_validate(X, y, spec, gamma=g, lam=lam, folds=folds, **options)
            for g in GAMMAS for lam in LAMS}


@pytest.mark.parametrize("machine,method", [("krr", "exact"), ("krr", "closed-form"),
                                            ("lssvm", "closed-form"), ("l2svm", "exact")])
def test_exact_searches_equal_brute_force(binary, folds, machine, method):
    X, y = binary
    result = grid_search(X, y, machine, gammas=GAMMAS, lams=LAMS, method=method, folds=folds)
    brute = _brute(X, y, machine, folds)
    assert len(result.candidates) == len(GAMMAS) * len(LAMS)
    for c in result.candidates:
        assert c["score"] == pytest.approx(brute[(c["gamma"], c["lam"])].cv_error, rel=1e-8,
                                           abs=1e-12)
        assert c["status"] == "exact"
    best_key = min(brute, key=lambda k: (brute[k].cv_error, GAMMAS.index(k[0]),
                                         LAMS.index(k[1])))
    if machine == "l2svm":  # 0-1 errors tie; the first in grid order wins
        assert result.best["score"] == brute[best_key].cv_error
    assert (result.best["gamma"], result.best["lam"]) == best_key or \
        result.best["score"] == pytest.approx(brute[best_key].cv_error)
    assert result.confirmed == [] and result.rechecked == []


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
@pytest.mark.parametrize("machine", ["l2svm", "svm"])
def test_bif_search_confirms_the_best_by_exact_refit(binary, folds, machine):
    X, y = binary
    result = grid_search(X, y, machine, gammas=GAMMAS, lams=LAMS, method=BIF(order=3),
                         folds=folds, safeguards=Safeguards(confirm=3))
    brute_exact = _brute(X, y, machine, folds)
    brute_bif = _brute(X, y, machine, folds, method="bif", order=3)
    scores = [c["score"] for c in result.candidates]
    ranking = sorted(range(len(scores)), key=lambda i: (scores[i], i))
    # the first three places pass over a repeat of (gamma, score) already taken
    first, later, seen = [], [], set()
    for i in ranking:
        key = (result.candidates[i]["gamma"], scores[i])
        if len(first) < 3 and key not in seen:
            seen.add(key)
            first.append(i)
        else:
            later.append(i)
    ranking = first + later
    # The confirmed candidates are a prefix of that ranking (ties by grid order): the
    # best three, then more while the next score beats or (if not 0) ties the best exact
    # error.
    def goes_on(score, best):
        return score < best or (score == best and best > 0)

    k = len(result.confirmed)
    assert 3 <= k <= 15
    assert result.confirmed == sorted(ranking[:k])
    best_exact = min(brute_exact[(result.candidates[i]["gamma"],
                                  result.candidates[i]["lam"])].cv_error
                     for i in result.confirmed)
    if k < 15:
        assert not goes_on(scores[ranking[k]], best_exact)
    for j in range(3, k):
        prefix = ranking[:j]
        assert goes_on(scores[ranking[j]], min(
            brute_exact[(result.candidates[i]["gamma"], result.candidates[i]["lam"])].cv_error
            for i in prefix))
    for i, c in enumerate(result.candidates):
        key = (c["gamma"], c["lam"])
        assert c["score"] == pytest.approx(brute_bif[key].cv_error)
        if i in result.confirmed:
            assert c["status"] == "confirmed"
            assert c["exact_error"] == pytest.approx(brute_exact[key].cv_error)
        else:
            assert c["status"] == "approximate" and c["exact_error"] is None
    chosen = min(result.confirmed, key=lambda i: (result.candidates[i]["exact_error"], i))
    assert result.best_index == chosen


def test_confirmation_places_skip_ties_within_a_kernel_setting():
    from kernelcv.selection.after_grid.safeguards import _spread_ties

    candidates = [{"setting": 0, "score": 0.09}, {"setting": 0, "score": 0.09},
                  {"setting": 0, "score": 0.09}, {"setting": 1, "score": 0.10},
                  {"setting": 0, "score": 0.11}, {"setting": 2, "score": 0.12}]
    pool = list(range(6))
    # setting 0's repeats of 0.09 give way to setting 1 and setting 0's other value
    assert _spread_ties(pool, candidates, 3) == [0, 3, 4, 1, 2, 5]
    assert _spread_ties(pool, candidates, 1) == pool
    assert _spread_ties(pool, candidates, 0) == pool
    distinct = [{"setting": k, "score": 0.1 * k} for k in range(4)]
    assert _spread_ties([0, 1, 2, 3], distinct, 3) == [0, 1, 2, 3]


def test_safeguards_can_be_switched_off(binary, folds):
    X, y = binary
    result = grid_search(X, y, "l2svm", gammas=[1e4, 0.1], lams=LAMS, method="bif", folds=folds,
                         safeguards=Safeguards(confirm=0, recheck_degenerate=False))
    assert result.confirmed == [] and result.rechecked == []
    assert {c["status"] for c in result.candidates} == {"approximate"}
    scores = [c["score"] for c in result.candidates]
    assert result.best_index == int(np.argmin(scores))


def test_degenerate_candidates_are_rechecked_exactly(binary, folds):
    X, y = binary
    result = grid_search(X, y, "l2svm", gammas=[1e4, 0.1], lams=LAMS, method=BIF(order=5),
                         folds=folds, safeguards=Safeguards(confirm=0))
    degenerate = [i for i, c in enumerate(result.candidates) if c["degenerate"]]
    assert degenerate and result.rechecked == degenerate
    for i in degenerate:
        c = result.candidates[i]
        assert c["gamma"] == 1e4 and c["status"] == "rechecked"
        exact = cross_validate(X, y, "l2svm", gamma=1e4, lam=c["lam"], folds=folds)
        assert c["score"] == pytest.approx(exact.cv_error)
        assert c["exact_error"] == pytest.approx(exact.cv_error)
    assert result.best["gamma"] == 0.1


def test_folds_average_matches_mean_of_fold_errors(binary):
    X, y = binary
    folds = make_folds(np.where(y > 0, 1.0, -1.0), 7, True, 1)  # 90 = unequal folds
    pooled = grid_search(X, y, "krr", gammas=GAMMAS, lams=LAMS, folds=folds)
    mean = grid_search(X, y, "krr", gammas=GAMMAS, lams=LAMS, folds=folds, average="folds")
    for a, b in zip(pooled.candidates, mean.candidates, strict=True):
        assert b["score"] == pytest.approx(np.mean(a["fold_errors"]))
        assert a["score"] == pytest.approx(
            np.dot(a["fold_errors"], a["fold_sizes"]) / sum(a["fold_sizes"]))


def test_poly_and_linear_grids(binary, folds):
    X, y = binary
    poly = grid_search(X, y, "krr", kernel="poly", degrees=[1, 2, 3], lams=[0.1], folds=folds,
                       kernel_params={"gamma": 0.5})
    assert poly.param_name == "degree"
    for c in poly.candidates:
        ref = cross_validate(X, y, "krr", kernel="poly", gamma=0.5, degree=c["degree"],
                             lam=0.1, folds=folds)
        assert c["score"] == pytest.approx(ref.cv_error, rel=1e-8)
    linear = grid_search(X, y, "krr", kernel="linear", lams=LAMS, folds=folds)
    assert linear.param_name is None and len(linear.candidates) == 3


def test_auto_folds_follow_eq6_and_the_adaptive_order_is_accurate(binary):
    X, y = binary
    eps = 0.5
    result = grid_search(X, y, "svm", gammas=[0.1], lams=[0.05, 0.2, 1.0],
                         method=BIF(granularity=GranularityRule(eps)), folds="auto",
                         safeguards=Safeguards(confirm=1))
    y_pm = np.where(y > 0, 1.0, -1.0)
    K = make_kernel("rbf", 0.1)(X)
    machine = make_machine("svm")
    for c in result.candidates:
        choice = bound_rule(eps, delta=0.01, lam=c["lam"], kappa=1.0, n_samples=90)
        g = c["granularity"]
        assert (c["n_folds"], g["n_folds"], g["order"]) == (choice.n_folds, choice.n_folds,
                                                           choice.order)
        assert c["order_used"] == g["order_adaptive"]
        # The adaptive truncation is close to the series' limit (the Newton step).
        fold_ids = make_folds(y_pm, choice.n_folds, True, 0)
        fit = machine.fit(K, y_pm, c["lam"])
        limit = evaluate_lam(K, y_pm, fold_ids, c["lam"], machine, "bif", order="inf")
        used = evaluate_lam(K, y_pm, fold_ids, c["lam"], machine, "bif",
                            order=c["order_used"] if c["order_used"] != "inf" else "inf")
        assert fit is not None
        assert np.max(np.abs(used.predictions - limit.predictions)) <= \
            2 * adaptive_tolerance(eps, 0.01)
    bound = grid_search(X, y, "svm", gammas=[0.1], lams=[0.2],
                        method=BIF(granularity=GranularityRule(eps, "bound")), folds="auto",
                        safeguards=Safeguards(confirm=0))
    c = bound.candidates[0]
    assert c["order_used"] == c["granularity"]["order"]


def test_gacv_search_ranks_by_gacv_and_confirms(binary, folds):
    X, y = binary
    from kernelcv.criteria.gacv import gacv

    result = grid_search(X, y, "svm", gammas=GAMMAS, lams=LAMS, method="gacv", folds=folds,
                         safeguards=Safeguards(confirm=2))
    y_pm = np.where(y > 0, 1.0, -1.0)
    machine = make_machine("svm")
    for c in result.candidates:
        K = make_kernel("rbf", c["gamma"])(X)
        fit = machine.fit(K, y_pm, c["lam"])
        assert c["score"] == pytest.approx(gacv(K, y_pm, fit, c["lam"], machine=machine),
                                           rel=1e-6)
        assert c["cv_error"] is None
    assert len(result.confirmed) == 2
    for i in result.confirmed:
        c = result.candidates[i]
        exact = cross_validate(X, y, "svm", gamma=c["gamma"], lam=c["lam"], folds=folds)
        assert c["exact_error"] == pytest.approx(exact.cv_error)


def test_parallel_backends_agree_with_sequential(binary, folds):
    X, y = binary
    serial = grid_search(X, y, "l2svm", gammas=GAMMAS, lams=LAMS, folds=folds)
    threads = grid_search(X, y, "l2svm", gammas=GAMMAS, lams=LAMS, folds=folds,
                          execution=Execution(n_jobs=2, backend="threading"))
    loky = grid_search(X, y, "l2svm", gammas=GAMMAS, lams=LAMS, folds=folds,
                       execution=Execution(n_jobs=2))
    for other in (threads, loky):
        assert [c["score"] for c in other.candidates] == \
            pytest.approx([c["score"] for c in serial.candidates], abs=1e-12)
        assert other.best_index == serial.best_index


def test_dask_backend_on_a_local_cluster(binary, folds):
    distributed = pytest.importorskip("distributed")
    X, y = binary
    serial = grid_search(X, y, "l2svm", gammas=GAMMAS, lams=LAMS, folds=folds)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        by_address = grid_search(X, y, "l2svm", gammas=GAMMAS, lams=LAMS, folds=folds,
                                 execution=Execution(scheduler=cluster.scheduler_address))
        with distributed.Client(cluster) as client:
            by_client = grid_search(X, y, "l2svm", gammas=GAMMAS, lams=LAMS, folds=folds,
                                    execution=Execution(backend="dask", scheduler=client))
    for other in (by_address, by_client):
        assert [c["score"] for c in other.candidates] == \
            pytest.approx([c["score"] for c in serial.candidates], abs=1e-12)
        assert other.best_index == serial.best_index
        assert other.confirmed == serial.confirmed


def test_checkpoint_resume_gives_the_same_result(binary, folds, tmp_path):
    X, y = binary
    path = tmp_path / "search.ckpt"
    full = grid_search(X, y, "l2svm", gammas=GAMMAS, lams=LAMS, folds=folds,
                       execution=Execution(checkpoint=path))
    lines = path.read_text().splitlines()
    # header, settings, one line per confirmation
    assert len(lines) == 1 + len(GAMMAS) + len(full.confirmed)
    assert len(full.confirmed) >= 3
    # Keep the header and the first setting, plus half of the second line (a kill mid-write).
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][: len(lines[2]) // 2])
    calls = []
    resumed = grid_search(X, y, "l2svm", gammas=GAMMAS, lams=LAMS, folds=folds,
                          execution=Execution(checkpoint=path, progress=lambda *a: calls.append(a)))
    assert calls[0] == ("search", 1, len(GAMMAS))  # one setting came from the file
    for a, b in zip(full.candidates, resumed.candidates, strict=True):
        for key in ("gamma", "lam", "score", "exact_error", "status", "rank"):
            assert a[key] == b[key]
    assert full.best_index == resumed.best_index
    for line in path.read_text().splitlines():
        json.loads(line)  # every line whole again
    with pytest.raises(KernelCVError, match="different search"):
        grid_search(X, y, "l2svm", gammas=GAMMAS, lams=[0.5], folds=folds,
                    execution=Execution(checkpoint=path))


def test_default_grids():
    gammas = default_gammas()
    assert len(gammas) == 21 and gammas[0] == pytest.approx(1 / (2 * 2.0**20))
    assert gammas[-1] == pytest.approx(1 / (2 * 2.0**-20))
    lams = default_lams(100)
    assert len(lams) == 15 and lams[0] == pytest.approx(2**-3 / 100)
    assert parse_grid("2^-2..2^1", "lam") == [0.25, 0.5, 1.0, 2.0]
    assert parse_grid("0.1, 2^3,0.1", "lam") == [0.1, 8.0]


@pytest.mark.parametrize("kwargs,match", [
    ({"gammas": []}, "empty"),
    ({"gammas": [0.1, -1.0]}, "> 0"),
    ({"lams": [0.0]}, "> 0"),
    ({"lams": [float("nan")]}, "> 0"),
    ({"method": "closed-form", "machine": "svm"}, "closed-form"),
    ({"method": "gacv", "machine": "l2svm"}, "gacv"),
    ({"method": "nope"}, "unknown method"),
    ({"folds": "auto", "method": "bif", "machine": "svm"}, "epsilon"),
    ({"folds": "auto", "method": "bif", "machine": "svm", "epsilon": 0.005}, "too small"),
    ({"folds": "auto", "method": "exact", "epsilon": 0.1}, "method='bif'"),
    ({"epsilon": 0.1}, "only with folds='auto'"),
    ({"folds": 500}, "folds"),
    ({"confirm": -1}, "confirm"),
    ({"degrees": [2]}, "degree"),
])
def test_bad_input_is_refused(binary, kwargs, match):
    X, y = binary
    options = {"machine": "krr", "gammas": [0.1], "lams": [0.1], **kwargs}
    with pytest.raises(KernelCVError, match=match):
        machine, options = as_objects(options.pop("machine"), options)
        grid_search(X, y, machine, **options)


def test_grid_checks():
    with pytest.raises(KernelCVError, match="whole"):
        check_grid([1.5], "degree", integer=True)
    with pytest.raises(KernelCVError, match="range"):
        parse_grid("2^3..4^5", "lam")
    with pytest.raises(KernelCVError, match="number"):
        parse_grid("abc", "lam")


def test_checkpoint_torn_header_and_memory_budget(binary, folds, tmp_path):
    X, y = binary
    path = tmp_path / "search.ckpt"
    path.write_text('{"kernelcv_checkpoint": 1, "finger')  # killed while writing line 1
    first = grid_search(X, y, "krr", gammas=GAMMAS, lams=LAMS, folds=folds,
                        execution=Execution(checkpoint=path))
    header = json.loads(path.read_text().splitlines()[0])
    assert header["n_settings"] == len(GAMMAS)
    # A different memory budget does not change results, so resuming is allowed.
    again = grid_search(X, y, "krr", gammas=GAMMAS, lams=LAMS, folds=folds,
                        execution=Execution(checkpoint=path, memory_budget="4G"))
    assert [c["score"] for c in again.candidates] == [c["score"] for c in first.candidates]


def test_a_first_confirmation_with_zero_exact_error_skips_later_candidates():
    """Separable data: the first confirmation's exact CV error is 0, which the candidates
    after it in grid order can only tie (and ties go to the smaller index). The
    sequential search skips their refits; the threaded one (which confirms all three at
    once) is the oracle for the choice."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3.0, 1.0, (40, 2)), rng.normal(3.0, 1.0, (40, 2))])
    y = np.r_[-np.ones(40), np.ones(40)]
    kwargs = dict(gammas=[2.0 ** k for k in range(-6, 2)],
                  lams=[2.0 ** k / 80 for k in range(-3, 6)], method="bif", folds=5)
    sequential = grid_search(X, y, "svm", **kwargs)
    pooled = grid_search(X, y, "svm", **kwargs,
                         execution=Execution(n_jobs=2, backend="threading"))
    assert len(pooled.confirmed) == 3
    assert sequential.candidates[sequential.best_index]["exact_error"] == 0
    assert sequential.best_index == pooled.best_index
    assert len(sequential.confirmed) < len(pooled.confirmed)
    assert all(i <= sequential.best_index for i in sequential.confirmed)


@pytest.mark.parametrize("best_exact, extended", [(0.10, True), (0.0, False)])
def test_an_approximate_tie_with_the_best_exact_error_is_confirmed(monkeypatch, best_exact,
                                                                   extended):
    """Breast-cancer split 2 in miniature: three confirmations find an exact error equal
    to the next candidates' approximate score; one of those tied candidates is exactly
    better (the approximation was one point off), so it is confirmed and chosen. An exact
    error of 0 can only be tied and stops the extension."""
    from types import SimpleNamespace

    from kernelcv.selection.after_grid import safeguards

    scores = [best_exact] * 4 + [best_exact + 0.02]
    exact = [best_exact, best_exact + 0.01, best_exact, max(best_exact - 0.02, 0.0),
             best_exact]
    candidates = [{"setting": i, "score": s, "lam": float(i + 1), "kernel": "rbf",
                   "gamma": 1.0, "n_folds": 2, "status": "approximate", "degenerate": False}
                  for i, s in enumerate(scores)]

    def fake_run_tasks(function, tasks, **_):
        for position, task in enumerate(tasks):
            error = exact[int(task["lam"]) - 1]
            yield position, {"cv_error": error, "fold_errors": [error, error], "seconds": 0.0}

    monkeypatch.setattr(safeguards, "run_tasks", fake_run_tasks)
    execution = SimpleNamespace(n_jobs=1, backend="sequential", scheduler=None, parallel=True,
                                report=lambda *args: None)
    options = SimpleNamespace(confirm=3, recheck_degenerate=False)
    method = SimpleNamespace(score_is_error=True)
    rechecked, confirmed = safeguards.run_safeguards(candidates, method, options, "samples",
                                                     {}, None, execution)
    assert confirmed == ([0, 1, 2, 3] if extended else [0, 1, 2])
    chosen = safeguards.choose(candidates, True, True, confirmed, rechecked)
    assert chosen == (3 if extended else 0)


def test_a_power_range_takes_a_step_in_the_exponent():
    from kernelcv.exceptions import KernelCVError
    from kernelcv.selection.space.grids import parse_grid

    # LIBSVM grid.py's -log2c -5,15,2
    assert parse_grid("2^-5..2^15:2", "C") == [2.0**k for k in range(-5, 16, 2)]
    assert parse_grid("2^0..2^5:2", "C") == [1.0, 4.0, 16.0]  # the end when reached
    assert parse_grid("10^-2..10^2:2,3", "C") == [0.01, 1.0, 100.0, 3.0]
    for bad in ("2^0..2^3:0", "2^0..2^3:x", "2^0..2^3:-1", "2^0..3^3:2"):
        with pytest.raises(KernelCVError, match="step|range"):
            parse_grid(bad, "C")
