"""Deprecated import path, kept for one release: use kernelcv.reports.select.

``run_select`` (the library side of ``kernelcv select``) moved to
:mod:`kernelcv.reports.select` and ``jsonable`` to :mod:`kernelcv.reports.io`.
"""

# layer-exempt: deprecated re-export
from ..reports.io import jsonable
from ..reports.select import run_select

__all__ = ["jsonable", "run_select"]
