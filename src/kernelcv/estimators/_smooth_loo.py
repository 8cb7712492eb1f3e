"""``SmoothLOOLSSVMClassifier``: an LS-SVM whose many kernel weights are tuned by SLOO-MPS.

Each binary LS-SVM (one per pair of classes, or one per class) gets its own kernel
weights, tuned by minimising the smooth leave-one-out error of
:mod:`kernelcv.criteria.smooth_loo` with :func:`kernelcv.selection.tuning.minimize_restarts`.
"""

from __future__ import annotations

import warnings
from itertools import combinations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import gen_batches
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._threads import separate_blas_pools
from ..criteria.smooth_loo import (
    DEFAULT_GAMMA_S,
    PAPER_BETAS,
    SmoothLOOObjective,
    ard_gram,
    component_grams,
    distance_bases,
    loo_error,
    smooth_loo_value,
    split_params,
)
from ..exceptions import KernelCVError
from ..memory import check_dense_budget
from ..selection.tuning import minimize_restarts
from ..validation import check_scale
from .smooth_loo_tuning import TUNING_PARAMS, SmoothLOOTuning

_BLOCK_ENTRIES = 2**22


class SmoothLOOLSSVMClassifier(ClassifierMixin, BaseEstimator):
    """LS-SVM classifier with a kernel mixture tuned by the smooth LOO error (SLOO-MPS).

    Each binary machine solves ``[[H, 1], [1', 0]] [alpha; b] = [y; 0]`` with
    ``H = sum_i theta_i^2 K_i + I/C`` over Gaussian ``exp(-||x - x'||^2 / beta)`` and Laplace
    ``exp(-||x - x'||_1 / beta)`` kernels (and optionally an ARD Gaussian with one width per
    feature); every ``theta_i`` (and ``C`` if ``tune_C``) is chosen by minimising the
    tanh-smoothed leave-one-out error by conjugate gradients (Bo, Wang & Jiao).

    Parameters
    ----------
    kernels : tuple of {"gaussian", "laplace"} or comma string, default=("gaussian", "laplace")
        Kernel families; each is used with every width in ``betas``. May be empty if ``ard``.
    betas : tuple of float > 0, default=(0.01, 0.1, 1, 10, 100)
        Fixed kernel widths.
    ard : bool, default=False
        Add an ARD Gaussian ``exp(-sum_d (x_d - x'_d)^2 / beta_d)`` whose widths are tuned.
    C : float > 0, default=1.0
        Regularisation (the start value if ``tune_C``). With free weights only the ratio
        matters, so tuning C is needed only for a single kernel.
    tune_C : bool, default=False
        Tune C as well.
    gamma_s : float > 0, default=10
        Sharpness of the tanh that smooths the step function.
    fit_intercept : bool, default=True
        The LS-SVM bias ``b`` (the paper's model has one).
    multiclass : {"ovo", "ovr"}, default="ovo"
        One-against-one (the paper's choice, majority vote) or one-against-rest.
    optimizer : {"cg", "lbfgs"}, default="cg"
        scipy's nonlinear conjugate gradient (the paper's) or L-BFGS-B.
    n_restarts : int >= 1, default=3
        Starting points: all ``theta = 1`` (and ``beta_d = n_features``), then random
        perturbations of the log-parameters (``random_state``).
    max_iter : int >= 1, default=100
        Optimiser iterations per restart.
    random_state : None, int or Generator, default=None
    memory_budget : int, str or None, default=None
        See :mod:`kernelcv.memory`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    machines_ : list of tuple
        The classes of each binary machine: ``(i, j)`` (ovo, +1 = ``classes_[i]``), ``(k,)``
        (ovr, +1 = ``classes_[k]``) or ``(1,)`` for a binary problem.
    theta_ : ndarray of shape (n_weights,) or (n_machines, n_weights)
        Tuned kernel weights theta (the mixture uses theta^2).
    C_ : float or ndarray of shape (n_machines,)
    ard_widths_ : None or ndarray of shape (n_features,) or (n_machines, n_features)
    loo_error_ : float
        Exact leave-one-out 0-1 error of the whole classifier at the tuned parameters.
    smooth_loo_error_ : float or ndarray of shape (n_machines,)
    history_ : list
        Smooth LOO error along the iterations of the best restart (a list per machine for
        more than two classes).
    tuning_ : list of dict
        Per machine: restarts with their status (converged, max_iter, stalled, failed),
        iterations, evaluations, seconds.
    n_iter_ : ndarray of shape (n_machines,)
        Optimiser iterations per machine over all restarts, each starting point counted
        as one.
    weight_names_ : list of str
    n_features_in_ : int

    Notes
    -----
    Cost per optimiser evaluation of a binary machine on n samples: O(n^3) (Cholesky,
    inverse, one matrix product) plus O(n^2) per kernel weight; memory about
    (n_components + 8) n x n float64. One-against-one works on the pairs' subsets, which
    is much cheaper than one-against-rest for many classes.
    """

    def __init__(self, kernels=("gaussian", "laplace"), betas=PAPER_BETAS, ard=False, C=1.0,
                 tune_C=False, gamma_s=DEFAULT_GAMMA_S, fit_intercept=True, multiclass="ovo",
                 optimizer="cg", n_restarts=3, max_iter=100, random_state=None,
                 memory_budget=None):
        self.kernels = kernels
        self.betas = betas
        self.ard = ard
        self.C = C
        self.tune_C = tune_C
        self.gamma_s = gamma_s
        self.fit_intercept = fit_intercept
        self.multiclass = multiclass
        self.optimizer = optimizer
        self.n_restarts = n_restarts
        self.max_iter = max_iter
        self.random_state = random_state
        self.memory_budget = memory_budget

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        spec = SmoothLOOTuning(**{name: getattr(self, name) for name in TUNING_PARAMS}).spec
        if self.multiclass not in ("ovo", "ovr"):
            raise KernelCVError(f"multiclass must be 'ovo' or 'ovr', got {self.multiclass!r}")
        return spec

    def _check_data(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_scale(X)
        check_classification_targets(y)
        classes, y_index, counts = np.unique(y, return_inverse=True, return_counts=True)
        if classes.size < 2:
            raise ValueError(f"{type(self).__name__} needs at least two classes, but y has "
                             f"only one class ({classes[0]!r})")
        if np.any(counts < 2):
            lonely = classes[np.argmin(counts)]
            scheme = "one-against-one" if classes.size > 2 and self.multiclass == "ovo" \
                else "leave-one-out"
            raise KernelCVError(
                f"class {lonely!r} has only one sample; {scheme} tuning needs at least two "
                "samples per class: add samples or drop that class")
        return X, y, classes, y_index

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y):
        """Tune the kernel weights of every binary machine and fit it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        spec = self._check_params()
        X, y, classes, y_index = self._check_data(X, y)
        return self._fit(X, classes, y_index, spec, fixed=None)

    def _fit(self, X, classes, y_index, spec, fixed, loo=True):
        n = X.shape[0]
        check_dense_budget(n, n, len(spec.components) + 10 + 2 * int(spec.ard),
                           "smooth leave-one-out tuning", self.memory_budget)
        self.classes_ = classes
        self.X_fit_ = X.copy()
        self._spec = spec
        machines = _machines(classes.size, self.multiclass)
        bases = distance_bases(spec, X)
        rng = np.random.default_rng(self.random_state)
        fits = []
        with separate_blas_pools():
            for k, machine in enumerate(machines):
                idx, y_pm = _problem(machine, y_index)
                sub = bases if idx.size == n else {key: v[np.ix_(idx, idx)]
                                                   for key, v in bases.items()}
                objective = SmoothLOOObjective(
                    X[idx], y_pm, spec, C=self.C, gamma_s=self.gamma_s,
                    fit_intercept=self.fit_intercept, bases=sub,
                    memory_budget=self.memory_budget)
                if fixed is None:
                    result = minimize_restarts(
                        objective, objective.initial_params(), optimizer=self.optimizer,
                        n_restarts=self.n_restarts, max_iter=self.max_iter, random_state=rng)
                    params, info = result.params, result.to_dict()
                    for failure in result.failures:
                        warnings.warn(f"machine {k} ({_label(machine, classes)}): optimiser "
                                      f"{failure}; the best point seen is used",
                                      ConvergenceWarning, stacklevel=3)
                else:
                    params, info = np.asarray(fixed[k]), None
                fit = objective.fit(params)
                fits.append((idx, y_pm, params, fit, info, objective))
        self._store(fits, machines, spec, X.shape[1])
        if loo:
            self.loo_error_ = self._loo_error(fits, bases, y_index)
        return self

    def _store(self, fits, machines, spec, d):
        binary = len(machines) == 1 and machines[0] == (1,)
        self.machines_ = machines
        self.weight_names_ = spec.weight_names()
        self.params_ = [f[2] for f in fits]
        self.support_ = [f[0] for f in fits]
        self.dual_coef_ = [f[3].alpha for f in fits]
        self.intercept_ = np.array([f[3].b for f in fits])
        theta, Cs, widths, smooth, hist, tuning = [], [], [], [], [], []
        for _, y_pm, params, fit, info, _ in fits:
            weights, inv_widths, C = split_params(spec, params, d, self.C)
            theta.append(np.sqrt(weights))
            Cs.append(C)
            widths.append(None if inv_widths is None else 1.0 / inv_widths)
            smooth.append(smooth_loo_value(fit.loo, y_pm, self.gamma_s))
            hist.append([] if info is None else info["history"])
            tuning.append(info)
        pick = (lambda v: v[0]) if binary else (lambda v: np.array(v))
        self.theta_ = pick(theta)
        self.C_ = float(Cs[0]) if binary else np.array(Cs)
        self.ard_widths_ = None if widths[0] is None else pick(widths)
        self.smooth_loo_error_ = float(smooth[0]) if binary else np.array(smooth)
        self.history_ = hist[0] if binary else hist
        self.tuning_ = tuning
        # iterations of all restarts, each start's own evaluation counted as one
        self.n_iter_ = np.array([0 if t is None else t["n_iter"] + len(t["restarts"])
                                 for t in tuning])

    def _loo_error(self, fits, bases, y_index):
        """Exact LOO error of the combined classifier: a machine trained on sample k uses
        its LOO value there, the others their ordinary decision value."""
        if len(fits) == 1:
            return loo_error(fits[0][3].loo, fits[0][1])
        raw = np.empty((y_index.size, len(fits)))
        for k, (idx, _, _, fit, _, _) in enumerate(fits):
            raw[:, k] = self._machine_decision(k, bases, self.X_fit_)
            raw[idx, k] = fit.loo
        return float(np.mean(np.argmax(_combine(raw, self.machines_, self.classes_.size),
                                       axis=1) != y_index))

    # ------------------------------------------------------------------ prediction
    def _machine_decision(self, k, bases, X, rows=None):
        idx = self.support_[k]
        weights, inv_widths, _ = split_params(self._spec, self.params_[k], X.shape[1], self.C)
        m_fixed = len(self._spec.components)
        if rows is not None:
            bases = {key: v[rows] for key, v in bases.items()}
            X = X[rows]
        out = np.full(X.shape[0], self.intercept_[k])
        if m_fixed:
            grams = component_grams(self._spec, bases, columns=idx)
            out += np.tensordot(weights[:m_fixed], grams, axes=1) @ self.dual_coef_[k]
        if self._spec.ard:
            out += weights[-1] * (ard_gram(X, self.X_fit_[idx], inv_widths)
                                  @ self.dual_coef_[k])
        return out

    def _raw(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        rows = max(1, _BLOCK_ENTRIES // self.X_fit_.shape[0])
        blocks = []
        for batch in gen_batches(X.shape[0], rows):
            bases = distance_bases(self._spec, X[batch], self.X_fit_)
            blocks.append(np.column_stack([self._machine_decision(k, bases, X[batch])
                                           for k in range(len(self.machines_))]))
        return np.concatenate(blocks) if blocks else np.empty((0, len(self.machines_)))

    def decision_function(self, X):
        """Decision values: ``f(x)`` for two classes (positive means ``classes_[1]``),
        else one column per class (ovr: its machine; ovo: votes plus a confidence term
        smaller than one vote, as scikit-learn's SVC does).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        raw = self._raw(X)
        if self.classes_.size == 2:
            return raw[:, 0]
        return _combine(raw, self.machines_, self.classes_.size)

    def predict(self, X):
        """Class labels: the sign for two classes, the largest column otherwise.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        decision = self.decision_function(X)
        if decision.ndim == 1:
            return self.classes_[(decision >= 0).astype(np.intp)]
        return self.classes_[np.argmax(decision, axis=1)]

    def tuned_parameters(self) -> list[dict]:
        """One JSON-able dict per machine: classes, theta per kernel, C, ARD widths."""
        out = []
        machines = self.machines_
        for k, machine in enumerate(machines):
            weights, inv_widths, C = split_params(self._spec, self.params_[k],
                                                  self.n_features_in_, self.C)
            entry = {"classes": _label(machine, self.classes_),
                     "theta": dict(zip(self.weight_names_, np.sqrt(weights).tolist(),
                                       strict=True)),
                     "C": float(C)}
            if inv_widths is not None:
                entry["ard_widths"] = (1.0 / inv_widths).tolist()
            smooth = self.smooth_loo_error_
            entry["smooth_loo_error"] = float(np.atleast_1d(smooth)[k])
            if self.tuning_[k] is not None:
                entry["tuning"] = self.tuning_[k]
            out.append(entry)
        return out


def fixed_parameter_cv(estimator, X, y, fold_ids):
    """t-fold CV 0-1 error of ``estimator``'s tuned parameters (refit per fold, no retuning).

    The paper's Table 1 figure. Each training part must contain every class. Cost: t fits
    of every binary machine, O(t n^3) in all.
    """
    check_is_fitted(estimator)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    errors = []
    for fold in np.unique(fold_ids):
        train, test = fold_ids != fold, fold_ids == fold
        classes, y_index = np.unique(y[train], return_inverse=True)
        if classes.size != estimator.classes_.size:
            raise KernelCVError(f"fold {fold}: a training part lacks a class; use "
                                "stratified folds or fewer folds")
        model = SmoothLOOLSSVMClassifier(**estimator.get_params())
        model.n_features_in_ = X.shape[1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model._fit(X[train], classes, y_index, estimator._spec, fixed=estimator.params_,
                       loo=False)
        errors.append(float(np.mean(model.predict(X[test]) != y[test])))
    sizes = np.array([np.sum(fold_ids == f) for f in np.unique(fold_ids)])
    return float(np.dot(errors, sizes) / sizes.sum()), errors


def _machines(n_classes, multiclass):
    if n_classes == 2:
        return [(1,)]
    if multiclass == "ovr":
        return [(k,) for k in range(n_classes)]
    return list(combinations(range(n_classes), 2))


def _problem(machine, y_index):
    if len(machine) == 1:
        return np.arange(y_index.size), np.where(y_index == machine[0], 1.0, -1.0)
    i, j = machine
    idx = np.flatnonzero((y_index == i) | (y_index == j))
    return idx, np.where(y_index[idx] == i, 1.0, -1.0)


def _label(machine, classes):
    plain = [c.item() if hasattr(c, "item") else c for c in classes]
    if len(machine) == 2:
        return [plain[machine[0]], plain[machine[1]]]
    if len(classes) == 2:
        return [plain[1], plain[0]]
    return [plain[machine[0]], "rest"]


def _combine(raw, machines, n_classes):
    """(n, n_classes) scores from the machines' decision values."""
    if len(machines[0]) == 1:
        return raw
    votes = np.zeros((raw.shape[0], n_classes))
    confidence = np.zeros_like(votes)
    for k, (i, j) in enumerate(machines):
        positive = raw[:, k] >= 0
        votes[:, i] += positive
        votes[:, j] += ~positive
        confidence[:, i] += raw[:, k]
        confidence[:, j] -= raw[:, k]
    return votes + confidence / (3.0 * (np.abs(confidence) + 1.0))
