"""scikit-learn estimators for the kernel machines of :mod:`kernelcv.machines`.

One estimator per machine, each a thin layer over :func:`kernelcv.machines.make_machine`
and :class:`kernelcv.kernels.Kernel`:

=============================  =========  ==============================================
estimator                      machine    loss
=============================  =========  ==============================================
:class:`KernelRidgeRegressor`  ``krr``    square (kernel ridge regression)
:class:`LSSVMClassifier`       ``lssvm``  square on +-1 labels, with intercept by default
:class:`L2SVMClassifier`       ``l2svm``  squared hinge, bias-free
:class:`HuberSVMClassifier`    ``svm``    Huber-smoothed hinge, bias-free
:class:`HuberSVMRegressor`     ``svr``    Huber-smoothed epsilon-insensitive, bias-free
=============================  =========  ==============================================

All of them minimise ``(1/n) sum_i loss(y_i, f(x_i)) + lam * alpha' K alpha`` with
``f = K alpha (+ b)``. They keep the training data (``X_fit_``) because predicting needs the
kernel between new points and the training points.

Classifiers map two classes of any type to -1/+1 (``classes_[1]`` is the positive class)
and handle more classes one-vs-rest: one machine per class, all on one Gram matrix.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import gen_batches
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .kernels import KERNELS, Kernel
from .machines import make_machine

# ---------------------------------------------------------------------------------------
# Private helpers and base classes
# ---------------------------------------------------------------------------------------

# Test-time kernel blocks hold at most this many entries (128 MiB of float64).
_BLOCK_ENTRIES = 2**24

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


def _feature_variance(X) -> float:
    """Variance of all entries of X (dense or sparse), as SVC's ``gamma="scale"`` uses it.

    For sparse X the implicit zeros count; the centred sum is computed directly rather
    than as ``E[X^2] - E[X]^2``, which can round to a tiny or negative number.
    """
    if not sp.issparse(X):
        return float(np.var(X))
    n_entries = X.shape[0] * X.shape[1]
    X = sp.csr_matrix(X, copy=True)
    X.sum_duplicates()
    data = X.data
    mean = float(data.sum()) / n_entries
    centred = float(np.sum((data - mean) ** 2)) + (n_entries - data.size) * mean**2
    return centred / n_entries


def _resolve_gamma(gamma, X) -> float:
    """The numeric gamma: a given float, ``"scale"`` or ``"auto"`` (SVC's conventions)."""
    if gamma == "scale":
        variance = _feature_variance(X)
        return 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0
    if gamma == "auto":
        return 1.0 / X.shape[1]
    return float(gamma)


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

    def _fit_one(self, K, y):
        machine = make_machine(self._machine_name, **self._machine_options())
        return machine.fit(K, y, float(self.lam), tol=float(self.tol),
                           max_iter=int(self.max_iter))

    def _decision(self, X) -> np.ndarray:
        """``k(X, X_fit_) @ dual_coef_.T + intercept_``, a block of rows at a time."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        kernel, coef = self._kernel(), self.dual_coef_.T
        rows = max(1, _BLOCK_ENTRIES // self.X_fit_.shape[0])
        blocks = [kernel(X[batch], self.X_fit_, memory_budget=self.memory_budget) @ coef
                  for batch in gen_batches(X.shape[0], rows)]
        return np.concatenate(blocks) + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class _KernelMachineRegressor(RegressorMixin, _KernelMachine):
    """Regression: ``predict`` gives ``f(x)``; ``score`` is R^2."""

    def fit(self, X, y):
        """Fit the machine.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Target values.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y = self._validate_fit_input(X, y, y_numeric=True)
        result = self._fit_one(self._train_gram(X), y.astype(np.float64))
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
    """Classification with -1/+1 labels, one-vs-rest beyond two classes."""

    def fit(self, X, y):
        """Fit the machine (one per class, one-vs-rest, if there are more than two).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels, of any type.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y = self._validate_fit_input(X, y, y_numeric=False)
        check_classification_targets(y)
        classes, y_index = np.unique(y, return_inverse=True)
        n_classes = classes.size
        if n_classes < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least two classes, but y has only one "
                f"class ({classes[0]!r})")
        self.classes_ = classes
        K = self._train_gram(X)
        if n_classes == 2:
            result = self._fit_one(K, np.where(y_index == 1, 1.0, -1.0))
            self.dual_coef_ = result.alpha
            self.intercept_ = float(result.intercept)
            self.n_iter_ = int(result.n_iter)
            return self
        results = [self._fit_one(K, np.where(y_index == k, 1.0, -1.0))
                   for k in range(n_classes)]
        self.dual_coef_ = np.vstack([r.alpha for r in results])
        self.intercept_ = np.array([r.intercept for r in results], dtype=np.float64)
        self.n_iter_ = np.array([r.n_iter for r in results], dtype=np.int64)
        return self

    def decision_function(self, X):
        """Decision values ``f(x)``; positive means ``classes_[1]`` (binary).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        decision : ndarray of shape (n_samples,) or (n_samples, n_classes)
            One column per class (its one-vs-rest machine) when there are more than two.
        """
        return self._decision(X)

    def predict(self, X):
        """Predict class labels (sign for two classes, largest decision value otherwise).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        decision = self.decision_function(X)
        if decision.ndim == 1:
            return self.classes_[(decision > 0).astype(np.intp)]
        return self.classes_[np.argmax(decision, axis=1)]


# ---------------------------------------------------------------------------------------
# Public estimators
# ---------------------------------------------------------------------------------------


class KernelRidgeRegressor(_KernelMachineRegressor):
    """Kernel ridge regression (kernelcv machine ``krr``).

    Minimises ``(1/n) sum_i (y_i - f(x_i))^2 + lam * alpha' K alpha`` with ``f = K alpha``,
    i.e. solves ``(K + n lam I) alpha = y``.

    Parameters
    ----------
    kernel : {"rbf", "laplace", "poly", "linear"}, default="rbf"
        ``rbf``: ``exp(-gamma ||x - x'||^2)``; ``laplace``: ``exp(-gamma ||x - x'||_1)``;
        ``poly``: ``(gamma <x, x'> + coef0)^degree``; ``linear``: ``<x, x'>``.
    gamma : float > 0, "scale" or "auto", default="scale"
        Kernel parameter (unused by ``linear``). ``"scale"``: ``1 / (n_features * X.var())``
        (1 if the variance is 0), ``"auto"``: ``1 / n_features``, as in :class:`sklearn.svm.SVC`.
    degree : int >= 1, default=3
        Degree of the ``poly`` kernel.
    coef0 : float >= 0, default=1.0
        Constant of the ``poly`` kernel.
    lam : float > 0, default=1e-3
        Regularisation strength.
    tol : float >= 0, default=1e-10
        Tolerance of the Newton solver (one exact step suffices for the square loss).
    max_iter : int >= 1, default=100
        Newton iteration limit.
    memory_budget : int, str or None, default=None
        Bytes (or e.g. ``"8G"``) the dense kernel matrices may take; see
        :mod:`kernelcv.memory`. A fit that would exceed it raises before allocating.

    Attributes
    ----------
    X_fit_ : ndarray or CSR matrix of shape (n_samples, n_features)
        Copy of the training data, needed for the kernel at prediction time.
    dual_coef_ : ndarray of shape (n_samples,)
        ``alpha``.
    intercept_ : float
        Always 0.
    gamma_ : float
        The resolved kernel parameter.
    n_iter_ : int
        Newton iterations used.
    n_features_in_ : int
        Number of features seen in fit.

    See Also
    --------
    sklearn.kernel_ridge.KernelRidge : the same model with ``alpha = n_samples * lam``.

    Notes
    -----
    scikit-learn's :class:`~sklearn.kernel_ridge.KernelRidge` minimises
    ``||y - K a||^2 + alpha a' K a``; multiplying the objective above by ``n`` shows that
    ``alpha = n lam`` gives the same solution.

    Cost: O(n^2) memory for the Gram matrix, O(n^3) time to fit (one Cholesky
    factorisation), O(n d) per predicted point.
    """

    _machine_name = "krr"
    _parameter_constraints: dict = dict(_COMMON_CONSTRAINTS)

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=1.0, lam=1e-3,
                 tol=1e-10, max_iter=100, memory_budget=None):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget


class LSSVMClassifier(_KernelMachineClassifier):
    """Least-squares SVM classifier (kernelcv machine ``lssvm``).

    With labels ``y_i`` in {-1, +1}, minimises
    ``(1/n) sum_i (y_i - f(x_i))^2 + lam * alpha' K alpha`` with ``f = K alpha + b``; with
    the intercept the solution solves the bordered system
    ``[[K + n lam I, 1], [1', 0]] [alpha; b] = [y; 0]``.

    Parameters
    ----------
    kernel : {"rbf", "laplace", "poly", "linear"}, default="rbf"
        ``rbf``: ``exp(-gamma ||x - x'||^2)``; ``laplace``: ``exp(-gamma ||x - x'||_1)``;
        ``poly``: ``(gamma <x, x'> + coef0)^degree``; ``linear``: ``<x, x'>``.
    gamma : float > 0, "scale" or "auto", default="scale"
        Kernel parameter (unused by ``linear``). ``"scale"``: ``1 / (n_features * X.var())``
        (1 if the variance is 0), ``"auto"``: ``1 / n_features``, as in :class:`sklearn.svm.SVC`.
    degree : int >= 1, default=3
        Degree of the ``poly`` kernel.
    coef0 : float >= 0, default=1.0
        Constant of the ``poly`` kernel.
    lam : float > 0, default=1e-3
        Regularisation strength.
    tol : float >= 0, default=1e-10
        Tolerance of the Newton solver (one exact step suffices for the square loss).
    max_iter : int >= 1, default=100
        Newton iteration limit.
    memory_budget : int, str or None, default=None
        Bytes (or e.g. ``"8G"``) the dense kernel matrices may take; see
        :mod:`kernelcv.memory`.
    fit_intercept : bool, default=True
        Fit the unregularised intercept ``b``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; ``classes_[1]`` is the positive class of a binary problem.
    X_fit_ : ndarray or CSR matrix of shape (n_samples, n_features)
        Copy of the training data, needed for the kernel at prediction time.
    dual_coef_ : ndarray of shape (n_samples,) or (n_classes, n_samples)
        ``alpha``; one row per one-vs-rest machine with more than two classes.
    intercept_ : float or ndarray of shape (n_classes,)
        ``b`` (0 without intercept).
    gamma_ : float
        The resolved kernel parameter.
    n_iter_ : int or ndarray of shape (n_classes,)
        Newton iterations used (per machine with more than two classes).
    n_features_in_ : int
        Number of features seen in fit.

    Notes
    -----
    This is kernel ridge regression on the +-1 labels: scikit-learn's
    ``KernelRidge(alpha = n lam)`` gives the same ``alpha`` when ``fit_intercept=False``.

    Cost: O(n^2) memory for the Gram matrix, O(n^3) time to fit (one Cholesky
    factorisation per class), O(n d) per predicted point.
    """

    _machine_name = "lssvm"
    _parameter_constraints: dict = {**_COMMON_CONSTRAINTS, "fit_intercept": ["boolean"]}

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=1.0, lam=1e-3,
                 tol=1e-10, max_iter=100, memory_budget=None, fit_intercept=True):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget
        self.fit_intercept = fit_intercept

    def _machine_options(self) -> dict:
        return {"fit_intercept": bool(self.fit_intercept)}


