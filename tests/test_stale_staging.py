"""kill -9 while the outputs are moved into place: the next run undoes it (issue 18).

A subprocess runs ``write_all`` into a folder holding an earlier run's files and kills
itself (SIGKILL, nothing can clean up) right after its k-th ``os.replace``; the next run
into the same folder must find the staging folder, put the earlier files back (the folder
is then exactly as before the killed run: all or nothing), remove the staging folder and
say so in one note.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv.cli import main
from kernelcv.reading.files import make_synthetic
from kernelcv.reports import io
from kernelcv.reports.staging import ORPHAN_AGE, OWNER, clean_stale

OLD = {"report.json": b"old report\n", "a.png": b"old A"}
NEW = {"report.json": b"new report\n", "a.png": b"new A", "b.png": b"new B"}
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}

KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    from kernelcv.reports import io
    out, after, which = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    real, calls = getattr(os, which), []
    def move(*args):
        if after == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        real(*args)
        calls.append(args)
        if len(calls) == after:
            os.kill(os.getpid(), signal.SIGKILL)
    setattr(os, which, move)
    io.write_all(out, {k: v.encode("latin-1") for k, v in %r.items()})
""") % {k: v.decode("latin-1") for k, v in NEW.items()}


def _tree(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


def _staging_folders(parent):
    return [name for name in os.listdir(parent) if name.endswith(".tmp")]


def _kill_during_moves(out, after, which="replace"):
    """Run write_all(out, NEW) in a subprocess killed after its ``after``-th call of
    ``os.<which>`` (0: at the first call, before it moves anything)."""
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(out), str(after), which],
                          env=ENV, capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()


@pytest.fixture
def out(tmp_path):
    folder = tmp_path / "results"
    io.write_all(folder, OLD)
    return folder


# moves: report.json aside (1), new report.json in (2), a.png aside (3), new a.png in (4),
# new b.png in (5, no earlier version)
@pytest.mark.parametrize("after", [1, 2, 3, 4, 5])
def test_next_run_undoes_a_run_killed_during_the_moves(out, after, caplog):
    _kill_during_moves(out, after)
    assert _staging_folders(out.parent)  # kill -9 left it
    assert _tree(out) != OLD or after == 1  # and the folder may be a mix of two runs
    with caplog.at_level(logging.INFO, logger="kernelcv"):
        io.check_writable_folder(out, tuple(NEW))  # what the next run does first
    assert _staging_folders(out.parent) == []
    assert _tree(out) == OLD
    notes = [r.getMessage() for r in caplog.records if "interrupted run" in r.getMessage()]
    assert len(notes) == 1 and "no longer running" in notes[0]
    io.write_all(out, NEW)
    assert _tree(out) == NEW


def test_a_run_killed_before_renaming_its_new_folder_leaves_nothing_behind(tmp_path,
                                                                         caplog):
    out = tmp_path / "fresh"
    _kill_during_moves(out, 0, "rename")  # every file staged, the folder not yet renamed
    assert not out.exists() and len(_staging_folders(tmp_path)) == 1
    with caplog.at_level(logging.INFO, logger="kernelcv"):
        io.check_writable_folder(out, tuple(NEW))
    assert not out.exists() and _staging_folders(tmp_path) == []
    assert len([r for r in caplog.records if "interrupted run" in r.getMessage()]) == 1
    io.write_all(out, NEW)  # and a completed run into a new folder carries no owner file
    assert _tree(out) == NEW and not (out / OWNER).exists()


