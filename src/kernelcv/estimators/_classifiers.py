"""Classification estimators: LS-SVM, L2-SVM and the Huber-smoothed hinge SVM."""

from __future__ import annotations

from sklearn.utils._param_validation import StrOptions

from ..machines.multiclass import STRATEGIES
from ._base import _COMMON_CONSTRAINTS, _POSITIVE_FINITE, _KernelMachineClassifier


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
    multiclass : {"ovo", "ovr"}, default="ovo"
        More than two classes: one machine per pair of classes on their rows, combined
        by votes (as SVC; the default), or one machine per class against the rest
        (largest value wins).
    class_weight : dict {label: weight}, "balanced" or None, default=None
        Each class's loss terms times its weight, as ``SVC(class_weight=...)``;
        ``"balanced"``: ``n / (n_classes * count)`` from the labels given to ``fit``.
        One-vs-one pair (a, b) weighs its two classes by theirs; one-vs-rest machine c
        weighs c by its weight and the rest by 1 (:mod:`kernelcv.machines.weights`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; ``classes_[1]`` is the positive class of a binary problem.
    X_fit_ : ndarray or CSR matrix of shape (n_samples, n_features)
        Copy of the training data, needed for the kernel at prediction time.
    dual_coef_ : ndarray of shape (n_samples,) or (n_machines, n_samples)
        ``alpha``; with more than two classes one row per binary machine (k (k - 1) / 2
        pairs one-vs-one, k classes one-vs-rest; a pair's rows outside it are 0).
    intercept_ : float or ndarray of shape (n_machines,)
        ``b`` (0 without intercept).
    gamma_ : float
        The resolved kernel parameter.
    n_iter_ : int or ndarray of shape (n_machines,)
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
    _parameter_constraints: dict = {**_COMMON_CONSTRAINTS, "fit_intercept": ["boolean"],
                                    "multiclass": [StrOptions(set(STRATEGIES))],
                                    "class_weight": [dict, StrOptions({"balanced"}), None]}

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=1.0, lam=1e-3,
                 tol=1e-10, max_iter=100, memory_budget=None, fit_intercept=True,
                 multiclass="ovo", class_weight=None):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget
        self.fit_intercept = fit_intercept
        self.multiclass = multiclass
        self.class_weight = class_weight

    def _machine_options(self) -> dict:
        return {"fit_intercept": bool(self.fit_intercept), "multiclass": self.multiclass,
                "class_weight": self.class_weight}


class L2SVMClassifier(_KernelMachineClassifier):
    """L2-SVM: squared hinge loss (kernelcv machine ``l2svm``).

    With labels ``y_i`` in {-1, +1}, minimises
    ``(1/n) sum_i max(0, 1 - y_i f(x_i))^2 + lam * alpha' K alpha`` with
    ``f = K alpha + b``; the unregularised intercept ``b`` adds the condition
    ``sum_i alpha_i = 0`` at the optimum. ``fit_intercept=False`` gives the papers'
    bias-free L2-SVM ``f = K alpha``.

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
    fit_intercept : bool, default=True
        Fit the unregularised intercept ``b`` (False: the bias-free machine).
    multiclass : {"ovo", "ovr"}, default="ovo"
        More than two classes: one machine per pair of classes on their rows, combined
        by votes (as SVC; the default), or one machine per class against the rest
        (largest value wins).
    class_weight : dict {label: weight}, "balanced" or None, default=None
        Each class's loss terms times its weight, as ``SVC(class_weight=...)``;
        ``"balanced"``: ``n / (n_classes * count)`` from the labels given to ``fit``.
        One-vs-one pair (a, b) weighs its two classes by theirs; one-vs-rest machine c
        weighs c by its weight and the rest by 1 (:mod:`kernelcv.machines.weights`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; ``classes_[1]`` is the positive class of a binary problem.
    X_fit_ : ndarray or CSR matrix of shape (n_samples, n_features)
        Copy of the training data, needed for the kernel at prediction time.
    dual_coef_ : ndarray of shape (n_samples,) or (n_machines, n_samples)
        ``alpha``; with more than two classes one row per binary machine (k (k - 1) / 2
        pairs one-vs-one, k classes one-vs-rest; a pair's rows outside it are 0).
    intercept_ : float or ndarray of shape (n_machines,)
        ``b`` (0 without intercept).
    gamma_ : float
        The resolved kernel parameter.
    n_iter_ : int or ndarray of shape (n_machines,)
        Newton iterations used (per machine with more than two classes).
    n_features_in_ : int
        Number of features seen in fit.

    Notes
    -----
    In scikit-learn's form ``1/2 ||f||^2 + C sum_i loss_i`` this is ``C = 1 / (2 n lam)``
    (divide by ``C n``); :class:`sklearn.svm.LinearSVC` (``loss="squared_hinge"``) fits the
    same loss for the linear kernel, but penalises its intercept unless
    ``intercept_scaling`` is large; :class:`sklearn.svm.SVC` uses the plain hinge.

    Cost: O(n^2) memory for the Gram matrix, O(n^3) time to fit (a few Newton steps, each
    a Cholesky factorisation of the margin-violating block), O(n d) per predicted point.
    """

    _machine_name = "l2svm"
    _parameter_constraints: dict = {**_COMMON_CONSTRAINTS, "fit_intercept": ["boolean"],
                                    "multiclass": [StrOptions(set(STRATEGIES))],
                                    "class_weight": [dict, StrOptions({"balanced"}), None]}

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=1.0, lam=1e-3,
                 tol=1e-10, max_iter=100, memory_budget=None, fit_intercept=True,
                 multiclass="ovo", class_weight=None):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget
        self.fit_intercept = fit_intercept
        self.multiclass = multiclass
        self.class_weight = class_weight

    def _machine_options(self) -> dict:
        return {"fit_intercept": bool(self.fit_intercept), "multiclass": self.multiclass,
                "class_weight": self.class_weight}