class L2SVMClassifier(_KernelMachineClassifier):
    """Bias-free L2-SVM: squared hinge loss (kernelcv machine ``l2svm``).

    With labels ``y_i`` in {-1, +1}, minimises
    ``(1/n) sum_i max(0, 1 - y_i f(x_i))^2 + lam * alpha' K alpha`` with ``f = K alpha``
    (no intercept; a constant added to the kernel, e.g. ``poly`` with ``coef0 > 0``, plays
    its role).

    Parameters
    ----------
    kernel : {"rbf", "laplace", "poly", "linear"}, default="rbf"
        ``rbf``: ``exp(-gamma ||x - x'||^2)``; ``laplace``: ``exp(-gamma ||x - x'||_1)``;
        ``poly``: ``(gamma <x, x'> + coef0)^degree``; ``linear``: ``<x, x'>``.
    gamma : float > 0, "scale" or "auto", default="scale"
        Kernel parameter (unused by ``linear``). ``"scale"``: ``1 / (n_features * X.var())``
        (1 if the variance is 0), ``"auto"``: ``1 / n_features``, as in :class:`sklearn.svm.SVC`.
    degree : int >= 1, default=3
        Degree of the ``poly`` kernel.
    coef0 : float >= 0, default=1.0
        Constant of the ``poly`` kernel.
    lam : float > 0, default=1e-3
        Regularisation strength.
    tol : float >= 0, default=1e-10
        Tolerance of the Newton solver.
    max_iter : int >= 1, default=100
        Newton iteration limit (a ``ConvergenceWarning`` is issued if it is reached).
    memory_budget : int, str or None, default=None
        Bytes (or e.g. ``"8G"``) the dense kernel matrices may take; see
        :mod:`kernelcv.memory`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; ``classes_[1]`` is the positive class of a binary problem.
    X_fit_ : ndarray or CSR matrix of shape (n_samples, n_features)
        Copy of the training data, needed for the kernel at prediction time.
    dual_coef_ : ndarray of shape (n_samples,) or (n_classes, n_samples)
        ``alpha``; one row per one-vs-rest machine with more than two classes.
    intercept_ : float or ndarray of shape (n_classes,)
        Always 0.
    gamma_ : float
        The resolved kernel parameter.
    n_iter_ : int or ndarray of shape (n_classes,)
        Newton iterations used (per machine with more than two classes).
    n_features_in_ : int
        Number of features seen in fit.

    Notes
    -----
    In scikit-learn's form ``1/2 ||f||^2 + C sum_i loss_i`` this is ``C = 1 / (2 n lam)``
    (divide by ``C n``); :class:`sklearn.svm.SVC` uses the plain hinge and an intercept,
    so it is a related but different model.

    Cost: O(n^2) memory for the Gram matrix, O(n^3) time to fit (a few Newton steps, each
    a Cholesky factorisation of the margin-violating block), O(n d) per predicted point.
    """

    _machine_name = "l2svm"
    _parameter_constraints: dict = dict(_COMMON_CONSTRAINTS)

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=1.0, lam=1e-3,
                 tol=1e-10, max_iter=100, memory_budget=None):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget


class HuberSVMClassifier(_KernelMachineClassifier):
    """Bias-free SVM with a Huber-smoothed hinge loss (kernelcv machine ``svm``).

    With labels ``y_i`` in {-1, +1} and margins ``m_i = y_i f(x_i)``, minimises
    ``(1/n) sum_i psi(1 - m_i) + lam * alpha' K alpha`` with ``f = K alpha``, where ``psi``
    is ``max(0, z)`` with its kink smoothed over ``|z| <= huber_width``:
    ``psi(z) = (z + w)^2 / (4 w)`` there. It exceeds the hinge loss by at most ``w / 4``,
    so the model tends to the bias-free hinge-loss SVM as ``huber_width -> 0``.

    Parameters
    ----------
    kernel : {"rbf", "laplace", "poly", "linear"}, default="rbf"
        ``rbf``: ``exp(-gamma ||x - x'||^2)``; ``laplace``: ``exp(-gamma ||x - x'||_1)``;
        ``poly``: ``(gamma <x, x'> + coef0)^degree``; ``linear``: ``<x, x'>``.
    gamma : float > 0, "scale" or "auto", default="scale"
        Kernel parameter (unused by ``linear``). ``"scale"``: ``1 / (n_features * X.var())``
        (1 if the variance is 0), ``"auto"``: ``1 / n_features``, as in :class:`sklearn.svm.SVC`.
    degree : int >= 1, default=3
        Degree of the ``poly`` kernel.
    coef0 : float >= 0, default=1.0
        Constant of the ``poly`` kernel.
    lam : float > 0, default=1e-3
        Regularisation strength.
    tol : float >= 0, default=1e-10
        Tolerance of the Newton solver.
    max_iter : int >= 1, default=100
        Newton iteration limit (a ``ConvergenceWarning`` is issued if it is reached).
    memory_budget : int, str or None, default=None
        Bytes (or e.g. ``"8G"``) the dense kernel matrices may take; see
        :mod:`kernelcv.memory`.
    huber_width : float > 0, default=0.01
        Half-width ``w`` of the smoothed band around the hinge's kink.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; ``classes_[1]`` is the positive class of a binary problem.
    X_fit_ : ndarray or CSR matrix of shape (n_samples, n_features)
        Copy of the training data, needed for the kernel at prediction time.
    dual_coef_ : ndarray of shape (n_samples,) or (n_classes, n_samples)
        ``alpha``; one row per one-vs-rest machine with more than two classes.
    intercept_ : float or ndarray of shape (n_classes,)
        Always 0.
    gamma_ : float
        The resolved kernel parameter.
    n_iter_ : int or ndarray of shape (n_classes,)
        Newton iterations used (per machine with more than two classes).
    n_features_in_ : int
        Number of features seen in fit.

    Notes
    -----
    :class:`sklearn.svm.SVC` minimises ``1/2 ||f||^2 + C sum_i hinge_i``; dividing by
    ``C n`` gives the objective above with ``lam = 1 / (2 n C)``, i.e. ``C = 1 / (2 n lam)``.
    ``SVC`` also fits an intercept, which this bias-free machine does not (a constant
    added to the kernel, e.g. ``poly`` with ``coef0 > 0``, plays its role).

    Cost: O(n^2) memory for the Gram matrix, O(n^3) time to fit (a few Newton steps, each
    a Cholesky factorisation of the points inside the smoothed band), O(n d) per
    predicted point.
    """

    _machine_name = "svm"
    _parameter_constraints: dict = {**_COMMON_CONSTRAINTS, "huber_width": [_POSITIVE_FINITE]}

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=1.0, lam=1e-3,
                 tol=1e-10, max_iter=100, memory_budget=None, huber_width=0.01):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget
        self.huber_width = huber_width

    def _machine_options(self) -> dict:
        return {"huber_width": float(self.huber_width)}