def test_live_and_foreign_staging_folders_are_left_alone(out, tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = tmp_path / ".results.live.tmp"
        live.mkdir()
        (live / OWNER).write_text(f"{sleeper.pid} {os.uname().nodename}\nreport.json\n")
        foreign = tmp_path / ".results.far.tmp"
        foreign.mkdir()
        (foreign / OWNER).write_text("1 another-host\nreport.json\n")
        fresh_orphan = tmp_path / ".results.young.tmp"
        fresh_orphan.mkdir()
        old_orphan = tmp_path / ".results.aged.tmp"
        old_orphan.mkdir()
        aged = time.time() - 2 * ORPHAN_AGE
        os.utime(old_orphan, (aged, aged))
        clean_stale(out)
        assert sorted(_staging_folders(tmp_path)) == [".results.far.tmp",
                                                      ".results.live.tmp",
                                                      ".results.young.tmp"]
        assert _tree(out) == OLD
    finally:
        sleeper.kill()
        sleeper.wait()


def test_select_into_the_folder_notes_the_cleanup_once(tmp_path, capsys):
    X, y = make_synthetic(40, 3, random_state=1)
    data = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(data))
    out = tmp_path / "results"
    io.write_all(out, OLD)
    _kill_during_moves(out, 2)
    argv = ["select", str(data), "--machine", "krr", "--gamma-grid", "0.1,1",
            "--lam-grid", "0.01,0.1", "--folds", "3", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    notes = [line for line in err if "interrupted run" in line]
    assert len(notes) == 1 and notes[0].startswith("kernelcv: note: ")
    assert _staging_folders(tmp_path) == []
    assert json.loads((out / "report.json").read_text())["machine"] == "krr"
    assert sorted(os.listdir(out)) == ["a.png", "report.json"]  # the earlier a.png is kept
    assert (out / "a.png").read_bytes() == OLD["a.png"]


def test_a_run_killed_right_after_renaming_its_new_folder_leaves_no_owner_file(tmp_path):
    out = tmp_path / "fresh"
    _kill_during_moves(out, 1, "rename")  # renamed, killed before removing its owner file
    assert (out / OWNER).exists()
    io.check_writable_folder(out, tuple(NEW))
    assert _tree(out) == NEW  # the run had completed its files; only the record goes


# ------------------------------------------------ what a clean-up may not touch (issue 41)


def test_a_look_alike_folder_and_a_forged_owner_file_never_delete_user_files(out, tmp_path):
    aged = time.time() - 2 * ORPHAN_AGE
    # the user's own folder with a name like a staging folder's, an hour old
    backup = tmp_path / ".results.backup.tmp"
    backup.mkdir()
    (backup / "notes.txt").write_text("mine")
    os.utime(backup, (aged, aged))
    # an owner file of the old shape, naming a process that is gone and report.json
    forged = tmp_path / ".results.forged.tmp"
    forged.mkdir()
    (forged / OWNER).write_text(f"999999 {os.uname().nodename}\nreport.json\n")
    # this version's shape, but a token that is not the folder's
    wrong = tmp_path / ".results.00aa.x.tmp"
    wrong.mkdir()
    (wrong / OWNER).write_text(
        f"999999 {os.uname().nodename} {os.getuid()} ffff0000\nreport.json\n")
    clean_stale(out)
    assert (backup / "notes.txt").read_text() == "mine"  # was removed with its folder
    assert _tree(out) == OLD  # report.json was removed on the forged word
    assert forged.exists() and wrong.exists()


def test_a_file_the_user_put_in_place_after_the_kill_is_kept(out):
    _kill_during_moves(out, 5)  # every move done: the new b.png moved in, then killed
    (out / "b.png").unlink()
    (out / "b.png").write_bytes(b"the user's own b.png")  # another file, another inode
    io.check_writable_folder(out, tuple(NEW))
    assert (out / "b.png").read_bytes() == b"the user's own b.png"
    assert (out / "report.json").read_bytes() == OLD["report.json"]  # the rest undone


def test_a_neighbour_folder_s_staging_is_not_undone_into_this_one(tmp_path):
    # a run into `res` took `.res.a.*.tmp` (the staging folder of `res.a`, killed
    # between its moves) for its own and put res.a's old file over res/report.json
    res, res_a = tmp_path / "res", tmp_path / "res.a"
    io.write_all(res, {"report.json": b"OLD res\n"})
    io.write_all(res_a, OLD)
    _kill_during_moves(res_a, 1)  # report.json moved aside, killed
    io.write_all(res, {"other.txt": b"x"})
    assert (res / "report.json").read_bytes() == b"OLD res\n"
    io.check_writable_folder(res_a, tuple(NEW))  # res.a's own next run undoes it
    assert _tree(res_a) == OLD


def test_a_file_written_over_a_moved_aside_one_is_not_overwritten(out):
    _kill_during_moves(out, 1)  # the old report.json moved aside, killed before the new
    (out / "report.json").write_bytes(b"the user's own report")
    io.check_writable_folder(out, tuple(NEW))
    assert (out / "report.json").read_bytes() == b"the user's own report"
