"""kernelcv: cross-validation of kernel machines at the cost of about one training run."""

from .criteria.result import CVResult
from .cv import cross_validate, cross_validate_path
from .exceptions import KernelCVError, MemoryBudgetError
from .kernels import GramFactory, Kernel, make_kernel
from .machines import MACHINES, make_machine

__version__ = "0.1.0"

__all__ = [
    "CVResult",
    "GramFactory",
    "Kernel",
    "KernelCVError",
    "MACHINES",
    "MemoryBudgetError",
    "cross_validate",
    "cross_validate_path",
    "make_kernel",
    "make_machine",
]
