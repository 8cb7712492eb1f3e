"""No output path of ``kernelcv select`` may name an input, another output, or go through
a symbolic link: refused before any work, one line, exit 2, the inputs untouched."""

from __future__ import annotations

import os

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv.cli import main

GRID = ["--machine", "l2svm", "--gamma-grid", "2^-2..2^0", "--lam-grid", "2^-5..2^-3",
        "--folds", "3"]


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    paths = {"train": tmp_path / "train.svm", "test": tmp_path / "test.svm",
             "folds": tmp_path / "folds.txt"}
    dump_svmlight_file(X[:30], y[:30], str(paths["train"]))
    dump_svmlight_file(X[30:], y[30:], str(paths["test"]))
    paths["folds"].write_text("\n".join(str(i % 3) for i in range(30)) + "\n")
    return paths


def _refused(capsys, *argv):
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernelcv: error: "), err
    return lines[0]


def _contents(paths):
    return {name: path.read_bytes() for name, path in paths.items()}


@pytest.mark.parametrize("target", ["train", "test", "folds"])
def test_save_model_naming_an_input_is_refused_and_the_input_kept(capsys, files, target):
    before = _contents(files)
    extra = ["--test", files["test"]] if target == "test" else []
    if target == "folds":
        extra = ["--fold-ids", files["folds"]]
    grid = GRID if target != "folds" else GRID[:6]
    line = _refused(capsys, "select", files["train"], *grid, *extra, "--save-model",
                    files[target])
    assert "overwrite" in line
    assert _contents(files) == before


def test_checkpoint_naming_the_data_is_refused(capsys, files):
    before = _contents(files)
    line = _refused(capsys, "select", files["train"], *GRID, "--checkpoint", files["train"])
    assert "--checkpoint" in line and "DATA" in line
    assert _contents(files) == before


def test_save_model_through_a_symbolic_link_to_the_data_is_refused(capsys, files, tmp_path):
    link = tmp_path / "model.npz"
    os.symlink(files["train"], link)
    before = _contents(files)
    _refused(capsys, "select", files["train"], *GRID, "--save-model", link)
    assert _contents(files) == before


def test_a_dangling_symbolic_link_as_the_model_path_is_refused(capsys, files, tmp_path):
    link = tmp_path / "model.npz"
    os.symlink(tmp_path / "elsewhere.npz", link)
    line = _refused(capsys, "select", files["train"], *GRID, "--save-model", link)
    assert "symbolic link" in line
    assert not (tmp_path / "elsewhere.npz").exists()


def test_save_model_and_checkpoint_on_one_path_are_refused(capsys, files, tmp_path):
    same = tmp_path / "both.npz"
    line = _refused(capsys, "select", files["train"], *GRID, "--save-model", same,
                    "--checkpoint", same)
    assert "same file" in line
    assert not same.exists()


def test_save_model_inside_out_as_the_report_name_is_refused(capsys, files, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    line = _refused(capsys, "select", files["train"], *GRID, "--out", out, "--save-model",
                    out / "report.json")
    assert "same file" in line


def test_distinct_paths_still_write_everything(capsys, files, tmp_path):
    model = tmp_path / "model.npz"
    code = main([str(a) for a in ("select", files["train"], *GRID, "--test", files["test"],
                                  "--save-model", model, "--out", tmp_path / "out")])
    capsys.readouterr()
    assert code == 0 and model.exists() and (tmp_path / "out" / "report.json").exists()
