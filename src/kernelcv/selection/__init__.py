"""Model selection: the search core, the CV-method objects and the option groups.

``run_search(X, y, machine, method, space, *, folds, random_state, average, safeguards,
execution, screening)`` evaluates a :class:`SearchSpace` with one CV method object
(:class:`ExactRefit`, :class:`ClosedForm`, :class:`BIF`, :class:`GACV`,
:class:`FeatureSpace` or :class:`Spectral`) and applies what the method asks for after the grid;
``grid_search`` is its flat keyword interface, and it, ``KernelSearchCV``,
``kernelcv select``'s ``run_select`` and ``cross_validate`` take a method object as
``method=`` as well as a name. See docs/architecture.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same names, for type checkers and the import graph
    from ..random_features.method import FeatureSpace
    from .gacv_method import GACV
    from .methods import BIF, ClosedForm, CVMethod, ExactRefit, GranularityRule
    from .options import Execution, Safeguards, SearchSpace
    from .screening import Screening, SearchStrategy
    from .search import SearchResult, grid_search, make_method, run_search
    from .spectral_method import Spectral

# public name -> the module that defines it (relative to kernelcv). Loaded on first use,
# so that importing one module of the package (selection.methods, which the
# random-feature method builds on) does not import the whole search first.
_EXPORTS = {
    "FeatureSpace": "random_features.method", "GACV": "selection.gacv_method",
    "BIF": "selection.methods", "ClosedForm": "selection.methods",
    "CVMethod": "selection.methods", "ExactRefit": "selection.methods",
    "GranularityRule": "selection.methods", "Execution": "selection.options",
    "Safeguards": "selection.options", "SearchSpace": "selection.options",
    "Screening": "selection.screening", "SearchStrategy": "selection.screening",
    "SearchResult": "selection.search", "grid_search": "selection.search",
    "make_method": "selection.search", "run_search": "selection.search",
    "Spectral": "selection.spectral_method",
}

__all__ = ["BIF", "GACV", "ClosedForm", "CVMethod", "ExactRefit", "Execution",
           "FeatureSpace", "GranularityRule", "Safeguards", "Screening", "SearchResult",
           "SearchSpace", "SearchStrategy", "Spectral", "grid_search", "make_method",
           "run_search"]


def __getattr__(name):
    if name in _EXPORTS:
        module = importlib.import_module(f"kernelcv.{_EXPORTS[name]}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_EXPORTS})
