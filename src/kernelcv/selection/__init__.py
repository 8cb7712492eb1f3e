"""Model selection: the search core, the CV-method objects and the option groups.

``run_search(X, y, machine, method, space, *, folds, random_state, average, safeguards,
execution, screening)`` evaluates a :class:`SearchSpace` with one CV method object
(:class:`ExactRefit`, :class:`ClosedForm`, :class:`BIF`, :class:`GACV`,
:class:`FeatureSpace` or :class:`Spectral`) and applies what the method asks for after the grid;
``grid_search`` is its flat keyword interface, and it, ``KernelSearchCV``,
``kernelcv select``'s ``run_select`` and ``cross_validate`` take a method object as
``method=`` as well as a name. See docs/architecture.md.
"""

from .feature_space import FeatureSpace
from .gacv_method import GACV
from .methods import BIF, ClosedForm, CVMethod, ExactRefit, GranularityRule
from .options import Execution, Safeguards, SearchSpace
from .screening import Screening
from .search import SearchResult, grid_search, make_method, run_search
from .spectral_method import Spectral

__all__ = ["BIF", "GACV", "ClosedForm", "CVMethod", "ExactRefit", "Execution",
           "FeatureSpace", "GranularityRule", "Safeguards", "Screening", "SearchResult",
           "SearchSpace", "Spectral",
           "grid_search", "make_method", "run_search"]
