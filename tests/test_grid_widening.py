"""The default lam grid widened toward large C where the choice reaches its edge
(selection/after_grid/extension.py), and ties broken away from the grid's edges on
default grids: the widened searches against exhaustive exact searches of the whole grid
(the same folds), the rule itself against a known score curve."""

import warnings

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import KFold

from kernelcv import KernelSearchCV
from kernelcv.exceptions import GridEdgeWarning
from kernelcv.selection.after_grid.edges import edge_distance
from kernelcv.selection.after_grid.extension import KEEP, STEP, extend_at_edge
from kernelcv.selection.after_grid.safeguards import choose
from kernelcv.selection.space.grids import default_lams, reserve_lams


def curve_evaluator(score_of, calls):
    """An ``evaluate(request)`` whose records score ``score_of(setting, lam)``."""
    def evaluate(request):
        calls.append({i: list(lams) for i, lams in request.items()})
        return {i: [{"lam": lam, "score": score_of(i, lam)} for lam in lams]
                for i, lams in request.items()}
    return evaluate


def grid_records(setting_lams, score_of):
    return {i: [{"lam": lam, "score": score_of(i, lam)} for lam in lams]
            for i, lams in enumerate(setting_lams)}


@pytest.mark.parametrize("best_exponent", [-4, -7, -9, -12, -20])
def test_widening_walks_down_to_the_best_reserve_value_and_stops(best_exponent):
    n = 100
    base, reserve = default_lams(n), reserve_lams(n)

    def score_of(setting, lam):  # a V in log2(lam) with its bottom at best_exponent
        return abs(np.log2(lam * n) - best_exponent) + setting

    setting_lams = [base, base]
    calls = []
    per_setting, notes = extend_at_edge(grid_records(setting_lams, score_of), setting_lams,
                                        reserve, curve_evaluator(score_of, calls))
    lams = [r["lam"] for r in per_setting[0]]
    assert lams == sorted(lams)
    best = min(per_setting[0], key=lambda r: r["score"])
    wanted = max(best_exponent, -12)
    assert np.log2(best["lam"] * n) == pytest.approx(wanted)
    # it stopped once the best was inside: at most one round of STEP values past it
    assert min(np.log2(lam * n) for lam in lams) >= max(wanted - STEP, -12) - 1e-9
    # setting 1 is worse everywhere and on its edge too: it is widened along (KEEP >= 2)
    # only while it ties the best, which it never does
    assert all(1 not in call for call in calls)
    assert len(notes) == 1 and "C up to 2^11" in notes[0]


def test_no_widening_when_the_best_is_inside_or_a_walk_left_the_edge_unevaluated():
    n = 64
    base, reserve = default_lams(n), reserve_lams(n)
    calls = []

    def inside(setting, lam):
        return abs(np.log2(lam * n) - 2)

    per_setting, notes = extend_at_edge(grid_records([base], inside), [base], reserve,
                                        curve_evaluator(inside, calls))
    assert calls == [] and notes == []

    def falling(setting, lam):  # better and better toward large C
        return np.log2(lam * n)

    walked = {0: [{"lam": lam, "score": falling(0, lam)} for lam in base[3:]]}
    per_setting, notes = extend_at_edge(walked, [base], reserve,
                                        curve_evaluator(falling, calls))
    assert calls == [] and notes == []


def test_a_plateau_reaching_the_edge_is_not_widened():
    n = 50
    base = default_lams(n)
    calls = []

    def plateau(setting, lam):
        return max(np.log2(lam * n), 0.0)  # flat below 2^0 / n

    extend_at_edge(grid_records([base], plateau), [base], reserve_lams(n),
                   curve_evaluator(plateau, calls))
    assert calls == []


def test_at_most_keep_settings_are_widened_per_round():
    n = 40
    base = default_lams(n)
    settings = KEEP + 2
    calls = []

    def falling(setting, lam):
        return np.log2(lam * n)  # every setting best at its edge, all tied

    extend_at_edge(grid_records([base] * settings, falling), [base] * settings,
                   reserve_lams(n), curve_evaluator(falling, calls))
    assert calls and all(len(call) <= KEEP for call in calls)
    assert all(len(lams) <= STEP for call in calls for lams in call.values())


