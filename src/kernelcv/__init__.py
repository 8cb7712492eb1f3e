"""kernelcv: cross-validation of kernel machines at the cost of about one training run."""

from .criteria.result import CVResult
from .cv import cross_validate, cross_validate_path
from .estimators import KernelSearchCV
from .exceptions import KernelCVError, MemoryBudgetError
from .kernels import GramFactory, Kernel, make_kernel
from .machines import MACHINES, make_machine
from .selection.search import SearchResult, grid_search

__version__ = "0.1.0"

__all__ = [
    "CVResult",
    "GramFactory",
    "Kernel",
    "KernelCVError",
    "KernelSearchCV",
    "MACHINES",
    "MemoryBudgetError",
    "SearchResult",
    "cross_validate",
    "cross_validate_path",
    "grid_search",
    "make_kernel",
    "make_machine",
]
