"""Shared parameter validation, kernel handling and fit/predict logic of the estimators."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..kernels import KERNELS, Kernel, resolve_gamma
from ..machines import make_machine
from ..machines.model import decision_values, fit_gram, fit_scheme
from ..machines.multiclass import class_scores, predict_codes
from ..validation import check_sample_weight

# ---------------------------------------------------------------------------------------
# Private helpers and base classes
# ---------------------------------------------------------------------------------------

_POSITIVE_FINITE = Interval(Real, 0, np.inf, closed="neither")

_COMMON_CONSTRAINTS = {
    "kernel": [StrOptions(set(KERNELS))],
    "gamma": [StrOptions({"scale", "auto"}), _POSITIVE_FINITE],
    "degree": [Interval(Integral, 1, None, closed="left")],
    # The polynomial kernel is positive semi-definite only for coef0 >= 0.
    "coef0": [Interval(Real, 0, np.inf, closed="left")],
    "lam": [_POSITIVE_FINITE],
    "tol": [Interval(Real, 0, np.inf, closed="left")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "memory_budget": [None, str, _POSITIVE_FINITE],
}


def _resolve_gamma(gamma, X) -> float:
    """The numeric gamma: a given float, ``"scale"`` or ``"auto"`` (SVC's conventions,
    :func:`kernelcv.kernels.resolve_gamma`, shared with ``cross_validate``)."""
    return float(resolve_gamma(gamma, X))


class _KernelMachine(BaseEstimator):
    """Parameters, fitting and prediction shared by all estimators.

    Subclasses set ``_machine_name`` and override ``_machine_options`` (the keyword
    arguments of :func:`make_machine` they expose).
    """

    _machine_name: str = ""
    _parameter_constraints: dict = dict(_COMMON_CONSTRAINTS)

    def _machine_options(self) -> dict:
        return {}

    def _kernel(self) -> Kernel:
        return Kernel(name=self.kernel, gamma=self.gamma_, degree=int(self.degree),
                      coef0=float(self.coef0))

    def _validate_fit_input(self, X, y, y_numeric: bool):
        """Validate the parameters and the training data; returns float64 X and y."""
        self._validate_params()
        return validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                             y_numeric=y_numeric)

    def _train_gram(self, X) -> np.ndarray:
        """Store ``X_fit_`` and ``gamma_`` and return the training Gram matrix."""
        # A private copy: predictions must not change if the caller edits X later.
        self.X_fit_ = X.copy()
        self.gamma_ = _resolve_gamma(self.gamma, X)
        return self._kernel()(self.X_fit_, memory_budget=self.memory_budget)

    def _fit_one(self, K, y, sample_weight=None):
        machine = make_machine(self._machine_name, **self._machine_options())
        machine = machine.with_sample_weight(sample_weight)
        return fit_gram(machine, K, y, self.lam, self.tol, self.max_iter)

    def _decision(self, X) -> np.ndarray:
        """``k(X, X_fit_) @ dual_coef_.T + intercept_``, a block of rows at a time."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return decision_values(self._kernel(), X, self.X_fit_, self.dual_coef_.T,
                               self.intercept_, self.memory_budget)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class _KernelMachineRegressor(RegressorMixin, _KernelMachine):
    """Regression: ``predict`` gives ``f(x)``; ``score`` is R^2."""

    def fit(self, X, y, sample_weight=None):
        """Fit the machine.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Target values.
        sample_weight : array-like of shape (n_samples,), default=None
            Each row's loss term times its weight (finite, >= 0), as scikit-learn's
            ``SVR.fit`` / ``KernelRidge.fit``; see :mod:`kernelcv.machines.weights`.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y = self._validate_fit_input(X, y, y_numeric=True)
        weights = None if sample_weight is None else check_sample_weight(sample_weight,
                                                                         X.shape[0])
        result = self._fit_one(self._train_gram(X), y.astype(np.float64), weights)
        self.dual_coef_ = result.alpha
        self.intercept_ = float(result.intercept)
        self.n_iter_ = int(result.n_iter)
        return self

    def predict(self, X):
        """Predict ``f(x) = sum_j dual_coef_[j] k(x, X_fit_[j]) + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._decision(X)


class _KernelMachineClassifier(ClassifierMixin, _KernelMachine):
    """Classification with -1/+1 labels; beyond two classes the binary machines of
    ``multiclass`` (one-vs-one or one-vs-rest, :mod:`kernelcv.machines.multiclass`)."""

    def fit(self, X, y, sample_weight=None):
        """Fit the machine (the binary machines of ``multiclass`` for more than two
        classes, all from one Gram matrix).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels, of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Each row's loss term times its weight (finite, >= 0; times its class's
            ``class_weight``), as scikit-learn's ``SVC.fit``; see
            :mod:`kernelcv.machines.weights`.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y = self._validate_fit_input(X, y, y_numeric=False)
        weights = None if sample_weight is None else check_sample_weight(sample_weight,
                                                                         X.shape[0])
        check_classification_targets(y)
        classes, y_index = np.unique(y, return_inverse=True)
        n_classes = classes.size
        if n_classes < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least two classes, but y has only one "
                f"class ({classes[0]!r})")
        self.classes_ = classes
        K = self._train_gram(X)
        codes = np.where(y_index == 1, 1.0, -1.0) if n_classes == 2 else y_index
        mapping = ({-1: classes[0], 1: classes[1]} if n_classes == 2
                   else dict(enumerate(classes)))
        machine = make_machine(self._machine_name, **self._machine_options()).for_labels(
            mapping, codes).with_sample_weight(weights)  # class weights for these labels
        if n_classes == 2:
            result = fit_gram(machine, K, codes, self.lam, self.tol, self.max_iter)
            self.dual_coef_ = result.alpha
            self.intercept_ = float(result.intercept)
            self.n_iter_ = int(result.n_iter)
            return self
        coef, self.intercept_, self.n_iter_ = fit_scheme(machine, K, y_index, n_classes,
                                                         self.lam, self.tol, self.max_iter)
        self.dual_coef_ = coef.T  # one row per binary machine, as before
        return self

    def decision_function(self, X):
        """Decision values ``f(x)``; positive means ``classes_[1]`` (binary).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        decision : ndarray of shape (n_samples,) or (n_samples, n_classes)
            With more than two classes one score per class whose arg-max is the
            prediction: one-vs-rest, each class's machine value; one-vs-one, its votes
            plus the squashed sum of its machines' values (scikit-learn's
            ``OneVsOneClassifier`` and ``SVC`` convention). The m pairwise values are
            :meth:`machine_values`.
        """
        decision = self._decision(X)
        if decision.ndim == 1:
            return decision
        return class_scores(decision, self.classes_.size, self.multiclass)

    def machine_values(self, X):
        """Each binary machine's value ``f_p(x)``: (n_samples,) for two classes, else
        (n_samples, n_machines), pairs ``(0, 1), (0, 2), ...`` (+1 = the later class)
        one-vs-one or classes one-vs-rest."""
        return self._decision(X)

    def predict(self, X):
        """Predict class labels (sign for two classes; otherwise the most votes of the
        one-vs-one machines, ties broken by their summed values, or the largest
        one-vs-rest value).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        decision = self._decision(X)
        if decision.ndim == 1:
            return self.classes_[(decision > 0).astype(np.intp)]
        return self.classes_[predict_codes(decision, self.classes_.size, self.multiclass)]


# ---------------------------------------------------------------------------------------
# Public estimators
# ---------------------------------------------------------------------------------------