class HuberSVMRegressor(_KernelMachineRegressor):
    """Bias-free support vector regression, Huber-smoothed (kernelcv machine ``svr``).

    Minimises ``(1/n) sum_i [psi(r_i - eps) + psi(-r_i - eps)] + lam * alpha' K alpha`` with
    residuals ``r_i = f(x_i) - y_i`` and ``f = K alpha``, where ``psi`` is ``max(0, z)``
    with its kink smoothed over ``|z| <= huber_width`` (``psi(z) = (z + w)^2 / (4 w)``
    there). For ``epsilon >= huber_width`` the loss exceeds the epsilon-insensitive loss
    ``max(0, |r| - eps)`` by at most ``w / 4``, so the model tends to the bias-free SVR as
    ``huber_width -> 0``.

    Parameters
    ----------
    kernel : {"rbf", "laplace", "poly", "linear"}, default="rbf"
        ``rbf``: ``exp(-gamma ||x - x'||^2)``; ``laplace``: ``exp(-gamma ||x - x'||_1)``;
        ``poly``: ``(gamma <x, x'> + coef0)^degree``; ``linear``: ``<x, x'>``.
    gamma : float > 0, "scale" or "auto", default="scale"
        Kernel parameter (unused by ``linear``). ``"scale"``: ``1 / (n_features * X.var())``
        (1 if the variance is 0), ``"auto"``: ``1 / n_features``, as in :class:`sklearn.svm.SVC`.
    degree : int >= 1, default=3
        Degree of the ``poly`` kernel.
    coef0 : float >= 0, default=1.0
        Constant of the ``poly`` kernel.
    lam : float > 0, default=1e-3
        Regularisation strength.
    tol : float >= 0, default=1e-10
        Tolerance of the Newton solver.
    max_iter : int >= 1, default=100
        Newton iteration limit (a ``ConvergenceWarning`` is issued if it is reached).
    memory_budget : int, str or None, default=None
        Bytes (or e.g. ``"8G"``) the dense kernel matrices may take; see
        :mod:`kernelcv.memory`.
    epsilon : float >= 0, default=0.1
        Half-width of the insensitive tube (in units of y).
    huber_width : float > 0, default=0.01
        Half-width ``w`` of the smoothed band around each kink.

    Attributes
    ----------
    X_fit_ : ndarray or CSR matrix of shape (n_samples, n_features)
        Copy of the training data, needed for the kernel at prediction time.
    dual_coef_ : ndarray of shape (n_samples,)
        ``alpha``.
    intercept_ : float
        Always 0.
    gamma_ : float
        The resolved kernel parameter.
    n_iter_ : int
        Newton iterations used.
    n_features_in_ : int
        Number of features seen in fit.

    Notes
    -----
    :class:`sklearn.svm.SVR` minimises ``1/2 ||f||^2 + C sum_i max(0, |r_i| - eps)``;
    dividing by ``C n`` gives the objective above with ``C = 1 / (2 n lam)``. ``SVR`` also
    fits an intercept, which this bias-free machine does not; centre y (or add a constant
    to the kernel) when the target has a large mean.

    Cost: O(n^2) memory for the Gram matrix, O(n^3) time to fit (a few Newton steps, each
    a Cholesky factorisation of the points inside the smoothed bands), O(n d) per
    predicted point.
    """

    _machine_name = "svr"
    _parameter_constraints: dict = {
        **_COMMON_CONSTRAINTS,
        "epsilon": [Interval(Real, 0, np.inf, closed="left")],
        "huber_width": [_POSITIVE_FINITE],
    }

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=1.0, lam=1e-3,
                 tol=1e-10, max_iter=100, memory_budget=None, epsilon=0.1, huber_width=0.01):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget
        self.epsilon = epsilon
        self.huber_width = huber_width

    def _machine_options(self) -> dict:
        return {"epsilon": float(self.epsilon), "huber_width": float(self.huber_width)}


__all__ = ["KernelRidgeRegressor", "LSSVMClassifier", "L2SVMClassifier", "HuberSVMClassifier",
           "HuberSVMRegressor"]