class HuberSVMClassifier(_KernelMachineClassifier):
    """SVM with a Huber-smoothed hinge loss (kernelcv machine ``svm``).

    With labels ``y_i`` in {-1, +1} and margins ``m_i = y_i f(x_i)``, minimises
    ``(1/n) sum_i psi(1 - m_i) + lam * alpha' K alpha`` with ``f = K alpha + b``, where
    ``psi`` is ``max(0, z)`` with its kink smoothed over ``|z| <= huber_width``:
    ``psi(z) = (z + w)^2 / (4 w)`` there. It exceeds the hinge loss by at most ``w / 4``,
    so the model tends to the hinge-loss SVM (:class:`sklearn.svm.SVC`) as
    ``huber_width -> 0``. ``fit_intercept=False`` gives the papers' bias-free SVM
    ``f = K alpha``.

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
    multiclass : {"ovo", "ovr"}, default="ovo"
        More than two classes: one machine per pair of classes on their rows, combined
        by votes (as SVC; the default), or one machine per class against the rest
        (largest value wins).
    class_weight : dict {label: weight}, "balanced" or None, default=None
        Each class's loss terms times its weight, as ``SVC(class_weight=...)``;
        ``"balanced"``: ``n / (n_classes * count)`` from the labels given to ``fit``.
        One-vs-one pair (a, b) weighs its two classes by theirs; one-vs-rest machine c
        weighs c by its weight and the rest by 1 (:mod:`kernelcv.machines.weights`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; ``classes_[1]`` is the positive class of a binary problem.
    X_fit_ : ndarray or CSR matrix of shape (n_samples, n_features)
        Copy of the training data, needed for the kernel at prediction time.
    dual_coef_ : ndarray of shape (n_samples,) or (n_machines, n_samples)
        ``alpha``; with more than two classes one row per binary machine (k (k - 1) / 2
        pairs one-vs-one, k classes one-vs-rest; a pair's rows outside it are 0).
    intercept_ : float or ndarray of shape (n_machines,)
        ``b`` (0 without intercept).
    gamma_ : float
        The resolved kernel parameter.
    n_iter_ : int or ndarray of shape (n_machines,)
        Newton iterations used (per machine with more than two classes).
    n_features_in_ : int
        Number of features seen in fit.

    Notes
    -----
    :class:`sklearn.svm.SVC` minimises ``1/2 ||f||^2 + C sum_i hinge_i``; dividing by
    ``C n`` gives the objective above with ``lam = 1 / (2 n C)``, i.e. ``C = 1 / (2 n lam)``.
    With ``fit_intercept=True`` (default) the intercept is unregularised, as ``SVC``'s.

    Cost: O(n^2) memory for the Gram matrix, O(n^3) time to fit (a few Newton steps, each
    a Cholesky factorisation of the points inside the smoothed band), O(n d) per
    predicted point.
    """

    _machine_name = "svm"
    _parameter_constraints: dict = {**_COMMON_CONSTRAINTS, "fit_intercept": ["boolean"],
                                    "huber_width": [_POSITIVE_FINITE],
                                    "multiclass": [StrOptions(set(STRATEGIES))],
                                    "class_weight": [dict, StrOptions({"balanced"}), None]}

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=1.0, lam=1e-3,
                 tol=1e-10, max_iter=100, memory_budget=None, huber_width=0.01,
                 fit_intercept=True, multiclass="ovo", class_weight=None):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget
        self.fit_intercept = fit_intercept
        self.huber_width = huber_width
        self.multiclass = multiclass
        self.class_weight = class_weight

    def _machine_options(self) -> dict:
        return {"fit_intercept": bool(self.fit_intercept),
                "huber_width": float(self.huber_width), "multiclass": self.multiclass,
                "class_weight": self.class_weight}
