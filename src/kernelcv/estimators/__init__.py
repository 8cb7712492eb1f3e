"""scikit-learn estimators for the kernel machines of :mod:`kernelcv.machines`.

One estimator per machine, each a thin layer over :func:`kernelcv.machines.make_machine`
and :class:`kernelcv.kernels.Kernel`:

=============================  =========  ==============================================
estimator                      machine    loss
=============================  =========  ==============================================
:class:`KernelRidgeRegressor`  ``krr``    square (kernel ridge regression)
:class:`LSSVMClassifier`       ``lssvm``  square on +-1 labels, with intercept by default
:class:`L2SVMClassifier`       ``l2svm``  squared hinge, with intercept by default
:class:`HuberSVMClassifier`    ``svm``    Huber-smoothed hinge, with intercept by default
:class:`HuberSVMRegressor`     ``svr``    Huber-smoothed eps-insensitive, intercept by default
=============================  =========  ==============================================

:class:`SmoothLOOLSSVMClassifier` is different: an LS-SVM whose many kernel weights (a
mixture of Gaussian and Laplace kernels, optionally an ARD Gaussian) are tuned by gradient
descent on a smoothed closed-form leave-one-out error (:mod:`kernelcv.criteria.smooth_loo`);
:func:`fixed_parameter_cv` is its t-fold CV error at the tuned parameters and
:class:`SmoothLOOTuning` holds its tuning options as one checked object.
:class:`HypotheticalRidgeCV`, :class:`EnetSVMClassifier` and :class:`RelevanceSVMClassifier`
choose their structural parameter (lam, or the mu that selects features or training
objects) by the non-enumerative criterion of :mod:`kernelcv.hypothetical`.

:class:`KernelSearchCV` searches kernel parameters and lam of the first five by the fast
CV criteria of :mod:`kernelcv.selection`; ``ESTIMATORS`` maps each machine name to its
estimator class.

All of them minimise ``(1/n) sum_i loss(y_i, f(x_i)) + lam * alpha' K alpha`` with
``f = K alpha (+ b)``; all but ``KernelRidgeRegressor`` fit the unregularised intercept
``b`` unless ``fit_intercept=False`` (the papers' bias-free machines). They keep the
training data (``X_fit_``) because predicting needs the kernel between new points and the
training points.

Classifiers map two classes of any type to -1/+1 (``classes_[1]`` is the positive class)
and handle more classes by binary machines on one Gram matrix: one per pair of classes
(``multiclass="ovo"``, the default) or one per class (``"ovr"``).
"""

from ._classifiers import HuberSVMClassifier, L2SVMClassifier, LSSVMClassifier
from ._hypothetical import EnetSVMClassifier, HypotheticalRidgeCV, RelevanceSVMClassifier
from ._regressors import HuberSVMRegressor, KernelRidgeRegressor
from ._smooth_loo import SmoothLOOLSSVMClassifier, fixed_parameter_cv
from .search_cv import ESTIMATORS, KernelSearchCV
from .smooth_loo_tuning import SmoothLOOTuning

__all__ = [
    "ESTIMATORS",
    "EnetSVMClassifier",
    "HuberSVMClassifier",
    "HuberSVMRegressor",
    "HypotheticalRidgeCV",
    "KernelRidgeRegressor",
    "KernelSearchCV",
    "L2SVMClassifier",
    "LSSVMClassifier",
    "RelevanceSVMClassifier",
    "SmoothLOOLSSVMClassifier",
    "SmoothLOOTuning",
    "fixed_parameter_cv",
]
