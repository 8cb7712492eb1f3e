"""The benchmark protocol on tiny data: splits, t-tests, criteria, tables, data lookup."""

import json
import math

import numpy as np
import pytest
import scipy.stats

from flat_options import as_objects
from kernelcv.exceptions import KernelCVError
from kernelcv.experiments import protocol, runners, suites, tables
from kernelcv.experiments.convergence import order_curve
from kernelcv.validation import make_folds


def _classes(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


# ---------------------------------------------------------------- splits and scaling


def test_random_splits_are_reproducible_halves_and_stratified():
    _, y = _classes(61)
    a = protocol.random_splits(y, 4, seed=3, classifier=True)
    b = protocol.random_splits(y, 4, seed=3, classifier=True)
    c = protocol.random_splits(y, 4, seed=4, classifier=True)
    for (train, test), (train_b, test_b) in zip(a, b, strict=True):
        np.testing.assert_array_equal(train, train_b)
        np.testing.assert_array_equal(test, test_b)
        assert np.intersect1d(train, test).size == 0
        assert np.union1d(train, test).size == y.size
        assert abs(train.size - test.size) <= 1
        share = np.mean(y[train] > 0) - np.mean(y > 0)
        assert abs(share) < 0.05  # stratified: same class balance as the whole set
    assert any(not np.array_equal(x[0], z[0]) for x, z in zip(a, c, strict=True))
    # split s does not depend on how many splits are asked for
    np.testing.assert_array_equal(protocol.random_splits(y, 2, 3, True)[1][0], a[1][0])


def test_random_splits_need_two():
    with pytest.raises(KernelCVError, match="at least 2 splits"):
        protocol.random_splits(np.ones(10), 1, 0, False)


def test_scale_features_uses_training_range_and_zeroes_constant_columns():
    X_train = np.array([[0.0, 5.0, 1.0], [10.0, 5.0, 3.0]])
    X_test = np.array([[5.0, 7.0, 4.0]])
    a, b = protocol.scale_features(X_train, X_test)
    np.testing.assert_allclose(a, [[-1, 0, -1], [1, 0, 1]])
    np.testing.assert_allclose(b, [[0, 0, 2]])  # outside the training range: not clipped


def test_standardize_target_uses_training_statistics():
    y_tr, y_te = protocol.standardize_target(np.array([1.0, 3.0]), np.array([5.0]))
    np.testing.assert_allclose(y_tr, [-1, 1])
    np.testing.assert_allclose(y_te, [3.0])


# ---------------------------------------------------------------- paired t-test


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paired_t_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.random(10), rng.random(10)
    expected = scipy.stats.ttest_rel(a, b).statistic
    assert protocol.paired_t(a, b) == pytest.approx(expected, rel=1e-12)


def _scipy_t(a, b):
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return float(scipy.stats.ttest_rel(a, b).statistic)


def test_paired_t_degenerate_differences():
    assert protocol.paired_t([0.1, 0.2], [0.1, 0.2]) == 0.0
    # an exactly constant nonzero difference: +-inf, as scipy says
    assert protocol.paired_t([1.0, 2.0], [0.0, 1.0]) == math.inf
    assert protocol.paired_t([0.0, 1.0], [1.0, 2.0]) == -math.inf
    assert _scipy_t([1.0, 2.0], [0.0, 1.0]) == math.inf
    # a nearly constant difference: finite and huge, equal to scipy's
    assert protocol.paired_t([0.3, 0.4], [0.1, 0.2]) == pytest.approx(
        _scipy_t([0.3, 0.4], [0.1, 0.2]), rel=1e-9)
    # differences that are only rounding (means print equal) are no difference at all;
    # scipy calls them infinitely significant
    a = np.array([0.1, 0.2, 0.3])
    b = a + 1e-14
    assert abs(_scipy_t(b, a)) > 1e3
    assert protocol.paired_t(b, a) == 0.0
    assert protocol.paired_t(a + 1e-6, a) > 1e3  # a small but real difference counts
    assert protocol.significance(protocol.paired_t(b, a)) == ""
    with pytest.raises(KernelCVError, match="equal-length"):
        protocol.paired_t([0.1, 0.2], [0.1])


def test_default_threshold_is_the_one_sided_95_point_for_R_minus_1():
    assert protocol.default_t_threshold(10) == pytest.approx(1.833, abs=5e-4)
    assert protocol.default_t_threshold(3) == pytest.approx(scipy.stats.t.ppf(0.95, 2))
    assert protocol.default_t_threshold(3) > 2.9
    # summarize uses it per criterion: t = 2.5 over 3 splits is not significant (2.92),
    # it would be under the papers' fixed 1.833
    records = [{"ref": {"test_error": 0.0, "seconds": 1.0},
                "x": {"test_error": d, "seconds": 1.0}} for d in (0.1, 0.2, 0.05)]
    out = protocol.summarize(records, "ref")
    assert 1.833 < out["x"]["t"] < 2.92 and out["x"]["significant"] == ""
    assert protocol.summarize(records, "ref", threshold=1.833)["x"]["significant"] == "worse"


def test_significance_uses_threshold_both_ways():
    assert protocol.significance(1.9) == "worse"
    assert protocol.significance(-1.9) == "better"
    assert protocol.significance(1.8) == ""
    assert protocol.significance(1.8, threshold=1.5) == "worse"


def test_summarize_means_stds_and_t_against_reference():
    ref = [0.20, 0.22, 0.18, 0.21]
    worse = [0.30, 0.33, 0.29, 0.31]
    records = [{"ref": {"test_error": r, "seconds": 1.0 + i},
                "bad": {"test_error": w, "seconds": 0.5},
                "broken": {"error": "boom"} if i == 0 else {"test_error": r, "seconds": 2.0}}
               for i, (r, w) in enumerate(zip(ref, worse, strict=True))]
    out = protocol.summarize(records, "ref")
    assert out["ref"]["test_error_mean"] == pytest.approx(np.mean(ref))
    assert out["ref"]["test_error_std"] == pytest.approx(np.std(ref, ddof=1))
    assert out["ref"]["seconds_mean"] == pytest.approx(2.5)
    assert out["ref"]["t"] is None
    assert out["bad"]["t"] == pytest.approx(scipy.stats.ttest_rel(worse, ref).statistic)
    assert out["bad"]["significant"] == "worse"
    assert out["broken"]["failures"] == 1 and out["broken"]["n_splits"] == 3
    assert out["broken"]["t"] == 0.0 and out["broken"]["significant"] == ""


# ---------------------------------------------------------------- criteria


def test_criteria_lists_per_machine():
    names = {m: [c.name for c in runners.criteria_for(m)] for m in
             ("krr", "lssvm", "l2svm", "svm", "svr")}
    for machine, listed in names.items():
        assert listed[0] == runners.REFERENCE
        assert {"exact t=5", "exact t=20", "BIF r=5", "BIF auto", "eps-BIF 0.2",
                "eps-BIF 0.1", "eps-BIF 0.05"} <= set(listed)
        assert ("closed-form t=10" in listed) == (machine in ("krr", "lssvm"))
        assert ("GACV" in listed) == (machine == "svm")
        assert runners.fast_criterion(machine) in listed
        assert runners.sklearn_criterion(machine) in listed


def test_sklearn_grid_uses_the_documented_parameter_mapping():
    grid = {"gammas": [0.5, 2.0], "lams": [0.01, 0.1]}
    est, params, _ = runners.sklearn_search("svm", "rbf", grid, 50)
    np.testing.assert_allclose(params["C"], [1 / (2 * 50 * 0.01), 1 / (2 * 50 * 0.1)])
    assert params["gamma"] == [0.5, 2.0] and type(est).__name__ == "SVC"
    est, params, scoring = runners.sklearn_search("krr", "rbf", grid, 50)
    np.testing.assert_allclose(params["alpha"], [0.5, 5.0])
    assert scoring == "neg_mean_squared_error"
    est, params, _ = runners.sklearn_search("lssvm", "poly", {"degrees": [1, 2],
                                                              "lams": [0.1]}, 10)
    assert params["degree"] == [1, 2] and est.get_params()["coef0"] == 1.0
    # the search maps with the mean training-fold size: 10 folds of 4 out of 40 -> 36
    folds = np.arange(40) % 10
    assert runners.fold_training_size(folds) == 36.0
    assert runners.fold_training_size(np.arange(41) % 10) == pytest.approx(41 - 4.1)


def _equal_folds(y, seed=0):
    rng = np.random.default_rng(seed)
    return {t: rng.permutation(np.arange(y.shape[0]) % t) for t in (5, 10, 20)}


@pytest.mark.parametrize("machine", ["lssvm", "krr"])
def test_sklearn_and_exact_cv_agree_at_every_grid_point(machine):
    """Like-for-like: same model (LS-SVM without bias = KernelRidge), same folds, lam
    mapped by the training-fold size -> the same CV error at each grid point."""
    from sklearn.model_selection import GridSearchCV, PredefinedSplit

    from kernelcv.cv import cross_validate

    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 2))
    if machine == "lssvm":  # unbalanced classes, so that a bias term would matter
        y = np.where(X[:, 0] + 0.4 * rng.normal(size=40) > 0.6, 1.0, -1.0)
    else:
        y = np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=40) + 1.5
    grid = {"gammas": [0.1, 1.0], "lams": [1e-3, 3e-2, 1.0]}
    folds = _equal_folds(y)
    est, params, scoring = runners.sklearn_search(
        machine, "rbf", grid, runners.fold_training_size(folds[10]))
    search = GridSearchCV(est, params, scoring=scoring, cv=PredefinedSplit(folds[10]),
                          refit=False).fit(X, y)
    lam_of = dict(zip(params["alpha"], grid["lams"], strict=True))
    options = runners._machine_options(machine)
    for candidate, score in zip(search.cv_results_["params"],
                                search.cv_results_["mean_test_score"], strict=True):
        spec, _ = as_objects(machine, options, machine_epsilon=True)
        exact = cross_validate(X, y, spec, gamma=candidate["gamma"],
                               lam=lam_of[candidate["alpha"]], folds=folds[10])
        sk = -score if machine == "krr" else 1.0 - score
        assert exact.cv_error == pytest.approx(sk, rel=1e-7, abs=1e-12), candidate
    # and the benchmark's two criteria find the same best CV error
    a = runners.run_criterion(runners.criteria_for(machine)[0], machine, "rbf", grid, X, y,
                              X, y, folds, 0)
    sk_name = runners.sklearn_criterion(machine)
    b = runners.run_criterion(next(c for c in runners.criteria_for(machine)
                                   if c.name == sk_name), machine, "rbf", grid, X, y, X, y,
                              folds, 0)
    assert a["cv_error"] == pytest.approx(b["cv_error"], rel=1e-7, abs=1e-12)
    if a["best_params"]["lam"] == b["lam"] and a["best_params"]["gamma"] == \
            b["best_params"]["gamma"]:  # same choice (no tie broken differently)
        assert a["test_error"] == pytest.approx(b["test_error"], rel=1e-6, abs=1e-12)
    assert b["best_params"]["alpha"] == pytest.approx(40 * b["lam"])  # refit with m = n


