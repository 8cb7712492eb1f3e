"""``kernelcv select``'s report.json against its documented schema (docs/report.schema.json):
real reports validate, the ranking puts the chosen candidate first by the trusted value,
C = 1/(2 n lam) beside every lam, and the header names the version and the command line."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import tomllib
from sklearn.datasets import dump_svmlight_file

import kernelcv
from kernelcv.cli import main
from kernelcv.reading.files import make_synthetic
from kernelcv.reports.io import jsonable
from kernelcv.reports.schema import SCHEMA_VERSION
from kernelcv.reports.select import run_select

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "report.schema.json")
                    .read_text())
GRIDS = ("--gamma-grid", "2^-6..2^-1", "--lam-grid", "2^-9..2^-4")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("schema")
    X, y = make_synthetic(140, 4, random_state=3)
    dump_svmlight_file(X[:100], y[:100], str(root / "bin.svm"))
    dump_svmlight_file(X[100:], y[100:], str(root / "bin_test.svm"))
    rng = np.random.default_rng(1)
    codes = np.arange(120) % 3
    Xm = rng.normal(scale=2.0, size=(3, 4))[codes] + rng.normal(size=(120, 4))
    dump_svmlight_file(Xm[:90], np.array([2, 4, 8])[codes[:90]], str(root / "multi.svm"))
    dump_svmlight_file(Xm[90:], np.array([2, 4, 8])[codes[90:]], str(root / "multi_test.svm"))
    Xr, yr = make_synthetic(80, 5, task="regression", random_state=2)
    np.savez(root / "reg.npz", X=Xr, y=yr)
    return root


CASES = {
    "binary": ("bin.svm", ("--machine", "l2svm", "--test", "{root}/bin_test.svm", *GRIDS)),
    "ovr": ("multi.svm", ("--machine", "lssvm", "--multiclass", "ovr", "--test",
                          "{root}/multi_test.svm", *GRIDS)),
    "rff": ("bin.svm", ("--machine", "l2svm", "--method", "rff", "--gamma-grid",
                        "2^-6..2^-2", "--C-grid", "2^-1..2^3", "--test",
                        "{root}/bin_test.svm")),
    "regression": ("reg.npz", ("--machine", "krr", "--scale", "standard", *GRIDS)),
}


def _select(capsys, root, name, out):
    train, options = CASES[name]
    argv = ["select", str(root / train), *[o.format(root=root) for o in options],
            "--folds", "5", "--out", str(out), "--no-progress"]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads((out / "report.json").read_text()), argv


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_reports_validate_and_rank_by_trusted_value(capsys, data, tmp_path, name):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    report, argv = _select(capsys, data, name, tmp_path)
    jsonschema.validate(report, SCHEMA)
    assert report["schema_version"] == SCHEMA_VERSION
    assert report["kernelcv_version"] == metadata.version("kernelcv") == kernelcv.__version__
    assert report["argv"] == ["kernelcv", *argv]
    candidates, n = report["candidates"], report["n_samples"]
    assert n == {"bin.svm": 100, "multi.svm": 90, "reg.npz": 80}[CASES[name][0]]
    for c in candidates:
        assert c["C"] == pytest.approx(1.0 / (2 * n * c["lam"]), rel=1e-12)
        exact = c["exact_error"]
        assert c["trusted_error"] == (exact if exact is not None else c["score"])
        assert c["trusted_source"] == ("exact" if exact is not None else "approximate")
    ranking = report["ranking"]
    assert [row["index"] for row in ranking][0] == report["best_index"]
    assert sorted(row["index"] for row in ranking) == list(range(len(candidates)))
    assert [row["trusted_rank"] for row in ranking] == list(range(1, len(candidates) + 1))
    chosen = candidates[report["best_index"]]
    assert chosen["trusted_rank"] == 1 and chosen["trusted_error"] == report["best_cv_error"]
    rest = [candidates[row["index"]] for row in ranking[1:]]
    tiers = [c["trusted_source"] != "exact" for c in rest]
    assert tiers == sorted(tiers)  # exact values first, then approximate scores
    for tier in (False, True):
        values = [c["trusted_error"] for c, t in zip(rest, tiers, strict=True) if t == tier]
        assert values == sorted(values)
    if report["method"] != "rff":  # the choice is the best exact value there
        exact = [c["trusted_error"] for c in candidates if c["trusted_source"] == "exact"]
        assert chosen["trusted_error"] == min(exact)


def test_library_report_has_no_argv_and_a_broken_report_fails_the_schema(data):
    report = json.loads(json.dumps(jsonable(run_select(
        data / "bin.svm", machine="krr", gammas=[0.1, 1.0], lams=[0.01, 0.1], folds=3)),
        allow_nan=False))
    jsonschema.validate(report, SCHEMA)
    assert report["argv"] is None
    broken = dict(report, candidates=[{k: v for k, v in c.items() if k != "C"}
                                      for c in report["candidates"]])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)


def test_the_version_is_pyprojects():
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert kernelcv.__version__ == project["project"]["version"]
