"""The selection criteria compared by ``kernelcv bench``, each run on one training half.

Every criterion searches the same grid (kernel parameter x lam) and, where it uses fixed
folds, the same fold assignment of the training half:

* ``exact t=5|10|20`` — refit t-fold CV with kernelcv's own solvers (t fits per candidate);
* ``closed-form t=10`` — exact 10-fold CV from one eigendecomposition per kernel setting
  (KRR and LS-SVM only);
* ``BIF r=5`` / ``BIF auto`` — one full fit per candidate plus the BIF series of order 5,
  or of the adaptive order (terms added until the tail is below tolerance), 10 folds;
  ``BIF r=5 t=5|20`` the same order on the 5 and 20 folds (the papers' other columns);
* ``eps-BIF e`` — granularity selection: t and r per lam from the tolerated error e
  (eq. 6 of "Granularity selection for cross-validation of SVM"), adaptive stopping
  (``--protocol paper``, Huber-SVM: eq. 6's r, as the paper);
* ``BIF inf +3 exact`` — what ``kernelcv select`` does for the SVMs and SVR: the series'
  limit (order inf), then the best 3 candidates (and more while the next approximate
  score beats the best exact one) confirmed by exact refit CV;
* ``GACV`` — Wahba's generalised approximate CV (Huber-SVM only), O(n) after each fit;
* ``sklearn ...`` — :class:`~sklearn.model_selection.GridSearchCV` with ``SVC``,
  ``KernelRidge`` or ``SVR`` on the same grid and the same 10 folds (``PredefinedSplit``),
  ``refit=False``. kernelcv minimises ``mean loss + lam ||f||^2``, so a fit on m points
  is sklearn's with ``alpha = m lam`` (``C = 1 / (2 m lam)``). Exact CV refits every fold
  with the same lam on its ``n - l_i`` training points, so the search maps lam with the
  mean training-fold size ``m = mean_i (n - l_i)`` (the same alpha as kernelcv on every
  fold when the folds have equal sizes); the chosen lam is then refit on the whole
  training half with ``m = n``.

The LS-SVM tables run kernelcv's ``lssvm`` without a bias term (``fit_intercept=False``,
classification by the sign of f), so that it is the same model as ``KernelRidge`` (which
has no intercept) scored by the 0-1 error of ``sign(f)``: both libraries then compute the
same CV error at every grid point. The ``l2svm``, ``svm`` and ``svr`` tables run the
papers' bias-free machines (``fit_intercept=False``; kernelcv's default fits an intercept),
so the benchmark's numbers are the papers' setting.

Approximate criteria (BIF, eps-BIF, GACV) re-evaluate degenerate candidates exactly (the
kernel-is-identity regime, see the README) and confirm the best ``confirm`` candidates by
exact refit CV (0 by default, so that the approximation is judged on its own).

Selection seconds are the wall time of the search alone; the refit of the chosen model
and its test error are not timed.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, PredefinedSplit
from sklearn.svm import SVC, SVR

from ..estimators import ESTIMATORS
from ..exceptions import KernelCVError
from ..machines import make_machine
from ..selection.gacv_method import GACV
from ..selection.methods import BIF, ClosedForm, CVMethod, ExactRefit, GranularityRule
from ..selection.options import Execution, Safeguards, SearchSpace
from ..selection.search import run_search

REFERENCE = "exact t=10"
SAFE = "BIF inf +3 exact"  # what `kernelcv select` does by default for the SVMs
SAFE_CONFIRM = 3
FOLDS = (5, 10, 20)
EPSILONS = (0.2, 0.1, 0.05)
HUBER_WIDTH = 0.01
SVR_EPSILON = 0.1
LSSVM_INTERCEPT = False  # like-for-like with KernelRidge, which has no intercept
SVM_INTERCEPT = False  # the papers' bias-free l2svm, svm and svr


@dataclass(frozen=True)
class Criterion:
    """One way of selecting the hyperparameters (see the module docstring).

    ``method``: a kernelcv CV method object (:mod:`kernelcv.selection.methods`), or None
    for scikit-learn's ``GridSearchCV``; ``folds``: which of the shared fold sets it uses
    (granularity selection draws its own); ``confirm``: its own number of exact
    confirmations, or None for the bench's ``--confirm``.
    """

    name: str
    method: CVMethod | None
    folds: int = 10
    confirm: int | None = None


def criteria_for(machine: str, eps_rule: str = "adaptive") -> list[Criterion]:
    """The criteria compared for ``machine``, reference (``exact t=10``) first.

    ``eps_rule``: the BIF order of the ``eps-BIF`` criteria, ``"adaptive"`` (ours: the
    bound's t, the series stopped by its observed tail) or ``"bound"`` (the granularity
    paper's eq. 6 order r, ``--protocol paper``).
    """
    out = [Criterion(REFERENCE, ExactRefit(), 10)]
    out += [Criterion(f"exact t={t}", ExactRefit(), t) for t in FOLDS if t != 10]
    if machine in ("krr", "lssvm"):
        out.append(Criterion("closed-form t=10", ClosedForm(), 10))
    out.append(Criterion("BIF r=5", BIF(order=5), 10))
    out += [Criterion(f"BIF r=5 t={t}", BIF(order=5), t) for t in FOLDS if t != 10]
    out.append(Criterion("BIF auto", BIF(order="auto"), 10))
    out += [Criterion(f"eps-BIF {e:g}", BIF(granularity=GranularityRule(e, eps_rule)))
            for e in EPSILONS]
    if machine not in ("krr", "lssvm"):
        out.append(Criterion(SAFE, BIF(order="inf"), 10, confirm=SAFE_CONFIRM))
    if machine == "svm":
        out.append(Criterion("GACV", GACV(), 10))
    out.append(Criterion(f"sklearn {_sklearn_name(machine)}", None, 10))
    return out


def fast_criterion(machine: str) -> str:
    """kernelcv's recommended criterion for ``machine`` (the one timed against sklearn)."""
    return "closed-form t=10" if machine in ("krr", "lssvm") else SAFE


def sklearn_criterion(machine: str) -> str:
    return f"sklearn {_sklearn_name(machine)}"


def _sklearn_name(machine):
    return {"krr": "KernelRidge", "lssvm": "KernelRidge", "svr": "SVR"}.get(machine, "SVC")


def run_criterion(criterion: Criterion, machine: str, kernel: str, grid: dict, X, y,
                  X_test, y_test, fold_sets: dict, seed: int, *, confirm: int = 0,
                  n_jobs: int = 1, svr_tube: float = SVR_EPSILON,
                  svr_huber: float = HUBER_WIDTH, intercept: bool | None = None) -> dict:
    """Select on ``(X, y)`` with ``criterion``, refit, and measure the test error.

    Parameters
    ----------
    grid : ``{"gammas": [...]}`` (rbf) or ``{"degrees": [...]}`` (poly), plus ``"lams"``.
    fold_sets : ``{t: fold ids}`` for t in 5, 10, 20, shared by all criteria.
    seed : seed of the folds that granularity selection draws itself.
    svr_tube, svr_huber : the SVR's tube width epsilon and its Huber width (both
        libraries use the same tube).
    intercept : fit a bias term in kernelcv's LS-SVM, L2-SVM, Huber-SVM and SVR (None:
        the bench's default, :func:`machine_intercept`).

    Returns
    -------
    dict
        ``test_error``, ``seconds`` (selection only), ``best_params``, ``cv_error`` (the
        criterion's value at the chosen candidate) and ``notes``; or ``{"error": message}``
        when the criterion failed (the benchmark goes on).
    """
    options = _machine_options(machine, svr_tube, svr_huber, intercept)
    try:
        if criterion.method is None:
            return _run_sklearn(machine, kernel, grid, X, y, X_test, y_test,
                                fold_sets[10], n_jobs, svr_tube)
        return _run_kernelcv(criterion, machine, kernel, grid, X, y, X_test, y_test,
                             fold_sets, seed, confirm, n_jobs, options)
    except KernelCVError as exc:
        return {"error": str(exc)}
    except (ValueError, np.linalg.LinAlgError) as exc:  # solver failure on one split
        return {"error": f"{type(exc).__name__}: {exc}"}


def machine_intercept(machine, intercept=None):
    """The benchmark's intercept setting of a machine (None for krr, which has none):
    ``intercept`` when given, else bias-free (:data:`LSSVM_INTERCEPT`,
    :data:`SVM_INTERCEPT`)."""
    if machine == "krr":
        return None
    if intercept is not None:
        return bool(intercept)
    return LSSVM_INTERCEPT if machine == "lssvm" else SVM_INTERCEPT


def _machine_options(machine, svr_tube=SVR_EPSILON, svr_huber=HUBER_WIDTH, intercept=None):
    bias = machine_intercept(machine, intercept)
    if machine in ("lssvm", "l2svm"):
        return {"fit_intercept": bias}
    if machine == "svm":
        return {"huber_width": HUBER_WIDTH, "fit_intercept": bias}
    if machine == "svr":
        return {"huber_width": svr_huber, "epsilon": svr_tube, "fit_intercept": bias}
    return {}


def _run_kernelcv(criterion, machine, kernel, grid, X, y, X_test, y_test, fold_sets, seed,
                  confirm, n_jobs, options):
    space = (SearchSpace.grid(kernel, grid["gammas"], lams=grid["lams"]) if kernel != "poly"
             else SearchSpace.grid(kernel, degrees=grid["degrees"], lams=grid["lams"],
                                   gamma=1.0, coef0=1.0))
    spec = make_machine(machine, huber_width=options.get("huber_width", HUBER_WIDTH),
                        epsilon=options.get("epsilon", SVR_EPSILON),
                        fit_intercept=options.get("fit_intercept"))
    guards = Safeguards(confirm=confirm if criterion.confirm is None else criterion.confirm)
    tic = time.perf_counter()
    # seed: the folds that granularity selection draws itself (the others are given)
    result = run_search(X, y, spec, criterion.method, space,
                        folds=fold_sets[criterion.folds], random_state=seed,
                        safeguards=guards, execution=Execution(n_jobs=n_jobs))
    seconds = time.perf_counter() - tic
    params = dict(result.best_params)
    model = ESTIMATORS[machine](**params, **options).fit(X, y)
    best = result.best
    return {"test_error": _test_error(machine, model.predict(X_test), y_test),
            "seconds": seconds, "best_params": params,
            "cv_error": best["score"], "notes": list(result.notes)}


def fold_training_size(fold_ids) -> float:
    """Mean number of training points over the folds, ``m = mean_i (n - l_i)`` (O(n))."""
    fold_ids = np.asarray(fold_ids)
    _, sizes = np.unique(fold_ids, return_counts=True)
    return float(np.mean(fold_ids.shape[0] - sizes))


def sklearn_units(machine, lams, n_fit):
    """kernelcv's lam in scikit-learn's units for a fit on ``n_fit`` points:
    ``("alpha", n_fit lam)`` for KernelRidge, ``("C", 1 / (2 n_fit lam))`` for SVC/SVR."""
    lams = np.asarray(lams, dtype=np.float64)
    if machine in ("krr", "lssvm"):
        return "alpha", n_fit * lams
    return "C", 1.0 / (2.0 * n_fit * lams)


def sklearn_search(machine, kernel, grid, n_fit, svr_tube=SVR_EPSILON):
    """The scikit-learn estimator, its parameter grid (in sklearn's units for fits on
    ``n_fit`` points, see :func:`sklearn_units`) and its scoring (``svr_tube``: SVR's
    epsilon)."""
    kernel_grid = ({"gamma": list(grid["gammas"])} if kernel != "poly"
                   else {"degree": list(grid["degrees"])})
    fixed = {"kernel": kernel}
    if kernel == "poly":
        fixed.update(gamma=1.0, coef0=1.0)
    name, values = sklearn_units(machine, grid["lams"], n_fit)
    if machine in ("krr", "lssvm"):
        estimator = KernelRidge(**fixed)
        scoring = "neg_mean_squared_error" if machine == "krr" else _sign_accuracy
    else:
        estimator = (SVR(epsilon=svr_tube, **fixed) if machine == "svr"
                     else SVC(**fixed))
        scoring = "neg_mean_squared_error" if machine == "svr" else "accuracy"
    return estimator, {**kernel_grid, name: list(values)}, scoring


def _sign_accuracy(estimator, X, y):
    """Accuracy of ``sign(f)`` for a regressor used as a classifier (f = 0 counts as +1)."""
    return float(np.mean(np.where(estimator.predict(X) >= 0, 1.0, -1.0) == y))


def _run_sklearn(machine, kernel, grid, X, y, X_test, y_test, fold_ids, n_jobs, svr_tube):
    m = fold_training_size(fold_ids)
    estimator, param_grid, scoring = sklearn_search(machine, kernel, grid, m, svr_tube)
    search = GridSearchCV(estimator, param_grid, scoring=scoring,
                          cv=PredefinedSplit(fold_ids), refit=False, n_jobs=n_jobs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tic = time.perf_counter()
        search.fit(X, y)
        seconds = time.perf_counter() - tic
        best = dict(search.best_params_)
        # back to lam, then refit on the whole half with that lam (m = n)
        name = "alpha" if "alpha" in best else "C"
        searched = np.asarray(param_grid[name])
        lam = float(np.asarray(grid["lams"])[int(np.argmin(np.abs(searched - best[name])))])
        best[name] = float(sklearn_units(machine, [lam], X.shape[0])[1][0])
        model = estimator.set_params(**best).fit(X, y)
        predictions = model.predict(X_test)
    if machine == "lssvm":
        predictions = np.where(predictions >= 0, 1.0, -1.0)
    notes = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}"
                    for w in caught})
    return {"test_error": _test_error(machine, predictions, y_test), "seconds": seconds,
            "best_params": {k: float(v) for k, v in best.items()}, "lam": lam,
            "cv_error": float(-search.best_score_) if machine in ("krr", "svr")
            else float(1.0 - search.best_score_), "notes": notes[:3]}


def _test_error(machine, predictions, y_test) -> float:
    if machine in ("krr", "svr"):
        return float(np.mean((predictions - y_test) ** 2))
    return float(np.mean(predictions != y_test))
