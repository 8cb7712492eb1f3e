"""``kernelcv select`` notes a choice on the edge of its grid for every method, with the
direction to widen the grid in, and records it as the report's ``grid_edges``."""

from __future__ import annotations

import json

import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv.cli import main
from kernelcv.reading.files import make_synthetic
from kernelcv.selection.after_grid.edges import edge_note, grid_edges

GAMMAS = [2.0**k for k in range(-6, 0)]
LAMS = [2.0**k for k in range(-9, -3)]


@pytest.fixture(scope="module")
def train(tmp_path_factory):
    path = tmp_path_factory.mktemp("edges") / "train.svm"
    X, y = make_synthetic(90, 4, random_state=7)
    dump_svmlight_file(X, y, str(path))
    return path


def _expected(value, grid):
    return "low" if value == min(grid) else "high" if value == max(grid) else None


@pytest.mark.parametrize("options", [
    ("--machine", "krr"), ("--machine", "lssvm", "--method", "exact"),
    ("--machine", "l2svm"), ("--machine", "svm", "--method", "gacv"),
    ("--machine", "l2svm", "--screen", "coarse"),
    ("--machine", "l2svm", "--method", "rff"),
])
@pytest.mark.parametrize(("gammas", "lams"), [(GAMMAS[:2], LAMS[:2]), (GAMMAS, LAMS),
                                              (GAMMAS[-2:], LAMS[-2:])])
def test_every_method_notes_a_choice_on_the_grid_edge(capsys, train, options, gammas, lams):
    grids = ("--gamma-grid", ",".join(map(str, gammas)),
             "--lam-grid" if "rff" not in options else "--C-grid",
             ",".join(map(str, lams if "rff" not in options else
                          [1 / (2 * 90 * lam) for lam in lams])))
    code = main(["select", str(train), *options, *grids, "--folds", "5", "--json",
                 "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    best = report["best_params"]
    lam_grid = sorted(c["lam"] for c in report["candidates"]
                      if c["gamma"] == report["candidates"][0]["gamma"])
    lam_grid = lam_grid if "rff" in options else lams  # rff's lams come from its C grid
    expected = {name: end for name, end in (("gamma", _expected(best["gamma"], gammas)),
                                            ("lam", _expected(best["lam"], lam_grid)))
                if end}
    assert report["grid_edges"] == expected
    notes = [n for n in report["notes"] if n.startswith("grid edge")]
    if "rff" in options:  # the random-feature method keeps its own wording
        assert not notes
        assert bool(expected) == any("edge of the grid" in n for n in report["notes"])
        return
    assert len(notes) == (1 if expected else 0)
    if expected:
        assert f"kernelcv: note: {notes[0]}" in captured.err
        for name, end in expected.items():
            toward = {("gamma", "low"): "smaller gamma", ("gamma", "high"): "larger gamma",
                      ("lam", "low"): "smaller lam", ("lam", "high"): "larger lam"}
            assert f"{name} = {best[name]:g} is the " \
                   f"{'smallest' if end == 'low' else 'largest'} of its grid" in notes[0]
            assert f"widen it toward {toward[name, end]}" in notes[0]


def test_edges_are_judged_on_the_whole_grid_not_the_evaluated_candidates():
    settings = [{"kernel": "rbf", "gamma": g} for g in (0.1, 1.0, 10.0)]
    setting_lams = [[0.01, 0.1, 1.0]] * 3
    inside = {"setting": 1, "gamma": 1.0, "lam": 0.1}
    assert grid_edges(inside, settings, setting_lams, "gamma") == {}
    assert edge_note({}, inside) == []
    corner = {"setting": 2, "gamma": 10.0, "lam": 0.01}
    assert grid_edges(corner, settings, setting_lams, "gamma") == {"gamma": "high",
                                                                  "lam": "low"}
    poly = [{"kernel": "poly", "degree": d} for d in (2, 3)]
    assert grid_edges({"setting": 0, "degree": 2, "lam": 0.1}, poly, [[0.1, 1.0]] * 2,
                      "degree") == {"degree": "low", "lam": "low"}
    assert grid_edges({"setting": 0, "lam": 0.5}, [{"kernel": "linear"}], [[0.5]],
                      None) == {}
    assert "lower degrees" in edge_note({"degree": "low"}, {"degree": 2})[0]


def test_python_searches_warn_of_a_choice_on_the_edge_and_the_cli_does_not(train, capsys):
    from sklearn.datasets import load_svmlight_file

    from kernelcv import GridEdgeWarning, KernelSearchCV, grid_search

    X, y = load_svmlight_file(str(train))
    X = X.toarray()
    with pytest.warns(GridEdgeWarning, match="grid edge") as caught:
        result = grid_search(X, y, "krr", gammas=GAMMAS[:2], lams=LAMS[:2], folds=5)
    assert result.edge_notes and [str(w.message) for w in caught] == result.edge_notes
    assert all(note in result.notes for note in result.edge_notes)
    with pytest.warns(GridEdgeWarning) as caught:
        search = KernelSearchCV("krr", {"gamma": GAMMAS[:2], "lam": LAMS[:2]}, cv=5)
        search.fit(X, y)
    assert [str(w.message) for w in caught] == search.search_.edge_notes
    assert caught[0].filename == __file__  # points at the caller's fit
    # inside the grid: no warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", GridEdgeWarning)
        inner = grid_search(X, y, "krr", gammas=[2.0**k for k in range(-12, 6)],
                            lams=[10.0**k for k in range(-9, 3)], folds=5)
    assert inner.grid_edges == {} and inner.edge_notes == []
    # the command line says it once, as a note, not also as a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", GridEdgeWarning)
        code = main(["select", str(train), "--machine", "krr", "--gamma-grid",
                     ",".join(map(str, GAMMAS[:2])), "--lam-grid",
                     ",".join(map(str, LAMS[:2])), "--folds", "5", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0 and err.count("grid edge") == 1 and "warning" not in err
