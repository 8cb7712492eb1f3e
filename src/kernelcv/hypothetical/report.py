"""Deprecated import path, kept for one release: use kernelcv.reports.hypothetical.

``run_hypothetical``, ``MODELS`` and ``path_figure`` (the library side of ``kernelcv
hypothetical``) moved to :mod:`kernelcv.reports.hypothetical`.
"""

# layer-exempt: deprecated re-export
from ..reports.hypothetical import MODELS, path_figure, run_hypothetical

__all__ = ["MODELS", "path_figure", "run_hypothetical"]
