"""``SmoothLOOTuning``: what SLOO-MPS tunes and how, as one object.

The kernel mixture (``kernels``, ``betas``, ``ard``, ``C``, ``tune_C``), the smoothing
``gamma_s`` and the optimiser (``optimizer``, ``n_restarts``, ``max_iter``) of
:class:`kernelcv.estimators.SmoothLOOLSSVMClassifier`, checked when the object is made.
:func:`kernelcv.reports.tune.run_tune` takes it; the estimator checks its own parameters
with it, so both refuse the same values with the same message.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from numbers import Integral, Real

import numpy as np

from ..criteria.smooth_loo import DEFAULT_GAMMA_S, PAPER_BETAS, MixtureSpec, make_spec
from ..exceptions import KernelCVError
from ..selection.tuning import OPTIMIZERS


@dataclass(frozen=True)
class SmoothLOOTuning:
    """The tuned kernel mixture of an LS-SVM and the optimiser that tunes it (SLOO-MPS).

    Attributes
    ----------
    kernels : tuple of {"gaussian", "laplace"} or comma string, default ("gaussian", "laplace")
        Kernel families, each used with every width in ``betas``; may be empty if ``ard``.
        Kept as a lower-case tuple.
    betas : tuple of float > 0, default (0.01, 0.1, 1, 10, 100)
        Fixed kernel widths (kept as a tuple of floats).
    ard : bool, default False
        Add an ARD Gaussian with one tuned width per feature.
    C : float > 0, default 1.0
        LS-SVM cost (``H = K + I/C``); the start value if ``tune_C``.
    tune_C : bool, default False
        Tune C as well.
    gamma_s : float > 0, default 10
        Sharpness of the tanh that smooths the leave-one-out step function.
    optimizer : {"cg", "lbfgs"}, default "cg"
        Nonlinear conjugate gradient (the paper's) or L-BFGS-B.
    n_restarts : int >= 1, default 3
        Starting points of the optimiser.
    max_iter : int >= 1, default 100
        Optimiser iterations per restart.

    Raises
    ------
    KernelCVError
        For an unknown or repeated kernel, a width that is not positive and finite, an
        empty mixture, C or gamma_s not positive and finite, an unknown optimiser, or
        n_restarts or max_iter below 1.
    """

    kernels: tuple = ("gaussian", "laplace")
    betas: tuple = PAPER_BETAS
    ard: bool = False
    C: float = 1.0
    tune_C: bool = False
    gamma_s: float = DEFAULT_GAMMA_S
    optimizer: str = "cg"
    n_restarts: int = 3
    max_iter: int = 100

    def __post_init__(self):
        spec = make_spec(self.kernels, self.betas, self.ard, self.tune_C)
        object.__setattr__(self, "kernels", spec.kernels)
        object.__setattr__(self, "betas", spec.betas)
        for name in ("C", "gamma_s"):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, Real)
                    or not np.isfinite(value) or value <= 0):
                raise KernelCVError(f"{name} must be a positive finite number, got {value!r}")
        if self.optimizer not in OPTIMIZERS:
            raise KernelCVError(f"optimizer must be 'cg' or 'lbfgs', got {self.optimizer!r}")
        for name in ("n_restarts", "max_iter"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
                raise KernelCVError(f"{name} must be an integer >= 1, got {value!r}")

    @property
    def spec(self) -> MixtureSpec:
        """The kernel components and parameter layout (:class:`MixtureSpec`)."""
        return MixtureSpec(kernels=self.kernels, betas=self.betas, ard=bool(self.ard),
                           tune_C=bool(self.tune_C))

    def estimator_params(self) -> dict:
        """The keyword arguments of :class:`SmoothLOOLSSVMClassifier` this object holds."""
        return {name: getattr(self, name) for name in TUNING_PARAMS}


# the fields, each also a parameter of SmoothLOOLSSVMClassifier
TUNING_PARAMS = tuple(item.name for item in fields(SmoothLOOTuning))
