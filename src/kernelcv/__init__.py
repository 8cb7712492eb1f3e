"""kernelcv: cross-validation of kernel machines at the cost of about one training run.

The public names below load their module on first use (a module ``__getattr__``), so
``import kernelcv`` is cheap and ``kernelcv --help`` does not import scikit-learn;
``from kernelcv import cross_validate`` and ``kernelcv.cross_validate`` work as usual, and
so do submodules reached as attributes (``kernelcv.reading.files``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same names, for type checkers and the import graph
    from .criteria.result import CVResult
    from .cv import cross_validate, cross_validate_path
    from .estimators import KernelSearchCV
    from .exceptions import KernelCVError, MemoryBudgetError
    from .kernels import GramFactory, Kernel, make_kernel
    from .machines import MACHINES, make_machine
    from .machines.saved_model import load_model
    from .selection import (
        BIF,
        GACV,
        ClosedForm,
        ExactRefit,
        Execution,
        FeatureSpace,
        GranularityRule,
        Safeguards,
        Screening,
        Spectral,
    )
    from .selection.search import SearchResult, grid_search

from ._version import __version__ as __version__

# public name -> the module (relative to kernelcv) that defines it
_EXPORTS = {
    "BIF": "selection",
    "ClosedForm": "selection",
    "ExactRefit": "selection",
    "FeatureSpace": "selection",
    "GACV": "selection",
    "GranularityRule": "selection",
    "Spectral": "selection",
    "Safeguards": "selection",
    "Execution": "selection",
    "Screening": "selection",
    "CVResult": "criteria.result",
    "GramFactory": "kernels",
    "GridEdgeWarning": "exceptions",
    "Kernel": "kernels",
    "KernelCVError": "exceptions",
    "KernelSearchCV": "estimators",
    "MACHINES": "machines",
    "MemoryBudgetError": "exceptions",
    "SearchResult": "selection.search",
    "cross_validate": "cv",
    "cross_validate_path": "cv",
    "grid_search": "selection.search",
    "load_model": "machines.saved_model",
    "make_kernel": "kernels",
    "make_machine": "machines",
}

__all__ = [
    "BIF",
    "ClosedForm",
    "ExactRefit",
    "FeatureSpace",
    "GACV",
    "GranularityRule",
    "Spectral",
    "Safeguards",
    "Execution",
    "Screening",
    "CVResult",
    "GramFactory",
    "GridEdgeWarning",
    "Kernel",
    "KernelCVError",
    "KernelSearchCV",
    "MACHINES",
    "MemoryBudgetError",
    "SearchResult",
    "cross_validate",
    "cross_validate_path",
    "grid_search",
    "load_model",
    "make_kernel",
    "make_machine",
]


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value  # later lookups are plain attribute reads
        return value
    if not name.startswith("__"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_EXPORTS})
