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
from dataclasses import replace

import numpy as np

from ._threads import blas_threads_for, n_rows
from .criteria.certificate import UNCERTIFIED
from .criteria.closed_form import ClosedFormCV
from .criteria.conditioning import ILL_CONDITIONED
from .criteria.evaluate import evaluate_lam
from .criteria.multiclass import MulticlassCV
from .criteria.result import CVResult
from .criteria.spectral import spectral_evaluations
from .criteria.truncation import UNCONVERGED
from .exceptions import KernelCVError
from .kernels import GramFactory, make_kernel, resolve_gamma
from .machines import make_machine
from .memory import check_dense_budget
from .selection.methods import BIF, ClosedForm, ExactRefit, parse_order
from .selection.spectral_method import Spectral
from .validation import check_data, check_positive, make_folds, splitter_fold_ids

__all__ = ["METHODS", "cross_validate", "cross_validate_path", "parse_order"]

# The methods cross_validate offers: those that give held-out predictions of one setting.
METHODS = (ExactRefit.name, ClosedForm.name, BIF.name, Spectral.name)
_METHOD_CLASSES = {ExactRefit.name: ExactRefit, ClosedForm.name: ClosedForm,
                   BIF.name: BIF, Spectral.name: Spectral}


def _prepare(X, y, machine, kernel, gamma, degree, coef0, huber_width, epsilon,
             fit_intercept, multiclass, folds, method, order, random_state, tol,
             memory_budget):
    spec = make_machine(machine, huber_width=huber_width, epsilon=epsilon,
                        fit_intercept=fit_intercept, multiclass=multiclass)
    if isinstance(method, tuple(_METHOD_CLASSES.values())):
        criterion = method  # its options travel inside it
    elif not isinstance(method, str) or method not in METHODS:
        raise KernelCVError(f"unknown method {method!r}; choose one of {', '.join(METHODS)} "
                            "or give one of their method objects")
    else:
        criterion = (BIF(order=order, tol=tol) if method == BIF.name
                     else _METHOD_CLASSES[method]())
    criterion.bind(spec, kernel)
    order = criterion.reported_order()
    X, y, mapping = check_data(X, y, spec.is_classifier, multiclass=True)
    kern = make_kernel(kernel, resolve_gamma(gamma, X), degree, coef0)
    if spec.is_classifier and len(mapping) > 2:
        spec = replace(spec, n_classes=len(mapping))
    fold_ids = make_folds(y, folds, spec.is_classifier, random_state)
    n = y.shape[0]
    check_dense_budget(n, n, criterion.dense_matrices, f"method {method!r} on {n} samples",
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
                   coef0=1.0, huber_width=0.01, epsilon=0.1, fit_intercept=None,
                   multiclass="ovo", folds=10, method="exact", order="inf", random_state=0,
                   tol=1e-6, memory_budget=None, groups=None) -> CVResult:
    """Estimate the t-fold cross-validation error of a kernel machine.

    Parameters
    ----------
    X : array or sparse matrix, shape (n, d)
    y : array, shape (n,)
        Targets; for classifiers labels of any type: two classes are mapped to -1/+1
        (smaller first), more are split into binary machines by ``multiclass``.
    machine : {"krr", "lssvm", "l2svm", "svm", "svr"}
        See :mod:`kernelcv.machines`; ``svm``/``svr`` are the Huber-smoothed machines.
    kernel : {"rbf", "laplace", "poly", "linear"}
    gamma : float, "scale" or "auto"
        Kernel width (required for rbf and laplace); ``gamma = 1 / (2 sigma^2)``.
        ``"scale"`` and ``"auto"`` are SVC's (and the estimators') conventions:
        ``1 / (n_features * X.var())`` and ``1 / n_features``.
    lam : float
        Regularisation of ``(1/n) sum loss + lam ||f||^2``; scikit-learn's KernelRidge
        ``alpha = n lam``, SVC ``C = 1 / (2 n lam)``. Fold-out fits keep the same lam.
    degree, coef0 : polynomial kernel parameters.
    huber_width : smoothing width of ``svm`` and ``svr`` (default 0.01).
    epsilon : insensitivity of ``svr``.
    fit_intercept : bool or None
        Unregularised intercept ``b`` (``f = K alpha + b``). None: True for lssvm, l2svm,
        svm and svr, False for krr (always bias-free); False gives the papers' bias-free
        machines. Fold-out fits refit their own intercept.
    multiclass : {"ovo", "ovr"}
        More than two classes: one machine per pair of classes (trained on their rows;
        default) or one per class against the rest, each cross-validated on the same
        folds; a held-out point gets the class its fold-out machines vote for
        (one-vs-one, scikit-learn's ``OneVsOneClassifier`` rule) or the largest value
        (one-vs-rest), and the CV error is the multiclass 0-1 error (see
        :mod:`kernelcv.criteria.multiclass`).
    folds : int, array of n fold ids, scikit-learn splitter or list of (train, test)
        t shuffled (stratified for classifiers) folds, explicit fold ids, or the splits
        of a splitter (``KFold(5)``, ``StratifiedKFold(5)``, ``GroupKFold(5)`` with
        ``groups``, ``LeaveOneOut()``, ...) whose test sets partition the samples (see
        :func:`kernelcv.validation.splitter_fold_ids`).
    method : {"exact", "closed-form", "bif", "spectral"} or a method object
        ``"spectral"``: exact for every machine, from one eigendecomposition of K (all
        lam values of :func:`cross_validate_path` share it). A method object of
        :mod:`kernelcv.selection` (``BIF(order=8)``, ``Spectral(tol=1e-12)``,
        ``ExactRefit()``, ``ClosedForm()``) carries its own options; ``order`` and
        ``tol`` are then not used.
    order : int, "inf" or "auto", default "inf"
        BIF order (``method="bif"`` only). ``"inf"`` (as ``kernelcv cv`` and the
        searches): the finite orders are biased toward the training error at small lam.
    random_state : int or None, default 0
        Seed of the fold assignment when ``folds`` is an int: the same folds, and the
        same answer, on every call (None: numpy's global random state).
    tol : float
        Tolerance of ``order="auto"`` relative to ``max |F|``.
    memory_budget : bytes, "8G", or None (see :mod:`kernelcv.memory`).
    groups : array of n group labels, for a splitter that uses them (``GroupKFold``).

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
    return cross_validate_path(
        X, y, [lam], machine=machine, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0,
        huber_width=huber_width, epsilon=epsilon, fit_intercept=fit_intercept,
        multiclass=multiclass, folds=folds, method=method, order=order,
        random_state=random_state, tol=tol, memory_budget=memory_budget, groups=groups)[0]


def cross_validate_path(X, y, lams, machine="krr", kernel="rbf", gamma=None, *, degree=3,
                        coef0=1.0, huber_width=0.01, epsilon=0.1, fit_intercept=None,
                        multiclass="ovo", folds=10, method="exact", order="inf",
                        random_state=0, tol=1e-6, memory_budget=None,
                        groups=None) -> list[CVResult]:
    """:func:`cross_validate` for several lam values sharing the kernel and the folds.

    The Gram matrix is computed once; ``closed-form`` shares one eigendecomposition across
    all lam values, the other methods warm-start each full fit from the previous lam
    (taken in decreasing order). Results come back in the order of ``lams``. ``folds``
    and ``groups`` as in :func:`cross_validate` (a splitter is split once, here).
    """
    if X is None or y is None:
        raise KernelCVError("both X and y are required")
    folds = splitter_fold_ids(folds, X, y, groups)
    with blas_threads_for(n_rows(y)):
        return _run_path(X, y, lams, machine, kernel, gamma, degree, coef0, huber_width,
                         epsilon, fit_intercept, multiclass, folds, method, order,
                         random_state, tol, memory_budget)


def _run_path(X, y, lams, machine, kernel, gamma, degree, coef0, huber_width, epsilon,
              fit_intercept, multiclass, folds, method, order, random_state, tol,
              memory_budget):
    lams = np.atleast_1d(np.asarray(lams, dtype=object))
    if lams.size == 0:
        raise KernelCVError("give at least one lam value")
    lam_values = [check_positive("lam", value) for value in lams]
    start = time.perf_counter()
    spec, criterion, K, y, fold_ids, mapping, params, notes = _prepare(
        X, y, machine, kernel, gamma, degree, coef0, huber_width, epsilon, fit_intercept,
        multiclass, folds, method, order, random_state, tol, memory_budget)
    # a method object carries its own options: its name and theirs from here on
    method, order = criterion.name, criterion.reported_order()
    tol = getattr(criterion, "tol", tol)
    setup_seconds = time.perf_counter() - start
    closed = multi = None
    tic = time.perf_counter()
    if spec.is_multiclass and method != Spectral.name:
        multi = MulticlassCV(K, y, fold_ids, spec, closed_form=method == "closed-form")
    elif method == "closed-form":
        closed = ClosedFormCV(K, fold_ids, fit_intercept=spec.fit_intercept)
    setup_seconds += time.perf_counter() - tic
    results: list[CVResult | None] = [None] * len(lam_values)
    previous = None
    spectral = None
    if method == Spectral.name:  # every lam at once, from one eigendecomposition
        spectral = spectral_evaluations(K, y, fold_ids, lam_values, spec,
                                        tol=criterion.tol, max_steps=criterion.max_steps,
                                        huber=criterion.huber)
    for position in np.argsort(lam_values)[::-1]:
        lam = lam_values[position]
        if spectral is not None:
            ev = spectral[position]
            predictions = getattr(ev, "decisions", ev.predictions)
            codes = (ev.predictions if spec.is_multiclass
                     else (ev.predictions >= 0).astype(np.intp))
        elif multi is not None:
            ev = multi.evaluate(lam, spec, method, order=order, tol=tol, warm=previous)
            predictions, codes = ev.decisions, ev.predictions
        else:
            ev = evaluate_lam(K, y, fold_ids, lam, spec, method, order=order, tol=tol,
                              closed=closed, warm=previous)
            predictions, codes = ev.predictions, (ev.predictions >= 0).astype(np.intp)
        labels = None
        if mapping is not None:
            keys = sorted(mapping)  # -1, 1 or 0..k-1: position = code
            labels = np.asarray([mapping[key] for key in keys])[codes]
        previous = ev.fit
        results[position] = CVResult(
            cv_error=ev.cv_error, fold_errors=ev.fold_errors, method=method,
            order=order, order_used=ev.order_used,
            n_folds=int(fold_ids.max()) + 1, n_samples=y.shape[0],
            seconds=ev.seconds + setup_seconds / len(lam_values),
            fit_seconds=ev.fit_seconds, degenerate=ev.degenerate,
            heldout_ratio=ev.heldout_ratio, metric=spec.metric, params={**params, "lam": lam},
            label_mapping=mapping, predictions=predictions, labels=labels,
            notes=notes + ev.notes,
            truncation_error=ev.truncation_error, unconverged=bool(ev.unconverged),
            rounding_error=ev.rounding_error, ill_conditioned=bool(ev.ill_conditioned),
            certified_error=ev.certified_error, uncertified=bool(ev.uncertified))
    for result in results:
        for flag, head in ((result.unconverged, UNCONVERGED),
                           (result.ill_conditioned, ILL_CONDITIONED),
                           (result.uncertified, UNCERTIFIED)):
            note = next((n for n in result.notes if head in n), None)
            if flag and note is not None:
                warnings.warn(f"lam = {result.params['lam']:g}: {note}", RuntimeWarning,
                              stacklevel=3)
    return results