def test_lssvm_tables_run_kernelcv_without_a_bias_term():
    assert runners._machine_options("lssvm") == {"fit_intercept": False}
    assert "no bias" in suites.TABLES["lssvm-rbf"].title


def _run(name, machine, X, y, X_test, y_test, kernel="rbf", grid=None):
    grid = grid or {"gammas": [0.05, 0.2, 1.0], "lams": [1e-3, 1e-2, 1e-1]}
    folds = {t: make_folds(y, t, machine not in ("krr", "svr"), 0) for t in (5, 10, 20)}
    criterion = next(c for c in runners.criteria_for(machine) if c.name == name)
    return runners.run_criterion(criterion, machine, kernel, grid, X, y, X_test, y_test,
                                 folds, 0)


def test_closed_form_and_bif_inf_choose_what_exact_cv_chooses():
    X, y = _classes(80, seed=1)
    X_test, y_test = _classes(60, seed=2)
    exact = _run("exact t=10", "lssvm", X, y, X_test, y_test)
    closed = _run("closed-form t=10", "lssvm", X, y, X_test, y_test)
    assert closed["best_params"] == exact["best_params"]
    assert closed["cv_error"] == pytest.approx(exact["cv_error"])
    assert closed["test_error"] == exact["test_error"]
    rng = np.random.default_rng(3)
    Xr = rng.normal(size=(50, 2))
    yr = np.sin(Xr[:, 0]) + 0.1 * rng.normal(size=50)
    a = _run("exact t=10", "krr", Xr, yr, Xr[:20], yr[:20])
    b = _run("closed-form t=10", "krr", Xr, yr, Xr[:20], yr[:20])
    assert a["best_params"] == b["best_params"]
    assert a["cv_error"] == pytest.approx(b["cv_error"], rel=1e-8)


