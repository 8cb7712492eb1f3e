"""All-or-nothing outputs: ``write_all`` and ``--out DIR`` of the commands.

Every file of a run appears together or none does; a failure names the offending file
and leaves neither new files nor temporary folders behind, also on Ctrl-C.
"""

from __future__ import annotations

import errno
import json
import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import dump_svmlight_file

from kernelcv.cli import main
from kernelcv.exceptions import KernelCVError
from kernelcv.reading.files import make_synthetic
from kernelcv.reports import io, staging

OUTPUTS = {"report.json": b"{}\n", "a.png": b"PNG-A", "b.png": b"PNG-B"}


def _tree(folder):
    """Every file below ``folder`` with its content (hidden temporaries included)."""
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, folder)] = handle.read()
    return found


def test_new_folder_appears_with_every_file(tmp_path):
    out = tmp_path / "results"
    io.write_all(out, OUTPUTS)
    assert _tree(tmp_path) == {f"results/{k}": v for k, v in OUTPUTS.items()}
    umask = io._umask()
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~umask
    assert stat.S_IMODE((out / "a.png").stat().st_mode) == 0o666 & ~umask


def test_existing_folder_keeps_other_files(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "report.json").write_bytes(b"old")
    (out / "notes.txt").write_bytes(b"mine")
    io.write_all(out, OUTPUTS)
    assert _tree(tmp_path) == {"results/notes.txt": b"mine",
                               **{f"results/{k}": v for k, v in OUTPUTS.items()}}


def test_a_folder_in_the_way_is_named_and_nothing_is_written(tmp_path):
    out = tmp_path / "results"
    (out / "report.json").mkdir(parents=True)
    with pytest.raises(KernelCVError, match=r"results/report\.json: a folder"):
        io.write_all(out, OUTPUTS)
    assert _tree(tmp_path) == {}
    assert os.listdir(tmp_path) == ["results"] and os.listdir(out) == ["report.json"]


@given(old=st.sets(st.sampled_from(sorted(OUTPUTS))), fail_at=st.integers(0, 5),
       failure=st.sampled_from(["disk", "interrupt"]))
@settings(max_examples=60, deadline=None)
def test_a_failing_move_restores_the_old_files(tmp_path_factory, old, fail_at, failure):
    """Whatever fails (a full disk, Ctrl-C) at whichever move: the old state, exactly."""
    folder = tmp_path_factory.mktemp("w")
    out = folder / "results"
    out.mkdir()
    for name in old:
        (out / name).write_bytes(b"old " + name.encode())
    before = _tree(folder)
    calls = []
    real = os.replace

    def flaky(source, target):
        calls.append(target)
        if len(calls) == fail_at + 1:
            if failure == "interrupt":
                raise KeyboardInterrupt
            raise OSError(errno.ENOSPC, "No space left on device", source, None, target)
        return real(source, target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(io.os, "replace", flaky)
        if fail_at < len(old) + len(OUTPUTS):
            expected = KeyboardInterrupt if failure == "interrupt" else KernelCVError
            with pytest.raises(expected):
                io.write_all(out, OUTPUTS)
            assert _tree(folder) == before
        else:  # fewer moves than fail_at: the write succeeds
            io.write_all(out, OUTPUTS)
            assert _tree(folder) == {**{f"results/{k}": v for k, v in OUTPUTS.items()}}
    assert os.listdir(folder) == ["results"]


@pytest.mark.parametrize("new_folder", [True, False])
def test_full_disk_while_staging_names_the_output_file(tmp_path, monkeypatch, new_folder):
    out = tmp_path / "results"
    if not new_folder:
        out.mkdir()
    real = io._write_file

    def full(path, payload, mode):
        if path.endswith("a.png"):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        real(path, payload, mode)

    monkeypatch.setattr(io, "_write_file", full)
    with pytest.raises(KernelCVError) as info:
        io.write_all(out, OUTPUTS)
    assert str(info.value) == f"cannot write {out / 'a.png'}: No space left on device"
    assert os.listdir(tmp_path) == ([] if new_folder else ["results"])
    assert _tree(tmp_path) == {}


def test_ctrl_c_while_staging_leaves_nothing(tmp_path, monkeypatch):
    def interrupted(path, payload, mode):
        raise KeyboardInterrupt

    monkeypatch.setattr(io, "_write_file", interrupted)
    with pytest.raises(KeyboardInterrupt):
        io.write_all(tmp_path / "results", OUTPUTS)
    assert os.listdir(tmp_path) == []


def test_read_only_parent_stages_inside_the_existing_folder(tmp_path, monkeypatch):
    out = tmp_path / "results"
    out.mkdir()
    real = staging.tempfile.mkdtemp  # the module that makes the staging folder
    used = []

    def no_parent(dir, **kwargs):  # as in a parent folder without write permission
        if os.path.samefile(dir, tmp_path):
            raise PermissionError(errno.EACCES, "Permission denied", dir)
        used.append(dir)
        return real(dir=dir, **kwargs)

    monkeypatch.setattr(staging.tempfile, "mkdtemp", no_parent)
    io.write_all(out, OUTPUTS)
    assert used == [str(out)] and _tree(tmp_path) == {f"results/{k}": v
                                                      for k, v in OUTPUTS.items()}
    with pytest.raises(KernelCVError, match=f"cannot write {tmp_path}: Permission denied"):
        io.write_all(tmp_path / "new", OUTPUTS)
    assert sorted(os.listdir(tmp_path)) == ["results"]


def test_select_refuses_report_json_folder_before_the_search(tmp_path, capsys):
    X, y = make_synthetic(40, 3, random_state=1)
    data = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(data))
    out = tmp_path / "results"
    (out / "report.json").mkdir(parents=True)
    code = main(["select", str(data), "--machine", "krr", "--out", str(out), "--plot",
                 "--gamma-grid", "2^-2..2^0", "--lam-grid", "2^-4..2^-2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert str(out / "report.json") in err[0]
    assert os.listdir(out) == ["report.json"]
    assert sorted(os.listdir(tmp_path)) == ["results", "train.svm"]
    # once the folder is gone the same command writes all three files together
    os.rmdir(out / "report.json")
    assert main(["select", str(data), "--machine", "krr", "--out", str(out), "--plot",
                 "--gamma-grid", "2^-2..2^0", "--lam-grid", "2^-4..2^-2"]) == 0
    capsys.readouterr()
    assert sorted(os.listdir(out)) == ["cv_curve.png", "cv_heatmap.png", "report.json"]
    assert json.loads((out / "report.json").read_text())["files"]


@pytest.mark.parametrize("stage", ["owner file", "inode record"])
def test_a_full_disk_at_the_owner_record_leaves_no_staging_folder(tmp_path, monkeypatch,
                                                                   stage):
    # issue 41: a full disk left a .DIR.XXXX.tmp folder behind each time (the owner file
    # failed inside make_staging_folder, before write_all knew the folder's name)
    import builtins

    out = tmp_path / "results"
    real_open = builtins.open

    def full(path, mode="r", *args, **kwargs):
        writing = ("w" in mode) if stage == "owner file" else ("a" in mode)
        if str(path).endswith(".owner") and writing:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", full)
    with pytest.raises(KernelCVError, match="No space left"):
        io.write_all(out, OUTPUTS)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []
