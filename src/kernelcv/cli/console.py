"""The console script's entry point: run the command line, then leave without teardown.

When a Python process ends normally the interpreter tears itself down: it clears every
module, collects the objects left and unloads the extension modules. After ``kernelcv
select`` (numpy, scipy and scikit-learn loaded) that took 40-73 ms of the process's
0.6-0.9 s on the small benchmark sets (fourclass, measured from the end of ``main`` to
the shell seeing the process end; 8-10 ms with the teardown skipped) — the work of the
process is done by then: the report is printed and flushed, output files are written and
closed (:mod:`kernelcv.reports.staging` renames them into place before ``main`` returns).

:func:`console` runs :func:`kernelcv.cli.main.main`, flushes stdout and stderr, runs the
functions registered with :mod:`atexit` (logging's shutdown, multiprocessing's cleanup,
whatever a library registered) and ends the process with ``os._exit``. It exits the
normal way instead when anything might still need the interpreter's shutdown: a thread
other than the main one is alive (normal exit joins non-daemon threads) or a child
process of :mod:`multiprocessing` is (Dask's local workers, joblib's pools).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

from .main import main


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed stream or a reader that left
            pass


def teardown_needed() -> bool:
    """Whether the process must end through the interpreter's normal shutdown: another
    thread or a multiprocessing child is still alive."""
    if threading.active_count() > 1:
        return True
    multiprocessing = sys.modules.get("multiprocessing")
    return bool(multiprocessing is not None and multiprocessing.active_children())


def console(argv=None):
    """The ``kernelcv`` console script (and ``python -m kernelcv``): never returns."""
    code = main(argv)
    if teardown_needed():
        sys.exit(code)
    _flush()
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)