def test_sklearn_criterion_refits_its_choice_and_reports_its_test_error():
    from sklearn.svm import SVC

    X, y = _classes(60, seed=4)
    X_test, y_test = _classes(40, seed=5)
    out = _run("sklearn SVC", "l2svm", X, y, X_test, y_test)
    model = SVC(kernel="rbf", **out["best_params"]).fit(X, y)
    assert out["test_error"] == pytest.approx(np.mean(model.predict(X_test) != y_test))
    # the choice is refit on all 60 points with its lam: C = 1 / (2 n lam)
    assert out["best_params"]["C"] == pytest.approx(1 / (2 * 60 * out["lam"]))
    assert 0 <= out["cv_error"] <= 1 and out["seconds"] > 0


def test_failed_criterion_is_reported_not_raised():
    X, y = _classes(30)
    out = _run("eps-BIF 0.05", "svm", X, y, X, y,
               grid={"gammas": [0.1], "lams": [-1.0]})
    assert "error" in out and "lam" in out["error"]


@pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
def test_order_curve_limit_is_exact_for_square_loss_and_converges():
    X, y = _classes(50, seed=6)
    folds = make_folds(y, 5, True, 0)
    curve = order_curve(X, y, "lssvm", gamma=0.2, lam=0.05, fold_ids=folds,
                        orders=(1, 3, 10, 30))
    assert curve["orders"] == [1, 3, 10, 30, "inf"]
    assert curve["prediction_gap"][-1] < 1e-8  # the series' limit is exact for LS-SVM
    assert curve["prediction_gap"][3] < curve["prediction_gap"][0]
    assert curve["cv_gap"][-1] == 0.0


