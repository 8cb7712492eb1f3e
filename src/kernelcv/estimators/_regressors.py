"""Regression estimators: kernel ridge regression and the Huber-smoothed epsilon-SVR."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval

from ._base import _COMMON_CONSTRAINTS, _POSITIVE_FINITE, _KernelMachineRegressor


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


class HuberSVMRegressor(_KernelMachineRegressor):
    """Support vector regression, Huber-smoothed (kernelcv machine ``svr``).

    Minimises ``(1/n) sum_i [psi(r_i - eps) + psi(-r_i - eps)] + lam * alpha' K alpha`` with
    residuals ``r_i = f(x_i) - y_i`` and ``f = K alpha + b``, where ``psi`` is ``max(0, z)``
    with its kink smoothed over ``|z| <= huber_width`` (``psi(z) = (z + w)^2 / (4 w)``
    there). For ``epsilon >= huber_width`` the loss exceeds the epsilon-insensitive loss
    ``max(0, |r| - eps)`` by at most ``w / 4``, so the model tends to the SVR
    (:class:`sklearn.svm.SVR`) as ``huber_width -> 0``. The intercept ``b`` is
    unregularised; ``fit_intercept=False`` gives the papers' bias-free SVR ``f = K alpha``.

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
    fit_intercept : bool, default=True
        Fit the unregularised intercept ``b`` (False: the bias-free machine).

    Attributes
    ----------
    X_fit_ : ndarray or CSR matrix of shape (n_samples, n_features)
        Copy of the training data, needed for the kernel at prediction time.
    dual_coef_ : ndarray of shape (n_samples,)
        ``alpha``.
    intercept_ : float
        ``b`` (0 without intercept).
    gamma_ : float
        The resolved kernel parameter.
    n_iter_ : int
        Newton iterations used.
    n_features_in_ : int
        Number of features seen in fit.

    Notes
    -----
    :class:`sklearn.svm.SVR` minimises ``1/2 ||f||^2 + C sum_i max(0, |r_i| - eps)``;
    dividing by ``C n`` gives the objective above with ``C = 1 / (2 n lam)``; both fit an
    unregularised intercept. Without it (``fit_intercept=False``) centre y (or add a
    constant to the kernel) when the target has a large mean.

    Cost: O(n^2) memory for the Gram matrix, O(n^3) time to fit (a few Newton steps, each
    a Cholesky factorisation of the points inside the smoothed bands), O(n d) per
    predicted point.
    """

    _machine_name = "svr"
    _parameter_constraints: dict = {
        **_COMMON_CONSTRAINTS,
        "fit_intercept": ["boolean"],
        "epsilon": [Interval(Real, 0, np.inf, closed="left")],
        "huber_width": [_POSITIVE_FINITE],
    }

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=1.0, lam=1e-3,
                 tol=1e-10, max_iter=100, memory_budget=None, epsilon=0.1, huber_width=0.01,
                 fit_intercept=True):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget
        self.fit_intercept = fit_intercept
        self.epsilon = epsilon
        self.huber_width = huber_width

    def _machine_options(self) -> dict:
        return {"fit_intercept": bool(self.fit_intercept), "epsilon": float(self.epsilon),
                "huber_width": float(self.huber_width)}
