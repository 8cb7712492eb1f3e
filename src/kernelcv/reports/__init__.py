"""The library side of the ``kernelcv`` commands: each takes files and options, does the
work and returns a JSON-able report dict, writing its output files all or nothing.

:mod:`.io` is the one public I/O module (JSON-able values, atomic multi-file writes, PNG
bytes, output-folder checks); :mod:`.select`, :mod:`.hypothetical` and :mod:`.tune` are
the library sides of ``kernelcv select``, ``hypothetical`` and ``tune``. (``kernelcv
bench`` has its own package, :mod:`kernelcv.experiments`.)

Nothing is imported here, so importing :mod:`.io` stays cheap.
"""
