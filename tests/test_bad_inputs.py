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
from kernelcv.reading.files import make_synthetic


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


@pytest.mark.parametrize("address, words", [
    ("tls://127.0.0.1:8786", "TLS credentials"), ("wss://127.0.0.1:8786", "TLS credentials"),
    ("inproc://nothing", "inside this process"),
    ("ucx://127.0.0.1:8786", "UCX packages"),
])
def test_addresses_an_address_string_cannot_open_are_refused_at_once(address, words):
    # each was a 20 s wait in Client.__del__ after the error, then a traceback
    pytest.importorskip("distributed")
    from kernelcv.exceptions import KernelCVError
    from kernelcv.selection.backends import run_tasks

    started = time.monotonic()
    with pytest.raises(KernelCVError, match=words):
        run_tasks(abs, [{"x": 1}], scheduler=address)
    assert time.monotonic() - started < 5


def test_a_tls_address_on_the_command_line_is_one_line_without_waiting(small, tmp_path):
    pytest.importorskip("distributed")
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "kernelcv", "select", str(small),
                          "--machine", "krr", "--scheduler", "tls://127.0.0.1:8786"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr
    assert "TLS credentials" in lines[0]
    assert time.monotonic() - started < 15


def _limited(megabytes):
    import resource

    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (megabytes * 2**20, megabytes * 2**20))
    return apply


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is Linux's")
def test_a_process_memory_limit_is_the_budget_and_memory_errors_are_one_line(tmp_path):
    # under `ulimit -v` the budget was half the RAM and numpy's MemoryError a traceback
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 3))
    np.savez(tmp_path / "big.npz", X=X, y=X[:, 0])
    command = [sys.executable, "-m", "kernelcv", "cv", str(tmp_path / "big.npz"),
               "--machine", "krr", "--gamma", "0.5", "--lam", "0.01", "--method", "exact"]
    for extra, words in (([], "memory budget is"), (["--memory-budget", "50G"],
                                                      "out of memory")):
        run = subprocess.run(command + extra, capture_output=True, text=True, timeout=120,
                             preexec_fn=_limited(2000), cwd=tmp_path)
        lines = run.stderr.strip().splitlines()
        assert run.returncode == 2 and len(lines) == 1, run.stderr
        assert words in lines[0]


# ---------------------------------------------------------------- messages that misled


@pytest.mark.parametrize("n_classes", [2, 3])
def test_one_sample_class_does_not_advise_fewer_folds(n_classes):
    from kernelcv import cross_validate
    from kernelcv.exceptions import KernelCVError

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.arange(30) % (n_classes - 1)
    y[7] = n_classes - 1  # the last class has one sample
    for folds in (2, 5, 30):
        with pytest.raises(KernelCVError, match="single sample, so no number of folds") as info:
            cross_validate(X, y, "l2svm", gamma=1.0, lam=0.1, folds=folds)
        assert "fewer folds" not in str(info.value)


@pytest.mark.parametrize("method", ["exact", "bif", "closed-form"])
def test_overflow_from_unscaled_x_is_named_not_lam(method):
    from kernelcv import cross_validate
    from kernelcv.exceptions import KernelCVError

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2)) * 1e20
    y = np.where(rng.normal(size=30) > 0, 1, -1)
    with pytest.raises(KernelCVError, match="overflow float64.*standardize X") as info:
        cross_validate(X, y, "lssvm", "poly", degree=8, lam=0.1, method=method)
    assert "lam is too small" not in str(info.value)


def test_non_finite_predictions_name_their_likely_cause():
    """Held-out predictions that overflowed: the targets, the kernel, or lam, in order."""
    from kernelcv.criteria.evaluate import _non_finite_message

    K, y = np.eye(3), np.ones(3)
    assert "targets reach 1e+200" in _non_finite_message(K, y * 1e200, 0.1, "exact")
    assert "standardize X" in _non_finite_message(K * 1e200, y, 0.1, "bif")
    exact = _non_finite_message(K, y, 1e-300, "exact")
    assert "lam is too small" in exact and "method='exact'" not in exact
    assert "method='exact'" in _non_finite_message(K, y, 1e-300, "bif")


def test_cross_validate_accepts_the_estimators_gamma_strings():
    from kernelcv import cross_validate
    from kernelcv.estimators import KernelRidgeRegressor
    from kernelcv.exceptions import KernelCVError

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)) * 3
    y = X[:, 0] + 0.1 * rng.normal(size=30)
    for name in ("scale", "auto"):
        by_name = cross_validate(X, y, "krr", gamma=name, lam=0.1, folds=5, random_state=0)
        gamma = KernelRidgeRegressor(gamma=name).fit(X, y).gamma_
        by_value = cross_validate(X, y, "krr", gamma=gamma, lam=0.1, folds=5, random_state=0)
        assert by_name.params["gamma"] == gamma and by_name.cv_error == by_value.cv_error
    with pytest.raises(KernelCVError, match="'scale' or 'auto'"):
        cross_validate(X, y, "krr", gamma="wide", lam=0.1)


def test_messages_show_plain_numbers_not_numpy_reprs():
    from kernelcv import cross_validate
    from kernelcv.exceptions import KernelCVError

    X = np.ones((6, 2))
    with pytest.raises(KernelCVError) as info:
        cross_validate(X, np.arange(6.0), "krr", gamma=1.0, lam=np.float64(-1.0))
    assert "got -1.0" in str(info.value) and "np." not in str(info.value)
    message = str(KernelCVError(f"{np.float64(1.0)!r}, {np.int64(3)!r}, {np.bool_(True)!r}"))
    assert message == "1.0, 3, True"


def test_cli_cv_inf_error_names_the_scale(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    path = tmp_path / "big_y.npz"
    np.savez(path, X=X, y=X[:, 0] * 1e200)
    assert main(["cv", str(path), "--machine", "krr", "--gamma", "1", "--lam", "0.1",
                 "--method", "exact"]) == 0
    out = capsys.readouterr().out
    assert "WARNING: the CV error is not a finite number" in out and "standardize" in out
    assert "--method exact" not in out  # it already was


def test_full_disk_while_checkpointing_names_the_file(tmp_path, monkeypatch):
    """ENOSPC reported with the file's name, for select's and bench's checkpoints."""
    import errno
    import io as _io

    from kernelcv.exceptions import KernelCVError
    from kernelcv.experiments import checkpoint
    from kernelcv.selection.checkpointing.checkpoint import Checkpoint

    class Full(_io.StringIO):
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    store = Checkpoint(tmp_path / "search.ckpt", "key", 2)
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, mode="r", *a, **k: Full()
                        if "a" in mode else real_open(path, mode, *a, **k))
    with pytest.raises(KernelCVError, match=f"{tmp_path / 'search.ckpt'}: No space left"):
        store.add_setting(0, [])
    monkeypatch.undo()
    path = tmp_path / "checkpoint.jsonl"
    monkeypatch.setattr(type(path), "open", lambda self, mode="r", *a, **k: Full())
    with pytest.raises(KernelCVError, match=f"cannot write {path}: No space left"):
        checkpoint._write_text(path, "x\n", "a")
