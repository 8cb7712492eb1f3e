"""The ``kernelcv`` command line (the top layer: it imports the library, nothing imports it).

:func:`console` is the console script ``kernelcv`` (and ``python -m kernelcv``): it runs
:func:`main` and exits without the interpreter's teardown (:mod:`.console`); the
parser and the dispatch are in :mod:`.main`, one module per subcommand beside it
(:mod:`.cv`, :mod:`.select`, :mod:`.hypothetical`, :mod:`.tune`, :mod:`.bench`;
shared option converters in :mod:`.options`). Each subcommand parses options, calls one
library function that returns a dict, and prints it.
"""

from .console import console
from .main import build_parser, main

__all__ = ["build_parser", "console", "main", "run_cv"]


def __getattr__(name):
    # run_cv imports the numerical stack: loaded on first use, so `kernelcv --help` stays fast
    if name == "run_cv":
        from .cv import run_cv

        return run_cv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
