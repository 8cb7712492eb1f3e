"""Unscaled data (features or targets near 1e200): only the readable message, never numpy's.

Each command runs in a subprocess, as a user runs it, so that nothing in the test harness
filters what reaches stderr: an error is exactly one ``kernelcv: error:`` line (exit 2),
a run that completes shows its warning lines and no ``RuntimeWarning`` of numpy's
(``overflow encountered in ...``) before them.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _svmlight(path, X, y):
    path.write_text("".join(
        f"{target:.17g} " + " ".join(f"{j + 1}:{value:.17g}" for j, value in enumerate(row))
        + "\n" for target, row in zip(y, X, strict=True)))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("unscaled")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    labels = np.where(X[:, 0] > 0, 1.0, -1.0)
    return {"huge_x": _svmlight(root / "huge_x.svm", 1e200 * X, labels),
            "huge_y": _svmlight(root / "huge_y.svm", X, 1e200 * rng.normal(size=20)),
            "root": root}


def _run(*argv, cwd):
    done = subprocess.run([sys.executable, "-m", "kernelcv", *map(str, argv)],
                          capture_output=True, text=True, cwd=cwd, env=ENV, timeout=300)
    return done.returncode, done.stderr.splitlines(), done.stdout


HUGE_X = [
    ("cv", "--machine", "lssvm", "--gamma", "0.1", "--lam", "0.01", "--method", "exact"),
    ("cv", "--machine", "l2svm", "--gamma", "0.1", "--lam", "0.01", "--method", "bif"),
    ("cv", "--machine", "krr", "--kernel", "linear", "--lam", "0.01", "--method",
     "closed-form"),
    ("cv", "--machine", "lssvm", "--kernel", "poly", "--lam", "0.01", "--method", "bif"),
    ("select", "--machine", "lssvm", "--no-progress"),
    ("select", "--machine", "l2svm", "--method", "rff", "--no-progress"),
    ("tune",),
    ("hypothetical",),
]


@pytest.mark.parametrize("argv", HUGE_X, ids=[" ".join(a[:2]) + str(i)
                                             for i, a in enumerate(HUGE_X)])
def test_features_near_1e200_give_exactly_the_one_line_message(files, argv):
    folds = ("--folds", "5") if argv[0] in ("cv", "select") else ()
    code, err, _ = _run(argv[0], files["huge_x"], *argv[1:], *folds, cwd=files["root"])
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith("kernelcv: error: ")
    # the scale of X (kernel matrices) or the overflowing feature map (--method rff)
    assert "5e+200" in err[0] or "reach" in err[0] or "too large" in err[0]
    assert "standardize" in err[0]
    assert "RuntimeWarning" not in "\n".join(err)


def test_standard_scaling_makes_them_usable(files):
    code, err, out = _run("cv", files["huge_x"], "--machine", "lssvm", "--gamma", "0.3",
                          "--lam", "0.01", "--method", "exact", "--folds", "5",
                          "--scale", "standard", cwd=files["root"])
    assert code == 0, err
    assert not [line for line in err if "RuntimeWarning" in line or "error" in line]
    assert "CV error" in out


@pytest.mark.parametrize("method", ["exact", "bif", "closed-form"])
def test_targets_near_1e200_show_only_the_readable_warning(files, method):
    code, err, out = _run("cv", files["huge_y"], "--machine", "krr", "--gamma", "0.3",
                          "--lam", "0.01", "--method", method, "--folds", "5",
                          cwd=files["root"])
    assert code == 0, err
    assert not [line for line in err if "RuntimeWarning" in line or "overflow" in line], err
    assert "CV error     inf" in out
    assert "WARNING: the CV error is not a finite number" in out


def test_select_on_targets_near_1e200_warns_once_in_words(files):
    code, err, _ = _run("select", files["huge_y"], "--machine", "krr", "--method", "bif",
                        "--gamma-grid", "0.1,1", "--lam-grid", "0.01,0.1", "--folds", "5",
                        "--no-progress", cwd=files["root"])
    assert code == 0, err
    warnings = [line for line in err if line.startswith("kernelcv: warning:")]
    assert len(warnings) == 1 and "every candidate" in warnings[0], err
    assert not [line for line in err if "overflow encountered" in line], err
