"""Checkpoints are not trusted blindly: every line has a checksum and well-formed records.

An edited, damaged or malformed line is dropped with a note and its work done again; it
never reaches the report (issue 18: ``"cv_error": "oops"`` was reported, and a score
edited to 1e-4 became the chosen model).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flat_options import as_objects
from kernelcv import Execution, Safeguards
from kernelcv.cli import main
from kernelcv.reading.files import make_synthetic
from kernelcv.selection.checkpointing.record_checks import check_exact, check_setting_records
from kernelcv.selection.search import grid_search

GAMMAS = [0.05, 0.5, 5.0]
LAMS = [1e-3, 1e-2, 1e-1]
_STABLE = ("gamma", "lam", "score", "cv_error", "exact_error", "status", "rank",
           "fold_errors")


@pytest.fixture(scope="module")
def problem():
    X, y = make_synthetic(40, 3, random_state=7)
    return X, y


def _search(problem, path, machine="l2svm", **options):
    X, y = problem
    spec, options = as_objects(machine, {"gammas": GAMMAS, "lams": LAMS, "folds": 4,
                                         "random_state": 0, "checkpoint": path, **options})
    return grid_search(X, y, spec, **options)


def _stable(result):
    return [{k: c.get(k) for k in _STABLE} for c in result.candidates]


def _resign(entry, key):
    """The checksum a crafted file would carry (the key is in the header)."""
    body = {k: v for k, v in entry.items() if k != "sha256"}
    text = key + "\n" + json.dumps(body, sort_keys=True)
    return {**body, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def _edit(path, line_number, change, resign=False):
    lines = path.read_text().splitlines()
    key = json.loads(lines[0])["fingerprint"]
    entry = json.loads(lines[line_number])
    change(entry)
    if resign:
        entry = _resign(entry, key)
    lines[line_number] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("resign", [False, True])
def test_cv_error_oops_is_dropped_and_recomputed(problem, tmp_path, resign):
    path = tmp_path / "c.ckpt"
    reference = _search(problem, path)

    def oops(entry):
        entry["records"][0]["cv_error"] = "oops"

    _edit(path, 1, oops, resign)
    resumed = _search(problem, path)
    assert _stable(resumed) == _stable(reference)
    problem_text = "cv_error is not a number" if resign else "checksum does not match"
    dropped = [n for n in resumed.notes if "line 2 dropped" in n]
    assert len(dropped) == 1 and problem_text in dropped[0], resumed.notes
    assert "oops" not in path.read_text()  # rewritten without the bad line
    again = _search(problem, path)
    assert not [n for n in again.notes if "dropped" in n]


@pytest.mark.parametrize("resign", [False, True])
def test_score_edited_to_look_best_is_never_chosen(problem, tmp_path, resign):
    path = tmp_path / "c.ckpt"
    reference = _search(problem, path, confirm=0, method="bif", order=3)
    worst = max(range(len(reference.candidates)),
                key=lambda i: reference.candidates[i]["score"])
    setting, position = divmod(worst, len(LAMS))

    def flatter(entry):
        entry["records"][position]["score"] = 1e-4
        entry["records"][position]["cv_error"] = 1e-4

    _edit(path, 1 + setting, flatter, resign)
    resumed = _search(problem, path, confirm=0, method="bif", order=3)
    assert resumed.best_index == reference.best_index != worst
    assert _stable(resumed) == _stable(reference)
    assert any(f"line {2 + setting} dropped" in n for n in resumed.notes)


def test_old_checkpoint_without_checksums_is_redone(problem, tmp_path):
    path = tmp_path / "c.ckpt"
    reference = _search(problem, path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["kernelcv_checkpoint"] = 1
    path.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "sha256"}) + "\n"
                            for e in lines))
    calls = []
    resumed = _search(problem, path, progress=lambda *a: calls.append(a))
    assert calls[0] == ("search", 0, len(GAMMAS))  # nothing reused
    assert _stable(resumed) == _stable(reference)
    assert sum("no checksum" in n for n in resumed.notes) == len(lines) - 1
    assert json.loads(path.read_text().splitlines()[0])["kernelcv_checkpoint"] == 2


def test_damaged_middle_line_is_dropped_not_fatal(problem, tmp_path):
    path = tmp_path / "c.ckpt"
    reference = _search(problem, path)
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:40]  # a damaged line in the middle of the file
    path.write_text("\n".join(lines) + "\n")
    resumed = _search(problem, path)
    assert _stable(resumed) == _stable(reference)
    assert any("line 3 dropped" in n for n in resumed.notes)


@pytest.mark.parametrize("options", [
    {"machine": "l2svm", "method": "exact"},
    {"machine": "l2svm", "method": "bif", "order": 2},
    {"machine": "svm", "method": "bif", "order": "auto"},
    {"machine": "krr", "method": "closed-form"},
    {"machine": "svm", "method": "gacv"},
    {"machine": "svr", "method": "bif"},
    {"machine": "l2svm", "method": "rff", "features": 10},
])
def test_records_of_every_method_pass_the_checks(problem, tmp_path, options):
    """No false alarms: a resumed search reuses every line of every method."""
    X, y = problem
    if options["machine"] in ("krr", "svr"):
        y = X[:, 0] + 0.1 * np.sin(7 * X[:, 1])
    options = dict(options)
    machine, options = as_objects(options.pop("machine"), options)
    path = tmp_path / "c.ckpt"
    first = grid_search(X, y, machine, gammas=GAMMAS, lams=LAMS, folds=4, **options,
                        execution=Execution(checkpoint=path))
    calls = []
    again = grid_search(X, y, machine, gammas=GAMMAS, lams=LAMS, folds=4, **options,
                        execution=Execution(checkpoint=path, progress=lambda *a: calls.append(a)))
    assert calls[0] == ("search", len(GAMMAS), len(GAMMAS))
    assert not [n for n in again.notes if "dropped" in n], again.notes
    assert _stable(again) == _stable(first)


def test_multiclass_records_pass_the_checks(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(45, 2))
    y = np.repeat([0, 1, 2], 15)
    X[y == 1] += 2.5
    X[y == 2] -= 2.5
    path = tmp_path / "c.ckpt"
    grid_search(X, y, "l2svm", gammas=GAMMAS, lams=LAMS, folds=3,
                execution=Execution(checkpoint=path))
    again = grid_search(X, y, "l2svm", gammas=GAMMAS, lams=LAMS, folds=3,
                        execution=Execution(checkpoint=path))
    assert not [n for n in again.notes if "dropped" in n], again.notes


def test_cli_prints_the_note(tmp_path, capsys):
    X, y = make_synthetic(40, 3, random_state=7)
    data = tmp_path / "train.npz"
    np.savez(data, X=X, y=y)
    path = tmp_path / "c.ckpt"
    argv = ["select", str(data), "--machine", "l2svm", "--gamma-grid", "0.05,0.5",
            "--lam-grid", "0.01,0.1", "--checkpoint", str(path), "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)

    def oops(entry):
        entry["records"][1]["cv_error"] = "oops"

    _edit(path, 2, oops)
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert first["best_params"] == json.loads(captured.out)["best_params"]
    notes = [line for line in captured.err.splitlines() if "dropped" in line]
    assert len(notes) == 1 and notes[0].startswith("kernelcv: note: checkpoint")


# ---------------------------------------------------------------- the checks themselves

GOOD = {"lam": 0.1, "score": 0.25, "cv_error": 0.25, "fold_errors": [0.5, 0.0],
        "fold_sizes": [2, 2], "n_folds": 2, "degenerate": False, "seconds": 0.1}


@pytest.mark.parametrize("change,problem", [
    ({"cv_error": "oops"}, "not a number"),
    ({"cv_error": float("nan")}, "not a number"),
    ({"cv_error": -0.1, "score": -0.1}, "outside"),
    ({"cv_error": 0.3, "score": 0.3}, "not the mean"),
    ({"score": 1e-4}, "differs from cv_error"),
    ({"fold_errors": [0.5, 0.1]}, "whole number"),
    ({"fold_errors": [0.5]}, "list of 2"),
    ({"fold_sizes": [2, 3]}, "add up"),
    ({"fold_sizes": [2, 0]}, "positive"),
    ({"n_folds": 1}, ">= 2"),
    ({"n_folds": True}, ">= 2"),
    ({"lam": 0.2}, "grid"),
    ({"degenerate": "no"}, "true/false"),
    ({"seconds": -1}, "time"),
])
def test_setting_record_checks(change, problem):
    assert check_setting_records([GOOD], [0.1], 4, 1.0) is None
    found = check_setting_records([{**GOOD, **change}], [0.1], 4, 1.0)
    assert found is not None and problem in found
    assert "records for" in check_setting_records([GOOD, GOOD], [0.1], 4, 1.0)
    assert "lacks" in check_setting_records([{"lam": 0.1}], [0.1], 4, 1.0)


def test_exact_checks():
    good = {"cv_error": 0.25, "fold_errors": [0.5, 0.0], "fold_sizes": [2, 2],
            "seconds": 1.0}
    assert check_exact(good, 4, 1.0) is None
    assert "not the mean" in check_exact({**good, "cv_error": 0.0}, 4, 1.0)
    assert "outside [0, 1]" in check_exact({**good, "cv_error": 2.0}, 4, 1.0)
    assert "add up" in check_exact(good, 5, 1.0)
    assert "lacks" in check_exact({"cv_error": 0.2}, 4, 1.0)
    assert ">= 2" in check_exact({**good, "fold_errors": [0.25], "fold_sizes": [4]}, 4, 1.0)


@given(data=st.data())
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_byte_changed_never_changes_the_result(problem, tmp_path_factory, data):
    """Change one character of a record line anywhere: the resumed search is the same."""
    path = tmp_path_factory.mktemp("ckpt") / "c.ckpt"
    reference = _search(problem, path, machine="krr", method="closed-form")
    text = path.read_text()
    start = text.index("\n") + 1  # keep the header (another header is refused outright)
    # a share of the length, not an index: the file's length varies with its timings
    share = data.draw(st.floats(0, 1, exclude_max=True), label="where")
    where = start + int(share * (len(text) - 1 - start))
    char = data.draw(st.sampled_from("0123456789.-eE,:{}[]\" aZ"), label="character")
    path.write_text(text[:where] + char + text[where + 1:])
    resumed = _search(problem, path, machine="krr", method="closed-form")
    assert _stable(resumed) == _stable(reference)
    assert resumed.best_index == reference.best_index


@pytest.mark.parametrize("resign", [False, True])
def test_edited_confirmation_is_redone(problem, tmp_path, resign):
    path = tmp_path / "c.ckpt"
    reference = _search(problem, path, method="bif", order=3)
    last = len(path.read_text().splitlines()) - 1

    def flatter(entry):
        entry["exact"]["cv_error"] = 0.0

    _edit(path, last, flatter, resign)
    resumed = _search(problem, path, method="bif", order=3)
    assert _stable(resumed) == _stable(reference)
    assert any(f"line {last + 1} dropped" in n for n in resumed.notes), resumed.notes


# ------------------------------------------------------- what a checkpoint path may be


@pytest.mark.parametrize("content", [b"\x89PNG\r\x1a binary picture", b"x" * 5000,
                                     b"some notes without a newline"])
def test_an_existing_file_that_is_no_checkpoint_is_refused_not_overwritten(tmp_path,
                                                                             content):
    from kernelcv.exceptions import KernelCVError
    from kernelcv.selection.checkpointing.checkpoint import Checkpoint

    path = tmp_path / "precious.bin"
    path.write_bytes(content)
    with pytest.raises(KernelCVError, match="not a kernelcv checkpoint"):
        Checkpoint(path, "key", 2)
    assert path.read_bytes() == content


@pytest.mark.parametrize("content", [b"", b'{"kernelcv_check', b'{"kernelcv_checkpoint": 2, "fi'])
def test_an_empty_or_torn_checkpoint_header_is_started_again(tmp_path, content):
    from kernelcv.selection.checkpointing.checkpoint import Checkpoint

    path = tmp_path / "search.ckpt"
    path.write_bytes(content)
    Checkpoint(path, "key", 2)
    assert json.loads(path.read_text().splitlines()[0])["fingerprint"] == "key"


def test_a_checkpoint_path_that_is_a_symbolic_link_is_refused(tmp_path):
    import os

    from kernelcv.exceptions import KernelCVError
    from kernelcv.selection.checkpointing.checkpoint import Checkpoint

    target = tmp_path / "elsewhere.txt"
    target.write_bytes(b"user data")
    link = tmp_path / "search.ckpt"
    os.symlink(target, link)
    with pytest.raises(KernelCVError, match="symbolic link"):
        Checkpoint(link, "key", 2)
    assert target.read_bytes() == b"user data"


@pytest.mark.parametrize("method", ["exact", "bif"])
def test_a_consistent_forgery_with_a_recomputed_checksum_does_not_choose(problem, tmp_path,
                                                                         method):
    # issue 41: every field edited consistently (fold errors, cv_error, score all 0) and
    # the checksum signed again passes the line checks; the resumed run recomputes the
    # choice and its rivals itself, so the forged candidate is not chosen
    path = tmp_path / "c.ckpt"
    reference = _search(problem, path, method=method)
    worst = max(range(len(reference.candidates)),
                key=lambda i: reference.candidates[i]["exact_error"]
                if reference.candidates[i]["exact_error"] is not None
                else reference.candidates[i]["score"])
    setting, position = divmod(worst, len(LAMS))
    worst_error = reference.candidates[worst]["cv_error"]

    def perfect(entry):
        record = entry["records"][position]
        record["fold_errors"] = [0.0] * len(record["fold_errors"])
        record["cv_error"] = record["score"] = 0.0

    _edit(path, 1 + setting, perfect, resign=True)
    if method == "bif":  # the forged candidate must reach the confirmations: forge those
        lines = path.read_text().splitlines()
        key = json.loads(lines[0])["fingerprint"]
        for number, line in enumerate(lines[1:], start=1):
            entry = json.loads(line)
            if entry.get("confirm") is not None:
                entry["exact"]["fold_errors"] = [0.0] * len(entry["exact"]["fold_errors"])
                entry["exact"]["cv_error"] = 0.0
                lines[number] = json.dumps(_resign(entry, key))
        entry = {"confirm": worst, "exact": {"cv_error": 0.0, "fold_errors": [0.0] * 4,
                                             "fold_sizes": [10] * 4, "seconds": 0.1}}
        lines.append(json.dumps(_resign(entry, key)))
        path.write_text("\n".join(lines) + "\n")
    resumed = _search(problem, path, method=method)
    assert resumed.best_index == reference.best_index
    assert resumed.best_cv_error == pytest.approx(reference.best_cv_error)
    assert worst_error > 0 and resumed.best_index != worst
    assert any("recomputed by exact refit CV in this run" in note for note in resumed.notes)
    assert any("differs from the recomputed" in note for note in resumed.notes)


def test_a_forged_confirmation_does_not_choose_a_resumed_gacv_search(tmp_path):
    # GACV's scores are not errors: the recomputation was skipped for it, and a
    # re-signed confirmation with cv_error 0 chose the model
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=80) > 0, 1, -1)
    path = tmp_path / "g.ckpt"
    options = dict(gammas=[0.1, 1.0], lams=[1e-3, 1e-2, 1e-1], folds=5, method="gacv",
                   execution=Execution(checkpoint=path), safeguards=Safeguards(confirm=3))
    reference = grid_search(X, y, "svm", **options)
    lines = path.read_text().splitlines()
    key = json.loads(lines[0])["fingerprint"]
    forged = None
    for number, line in enumerate(lines[1:], start=1):
        entry = json.loads(line)
        if entry.get("confirm") not in (None, reference.best_index) and forged is None:
            forged = entry["confirm"]
            entry["exact"]["cv_error"] = 0.0
            entry["exact"]["fold_errors"] = [0.0] * len(entry["exact"]["fold_errors"])
            lines[number] = json.dumps(_resign(entry, key))
    assert forged is not None
    path.write_text("\n".join(lines) + "\n")
    resumed = grid_search(X, y, "svm", **options)
    assert resumed.best_index == reference.best_index != forged
    assert any("differs from the recomputed" in note for note in resumed.notes)
