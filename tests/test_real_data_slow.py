"""Fast criteria against refit CV on real LIBSVM data (slow: run with `make test-slow`)."""

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

import kernelcv as kc
from kernelcv import BIF

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "libsvm"

pytestmark = pytest.mark.slow


def load(name):
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{path} not available")
    X, y = load_svmlight_file(str(path))
    return X.toarray(), y


@pytest.mark.parametrize("gamma", [0.01, 0.1, 1.0])
def test_closed_form_and_bif_inf_exact_on_australian(gamma):
    X, y = load("australian_scale.svm")
    ids = kc.validation.make_folds(np.where(y > 0, 1.0, -1.0), 10, True, 0)
    for machine in ("krr", "lssvm"):
        exact = kc.cross_validate(X, y, machine, gamma=gamma, lam=1e-3, folds=ids)
        for method in ("closed-form", BIF(order="inf")):
            fast = kc.cross_validate(X, y, machine, gamma=gamma, lam=1e-3, folds=ids,
                                     method=method)
            scale = np.max(np.abs(exact.predictions))
            assert np.max(np.abs(fast.predictions - exact.predictions)) < 1e-8 * scale


@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
@pytest.mark.parametrize("machine", ["l2svm", "svm"])
def test_bif_tracks_exact_cv_on_heart_grid(machine):
    X, y = load("heart_scale.svm")
    n = len(y)
    lams = [2.0**i / n for i in range(-1, 8, 2)]
    for gamma in (0.01, 0.05, 0.2):
        exact = kc.cross_validate_path(X, y, lams, machine, gamma=gamma, folds=10,
                                       random_state=0)
        bif = kc.cross_validate_path(X, y, lams, machine, gamma=gamma, folds=10, random_state=0,
                                     method=BIF(order="inf"))
        for e, b in zip(exact, bif, strict=True):
            # within three misclassified samples of the exact CV error
            assert abs(e.cv_error - b.cv_error) <= 3 / n, (gamma, e.params["lam"])


@pytest.mark.parametrize("name", ["ionosphere_scale.svm", "breast-cancer_scale.svm"])
def test_safeguarded_bif_search_picks_the_exact_search_choice(name):
    """Full default grid on half the data: BIF + safeguards chooses what exact CV chooses."""
    X, y = load(name)
    half = np.arange(X.shape[0]) % 2 == 0
    X, y = X[half], y[half]
    ids = kc.validation.make_folds(np.where(y > np.min(y), 1.0, -1.0), 10, True, 0)
    exact = kc.grid_search(X, y, "l2svm", folds=ids, method="exact")
    bif = kc.grid_search(X, y, "l2svm", folds=ids, method="bif")
    assert bif.best["exact_error"] == pytest.approx(exact.best["score"])
