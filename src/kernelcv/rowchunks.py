"""Deprecated import path, kept for one release: the module is :mod:`kernelcv.reading.rowchunks`.

``kernelcv.rowchunks`` is that very module (an alias in ``sys.modules``), so its names,
private ones and monkeypatching included, behave as before.
"""

# layer-exempt: deprecated re-export
import sys

from .reading import rowchunks as module

sys.modules[__name__] = module
