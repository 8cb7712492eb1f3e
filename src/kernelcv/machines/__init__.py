"""The learning machines: a loss, a task and whether there is an intercept.

All machines solve ``min (1/n) sum_j loss(y_j, f(x_j)) + lam ||f||_H^2`` with
``f = K alpha (+ b)``, by :func:`kernelcv.machines.solver.fit_kernel_machine`.

=========  ===========================  ==============  =====================================
name       loss                         task            scikit-learn counterpart
=========  ===========================  ==============  =====================================
``krr``    square                       regression      ``KernelRidge(alpha = n lam)``
``lssvm``  square on +-1 labels (+ b)   classification  (none; ridge classifier with kernel)
``l2svm``  squared hinge                classification  squared-hinge SVM, ``C = 1/(2 n lam)``
``svm``    Huber-smoothed hinge         classification  ``SVC(C = 1/(2 n lam))`` as width -> 0
``svr``    Huber-smoothed eps-insens.   regression      ``SVR(C = 1/(2 n lam))`` as width -> 0
=========  ===========================  ==============  =====================================

The mapping to scikit-learn's ``C``: ``SVC`` minimises ``1/2 ||f||^2 + C sum_j loss_j``;
dividing by ``C n`` gives ``(1/n) sum_j loss_j + ||f||^2 / (2 C n)``, so ``lam = 1/(2 C n)``.
``SVC`` and ``SVR`` fit an intercept; kernelcv's ``l2svm``, ``svm`` and ``svr`` are the papers'
bias-free machines (add a constant to the kernel, e.g. ``poly`` with ``coef0``, to emulate one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..exceptions import KernelCVError
from .losses import HuberHingeLoss, HuberInsensitiveLoss, SquaredHingeLoss, SquareLoss
from .solver import FitResult, fit_kernel_machine

MACHINES = ("krr", "lssvm", "l2svm", "svm", "svr")
CLASSIFIERS = ("lssvm", "l2svm", "svm")


@dataclass(frozen=True)
class Machine:
    """A learning machine: its name, loss, task and intercept setting."""

    name: str
    loss: object
    fit_intercept: bool = False

    @property
    def is_classifier(self) -> bool:
        return self.name in CLASSIFIERS

    @property
    def metric(self) -> str:
        """The cross-validation error: ``"0-1"`` for classifiers, ``"mse"`` for regressors."""
        return "0-1" if self.is_classifier else "mse"

    def params(self) -> dict:
        out = {"machine": self.name}
        if self.name == "lssvm":
            out["fit_intercept"] = self.fit_intercept
        if self.name in ("svm", "svr"):
            out["huber_width"] = self.loss.width
        if self.name == "svr":
            out["epsilon"] = self.loss.epsilon
        return out

    def fit(self, K, y, lam, **kwargs) -> FitResult:
        """Fit on the Gram matrix ``K`` (see :func:`fit_kernel_machine`)."""
        return fit_kernel_machine(K, y, lam, self.loss, fit_intercept=self.fit_intercept,
                                  **kwargs)


def make_machine(name: str, huber_width: float = 0.01, epsilon: float = 0.1,
                 fit_intercept: bool | None = None) -> Machine:
    """Build a :class:`Machine` by name.

    ``fit_intercept`` defaults to True for ``lssvm`` (the classic LS-SVM with a bias term)
    and is only available for ``lssvm``.
    """
    if name not in MACHINES:
        raise KernelCVError(f"unknown machine {name!r}; choose one of {', '.join(MACHINES)}")
    if fit_intercept and name != "lssvm":
        raise KernelCVError(f"machine {name!r} is bias-free; fit_intercept is only for lssvm")
    if name == "krr":
        return Machine(name, SquareLoss())
    if name == "lssvm":
        return Machine(name, SquareLoss(), True if fit_intercept is None else bool(fit_intercept))
    if name == "l2svm":
        return Machine(name, SquaredHingeLoss())
    if name == "svm":
        return Machine(name, HuberHingeLoss(width=float(huber_width)))
    return Machine(name, HuberInsensitiveLoss(epsilon=float(epsilon), width=float(huber_width)))


__all__ = ["MACHINES", "CLASSIFIERS", "Machine", "make_machine", "FitResult",
           "fit_kernel_machine"]
