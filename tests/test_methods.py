"""CV methods as objects and the run_search core (issue 16): same numbers as the flat API,
refit CV as the oracle, and a new method that plugs in without touching the driver."""

import pickle
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from kernelcv import grid_search
from kernelcv.criteria.evaluate import evaluate_lam
from kernelcv.exceptions import KernelCVError
from kernelcv.kernels import GramFactory, make_kernel
from kernelcv.machines import make_machine
from kernelcv.random_features.method import FeatureSpace
from kernelcv.reading.files import make_synthetic
from kernelcv.selection.gacv_method import GACV
from kernelcv.selection.methods import BIF, ClosedForm, ExactRefit, GranularityRule
from kernelcv.selection.options import Execution, Safeguards, SearchSpace
from kernelcv.selection.search import make_method, run_search
from kernelcv.validation import make_folds

GAMMAS = [0.05, 0.5]
LAMS = [1e-3, 1e-1]


@pytest.fixture(scope="module")
def data():
    X, y = make_synthetic(60, 4, task="classification", random_state=1)
    return X, y


def _scores(result):
    return [(c["gamma"], c["lam"], c["score"], c["exact_error"], c["status"])
            for c in result.candidates]


@pytest.mark.parametrize("name,machine", [("exact", "l2svm"), ("closed-form", "lssvm"),
                                          ("bif", "svm"), ("gacv", "svm"), ("rff", "svm")])
def test_run_search_with_objects_equals_grid_search(data, name, machine):
    X, y = data
    flat = grid_search(X, y, machine, method=name, gammas=GAMMAS, lams=LAMS, folds=4,
                       safeguards=Safeguards(confirm=1))
    method = make_method(name, machine)
    core = run_search(X, y, make_machine(machine), method,
                      SearchSpace.grid("rbf", GAMMAS, lams=LAMS), folds=4,
                      safeguards=Safeguards(confirm=1))
    assert _scores(core) == _scores(flat)
    assert core.best_index == flat.best_index
    assert core.criterion.name == name and core.config == flat.config


def test_exact_method_scores_are_refit_cv_on_the_same_folds(data):
    X, y = data
    machine = make_machine("l2svm")
    result = run_search(X, y, machine, ExactRefit(), SearchSpace.grid("rbf", [0.5], lams=LAMS),
                        folds=5, random_state=3)
    folds = make_folds(np.where(y == y.min(), -1.0, 1.0), 5, True, 3)
    np.testing.assert_array_equal(folds, result.fold_ids)
    K = GramFactory(X).gram(make_kernel("rbf", 0.5))
    y_pm = np.where(y == np.unique(y)[0], -1.0, 1.0)
    for candidate in result.candidates:
        refit = evaluate_lam(K, y_pm, folds, candidate["lam"], machine, "exact")
        assert candidate["score"] == pytest.approx(refit.cv_error, abs=1e-12)


@pytest.mark.parametrize("method", [ExactRefit(), ClosedForm(), BIF(order=3), GACV(),
                                    BIF(granularity=GranularityRule(0.2)),
                                    FeatureSpace(features=12)])
def test_method_objects_are_frozen_picklable_values(method):
    assert pickle.loads(pickle.dumps(method)) == method
    with pytest.raises(AttributeError):
        method.name = "other"  # class attribute of a frozen value


def test_bind_refuses_what_a_method_does_not_accept():
    with pytest.raises(KernelCVError, match="exact only for krr and lssvm"):
        ClosedForm().bind(make_machine("svm"), "rbf")
    with pytest.raises(KernelCVError, match="hinge SVM"):
        GACV().bind(make_machine("l2svm"), "rbf")
    with pytest.raises(KernelCVError, match="Gaussian"):
        FeatureSpace().bind(make_machine("svm"), "poly")
    with pytest.raises(KernelCVError, match="too small"):
        BIF(granularity=GranularityRule(0.001)).bind(make_machine("svm", huber_width=0.1),
                                                     "rbf")
    with pytest.raises(KernelCVError, match="order must be"):
        BIF(order=0)
    bound = FeatureSpace().bind(make_machine("lssvm"), "rbf", random_state=7)
    assert (bound.feature_loss, bound.feature_seed, bound.feature_intercept) == (
        "square", 7, True)


def test_option_groups_validate_where_they_are_built():
    with pytest.raises(KernelCVError, match="confirm must be"):
        Safeguards(confirm=-1)
    with pytest.raises(KernelCVError, match="lam grid values"):
        SearchSpace.grid("rbf", [1.0], lams=[0.1, -1.0])
    with pytest.raises(KernelCVError, match="either a lam grid or a C grid"):
        SearchSpace.grid("rbf", [1.0], lams=[0.1], Cs=[1.0])
    assert Execution(n_jobs=3).workers == 3 and Execution(n_jobs=3).parallel
    assert Execution(n_jobs=3, backend="sequential").workers == 1
    space = SearchSpace.grid("rbf", [1.0], Cs=[1.0])
    assert space.resolve(50, ExactRefit())[1] == [[1.0 / (2 * 50 * 1.0)]]


def test_a_new_method_plugs_in_without_changing_the_driver(data):
    """A subclass (here: exact refit CV that reports the error on the training parts
    too) runs through run_search, safeguards and reports with no driver change."""

    @dataclass(frozen=True)
    class ExactWithNote(ExactRefit):
        name: ClassVar[str] = "exact-noted"

        def notes(self, candidates, best_index, n_samples):
            return [f"chosen among {len(candidates)} by a plug-in method"]

    X, y = data
    result = run_search(X, y, make_machine("l2svm"), ExactWithNote(),
                        SearchSpace.grid("rbf", GAMMAS, lams=LAMS), folds=4)
    reference = run_search(X, y, make_machine("l2svm"), ExactRefit(),
                           SearchSpace.grid("rbf", GAMMAS, lams=LAMS), folds=4)
    assert [c["score"] for c in result.candidates] == [
        c["score"] for c in reference.candidates]
    # The method's note comes first; the driver's own grid-edge note may follow.
    assert result.method == "exact-noted" and result.notes[0] == ("chosen among 4 by a "
                                                                  "plug-in method")
    assert all(note.startswith("grid edge") for note in result.notes[1:])