# ---------------------------------------------------------------- tables


def _report():
    entry = {"test_error_mean": 0.2, "test_error_std": 0.01, "seconds_mean": 1.5,
             "seconds_std": 0.1, "t": None, "significant": "", "n_splits": 3, "failures": 0}
    worse = {**entry, "test_error_mean": 0.3, "t": 5.0, "significant": "worse"}
    return {
        "mode": "quick", "splits": 3, "seed": 0, "reference": "exact t=10",
        "t_threshold": 1.833, "grid": {"description": "tiny"},
        "environment": {"OMP_NUM_THREADS": "1"},
        "tables": [{"table": "l2svm", "title": "L2-SVM", "metric": "0-1", "sets": [
            {"set": "heart", "n_train": 135,
             "criteria": {"exact t=10": entry, "BIF r=5": worse}}]}],
        "speed": [{"table": "l2svm", "set": "heart", "fast": "BIF auto",
                   "kernelcv_seconds": 0.5, "exact_seconds": 1.5, "sklearn": "sklearn SVC",
                   "sklearn_seconds": 5.0, "ratio": 10.0}],
        "convergence": [{"label": "l2svm", "set": "heart", "gamma": 0.1, "lam": 0.01,
                         "n_folds": 10, "exact_cv_error": 0.2, "orders": [1, 2, "inf"],
                         "prediction_gap": [0.1, 0.05, 0.0], "cv_gap": [0.02, 0.01, 0.0]}],
        "skipped": [{"set": "a2a", "reason": "too large"}],
        "timings": {"total_seconds": 12.0, "extra": math.nan},
    }


def test_markdown_tables_are_well_formed_and_marked():
    text = tables.to_markdown(_report())
    blocks = [b for b in text.split("\n\n") if b.startswith("|")]
    assert len(blocks) == 4  # test error, seconds, speed, convergence
    for block in blocks:
        widths = {line.count("|") for line in block.splitlines()}
        assert len(widths) == 1, block
    assert "0.300 ± 0.010 ↑" in text and "0.200 ± 0.010 |" in text
    assert "10.0×" in text and "a2a: too large" in text


def test_json_report_is_strict_json():
    data = json.loads(tables.to_json(_report()))
    assert data["timings"]["extra"] is None
    assert data["tables"][0]["sets"][0]["criteria"]["BIF r=5"]["t"] == 5.0


# ---------------------------------------------------------------- data sets