def test_ties_go_to_the_candidate_farthest_from_the_edges_on_request():
    settings = [{"gamma": g} for g in (0.1, 1.0, 10.0)]
    lams = [[1e-3, 1e-2, 1e-1, 1.0]] * 3
    candidates = [{"setting": i, "gamma": s["gamma"], "lam": lam, "score": 0.1}
                  for i, s in enumerate(settings) for lam in lams[i]]
    assert choose(candidates, False, True, [], []) == 0  # grid order, as GridSearchCV

    def interior(i):
        return edge_distance(candidates, settings, lams, "gamma", i)

    chosen = candidates[choose(candidates, False, True, [], [], None, interior)]
    assert chosen["gamma"] == 1.0 and chosen["lam"] in (1e-2, 1e-1)
    candidates[0]["score"] = 0.05  # a strictly better edge candidate still wins
    assert choose(candidates, False, True, [], [], None, interior) == 0


def noiseless_regression(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    return X, np.sin(X[:, 0]) + 0.5 * np.cos(2 * X[:, 1])


def test_kernel_search_widens_to_c_2_11_on_noiseless_data_equal_to_the_exhaustive_search():
    X, y = noiseless_regression()
    n = len(y)
    cv = KFold(4, shuffle=True, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        widened = KernelSearchCV("krr", cv=cv, method="exact").fit(X, y)
    gammas = sorted(set(widened.cv_results_["param_gamma"]))
    full = KernelSearchCV("krr", {"gamma": gammas, "lam": reserve_lams(n) + default_lams(n)},
                          cv=cv, method="exact").fit(X, y)
    assert any("grid widened" in note for note in widened.search_.notes)
    assert widened.best_params_["lam"] == pytest.approx(full.best_params_["lam"])
    assert widened.best_params_["gamma"] == pytest.approx(full.best_params_["gamma"])
    assert widened.best_score_ == pytest.approx(full.best_score_, rel=1e-10)
    # every widened candidate's score is the exhaustive search's at the same point
    exhaustive = {(g, lam): score for g, lam, score in zip(
        full.cv_results_["param_gamma"], full.cv_results_["param_lam"],
        full.cv_results_["mean_test_score"], strict=True)}
    for g, lam, score in zip(widened.cv_results_["param_gamma"],
                             widened.cv_results_["param_lam"],
                             widened.cv_results_["mean_test_score"], strict=True):
        assert score == pytest.approx(exhaustive[(g, lam)], rel=1e-9)
    assert len(widened.cv_results_["params"]) > len(gammas) * len(default_lams(n))
    lams = widened.cv_results_["param_lam"]
    at_end = widened.best_params_["lam"] == pytest.approx(min(reserve_lams(n)))
    edge_warned = any(issubclass(w.category, GridEdgeWarning) and "lam" in str(w.message)
                      for w in caught)
    assert edge_warned == at_end
    assert min(lams) >= min(reserve_lams(n)) * (1 - 1e-12)


def test_a_users_grid_is_never_widened():
    X, y = noiseless_regression(seed=1)
    n = len(y)
    grid = {"gamma": [0.5, 2.0], "lam": default_lams(n)}
    with pytest.warns(GridEdgeWarning):
        search = KernelSearchCV(KernelRidge(kernel="rbf"), grid, cv=4,
                                method="exact").fit(X, y)
    assert len(search.cv_results_["params"]) == 2 * len(default_lams(n))
    assert not any("widened" in note for note in search.search_.notes)


def test_grid_search_default_widens_on_the_closed_form_as_the_exhaustive_search():
    from kernelcv import grid_search

    X, y = noiseless_regression(n=90, seed=2)
    n = len(y)
    widened = grid_search(X, y, "krr", gammas=[0.125, 0.5, 2.0], folds=5)
    full = grid_search(X, y, "krr", gammas=[0.125, 0.5, 2.0],
                       lams=reserve_lams(n) + default_lams(n), folds=5)
    assert widened.method == full.method == "closed-form"
    assert any(note.startswith("grid widened") for note in widened.notes)
    assert widened.best["lam"] == pytest.approx(full.best["lam"])
    assert widened.best["gamma"] == full.best["gamma"]
    assert widened.best["score"] == pytest.approx(full.best["score"], rel=1e-10)
    assert len(widened.candidates) < len(full.candidates)


def test_default_grid_of_a_pipeline_names_the_estimators_own_parameters():
    # SVC in a Pipeline: the default grid is shown in svc__C (settable on the Pipeline
    # given, as GridSearchCV's best_params_ are), widened candidates too
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = noiseless_regression(n=90, seed=4)
    labels = np.where(y > np.median(y), 1, 0)
    pipe = make_pipeline(StandardScaler(), SVC())
    search = KernelSearchCV(pipe, cv=3).fit(X, labels)
    assert set(search.best_params_) == {"svc__gamma", "svc__C"}
    shown = sorted(set(search.cv_results_["param_svc__C"]))
    assert min(shown) == pytest.approx(2.0**-12) and 4.0 in shown  # C = 1 / (2 n lam)
    refit = pipe.set_params(**search.best_params_).fit(X, labels)
    assert refit.score(X, labels) == pytest.approx(search.best_estimator_.score(X, labels),
                                                   abs=0.05)
    ridge = KernelSearchCV(KernelRidge(kernel="rbf"), cv=3).fit(X, y)
    assert set(ridge.best_params_) == {"gamma", "alpha"}
    assert min(ridge.cv_results_["param_alpha"]) >= 2.0**-12 * (1 - 1e-9)


def test_the_fold_by_fold_path_widens_a_default_grid_as_the_exhaustive_search():
    # return_train_score=True runs every candidate fold by fold (scikit-learn's
    # cross_validate, as GridSearchCV): its default grid is widened as the fast path's
    X, y = noiseless_regression(seed=5)
    n = len(y)
    cv = KFold(4, shuffle=True, random_state=0)
    widened = KernelSearchCV("krr", cv=cv, method="exact",
                             return_train_score=True).fit(X, y)
    gammas = sorted(set(widened.cv_results_["param_gamma"]))
    full = KernelSearchCV("krr", {"gamma": gammas, "lam": reserve_lams(n) + default_lams(n)},
                          cv=cv, method="exact", return_train_score=True).fit(X, y)
    assert len(widened.cv_results_["params"]) > len(gammas) * len(default_lams(n))
    assert min(widened.cv_results_["param_lam"]) < min(default_lams(n))
    exhaustive = {(g, lam): (score, train) for g, lam, score, train in zip(
        full.cv_results_["param_gamma"], full.cv_results_["param_lam"],
        full.cv_results_["mean_test_score"], full.cv_results_["mean_train_score"],
        strict=True)}
    for g, lam, score, train in zip(widened.cv_results_["param_gamma"],
                                    widened.cv_results_["param_lam"],
                                    widened.cv_results_["mean_test_score"],
                                    widened.cv_results_["mean_train_score"], strict=True):
        assert score == pytest.approx(exhaustive[(g, lam)][0], rel=1e-9)
        assert train == pytest.approx(exhaustive[(g, lam)][1], rel=1e-9)
    # each setting's lam values ascending, as the grid lists them
    for g in gammas:
        values = [lam for gg, lam in zip(widened.cv_results_["param_gamma"],
                                         widened.cv_results_["param_lam"], strict=True)
                  if gg == g]
        assert values == sorted(values)
    assert widened.best_params_["lam"] == pytest.approx(full.best_params_["lam"])
    assert widened.best_params_["gamma"] == pytest.approx(full.best_params_["gamma"])
    assert widened.best_score_ == pytest.approx(full.best_score_, rel=1e-10)
    # a user's grid is never widened on this path either
    grid = {"gamma": gammas[:2], "lam": default_lams(n)}
    kept = KernelSearchCV("krr", grid, cv=cv, method="exact",
                          return_train_score=True).fit(X, y)
    assert len(kept.cv_results_["params"]) == 2 * len(default_lams(n))


def test_fold_by_fold_widening_names_a_pipelines_svc_c():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = noiseless_regression(n=90, seed=4)
    labels = np.where(y > np.median(y), 1, 0)
    # a Pipeline's preprocessing is refitted per fold: method "exact" runs fold by fold
    search = KernelSearchCV(make_pipeline(StandardScaler(), SVC()), cv=3,
                            method="exact").fit(X, labels)
    shown = [p["svc__C"] for p in search.cv_results_["params"]]
    n_train = len(labels)
    largest_default = 1.0 / (2.0 * n_train * min(default_lams(n_train)))
    widened = [c for c in shown if c > largest_default * (1 + 1e-9)]
    assert widened, "the best lay on the large-C edge: reserve candidates were evaluated"
    reserve_c = {1.0 / (2.0 * n_train * lam) for lam in reserve_lams(n_train)}
    assert all(any(c == pytest.approx(r) for r in reserve_c) for c in widened)
    assert set(search.best_params_) == {"svc__gamma", "svc__C"}
