"""select's candidates and checkpoint records carry the BIF flags; the report counts them.

A low BIF order at small lam leaves a truncation error above tolerance (unconverged); lam
at 1e-13 leaves a rounding error above it (ill_conditioned). Each candidate's flags must
equal those of ``cross_validate`` on the same kernel, lam and folds (the oracle: the
flags a direct call reports), the report's ``flagged`` must count them, and the report
must validate against docs/report.schema.json.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv import BIF, Execution, Safeguards, cross_validate
from kernelcv.reading.files import make_synthetic
from kernelcv.reports.io import jsonable
from kernelcv.reports.select import run_select
from kernelcv.selection.checkpointing.record_checks import check_setting_records

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "report.schema.json")
                    .read_text())
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:.*BIF value ill-conditioned:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
]
GAMMAS, LAMS = [0.1, 0.5], [1e-13, 1e-4, 0.5]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("flags")
    X, y = make_synthetic(40, 3, random_state=5)
    dump_svmlight_file(X, y, str(root / "train.svm"))
    return root, X, y


def _select(root, order, checkpoint=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return json.loads(json.dumps(jsonable(run_select(
            root / "train.svm", machine="lssvm", method=BIF(order=order), gammas=GAMMAS,
            lams=LAMS, folds=4, seed=0, safeguards=Safeguards(confirm=1),
            execution=Execution(checkpoint=checkpoint))),
            allow_nan=False))


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.parametrize("order", [1, "inf"])
def test_candidates_carry_the_flags_of_a_direct_call_and_the_report_counts_them(data, order):
    root, X, y = data
    report = _select(root, order)
    jsonschema.validate(report, SCHEMA)
    folds = None
    for c in report["candidates"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            folds = folds if folds is not None else _fold_ids(report, X, y)
            direct = cross_validate(X, y, "lssvm", gamma=c["gamma"], lam=c["lam"], folds=folds,
                                    method=BIF(order=order))
        if not direct.ill_conditioned:  # else rounding noise (select warm-starts each fit)
            assert c["cv_error"] == pytest.approx(direct.cv_error)  # score: exact if rechecked
        assert c["unconverged"] is direct.unconverged
        assert c["ill_conditioned"] is direct.ill_conditioned
    counts = report["flagged"]
    assert counts == {flag: sum(c[flag] for c in report["candidates"])
                      for flag in ("unconverged", "ill_conditioned", "uncertified")}
    assert counts["uncertified"] == 0  # the square loss has no certificate to fail
    # lam = 1e-13 is ill-conditioned at every order; order 1 at lam = 1e-4 is unconverged
    assert counts["ill_conditioned"] >= 1
    assert (counts["unconverged"] >= 1) is (order == 1)
    note = [n for n in report["notes"] if "BIF values flagged" in n]
    assert len(note) == 1 and f"{counts['ill_conditioned']} ill-conditioned" in note[0]


def test_l2svm_candidates_carry_the_certificate_flag_of_a_direct_call(data):
    """Issue 41: a BIF value of an SVM machine off exact CV carries a flag in the report."""
    root, X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        report = json.loads(json.dumps(jsonable(run_select(
            root / "train.svm", machine="l2svm", method="bif", gammas=GAMMAS, lams=LAMS,
            folds=4, seed=0, safeguards=Safeguards(confirm=1))), allow_nan=False))
    jsonschema.validate(report, SCHEMA)
    folds = _fold_ids(report, X, y)
    for c in report["candidates"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            direct = cross_validate(X, y, "l2svm", gamma=c["gamma"], lam=c["lam"], folds=folds,
                                    method=BIF(order="inf"))
            exact = cross_validate(X, y, "l2svm", gamma=c["gamma"], lam=c["lam"],
                                   folds=folds, method="exact")
        assert c["uncertified"] is direct.uncertified
        if abs(direct.cv_error - exact.cv_error) > 0.01:
            assert direct.uncertified or direct.ill_conditioned
    assert report["flagged"]["uncertified"] == sum(c["uncertified"]
                                                   for c in report["candidates"])
    assert report["flagged"]["uncertified"] >= 1
    note = [n for n in report["notes"] if "BIF values flagged" in n]
    assert len(note) == 1 and "uncertified" in note[0]


def _fold_ids(report, X, y):
    """The search's folds: the same stratified split cross_validate makes from the seed."""
    from kernelcv.validation import make_folds

    return make_folds(y, report["folds"], True, report["seed"])


def test_checkpoint_records_carry_the_flags_and_checks_refuse_a_non_boolean(data, tmp_path):
    root, _, _ = data
    path = tmp_path / "search.ckpt"
    report = _select(root, 1, checkpoint=path)
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    records = [r for line in lines if "records" in line for r in line["records"]]
    assert len(records) == len(report["candidates"])
    assert sum(r["unconverged"] for r in records) == report["flagged"]["unconverged"]
    assert sum(r["ill_conditioned"] for r in records) == report["flagged"]["ill_conditioned"]
    good = next(line["records"] for line in lines if "records" in line)
    assert check_setting_records(good, LAMS, n_samples=40, max_error=1) is None
    bad = [dict(good[0], ill_conditioned="yes"), *good[1:]]
    assert "ill_conditioned is not true/false" in check_setting_records(
        bad, LAMS, n_samples=40, max_error=1)
    resumed = _select(root, 1, checkpoint=path)  # read back: the same flags
    assert [(c["unconverged"], c["ill_conditioned"]) for c in resumed["candidates"]] == \
        [(c["unconverged"], c["ill_conditioned"]) for c in report["candidates"]]


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
def test_other_methods_report_no_flags(data):
    root, _, _ = data
    report = json.loads(json.dumps(jsonable(run_select(
        root / "train.svm", machine="lssvm", method="closed-form", gammas=GAMMAS,
        lams=LAMS, folds=4, seed=0)), allow_nan=False))
    jsonschema.validate(report, SCHEMA)
    assert report["flagged"] == {"unconverged": 0, "ill_conditioned": 0, "uncertified": 0}
    assert not any(c["unconverged"] or c["ill_conditioned"] or c["uncertified"]
                   for c in report["candidates"])
    assert np.all([not any("BIF values flagged" in n for n in report["notes"])])
