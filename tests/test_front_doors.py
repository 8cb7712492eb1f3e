"""The front doors take objects (issue 39): grid_search, cross_validate(_path), run_select
and run_cv take the machine, the method and the option groups as objects; the 0.1 flat
options still work for one release, with a FutureWarning naming the new spelling, and
give the same results as the objects."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv import (
    BIF,
    Execution,
    FeatureSpace,
    KernelCVError,
    KernelSearchCV,
    Safeguards,
    cross_validate,
    cross_validate_path,
    grid_search,
    make_machine,
)
from kernelcv.cli.cv import run_cv
from kernelcv.reports.command_files import DataFiles, Outputs
from kernelcv.reports.select import run_select
from kernelcv.selection.methods import ClosedForm, ExactRefit
from kernelcv.selection.spectral_method import Spectral


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 3))
    y = np.where(X[:, 0] + 0.4 * rng.normal(size=70) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("front_door", [grid_search, cross_validate, cross_validate_path,
                                        run_select, run_cv, KernelSearchCV.__init__])
def test_no_front_door_has_more_than_fifteen_parameters(front_door):
    parameters = [p for p in inspect.signature(front_door).parameters.values()
                  if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name != "self"]
    assert len(parameters) <= 15


def test_flat_search_options_warn_and_equal_the_objects(data):
    X, y = data
    grid = {"gammas": [0.3, 1.0], "lams": [1e-2, 1e-1], "folds": 4}
    objects = grid_search(X, y, make_machine("svm", huber_width=0.05), method=BIF(order=3),
                          safeguards=Safeguards(confirm=1),
                          execution=Execution(n_jobs=1), **grid)
    with pytest.warns(FutureWarning, match=r"make_machine.*huber_width.*Safeguards"):
        flat = grid_search(X, y, "svm", huber_width=0.05, method="bif", order=3, confirm=1,
                           n_jobs=1, **grid)
    assert [c["score"] for c in flat.candidates] == [c["score"] for c in objects.candidates]
    assert flat.confirmed == objects.confirmed and len(objects.confirmed) >= 1
    assert flat.best_index == objects.best_index
    assert objects.machine_spec.loss.width == 0.05 and objects.order == 3


@pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
def test_flat_cv_options_warn_and_equal_the_objects(data):
    X, y = data
    machine = make_machine("svr", epsilon=0.3, fit_intercept=False)
    objects = cross_validate(X, X[:, 0], machine, gamma=0.5, lam=1e-2, method=BIF(order=4),
                             folds=5)
    with pytest.warns(FutureWarning, match="epsilon"):
        flat = cross_validate(X, X[:, 0], "svr", gamma=0.5, lam=1e-2, method="bif", order=4,
                              epsilon=0.3, fit_intercept=False, folds=5)
    np.testing.assert_array_equal(flat.predictions, objects.predictions)
    assert objects.order == 4 and objects.params["fit_intercept"] is False


def test_an_option_beside_its_object_is_refused(data):
    X, y = data
    with pytest.warns(FutureWarning), pytest.raises(KernelCVError, match="make_machine"):
        grid_search(X, y, make_machine("svm"), huber_width=0.05, gammas=[1.0], lams=[0.1])
    with pytest.warns(FutureWarning), pytest.raises(KernelCVError, match="inside it"):
        grid_search(X, y, "svm", execution=Execution(), n_jobs=2, gammas=[1.0], lams=[0.1])
    with pytest.raises(KernelCVError, match="Safeguards object"):
        grid_search(X, y, "svm", safeguards={"confirm": 0}, gammas=[1.0], lams=[0.1])
    with pytest.raises(KernelCVError, match="kernel_params takes"):
        grid_search(X, y, "krr", kernel="poly", kernel_params={"sigma": 1}, lams=[0.1])
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        grid_search(X, y, "krr", colour="red")
    with pytest.warns(FutureWarning), pytest.raises(KernelCVError, match="method 'bif'"):
        cross_validate(X, y, "lssvm", gamma=1.0, lam=0.1, method="exact", order=5)
    with pytest.raises(KernelCVError, match="cross_validate takes"):
        cross_validate(X, y, "svm", gamma=1.0, lam=0.1, method=FeatureSpace())


def test_kernel_params_fix_the_poly_kernel(data):
    X, y = data
    result = grid_search(X, y, "krr", kernel="poly", degrees=[2], lams=[0.1], folds=4,
                         kernel_params={"gamma": 0.5, "coef0": 2.0})
    reference = cross_validate(X, y, "krr", kernel="poly", gamma=0.5, degree=2, coef0=2.0,
                               lam=0.1, folds=result.fold_ids, method="exact")
    assert result.candidates[0]["cv_error"] == pytest.approx(reference.cv_error, abs=1e-12)


@pytest.mark.parametrize("method", [ExactRefit(), ClosedForm(), BIF(order="inf"),
                                    Spectral(tol=1e-12)])
def test_evaluate_lams_is_the_refit_cv_of_every_lam(data, method):
    """cross_validate_path runs the method's own per-lam code; every method, exact or
    closed form or order inf (square loss), equals refit CV on the same folds."""
    X, y = data
    lams = [1e-3, 3e-2, 1.0]
    path = cross_validate_path(X, y, lams, "lssvm", gamma=0.7, folds=5, method=method)
    for lam, result in zip(lams, path, strict=True):
        exact = cross_validate(X, y, "lssvm", gamma=0.7, lam=lam, folds=5)
        np.testing.assert_allclose(result.predictions, exact.predictions, atol=1e-7)
        assert result.params["lam"] == lam and result.method == method.name


@pytest.mark.filterwarnings("ignore:.*BIF series not converged:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*BIF value not certified:RuntimeWarning")
def test_run_select_and_run_cv_take_files_and_outputs(data, tmp_path):
    X, y = data
    path = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(path))
    files = DataFiles(path, test=path, scale="standard")
    report = run_select(files, machine=make_machine("l2svm", fit_intercept=False),
                        gammas=[0.3], lams=[1e-2, 1e-1], folds=4, method=BIF(order=5),
                        safeguards=Safeguards(confirm=0),
                        outputs=Outputs(out=tmp_path / "out"))
    assert report["fit_intercept"] is False and report["order"] == 5
    assert report["confirmed"] == [] and report["test_error"] is not None
    assert report["scaling"]["kind"] == "standard"
    assert (tmp_path / "out" / "report.json").exists()
    summary = run_cv(DataFiles(path), machine=make_machine("svm", huber_width=0.05),
                     gamma=0.3, lam=1e-2, folds=4, method=BIF(order=2))
    expected = cross_validate(X, y, make_machine("svm", huber_width=0.05), gamma=0.3,
                              lam=1e-2, folds=4, method=BIF(order=2))
    assert summary["cv_error"] == expected.cv_error
    with pytest.raises(KernelCVError, match="takes no test"):
        run_cv(DataFiles(path, test=path), machine="krr", gamma=0.3, lam=1e-2)
    with pytest.raises(KernelCVError, match="--plot"):
        Outputs(plot=True)
    with pytest.raises(KernelCVError, match="scale must be"):
        DataFiles(path, scale="zscore")
