"""Deprecated import path, kept for one release: use kernelcv.estimators.

``KernelSearchCV`` and the registry ``ESTIMATORS`` moved to
:mod:`kernelcv.estimators.search_cv`; both are exported by :mod:`kernelcv.estimators`.
"""

# layer-exempt: deprecated re-export
from ..estimators.search_cv import ESTIMATORS, KernelSearchCV

__all__ = ["ESTIMATORS", "KernelSearchCV"]
