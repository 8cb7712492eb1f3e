"""The default gamma grid from the data's distances (kernelcv.selection.space.gamma_range).

Checked independently of the module: the papers' values it drops at the narrow end are
exactly those whose Gram matrix (scikit-learn's rbf_kernel / laplacian_kernel) has every
off-diagonal entry between distinct rows below u/n; the ones it drops at the wide end
have every entry within 2^-12 of 1, where (gamma/4, lam) and (gamma, 4 lam) give the same
machine; and a search over the new default picks a model at least as good by exact
refit CV (same folds) as a search over the papers' grid, on real data sets.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kernelcv import KernelSearchCV
from kernelcv.cli import main
from kernelcv.cv import cross_validate
from kernelcv.estimators import L2SVMClassifier, LSSVMClassifier
from kernelcv.reading.files import load_data
from kernelcv.selection.search import grid_search
from kernelcv.selection.space import gamma_range
from kernelcv.selection.space.gamma_range import data_gamma_grid, degenerate_settings
from kernelcv.selection.space.grids import default_gammas

U = 2.0**-53
LIBSVM = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "libsvm"


def _bundled(name):
    X, y = {"breast_cancer": load_breast_cancer, "wine": load_wine,
            "diabetes": load_diabetes}[name.split("-")[0]](return_X_y=True)
    return (StandardScaler().fit_transform(X) if name.endswith("-std") else X), y


def _shared(name):
    path = LIBSVM / f"{name}.svm"
    if not path.is_file():
        pytest.skip(f"{path} is not present (shared/datasets)")
    X, y = load_data(path)
    return X, y


def _distinct_mask(X):
    """Pairs (i, j) of rows that differ, by comparing the rows themselves."""
    dense = X.toarray() if sp.issparse(X) else np.asarray(X)
    return ~(dense[:, None, :] == dense[None, :, :]).all(axis=2)


def _gram(X, gamma, kernel):
    return (rbf_kernel if kernel == "rbf" else laplacian_kernel)(X, gamma=gamma)


SETS = [("breast_cancer", "rbf"), ("breast_cancer-std", "rbf"), ("wine-std", "rbf"),
        ("diabetes", "rbf"), ("breast_cancer-std", "laplace"), ("heart_scale", "rbf"),
        ("sonar_scale", "rbf")]


@pytest.mark.parametrize("name, kernel", SETS)
def test_dropped_values_are_exactly_the_numerically_identity_kernels(name, kernel):
    X, _ = _bundled(name) if "_scale" not in name else _shared(name)
    grid = data_gamma_grid(X, kernel)
    n = X.shape[0]
    mask = _distinct_mask(X)
    identity = [g for g in default_gammas() if _gram(X, g, kernel)[mask].max() < U / n]
    assert identity, "a set whose papers' grid has no identity kernel tests nothing"
    assert list(grid.dropped_identity) == identity
    for g in grid.values:  # nothing kept is the identity ...
        assert _gram(X, g, kernel)[mask].max() >= U / n
    # ... and the next value beyond the narrow end is
    assert _gram(X, 4 * grid.values[-1], kernel)[mask].max() < U / n
    assert grid.identity_from == 4 * grid.values[-1]
    for g in grid.dropped_constant:  # the wide end: every entry within 2^-12 of 1
        assert _gram(X, g, kernel).min() >= 1 - 2.0**-12
    assert all(v / u == 4.0 for u, v in zip(grid.values, grid.values[1:], strict=False))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 25), d=st.integers(1, 4),
       scale=st.sampled_from([1e-3, 1.0, 1e3]), duplicate=st.booleans(),
       kernel=st.sampled_from(["rbf", "laplace"]),
       powers=st.lists(st.integers(-40, 40), min_size=1, max_size=12, unique=True))
def test_degenerate_settings_are_the_identity_and_the_redundant_constant_kernels(
        seed, n, d, scale, duplicate, kernel, powers):
    """Against the Gram matrices themselves (scikit-learn's): a setting is left out when
    its kernel is below u/n off the diagonal between distinct rows, or within 2^-12 of 1
    everywhere while a larger gamma of the grid is too."""
    rng = np.random.default_rng(seed)
    X = scale * rng.standard_normal((n, d))
    if duplicate:
        X[-1] = X[0]
    gammas = [2.0**p for p in powers]
    grid = [{"kernel": kernel, "gamma": g} for g in gammas]
    mask = _distinct_mask(X)
    if not mask.any():
        assert degenerate_settings(grid, X) == frozenset()
        return
    identity = {i for i, g in enumerate(gammas) if _gram(X, g, kernel)[mask].max() < U / n}
    constant = [i for i, g in enumerate(gammas) if _gram(X, g, kernel).min() >= 1 - 2.0**-12]
    widest = max((gammas[i] for i in constant), default=None)
    redundant = {i for i in constant if gammas[i] < widest}
    assert degenerate_settings(grid, X) == frozenset(identity | redundant)
    assert degenerate_settings(grid, sp.csr_matrix(X)) == frozenset(identity | redundant)


def test_degenerate_settings_only_for_one_rbf_or_laplace_kernel():
    X = np.random.default_rng(0).standard_normal((10, 2))
    huge = [{"kernel": "rbf", "gamma": 1e6}]
    assert degenerate_settings(huge, X) == {0}
    assert degenerate_settings([{"kernel": "poly", "gamma": 1e6, "degree": 2}], X) == set()
    assert degenerate_settings(huge + [{"kernel": "laplace", "gamma": 1e6}], X) == set()
    assert degenerate_settings(huge, np.ones((10, 2))) == set()  # all rows identical
    assert degenerate_settings(huge, X[:1]) == set()


def test_a1a_drops_a_third_of_the_papers_grid():
    X, _ = _shared("a1a")  # sparse, with duplicate rows (left out of d_min)
    grid = data_gamma_grid(X, "rbf")
    assert grid.d_min == 1.0 and len(grid.dropped_identity) == 7
    assert grid.values[-1] == 2.0**5 and grid.identity_from == 2.0**7


@pytest.mark.parametrize("machine", ["lssvm", "l2svm"])
def test_below_the_wide_end_a_smaller_gamma_repeats_the_machine_with_a_larger_lam(machine):
    """In the near-constant regime K = 1 - gamma D to relative 2^-13: with an intercept,
    (gamma/4, lam) and (gamma, 4 lam) are the same machine to about that accuracy."""
    X, y = _bundled("breast_cancer-std")
    grid = data_gamma_grid(X, "rbf")
    wide = grid.values[0] / 4  # below the papers' wide end here: near-constant too
    assert rbf_kernel(X, gamma=wide).min() >= 1 - 2.0**-12
    estimator = {"lssvm": LSSVMClassifier, "l2svm": L2SVMClassifier}[machine]
    for lam in (2.0**-3 / len(y), 2.0**3 / len(y)):
        small = estimator(gamma=wide / 4, lam=lam).fit(X, y).decision_function(X)
        large = estimator(gamma=wide, lam=4 * lam).fit(X, y).decision_function(X)
        assert np.max(np.abs(small - large)) <= 1e-3 * np.max(np.abs(large)) + 1e-9


def test_identical_rows_sparse_and_degenerate_data():
    X, _ = _bundled("wine-std")
    doubled = np.vstack([X, X[:40]])  # duplicates do not make K "not the identity"
    assert data_gamma_grid(doubled, "rbf").d_min == data_gamma_grid(X, "rbf").d_min
    dense = data_gamma_grid(X, "rbf")
    sparse = data_gamma_grid(sp.csr_matrix(X), "rbf")
    assert sparse.values == dense.values and sparse.d_max == pytest.approx(dense.d_max)
    same = data_gamma_grid(np.ones((5, 3)), "rbf")  # every kernel is constant
    assert list(same.values) == default_gammas() and same.d_min is None


def test_over_max_values_the_range_is_trimmed_evenly(monkeypatch):
    X, _ = _bundled("breast_cancer")
    full = data_gamma_grid(X, "rbf")
    monkeypatch.setattr(gamma_range, "MAX_VALUES", 9)
    trimmed = data_gamma_grid(X, "rbf")
    assert len(trimmed.values) == 9 and trimmed.trimmed == len(full.values) - 9
    assert set(trimmed.values) <= set(full.values)
    cut_low = full.values.index(trimmed.values[0])
    assert abs(cut_low - (len(full.values) - 1 - full.values.index(trimmed.values[-1]))) <= 1
    assert "trimmed" in trimmed.note()


@pytest.mark.parametrize("name, machine, screen", [
    ("breast_cancer", "lssvm", "coarse"), ("wine-std", "lssvm", "off"),
    ("diabetes", "krr", "coarse"),
    ("breast_cancer-std", "l2svm", "halving"), ("heart_scale", "l2svm", "coarse"),
    ("sonar_scale", "lssvm", "off")])
def test_new_default_chooses_as_well_as_the_papers_grid(name, machine, screen):
    X, y = _bundled(name) if "_scale" not in name else _shared(name)
    exact = {}
    for grid in ("paper", None):
        result = grid_search(X, y, machine, gammas=grid, folds=5, random_state=0,
                             screen=screen)
        best = result.best_params
        exact[grid] = cross_validate(X, y, machine, "rbf", gamma=best["gamma"],
                                     lam=best["lam"], folds=5, random_state=0,
                                     method="exact").cv_error
        assert result.grid["source"] == (grid or "data")
    assert exact[None] <= exact["paper"] + 1e-12


def test_report_grid_section_note_and_paper_option(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    X, y = _bundled("breast_cancer-std")
    path = tmp_path / "bc.svm"
    dump_svmlight_file(X[:200], y[:200], str(path))
    reports = {}
    for option in ([], ["--gamma-grid", "paper"]):
        code = main(["select", str(path), "--machine", "lssvm", "--folds", "4", "--json",
                     "--no-progress", *option])
        captured = capsys.readouterr()
        assert code == 0
        reports[bool(option)] = json.loads(captured.out)
        if not option:
            assert "kernelcv: note: gamma grid from the data" in captured.err
    schema = json.loads((Path(__file__).resolve().parents[1] / "docs" / "report.schema.json")
                        .read_text())
    for report in reports.values():
        jsonschema.validate(report, schema)
    data, paper = reports[False]["grid"], reports[True]["grid"]
    assert data["source"] == "data" and paper["source"] == "paper"
    assert paper["values"] == default_gammas() and paper["data_range"] is None
    derived = data_gamma_grid(X[:200], "rbf")
    assert data["values"] == list(derived.values) == data["data_range"]["values"]
    assert data["data_range"]["dropped_identity"] == list(derived.dropped_identity)
    assert {c["gamma"] for c in reports[False]["candidates"]} <= set(derived.values)


def test_kernel_search_cv_default_grid_uses_the_pipeline_output():
    X, y = _bundled("breast_cancer")
    X, y = X[::3], y[::3]
    search = KernelSearchCV(make_pipeline(StandardScaler(), LSSVMClassifier()), cv=4)
    search.fit(X, y)
    expected = data_gamma_grid(StandardScaler().fit_transform(X), "rbf")
    assert search.gamma_grid_["values"] == list(expected.values)
    # named as the Pipeline's last step's parameters, as GridSearchCV names them
    assert sorted(set(search.cv_results_["param_lssvmclassifier__gamma"])) == list(
        expected.values)
    assert set(search.best_params_) == {"lssvmclassifier__gamma", "lssvmclassifier__lam"}
    means = search.cv_results_["mean_test_score"]  # GridSearchCV's invariants hold
    assert search.cv_results_["rank_test_score"][search.best_index_] == 1
    assert search.best_score_ == means[search.best_index_] == np.nanmax(means)
    given = KernelSearchCV("lssvm", {"gamma": [0.1], "lam": [0.01]}, cv=4).fit(X, y)
    assert given.gamma_grid_ is None
