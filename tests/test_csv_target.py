"""CSV ``--target COLUMN`` (a header name or a number) and text class labels.

A file with text labels must give the same search as the same file with the labels coded
as numbers (in the same sorted order), and everything the user reads back -- the test
error, the confusion matrices, the saved model's predictions -- must be in the original
labels. Bad target columns are one-line errors (exit 2 on the command line).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import kernelcv
from kernelcv.cli import main
from kernelcv.exceptions import KernelCVError
from kernelcv.reading.files import load_data
from kernelcv.reports.command_files import DataFiles, Outputs
from kernelcv.reports.select import run_select

GRIDS = {"gammas": [0.05, 0.2, 0.8], "lams": [1e-3, 1e-2, 1e-1]}


def _write(path, header, rows):
    lines = ([",".join(header)] if header else []) + [",".join(str(c) for c in row)
                                                     for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _problem(n, classes, seed):
    rng = np.random.default_rng(seed)
    codes = np.arange(n) % len(classes)
    X = rng.normal(size=(n, 3)) + 1.5 * np.eye(3)[codes % 3][:, :3] * (codes[:, None] + 1)
    return X, codes


def _files(tmp_path, classes, *, target_first=False, name="data"):
    """Train/test CSV files with text labels, and the same with numeric codes."""
    paths = {}
    for part, (n, seed) in {"train": (90, 0), "test": (45, 1)}.items():
        X, codes = _problem(n, classes, seed)
        for kind, labels in (("text", np.array(classes)[codes]), ("codes", codes)):
            header = ["label", "a", "b", "c"] if target_first else ["a", "b", "c", "label"]
            rows = [([lab, *x] if target_first else [*x, lab])
                    for x, lab in zip(X.round(6), labels, strict=True)]
            paths[part, kind] = _write(tmp_path / f"{name}_{part}_{kind}.csv", header, rows)
    return paths


def test_target_by_name_and_number(tmp_path):
    path = _write(tmp_path / "t.csv", ["x1", "y", "x2"], [[1, 5, 2], [3, 6, 4], [5, 7, 6]])
    X, y = load_data(path, target="y")
    assert X.tolist() == [[1, 2], [3, 4], [5, 6]] and y.tolist() == [5, 6, 7]
    for number in ("2", 2, "-2"):
        assert load_data(path, target=number)[1].tolist() == [5, 6, 7]
    assert load_data(path)[1].tolist() == [2, 4, 6]  # default: the last column
    bare = _write(tmp_path / "bare.csv", None, [[1, 5, 2], [3, 6, 4]])
    assert load_data(bare, target=1)[1].tolist() == [1, 3]


@pytest.mark.parametrize("target, header, message", [
    ("z", "auto", r"no column named 'z'; the header has 'x1', 'y', 'x2'"),
    ("0", "auto", r"there is no column 0: the file has 3 columns \(1..3"),
    ("4", "auto", r"there is no column 4"),
    ("-4", "auto", r"there is no column -4"),
    ("y", "no", r"target 'y' is a column name, but --header no"),
])
def test_bad_target_columns_are_one_line_errors(tmp_path, target, header, message):
    path = _write(tmp_path / "t.csv", ["x1", "y", "x2"], [[1, 5, 2], [3, 6, 4]])
    with pytest.raises(KernelCVError, match=message) as error:
        load_data(path, header=header, target=target)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_target_name_without_header_duplicates_and_other_formats(tmp_path):
    bare = _write(tmp_path / "bare.csv", None, [[1, 5, 2], [3, 6, 4]])
    with pytest.raises(KernelCVError, match="no column named 'label'"):
        load_data(bare, target="label")  # the first row holds no such name either
    twice = _write(tmp_path / "twice.csv", ["a", "y", "y"], [[1, 2, 3], [4, 5, 6]])
    with pytest.raises(KernelCVError, match="2 columns named 'y'; give the target's column"):
        load_data(twice, target="y")
    np.savez(tmp_path / "d.npz", X=np.ones((3, 2)), y=np.arange(3))
    with pytest.raises(KernelCVError, match="--target picks a column of a CSV file"):
        load_data(tmp_path / "d.npz", target="y")


def test_text_labels_are_read_as_strings_and_mixed_labels_refused(tmp_path):
    path = _write(tmp_path / "t.csv", ["a", "b", "kind"], [[1, 2, "cat"], [3, 4, " dog"]])
    X, y = load_data(path)
    assert y.tolist() == ["cat", "dog"] and X.dtype == np.float64
    mixed = _write(tmp_path / "m.csv", ["a", "b", "kind"],
                   [[1, 2, "cat"], [3, 4, 1], [5, 6, "dog"]])
    with pytest.raises(KernelCVError, match=r"line 2, column 3: the target 'cat' is text but "
                                            r"1 other targets are numbers \(line 3: '1'\)"):
        load_data(mixed)
    bad_feature = _write(tmp_path / "f.csv", ["a", "b", "kind"],
                         [[1, "x", "cat"], [3, 4, "dog"]])
    with pytest.raises(KernelCVError, match=r"line 2, column 2: 'x' is not a number"):
        load_data(bad_feature)
    headless = _write(tmp_path / "h.csv", None, [[1.5, 2, "cat"], [3, 4, "dog"]])
    assert load_data(headless)[1].tolist() == ["cat", "dog"]  # not taken for a header


@pytest.mark.parametrize("classes, machine", [(["bad", "good"], "l2svm"),
                                              (["ant", "bee", "cow"], "lssvm")])
def test_select_with_text_labels_matches_numeric_codes(tmp_path, classes, machine):
    paths = _files(tmp_path, classes, target_first=True)
    reports = {}
    for kind in ("text", "codes"):
        files = DataFiles(paths["train", kind], test=paths["test", kind], target="label")
        reports[kind] = run_select(files, machine=machine, folds=5,
                                   outputs=Outputs(save_model=tmp_path / f"{kind}.npz"),
                                   **GRIDS)
    text, codes = reports["text"], reports["codes"]
    assert text["best_params"] == codes["best_params"]
    assert text["best_cv_error"] == codes["best_cv_error"]
    assert text["test_error"] == codes["test_error"]
    if len(classes) > 2:
        assert text["multiclass"]["classes"] == classes
        assert text["multiclass"]["test"]["confusion"] == codes["multiclass"]["test"][
            "confusion"]
    X_test, y_test = load_data(paths["test", "text"], target="label")
    loaded = kernelcv.load_model(tmp_path / "text.npz")
    predicted = loaded.predict(X_test)
    assert set(predicted) <= set(classes) and predicted.dtype.kind == "U"
    coded = kernelcv.load_model(tmp_path / "codes.npz").predict(X_test)
    assert predicted.tolist() == np.array(classes)[coded.astype(int)].tolist()
    assert np.mean(predicted != y_test) == pytest.approx(text["test_error"])


def test_cli_text_labels_and_regression_refusal(tmp_path, capsys):
    paths = _files(tmp_path, ["no", "yes"])
    argv = ["select", str(paths["train", "text"]), "--test", str(paths["test", "text"]),
            "--machine", "lssvm", "--folds", "4", "--gamma-grid", "0.1,0.4",
            "--lam-grid", "0.01,0.1", "--no-progress", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["test_error"] is not None
    assert "labels 'no'/'yes' mapped to -1/+1" in captured.err
    assert main(["cv", str(paths["train", "text"]), "--machine", "lssvm", "--gamma", "0.1",
                 "--lam", "0.01", "--target", "label", "--method", "closed-form", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cv_error"] <= 0.5
    code = main(["select", str(paths["train", "text"]), "--machine", "krr", "--no-progress",
                 "--gamma-grid", "0.1", "--lam-grid", "0.1"])
    err = capsys.readouterr().err
    assert code == 2 and "numeric" in err and len(err.strip().splitlines()) == 1
    code = main(["select", str(paths["train", "text"]), "--machine", "lssvm", "--target",
                 "colour", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "no column named 'colour'" in err
    assert len(err.strip().splitlines()) == 1
