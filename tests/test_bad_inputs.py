"""Inputs that used to end in a traceback: each is now one ``kernelcv: error:`` line.

``hypothetical --similarity`` with an ``.npz`` (or an ``.npz`` renamed ``.npy``), a sparse
svmlight file with a huge feature index in ``tune`` / ``hypothetical`` (dense data over
the memory budget), and ``select --scheduler`` with a malformed address.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv.cli import main
from kernelcv.datasets import make_synthetic


def _run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_line_error(code, out, err):
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("kernelcv: error: "), err
    assert out == ""
    return lines[0]


@pytest.fixture
def small(tmp_path):
    X, y = make_synthetic(30, 3, random_state=2)
    path = tmp_path / "small.svm"
    dump_svmlight_file(X, y, str(path))
    return path


def test_similarity_npz_with_one_array_is_read_whatever_its_suffix(small, tmp_path, capsys):
    S = np.exp(-np.arange(30)[:, None] ** 2 / 50.0 - np.arange(30)[None, :] ** 2 / 50.0)
    np.save(tmp_path / "S.npy", S)
    np.savez(tmp_path / "S.npz", similarity=S)
    os.replace(tmp_path / "S.npz", tmp_path / "renamed.npy")
    np.savez(tmp_path / "S.npz", similarity=S)
    reports = []
    for name in ("S.npy", "S.npz", "renamed.npy"):
        code, out, err = _run(capsys, "hypothetical", small, "--model", "relevance",
                              "--similarity", tmp_path / name, "--no-loo", "--json")
        assert code == 0, err
        reports.append(json.loads(out))
    for report in reports[1:]:
        assert report["criterion"] == reports[0]["criterion"]


@pytest.mark.parametrize("content", ["two", "none", "garbage", "vector"])
def test_unusable_similarity_file_is_one_line(small, tmp_path, capsys, content):
    path = tmp_path / "S.npz"
    if content == "two":
        np.savez(path, a=np.eye(30), b=np.eye(30))
    elif content == "none":
        np.savez(path)
    elif content == "garbage":
        path.write_bytes(b"PK\x03\x04 not really a zip archive")
    else:
        np.savez(path, a=np.ones(30))
    line = _one_line_error(*_run(capsys, "hypothetical", small, "--model", "relevance",
                                 "--similarity", path, "--no-loo"))
    assert str(path) in line


@pytest.mark.parametrize("command", ["tune", "hypothetical"])
def test_huge_feature_index_is_refused_before_densifying(tmp_path, capsys, monkeypatch,
                                                         command):
    rows = [f"{1 if i % 2 else -1} 1:{i / 40:.3f} 2:{(i * 7 % 40) / 40:.3f}"
            for i in range(40)]
    rows[0] += " 5000000:1"  # 40 x 5e6 dense floats: 1.5 GiB
    path = tmp_path / "wide.svm"
    path.write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("KERNELCV_MEMORY_BUDGET", "100M")
    line = _one_line_error(*_run(capsys, command, path))
    assert "40 x 5000000" in line and "feature index" in line and str(path) in line
    # the advice names an option the command has
    code, _, err = _run(capsys, command, path, "--memory-budget", "50M")
    assert code == 2 and "50.0 MiB" in err


def test_malformed_scheduler_address_fails_fast_in_one_line(small, tmp_path):
    pytest.importorskip("distributed")
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "kernelcv", "select", str(small),
                          "--machine", "krr", "--scheduler", "notanaddress"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    elapsed = time.monotonic() - started
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr
    assert "notanaddress" in lines[0] and "tcp://" in lines[0]
    assert elapsed < 15  # was 20 s of Client.__del__ waiting, then a traceback


@pytest.mark.parametrize("address", ["tcp://host", "tcp://host:x", "foo://bar:1"])
def test_malformed_scheduler_address_is_refused_by_run_tasks(address):
    pytest.importorskip("distributed")
    from kernelcv.exceptions import KernelCVError
    from kernelcv.selection.backends import run_tasks

    with pytest.raises(KernelCVError, match="tcp://127.0.0.1:8786"):
        run_tasks(abs, [{"x": 1}], scheduler=address)
