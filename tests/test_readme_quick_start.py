"""The README's quick start runs as written (issue 20): every command of its code block,
in a fresh folder, with the installed kernelcv (``pip install .`` aside; the example
scripts are run by tests/test_examples.py)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Quick start"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    lines = block.replace("\\\n", " ").splitlines()
    return [line.split("  #")[0].split(" # ")[0].strip() for line in lines if line.strip()]


def test_quick_start_runs_as_written(tmp_path):
    commands = _quick_start_commands()
    assert [c.split()[0] for c in commands] == ["pip", "kernelcv", "kernelcv", "kernelcv",
                                                "python"]
    kernelcv = str(Path(sys.executable).with_name("kernelcv"))
    outputs = []
    for command in commands:
        argv = shlex.split(command)
        if argv[0] == "pip":
            continue
        if argv[0] == "python" and argv[1].startswith("examples/"):
            assert (ROOT / argv[1]).is_file()
            continue
        argv[0] = kernelcv if argv[0] == "kernelcv" else sys.executable
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, (command, done.stderr)
        outputs.append(done.stdout)
    assert (tmp_path / "results" / "report.json").is_file()
    assert (tmp_path / "model.npz").is_file()
    assert "test error" in outputs[1]
    assert outputs[2].startswith("accuracy ")  # kernelcv predict: the saved model's score
    predicted = (tmp_path / "predictions.txt").read_text().split()
    assert len(predicted) == 143 and set(predicted) <= {"0", "1"}
