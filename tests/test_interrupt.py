"""Ctrl-C: ``select``, ``tune`` and ``bench`` stop with status 130 and one line on stderr.

Each command runs in a subprocess of its own session; SIGINT goes to the whole process
group, as a terminal sends it (so loky workers of ``--n-jobs 2`` get it too). No output
file may appear, and a checkpoint must stay resumable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv.cli import main
from kernelcv.reading.files import make_synthetic

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _interrupt(command, ready, cwd, timeout=60.0):
    """Start ``command``; once ``ready()`` (or after ``timeout``) send SIGINT to its group.

    Returns the exit status and the stderr text.
    """
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=cwd, env=ENV, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None and not ready():
            time.sleep(0.01)
        assert process.poll() is None, "the command ended before it could be interrupted"
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode, err.decode()


def _assert_interrupted(code, err):
    lines = err.strip().splitlines()
    assert code == 130, err
    assert len(lines) == 1, err
    assert lines[0].startswith("kernelcv: interrupted: ") and "Traceback" not in err
    return lines[0]


def _lines(path):
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("interrupt")
    X, y = make_synthetic(150, 4, random_state=3)
    path = folder / "train.svm"
    dump_svmlight_file(X, y, str(path))
    return path


@pytest.mark.parametrize("n_jobs", ["1", "2"])
def test_select_ctrl_c_is_one_line_and_checkpoint_resumes(data, tmp_path, capsys, n_jobs):
    checkpoint = tmp_path / "search.ckpt"
    out = tmp_path / "results"
    options = ["--machine", "l2svm", "--method", "exact", "--screen", "off",
               "--gamma-grid", "2^-12..2^6", "--lam-grid", "2^-10..2^-5", "--no-progress",
               "--n-jobs", n_jobs, "--checkpoint", str(checkpoint)]
    code, err = _interrupt(
        [sys.executable, "-m", "kernelcv", "select", str(data), *options, "--out", str(out),
         "--plot"],
        lambda: _lines(checkpoint) >= 3, tmp_path)
    line = _assert_interrupted(code, err)
    assert str(checkpoint) in line and "resume" in line
    assert sorted(os.listdir(tmp_path)) == ["search.ckpt"]  # no output, no temporaries
    kept = checkpoint.read_text().splitlines()
    assert 3 <= len(kept) < 20
    for text in kept:
        json.loads(text)

    assert main(["select", str(data), *options, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["candidates"]) == 19 * 6
    assert checkpoint.read_text().splitlines()[:len(kept)] == kept
    assert _lines(checkpoint) == 20


def test_tune_ctrl_c_is_one_line(tmp_path):
    X, y = make_synthetic(150, 4, random_state=4)
    path = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(path))
    out = tmp_path / "tuned"
    started = time.monotonic()
    code, err = _interrupt(
        [sys.executable, "-m", "kernelcv", "tune", str(path), "--restarts", "200",
         "--out", str(out)],
        lambda: time.monotonic() - started > 2.5, tmp_path)
    _assert_interrupted(code, err)
    assert sorted(os.listdir(tmp_path)) == ["train.svm"]


def test_bench_ctrl_c_is_one_line_and_keeps_the_checkpoint(tmp_path):
    folder = tmp_path / "data" / "libsvm"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    dump_svmlight_file(X, np.where(X[:, 0] > X[:, 1], 1, -1), str(folder / "heart_scale.svm"))
    out = tmp_path / "bench"
    checkpoint = out / "checkpoint.jsonl"
    code, err = _interrupt(
        [sys.executable, "-m", "kernelcv", "bench", "--quick", "--quiet", "--tables",
         "l2svm", "--splits", "6", "--no-figures", "--data-dir", str(tmp_path / "data"),
         "--out", str(out)],
        lambda: _lines(checkpoint) >= 2, tmp_path)
    line = _assert_interrupted(code, err)
    assert str(checkpoint) in line
    assert sorted(os.listdir(out)) == ["checkpoint.jsonl"]  # no results.* yet
    records = [json.loads(text) for text in checkpoint.read_text().splitlines()]
    assert "fingerprint" in records[0] and all("record" in r for r in records[1:])


def _session_members(session):
    """Process ids whose session id is ``session`` (Linux /proc)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            members.append(int(entry))
    return members


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_select_leaves_no_loky_workers(data, tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "kernelcv", "select", str(data), "--machine", "l2svm",
         "--method", "exact", "--screen", "off", "--gamma-grid", "2^-12..2^6",
         "--no-progress", "--n-jobs", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path, env=ENV,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(_session_members(process.pid)) < 3:
            time.sleep(0.05)
        assert process.poll() is None and len(_session_members(process.pid)) >= 3
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        deadline = time.monotonic() + 20  # loky's own idle timeout would be 300 s
        while time.monotonic() < deadline and _session_members(process.pid):
            time.sleep(0.1)
        assert _session_members(process.pid) == []
    finally:
        for pid in _session_members(process.pid):
            os.kill(pid, signal.SIGKILL)
