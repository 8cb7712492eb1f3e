"""The scripts in examples/ run as written and print a sensible tuned model, and
``kernelcv data`` writes the files the README's quick start uses."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelcv.cli import main
from kernelcv.reading.files import load_data

ROOT = Path(__file__).resolve().parents[1]
# script: (printed value, smallest acceptable value)
EXPECTED = {"binary.py": ("test ROC AUC", 0.95),
            "multiclass.py": ("test balanced accuracy", 0.9),
            "regression.py": ("test R\\^2", 0.25)}


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_runs_and_tunes_a_model(script):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / script)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "best parameters:" in done.stdout
    label, floor = EXPECTED[script]
    value = float(re.search(rf"{label}: ([-0-9.]+)", done.stdout).group(1))
    assert floor <= value <= 1.0


def test_every_example_is_tested():
    assert sorted(p.name for p in (ROOT / "examples").glob("*.py")) == sorted(EXPECTED)


def test_data_command_writes_the_quick_start_files(tmp_path, capsys):
    assert main(["data", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "breast_cancer binary     426 train / 143 test rows, 30 features" in out
    X, y = load_data(tmp_path / "wine_train.svm")
    assert X.shape == (133, 13) and set(y) == {0.0, 1.0, 2.0}
    X, y = load_data(tmp_path / "diabetes_test.svm")
    assert X.shape == (111, 10)
    assert main(["data", "--out", str(tmp_path), "iris"]) == 2
    assert "unknown set(s) iris" in capsys.readouterr().err
