"""The console script's exit (kernelcv.cli.console): the exit status, flushed output and
atexit handlers survive skipping the interpreter's teardown, and the normal exit is kept
while threads or worker processes are alive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv.cli import console
from kernelcv.cli.console import teardown_needed
from test_interrupt import _session_members  # the tests folder is on sys.path

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

# Registers an atexit handler, then runs the console script with the given arguments.
SCRIPT = """
import atexit, sys
atexit.register(lambda: open(sys.argv[1], "w").write("atexit ran"))
from kernelcv.cli import console
console(sys.argv[2:])
"""


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    path = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(path))
    return path


def _console(tmp_path, *args):
    marker = tmp_path / "marker.txt"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(marker), *args],
                          capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=120)
    return done, marker


def test_exit_status_output_and_atexit_survive(data, tmp_path):
    done, marker = _console(tmp_path, "select", str(data), "--machine", "svm",
                            "--gamma-grid", "0.1,1", "--lam-grid", "0.01,0.1", "--json",
                            "--no-progress", "--out", "results")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # the whole JSON arrived: stdout was flushed
    assert report["best_params"]["gamma"] in (0.1, 1.0)
    assert marker.read_text() == "atexit ran"
    assert (tmp_path / "results" / "report.json").exists()


def test_bad_input_keeps_its_exit_status(tmp_path):
    done, marker = _console(tmp_path, "select", str(tmp_path / "missing.svm"), "--machine",
                            "svm")
    assert done.returncode == 2
    assert done.stderr.strip().startswith("kernelcv: error:")
    assert marker.read_text() == "atexit ran"


def test_python_dash_m_uses_the_console(tmp_path):
    done = subprocess.run([sys.executable, "-m", "kernelcv", "--version"], capture_output=True,
                          text=True, env=ENV, timeout=60)
    assert done.returncode == 0 and "kernelcv" in done.stdout


def test_a_live_thread_keeps_the_normal_exit():
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        assert teardown_needed()
        # The normal exit (SystemExit) instead of os._exit, which would end pytest.
        with pytest.raises(SystemExit) as exit_info:
            console(["--version"])
        assert exit_info.value.code == 0
    finally:
        release.set()
        worker.join()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_worker_processes_end_with_the_command(data, tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "kernelcv", "select", str(data), "--machine", "svm",
         "--gamma-grid", "0.1,1,10", "--lam-grid", "0.01,0.1", "--no-progress",
         "--n-jobs", "2", "--screen", "off"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path, env=ENV,
        start_new_session=True)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _session_members(process.pid):
        time.sleep(0.1)
    assert _session_members(process.pid) == []

