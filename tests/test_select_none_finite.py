"""``select`` where every candidate scores inf: a warning, no "best" shown as fine, no plots."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from kernelcv.cli import main
from kernelcv.selection.search import grid_search


@pytest.fixture
def overflowing(tmp_path):
    """Targets near 1e160: every squared held-out error overflows to inf."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = 1e160 * rng.normal(size=40)
    path = tmp_path / "huge_y.npz"
    np.savez(path, X=X, y=y)
    return X, y, path


def test_grid_search_warns(overflowing):
    X, y, _ = overflowing
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning, match="every candidate"):
        result = grid_search(X, y, "krr", gammas=[0.1, 1.0], lams=[0.01, 0.1], folds=5)
    assert result.to_dict()["none_finite"] is True
    assert not np.isfinite(result.best_cv_error)


def test_finite_search_is_not_flagged(overflowing):
    X, y, _ = overflowing
    result = grid_search(X, y / 1e160, "krr", gammas=[0.1, 1.0], lams=[0.01, 0.1], folds=5)
    assert result.to_dict()["none_finite"] is False


def test_cli_warns_draws_nothing_and_names_no_best(overflowing, tmp_path, capsys):
    _, _, path = overflowing
    out = tmp_path / "out"
    argv = ["select", str(path), "--machine", "krr", "--gamma-grid", "0.1,1",
            "--lam-grid", "0.01,0.1", "--out", str(out), "--plot"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if "every candidate" in line]
    assert len(warnings) == 1 and warnings[0].startswith("kernelcv: warning:")
    assert "no figures drawn" in captured.err
    best = [line for line in captured.out.splitlines() if line.split()[:2] == ["best", "none:"]]
    assert len(best) == 1 and "every CV error is infinite" in best[0]
    assert os.listdir(out) == ["report.json"]
    assert json.loads((out / "report.json").read_text())["none_finite"] is True