def test_missing_data_folder_says_where_it_looked_and_what_to_do(tmp_path, monkeypatch):
    with pytest.raises(KernelCVError, match="--data-dir") as info:
        suites.resolve_data_dir(tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(info.value)
    assert suites.ENV_DATA in str(info.value)
    monkeypatch.setenv(suites.ENV_DATA, str(tmp_path))
    assert suites.resolve_data_dir() == tmp_path
    # a variable pointing nowhere is an error, not a silent fallback to the default place
    monkeypatch.setenv(suites.ENV_DATA, str(tmp_path / "gone"))
    with pytest.raises(KernelCVError, match="gone"):
        suites.resolve_data_dir()


def test_unknown_names_list_the_known_ones():
    with pytest.raises(KernelCVError, match="known: australian, heart"):
        suites.check_names(["heart", "nope"], suites.DATASETS, "data set(s)")
    assert suites.check_names(["svm", "svm", "krr"], suites.TABLES, "t") == ["svm", "krr"]


def test_uci_raw_file_is_read_with_its_positive_class(tmp_path):
    folder = tmp_path / "uci_raw"
    folder.mkdir()
    (folder / "sonar.all-data").write_text("0.1,0.2,R\n0.3,0.4,M\n\n0.5,0.6,R\n")
    X, y = suites.load_set(suites.DATASETS["sonar"], folder / "sonar.all-data")
    np.testing.assert_allclose(X, [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    np.testing.assert_array_equal(y, [1, -1, 1])
    assert suites.find_file(suites.DATASETS["sonar"], tmp_path)[1] is False


def test_modes_grids():
    quick, full = suites.MODES["quick"], suites.MODES["full"]
    assert quick.splits == 3 and full.splits == 10
    assert len(full.gammas()) == 21 and len(full.lams(100)) == 15
    assert len(quick.gammas()) == 7 and quick.lams(8)[0] == pytest.approx(2**-3 / 8)
    assert set(quick.sets) <= set(full.sets) == set(suites.DATASETS)


# ---------------------------------------------------------------- checkpoint


def test_checkpoint_resumes_refuses_foreign_runs_and_survives_a_cut_line(tmp_path):
    from kernelcv.experiments.checkpoint import Checkpoint as _Checkpoint

    path = tmp_path / "checkpoint.jsonl"
    store = _Checkpoint(path, "run-a", fresh=False)
    store.add("heart|svm|0", {"criteria": {"x": {"test_error": 0.25}}})
    store.add("heart|svm|1", {"criteria": {"x": {"test_error": np.float64(0.5)}}})
    with path.open("a") as handle:
        handle.write('{"key": "heart|svm|2", "rec')  # interrupted while writing
    again = _Checkpoint(path, "run-a", fresh=False)
    assert again.get("heart|svm|1") == {"criteria": {"x": {"test_error": 0.5}}}
    assert again.get("heart|svm|2") is None
    with pytest.raises(KernelCVError, match="--fresh"):
        _Checkpoint(path, "run-b", fresh=False)
    assert _Checkpoint(path, "run-b", fresh=True).get("heart|svm|0") is None
    assert _Checkpoint(path, "run-b", fresh=False).records == {}


def test_checkpoint_drops_a_torn_last_line_so_that_appends_stay_readable(tmp_path):
    from kernelcv.experiments.checkpoint import Checkpoint as _Checkpoint

    path = tmp_path / "checkpoint.jsonl"
    _Checkpoint(path, "run", fresh=False).add("a|svm|0", {"x": 1})
    with path.open("a") as handle:
        handle.write('{"key": "a|svm|1", "rec')  # no newline: cut off
    store = _Checkpoint(path, "run", fresh=False)
    store.add("a|svm|1", {"x": 2})
    again = _Checkpoint(path, "run", fresh=False)
    assert again.records == {"a|svm|0": {"x": 1}, "a|svm|1": {"x": 2}}


@pytest.mark.parametrize("content", [
    '{"fingerprint": "ru',  # torn header
    "not json\n",
    "[1, 2]\n",  # JSON, not an object
    '{"fingerprint": "run"}\n{"record": 1}\n{"key": "a", "record": 2}\n',  # no key
    '{"fingerprint": "run"}\nnot json\n{"key": "a", "record": 2}\n',  # bad middle line
    "",
])
def test_damaged_checkpoint_is_refused_with_advice(tmp_path, content):
    from kernelcv.experiments.checkpoint import Checkpoint as _Checkpoint

    path = tmp_path / "checkpoint.jsonl"
    path.write_text(content)
    with pytest.raises(KernelCVError, match="damaged.*--fresh"):
        _Checkpoint(path, "run", fresh=False)
    assert _Checkpoint(path, "run", fresh=True).records == {}
