"""``kernelcv select`` and ``kernelcv cv`` never import scikit-learn (its import, with
scipy.stats, took about half of a 2 s select run) for the rbf, poly and linear kernels,
the five machines and svmlight, CSV and npz files, with or without ``--test``.

scikit-learn is still imported, inside the functions that need it, for the laplace kernel
(L1 distances), the random-feature method (SVC refits), the LIBSVM start of svm/svr from
``LIBSVM_START_MIN_ROWS`` rows, and the estimators; the runs below stay under that size.
"""

import subprocess
import sys

import numpy as np
from sklearn.datasets import dump_svmlight_file

from kernelcv.machines import LIBSVM_START_MIN_ROWS

HEAVY = ("sklearn", "scipy.stats", "scipy.optimize")

RUN = f"""
import sys
from kernelcv.cli import main
for line in sys.argv[1:]:
    code = main(line.split("|"))
    assert code == 0, (line, code)
heavy = sorted({{m for m in sys.modules if m.startswith({HEAVY!r})}})
print("HEAVY", heavy)
"""


def _heavy_modules(*commands):
    done = subprocess.run([sys.executable, "-c", RUN, *commands], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_importing_the_command_line_loads_no_scikit_learn():
    done = subprocess.run(
        [sys.executable, "-c", "import sys, kernelcv.cli.select, kernelcv.reports.select, "
         "kernelcv.cli.cv, kernelcv.cli.main; "
         f"print(sorted({{m for m in sys.modules if m.startswith({HEAVY!r})}}))"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_select_and_cv_runs_load_no_scikit_learn(tmp_path):
    n = min(120, LIBSVM_START_MIN_ROWS - 1)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n + 40, 4))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n + 40) > 0, 1.0, -1.0)
    dump_svmlight_file(X[:n], y[:n], str(tmp_path / "train.svm"), zero_based=False)
    dump_svmlight_file(X[n:], y[n:], str(tmp_path / "test.svm"), zero_based=False)
    np.savetxt(tmp_path / "reg.csv", np.column_stack([X, X[:, 0] ** 2]), delimiter=",")
    np.savez(tmp_path / "test.npz", X=X[n:], y=X[n:, 0] ** 2)
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    grid = "--gamma-grid|0.1,1|--lam-grid|0.01,0.1|--json|--no-progress"
    commands = [
        f"select|{train}|--machine|svm|--test|{test}|{grid}",
        f"select|{train}|--machine|l2svm|--kernel|poly|--degree-grid|1,2|--lam-grid|0.1"
        f"|--test|{test}|--json",
        f"select|{train}|--machine|lssvm|--kernel|linear|--lam-grid|0.1|--json",
        f"select|{tmp_path / 'reg.csv'}|--machine|krr|--test|{tmp_path / 'test.npz'}|{grid}",
        f"select|{tmp_path / 'reg.csv'}|--machine|svr|{grid}",
        f"cv|{train}|--machine|svm|--gamma|0.5|--lam|0.01|--method|bif",
    ]
    assert _heavy_modules(*commands) == "HEAVY []"
