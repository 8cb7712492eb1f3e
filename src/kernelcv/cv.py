"""Public cross-validation API: one function that validates, builds the kernel and runs a criterion.

``method``:

* ``"exact"`` -- refit on every training part (:mod:`kernelcv.criteria.exact`); ground truth.
* ``"closed-form"`` -- exact t-fold / leave-one-out for ``krr`` and ``lssvm`` from one
  eigendecomposition (:mod:`kernelcv.criteria.closed_form`).
* ``"bif"`` -- one full-data fit plus the BIF correction of order ``order``
  (:mod:`kernelcv.criteria.bif`).
* ``"spectral"`` -- exact t-fold CV of any machine for every lam from one
  eigendecomposition (:mod:`kernelcv.criteria.spectral`; batched majorize-minimize steps).

The method's checks (machines it accepts, order, memory need) are those of its method
object in :mod:`kernelcv.selection.methods`, so ``cross_validate`` and the grid search
refuse the same things with the same words (``parse_order`` is re-exported from there).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ._threads import blas_threads_for, n_rows
from .criteria.certificate import UNCERTIFIED
from .criteria.conditioning import ILL_CONDITIONED
from .criteria.result import CVResult, weigh_errors
from .criteria.truncation import UNCONVERGED
from .exceptions import KernelCVError
from .kernels import GramFactory, make_kernel, resolve_gamma
from .memory import check_dense_budget
from .selection.methods import BIF, ClosedForm, CVMethod, ExactRefit, parse_order
from .selection.moved_options import machine_of, split_moved
from .selection.spectral_method import Spectral
from .validation import (
    check_data,
    check_positive,
    check_sample_weight,
    make_folds,
    splitter_fold_ids,
)

__all__ = ["METHODS", "cross_validate", "cross_validate_path", "parse_order"]

# The methods cross_validate offers: those that give held-out predictions of one setting.
METHODS = (ExactRefit.name, ClosedForm.name, BIF.name, Spectral.name)
_METHOD_CLASSES = {ExactRefit.name: ExactRefit, ClosedForm.name: ClosedForm,
                   BIF.name: BIF, Spectral.name: Spectral}


def _machine_and_method(machine, method, moved: dict, owner: str):
    """The machine and method objects of a call: names or objects, plus the 0.1 flat
    options (``huber_width``, ``order``, ...) with their ``FutureWarning``."""
    old = split_moved(owner, moved, machine_epsilon=True, stacklevel=4)
    if old.execution or old.safeguards or old.kernel_params:
        names = [*old.execution, *old.safeguards, *old.kernel_params]
        raise TypeError(f"{owner}() got an unexpected keyword argument {names[0]!r}")
    spec = machine_of(machine, old.machine)
    if isinstance(method, CVMethod):
        if old.method:
            raise KernelCVError(f"method is the object {method!r}: give its options "
                                f"({', '.join(old.method)}) inside it")
        if not isinstance(method, tuple(_METHOD_CLASSES.values())):
            raise KernelCVError(f"cross_validate takes the methods {', '.join(METHODS)} "
                                f"(or their objects), not {method.name!r}")
        return spec, method
    if not isinstance(method, str) or method not in METHODS:
        raise KernelCVError(f"unknown method {method!r}; choose one of {', '.join(METHODS)} "
                            "or give one of their method objects")
    if method == BIF.name:
        return spec, BIF(**old.method)
    if old.method:
        raise KernelCVError(f"{', '.join(old.method)} belong(s) to method 'bif', not "
                            f"{method!r}")
    return spec, _METHOD_CLASSES[method]()


def _prepare(X, y, spec, criterion, kernel, gamma, degree, coef0, folds, random_state,
             memory_budget, sample_weight=None):
    criterion.bind(spec, kernel)
    X, y, mapping = check_data(X, y, spec.is_classifier, multiclass=True)
    kern = make_kernel(kernel, resolve_gamma(gamma, X), degree, coef0)
    spec = spec.for_labels(mapping, y)
    if sample_weight is not None:
        spec = spec.with_sample_weight(check_sample_weight(sample_weight, y.shape[0]))
        criterion.bind(spec, kernel)  # the methods without weights refuse them
    fold_ids = make_folds(y, folds, spec.is_classifier, random_state)
    n = y.shape[0]
    check_dense_budget(n, n, criterion.dense_matrices,
                       f"method {criterion.name!r} on {n} samples",
                       memory_budget)
    K = GramFactory(X, memory_budget=memory_budget).gram(kern)
    params = {**spec.params(), **kern.params()}
    notes = []
    if spec.is_multiclass:
        notes.append(f"{len(mapping)} classes, {spec.multiclass}: the CV error is the "
                     "multiclass 0-1 error of the combined binary machines")
    elif mapping is not None and set(mapping.values()) != {-1, 1}:
        notes.append(f"labels {mapping[-1]!r}/{mapping[1]!r} mapped to -1/+1")
    return spec, criterion, K, y, fold_ids, mapping, params, notes


def cross_validate(X, y, machine="krr", kernel="rbf", gamma=None, lam=1e-3, *, degree=3,
                   coef0=1.0, folds=10, method="exact", random_state=0, memory_budget=None,
                   groups=None, sample_weight=None, **moved) -> CVResult:
    """Estimate the t-fold cross-validation error of a kernel machine.

    Parameters
    ----------
    X : array or sparse matrix, shape (n, d)
    y : array, shape (n,)
        Targets; for classifiers labels of any type: two classes are mapped to -1/+1
        (smaller first), more are split into binary machines by ``multiclass``.
    machine : {"krr", "lssvm", "l2svm", "svm", "svr"} or a machine object
        See :mod:`kernelcv.machines`; ``svm``/``svr`` are the Huber-smoothed machines. A
        name gets the machine's defaults; :func:`kernelcv.make_machine` sets its options
        (``make_machine("svr", huber_width=0.05, epsilon=0.2, fit_intercept=False,
        multiclass="ovr")``): ``huber_width``, the smoothing width of ``svm`` and ``svr``
        (default 0.01); ``epsilon``, the insensitivity of ``svr``; ``fit_intercept``, an
        unregularised intercept ``b`` (``f = K alpha + b``; None: True for lssvm, l2svm,
        svm and svr, False for krr; fold-out fits refit their own intercept);
        ``multiclass``, ``"ovo"`` (one machine per pair of classes, trained on their
        rows; default) or ``"ovr"`` (one per class against the rest), each
        cross-validated on the same folds; a held-out point gets the class its fold-out
        machines vote for (one-vs-one, scikit-learn's ``OneVsOneClassifier`` rule) or the
        largest value (one-vs-rest), and the CV error is the multiclass 0-1 error (see
        :mod:`kernelcv.criteria.multiclass`).
    kernel : {"rbf", "laplace", "poly", "linear"}
    gamma : float, "scale" or "auto"
        Kernel width (required for rbf and laplace); ``gamma = 1 / (2 sigma^2)``.
        ``"scale"`` and ``"auto"`` are SVC's (and the estimators') conventions:
        ``1 / (n_features * X.var())`` and ``1 / n_features``.
    lam : float
        Regularisation of ``(1/n) sum loss + lam ||f||^2``; scikit-learn's KernelRidge
        ``alpha = n lam``, SVC ``C = 1 / (2 n lam)``. Fold-out fits keep the same lam.
    degree, coef0 : polynomial kernel parameters.
    folds : int, array of n fold ids, scikit-learn splitter or list of (train, test)
        t shuffled (stratified for classifiers) folds, explicit fold ids, or the splits
        of a splitter (``KFold(5)``, ``StratifiedKFold(5)``, ``GroupKFold(5)`` with
        ``groups``, ``LeaveOneOut()``, ...) whose test sets partition the samples (see
        :func:`kernelcv.validation.splitter_fold_ids`).
    method : {"exact", "closed-form", "bif", "spectral"} or a method object
        ``"spectral"``: exact for every machine, from one eigendecomposition of K (all
        lam values of :func:`cross_validate_path` share it). A method object of
        :mod:`kernelcv.selection` carries its own options: ``BIF(order=8)`` (the BIF
        order, an int, ``"inf"`` -- the name's default, as ``kernelcv cv`` and the
        searches: the finite orders are biased toward the training error at small lam
        -- or ``"auto"`` with ``tol`` relative to ``max |F|``), ``Spectral(tol=1e-12)``,
        ``ExactRefit()``, ``ClosedForm()``.
    random_state : int or None, default 0
        Seed of the fold assignment when ``folds`` is an int: the same folds, and the
        same answer, on every call (None: numpy's global random state).
    memory_budget : bytes, "8G", or None (see :mod:`kernelcv.memory`).
    groups : array of n group labels, for a splitter that uses them (``GroupKFold``).
    sample_weight : array of n weights of the rows' loss terms (finite, >= 0), or None;
        every fold-out model keeps its rows' weights, the CV error itself is unweighted
        (:mod:`kernelcv.machines.weights`). Not with ``closed-form``.
    **moved : the flat options of kernelcv 0.1 (``huber_width=``, ``epsilon=``,
        ``fit_intercept=``, ``multiclass=``, ``order=``, ``tol=``), still taken with a
        ``FutureWarning`` that shows the new spelling.

    Returns
    -------
    CVResult
        ``cv_error`` is the 0-1 error (classifiers) or MSE (regressors) of the held-out
        predictions. ``degenerate`` warns that a finite-order BIF value is rounding noise
        on more than 1 % of the samples (tiny kernel width): use ``method="exact"`` or
        ``order="inf"``, whose held-out values are formed directly. A BIF value of a
        finite or automatic order carries ``truncation_error``, its estimated distance
        from the series limit; ``unconverged`` (with a ``RuntimeWarning``) says that it
        exceeds the tolerance (0.01 of 0-1 error, 1 % of the MSE). Every BIF value (order
        ``"inf"`` too) carries ``rounding_error``, the estimated effect of rounding at
        tiny ``n lam``; ``ill_conditioned`` (with a ``RuntimeWarning``) says that it
        exceeds the same tolerance: use ``method="exact"`` there. A BIF value of the
        l2svm, svm or svr carries ``certified_error``, a guaranteed bound on its
        distance from exact refit CV (points changing loss piece, and truncation);
        ``uncertified`` (with a ``RuntimeWarning``) says that it exceeds the tolerance.
        ``predictions`` are the held-out decision values, (n, m) with one column per
        binary machine for more than two classes; ``labels`` the held-out predicted
        labels of a classifier.

    Notes
    -----
    Cost for n samples and t folds: exact ~ t full fits; closed-form one ``eigh``
    (``O(n^3)``) plus ``O(n^2 (t + n/t))``; bif one full fit plus ``O(n |A| t)`` per order.
    """
    spec, criterion = _machine_and_method(machine, method, moved, "cross_validate")
    return cross_validate_path(
        X, y, [lam], machine=spec, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0,
        folds=folds, method=criterion, random_state=random_state,
        memory_budget=memory_budget, groups=groups, sample_weight=sample_weight)[0]


def cross_validate_path(X, y, lams, machine="krr", kernel="rbf", gamma=None, *, degree=3,
                        coef0=1.0, folds=10, method="exact", random_state=0,
                        memory_budget=None, groups=None, sample_weight=None,
                        **moved) -> list[CVResult]:
    """:func:`cross_validate` for several lam values sharing the kernel and the folds.

    The Gram matrix is computed once and the method's own per-lam code runs on it
    (:meth:`kernelcv.selection.CVMethod.evaluate_lams`): ``closed-form`` and
    ``spectral`` share one eigendecomposition across all lam values, the other methods
    warm-start each full fit from the previous lam (taken in decreasing order). Results
    come back in the order of ``lams``. The parameters are :func:`cross_validate`'s;
    ``folds`` and ``groups`` as there (a splitter is split once, here).
    """
    if X is None or y is None:
        raise KernelCVError("both X and y are required")
    spec, criterion = _machine_and_method(machine, method, moved, "cross_validate_path")
    if isinstance(folds, str):
        raise KernelCVError(
            f"folds={folds!r}: give a number of folds, fold ids or a splitter (granularity "
            "selection, folds='auto', chooses t per lam in grid_search with "
            "method=BIF(granularity=GranularityRule(epsilon)))")
    folds = splitter_fold_ids(folds, X, y, groups)
    with blas_threads_for(n_rows(y)):
        return _run_path(X, y, lams, spec, criterion, kernel, gamma, degree, coef0, folds,
                         random_state, memory_budget, sample_weight)


def _run_path(X, y, lams, spec, criterion, kernel, gamma, degree, coef0, folds,
              random_state, memory_budget, sample_weight=None):
    lams = np.atleast_1d(np.asarray(lams, dtype=object))
    if lams.size == 0:
        raise KernelCVError("give at least one lam value")
    lam_values = [check_positive("lam", value) for value in lams]
    start = time.perf_counter()
    spec, criterion, K, y, fold_ids, mapping, params, notes = _prepare(
        X, y, spec, criterion, kernel, gamma, degree, coef0, folds, random_state,
        memory_budget, sample_weight)
    order = criterion.reported_order()
    setup_seconds = time.perf_counter() - start
    evaluations = [weigh_errors(ev, y, fold_ids, spec)
                   for ev in criterion.evaluate_lams(K, y, fold_ids, lam_values, spec)]
    results = []
    for lam, ev in zip(lam_values, evaluations, strict=True):
        if spec.is_multiclass:
            predictions, codes = ev.decisions, ev.predictions
        else:
            predictions, codes = ev.predictions, (ev.predictions >= 0).astype(np.intp)
        labels = None
        if mapping is not None:
            keys = sorted(mapping)  # -1, 1 or 0..k-1: position = code
            labels = np.asarray([mapping[key] for key in keys])[codes]
        results.append(CVResult(
            cv_error=ev.cv_error, fold_errors=ev.fold_errors, method=criterion.name,
            order=order, order_used=ev.order_used,
            n_folds=int(fold_ids.max()) + 1, n_samples=y.shape[0],
            seconds=ev.seconds + setup_seconds / len(lam_values),
            fit_seconds=ev.fit_seconds, degenerate=ev.degenerate,
            heldout_ratio=ev.heldout_ratio, metric=spec.metric, params={**params, "lam": lam},
            label_mapping=mapping, predictions=predictions, labels=labels,
            notes=notes + ev.notes,
            truncation_error=ev.truncation_error, unconverged=bool(ev.unconverged),
            rounding_error=ev.rounding_error, ill_conditioned=bool(ev.ill_conditioned),
            certified_error=ev.certified_error, uncertified=bool(ev.uncertified)))
    for result in results:
        for flag, head in ((result.unconverged, UNCONVERGED),
                           (result.ill_conditioned, ILL_CONDITIONED),
                           (result.uncertified, UNCERTIFIED)):
            note = next((n for n in result.notes if head in n), None)
            if flag and note is not None:
                warnings.warn(f"lam = {result.params['lam']:g}: {note}", RuntimeWarning,
                              stacklevel=3)
    return results
