"""The command line a newcomer meets: examples in every --help, --scale, one meaning of
--epsilon, the same default BIF order in cv and select."""

from __future__ import annotations

import json
import shlex

import numpy as np
import pytest

from kernelcv import cross_validate
from kernelcv.cli import main
from kernelcv.cli.main import COMMANDS, build_parser
from kernelcv.demo import write_example_data
from kernelcv.reading.files import load_data
from kernelcv.reports.scaling import apply_scaling, fit_scaling


@pytest.fixture(scope="module")
def example_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    write_example_data(folder, ["breast_cancer", "diabetes"])
    return folder


def _examples(text):
    """The kernelcv command lines of an examples section (continuations joined)."""
    joined = text.split("examples:", 1)[1].replace("\\\n", " ")
    for line in joined.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("kernelcv "):
            yield shlex.split(line)[1:]


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_help_ends_with_examples_that_parse(command, capsys):
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "examples:" in text
    lines = list(_examples(text))
    assert lines
    parser = build_parser()
    for argv in lines:
        args = parser.parse_args(argv)  # exits (SystemExit) on any unknown option
        assert args.command == argv[0]


def test_scale_is_fitted_on_training_data_and_applied_to_test(example_dir, capsys):
    train = str(example_dir / "breast_cancer_train.svm")
    test = str(example_dir / "breast_cancer_test.svm")
    errors = {}
    for scale in ("none", "standard", "minmax"):
        assert main(["select", train, "--test", test, "--machine", "lssvm", "--scale", scale,
                     "--json", "--no-progress"]) == 0
        report = json.loads(capsys.readouterr().out)
        errors[scale] = report["test_error"]
        assert (report["scaling"] is None) == (scale == "none")
    assert errors["standard"] < errors["none"] and errors["minmax"] < errors["none"]
    # The same numbers as scaling by hand with the training data's statistics.
    X, y = load_data(train)
    scaling = fit_scaling(X, "standard")
    assert main(["cv", train, "--machine", "lssvm", "--gamma", "0.05", "--lam", "0.001",
                 "--method", "closed-form", "--scale", "standard", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    expected = cross_validate(apply_scaling(X, scaling), y, "lssvm", gamma=0.05, lam=0.001,
                              method="closed-form", random_state=0)
    assert summary["cv_error"] == expected.cv_error
    assert summary["scaling"] == {"kind": "standard", "centred": False}


def test_dense_scaling_values():
    X = np.array([[0.0, 5.0], [2.0, 5.0], [4.0, 5.0]])
    standard = apply_scaling(X, fit_scaling(X, "standard"))
    np.testing.assert_allclose(standard[:, 0], [-1.224744871, 0, 1.224744871])
    np.testing.assert_array_equal(standard[:, 1], 0.0)  # constant feature: scale 1
    minmax = fit_scaling(X, "minmax")
    np.testing.assert_allclose(apply_scaling(np.array([[1.0, 5.0], [8.0, 6.0]]), minmax),
                               [[0.25, 0.0], [2.0, 1.0]])


def test_epsilon_has_one_meaning_and_cv_order_matches_select(example_dir, capsys):
    data = str(example_dir / "diabetes_train.svm")
    assert main(["cv", data, "--machine", "svr", "--gamma", "0.1", "--lam", "0.01",
                 "--method", "bif", "--epsilon", "5"]) == 2
    assert "--svr-epsilon" in capsys.readouterr().err
    assert main(["cv", data, "--machine", "svr", "--gamma", "0.1", "--lam", "0.01",
                 "--method", "bif", "--svr-epsilon", "5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["order"] == "inf" and summary["params"]["epsilon"] == 5.0
    select_parser = build_parser(["select"]).parse_args(["select", data, "--machine", "svr"])
    assert select_parser.order == "inf"
