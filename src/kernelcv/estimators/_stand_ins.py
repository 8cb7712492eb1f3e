"""scikit-learn's kernel machines searched by their kernelcv stand-ins.

``KernelSearchCV(SVC(), grid)`` runs as ``GridSearchCV(SVC(), grid)`` is written: the
estimator (or a Pipeline's last step) is replaced by the kernelcv machine that solves the
same problem, with its kernel, width and regularisation carried over:

==================  ===========================  =========================================
scikit-learn        kernelcv stand-in             regularisation
==================  ===========================  =========================================
``SVC``             ``HuberSVMClassifier`` (svm)  ``lam = 1 / (2 n C)``; the hinge loss
                                                  smoothed over a band of width 0.01
``SVR``             ``HuberSVMRegressor`` (svr)   ``lam = 1 / (2 n C)``; ``epsilon`` kept
``KernelRidge``     ``KernelRidgeRegressor``      ``lam = alpha / n``
==================  ===========================  =========================================

with n the samples given to ``fit``. Grids keep scikit-learn's keys (``C``, ``alpha``,
``gamma``, ``kernel``, ``degree``, ``coef0``, with a Pipeline's step prefix). Settings the
stand-in cannot honour (the sigmoid or a precomputed kernel, a callable kernel) are
refused with the reason, never ignored; ``SVC(class_weight=...)`` is kept (see
:mod:`kernelcv.machines.weights`: "balanced" is computed once from all rows).
``SVC(probability=True)`` is taken: the search's ``predict_proba`` calibrates the chosen
model's out-of-fold values (no Platt scaling fits).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVC, SVR

from ..exceptions import KernelCVError
from ._classifiers import HuberSVMClassifier
from ._regressors import HuberSVMRegressor, KernelRidgeRegressor

# scikit-learn's kernel names -> kernelcv's
_KERNELS = {"rbf": "rbf", "linear": "linear", "poly": "poly", "polynomial": "poly",
            "laplacian": "laplace"}


@dataclass(frozen=True)
class StandIn:
    """A kernelcv estimator standing in for a scikit-learn one, and the line that says so."""

    estimator: object
    note: str


def stand_in(estimator, n_samples: int) -> StandIn | None:
    """The kernelcv stand-in of a scikit-learn ``SVC``, ``SVR`` or ``KernelRidge`` (None
    for any other object), its regularisation mapped for ``n_samples`` rows."""
    kind = type(estimator)
    if kind is SVC:
        params = _kernel_params(estimator, "SVC")
        machine = HuberSVMClassifier(**params, lam=_lam_from_C(estimator.C, n_samples),
                                     class_weight=estimator.class_weight)
        return StandIn(machine, "SVC is searched as kernelcv's svm (HuberSVMClassifier: "
                                "the hinge smoothed over width 0.01, lam = 1/(2 n C)"
                                + ("; class_weight kept" if estimator.class_weight is not None
                                   else "") + ")")
    if kind is SVR:
        params = _kernel_params(estimator, "SVR")
        machine = HuberSVMRegressor(**params, epsilon=float(estimator.epsilon),
                                    lam=_lam_from_C(estimator.C, n_samples))
        return StandIn(machine, "SVR is searched as kernelcv's svr (HuberSVMRegressor: the "
                                "eps-insensitive loss smoothed over width 0.01, "
                                "lam = 1/(2 n C))")
    if kind is KernelRidge:
        if estimator.kernel_params is not None:
            raise KernelCVError("KernelRidge(kernel_params=...): give gamma, degree and "
                                "coef0 instead")
        params = _kernel_params(estimator, "KernelRidge")
        alpha = estimator.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not alpha > 0:
            raise KernelCVError(f"KernelRidge(alpha={alpha!r}): one positive alpha")
        machine = KernelRidgeRegressor(**params, lam=float(alpha) / n_samples)
        return StandIn(machine, "KernelRidge is searched as kernelcv's krr "
                                "(KernelRidgeRegressor, the same problem, lam = alpha / n)")
    return None


def stand_in_kernel(kernel):
    """kernelcv's name of a scikit-learn kernel name in a grid (``"laplacian"`` ->
    ``"laplace"``, ``"polynomial"`` -> ``"poly"``); other values as given."""
    return _KERNELS.get(kernel, kernel) if isinstance(kernel, str) else kernel


def _kernel_params(estimator, name) -> dict:
    kernel = estimator.kernel
    if not isinstance(kernel, str) or kernel not in _KERNELS:
        raise KernelCVError(f"{name}(kernel={kernel!r}): kernelcv offers the rbf, laplacian, "
                            "poly and linear kernels")
    gamma = estimator.gamma
    if gamma is None:  # KernelRidge: scikit-learn's pairwise kernels use 1 / n_features
        gamma = "auto"
    return {"kernel": _KERNELS[kernel], "gamma": gamma, "degree": int(estimator.degree),
            "coef0": float(estimator.coef0)}


def _lam_from_C(C, n_samples) -> float:
    if isinstance(C, bool) or not isinstance(C, numbers.Real) or not C > 0:
        raise KernelCVError(f"C must be one positive number, got {C!r}")
    return 1.0 / (2.0 * n_samples * float(C))
