"""The ``kernelcv`` command line: the top-level parser and the dispatch to a subcommand.

Each subcommand is a module of this package (:mod:`.cv`, :mod:`.select`,
:mod:`.hypothetical`, :mod:`.tune`, :mod:`.bench`) and a thin shell around one library
function that returns a plain dict: the module declares the options
(``add_arguments(parser)``), calls that function (``run_command(args, parser)``) and
renders the dict as an aligned, readable summary (``render(report, args)``); ``--json``
prints it as one JSON object instead::

    kernelcv cv heart_scale.svm --machine lssvm --gamma 0.05 --lam 1e-3 --method bif
    kernelcv select heart_scale.svm --machine l2svm --out results --plot

A subcommand's module is imported only when that subcommand runs (or its options are
declared for ``kernelcv COMMAND --help``), so ``kernelcv --help`` imports no numerical
library.

Exit status: 0 on success, 2 for bad input (a usage error, an unreadable file, invalid
data or settings); the error is one line on stderr starting with ``kernelcv: error:``.
Ctrl-C (SIGINT) exits with status 130 and one line, ``kernelcv: interrupted: ...``, which
says where finished work was kept (a subcommand's optional ``resume_hint(args)``); no
output file of the run is written (see ``docs/reliability.md``).
Remarks (label mapping) and Python warnings are one-line ``kernelcv: note:`` and
``kernelcv: warning:`` messages on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import re
import sys
import warnings
from dataclasses import dataclass

from .._version import __version__
from ..exceptions import KernelCVError

__all__ = ["COMMANDS", "build_parser", "main"]

PROG = "kernelcv"
EXIT_OK = 0
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, its one-line help and the module that implements it.

    The module (``kernelcv.cli.<module>``) has ``add_arguments(parser)``,
    ``run_command(args, parser)`` returning the report dict, and ``render(report, args)``.
    """

    name: str
    help: str
    module: str

    def load(self):
        """The subcommand's module, imported on first use."""
        return importlib.import_module(f"{__package__}.{self.module}")


COMMANDS = (
    Command("cv", "estimate the cross-validation error of one kernel machine", "cv"),
    Command("select", "choose the kernel parameter and lam by (approximate) CV", "select"),
    Command("hypothetical", "non-enumerative (hypothetical) CV for ridge, SVM, elastic-net SVM",
            "hypothetical"),
    Command("tune", "tune many kernel parameters of LS-SVM by a smooth leave-one-out error",
            "tune"),
    Command("bench", "reproduce the papers' experiments against scikit-learn", "bench"),
    Command("predict", "predict a data file with a model saved by select --save-model",
            "predict"),
    Command("data", "write scikit-learn's bundled example sets as train/test files", "data"),
)


def build_parser(declare=None) -> argparse.ArgumentParser:
    """The argument parser with one subparser per command.

    ``declare``: the names of the commands whose options are declared (each imports its
    module); default all of them.
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Select hyperparameters of kernel machines by fast approximate "
                    "cross-validation.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        sub = commands.add_parser(command.name, help=command.help,
                                  description=command.help[:1].upper() + command.help[1:])
        if declare is None or command.name in declare:
            module = command.load()
            module.add_arguments(sub)
            # Every command's --help ends with worked examples (module.EXAMPLES).
            sub.epilog = module.EXAMPLES
            sub.formatter_class = argparse.RawDescriptionHelpFormatter
        sub.set_defaults(_command=command, _parser=sub)
    return parser


def _named_command(argv):
    """The command named on the command line, as a 1-tuple, or () when there is none.

    The top-level options take no values, so the first argument that is not an option is
    the command; an unknown name is left to argparse to refuse.
    """
    names = {command.name for command in COMMANDS}
    for item in argv:
        if isinstance(item, str) and item.startswith("-"):
            continue
        return (item,) if item in names else ()
    return ()


def _version():
    return __version__


def _say(kind, message):
    text = " ".join(str(message).split())
    print(f"{PROG}: {kind}: {text}", file=sys.stderr)


class _NoteHandler(logging.Handler):
    """Keeps the library's log records (e.g. a CSV header decision) to print as notes.

    They are printed (``kernelcv: note:``) when the command succeeds; a failed command
    prints its one error line only.
    """

    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


# At most this many kinds of warning are printed; warnings that differ only in their
# numbers (one per lam, one per fold) are one kind, printed once with their count.
MAX_WARNING_KINDS = 5
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _report_warnings(caught):
    kinds: dict = {}  # (category, text with its numbers masked) -> distinct texts
    for item in caught:
        text = " ".join(str(item.message).split())
        texts = kinds.setdefault((item.category, _NUMBER.sub("#", text)), {})
        texts[text] = None
    for shown, ((category, _), texts) in enumerate(kinds.items()):
        if shown == MAX_WARNING_KINDS:
            rest = sum(len(t) for t in list(kinds.values())[MAX_WARNING_KINDS:])
            _say("warning", f"... and {rest} more warning(s) of {len(kinds) - shown} other "
                            "kind(s)")
            break
        first = next(iter(texts))
        more = f"; {len(texts) - 1} more like it" if len(texts) > 1 else ""
        _say("warning", f"{first} ({category.__name__}{more})")


def _error_message(exc):
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc) or type(exc).__name__


def _interrupted(module=None, args=None) -> int:
    """One line for Ctrl-C (where finished work was kept); the exit status 130."""
    hint = getattr(module, "resume_hint", None)
    text = hint(args) if hint is not None and args is not None else None
    _say("interrupted", "stopped by Ctrl-C; no output file was written"
         + (f"; {text}" if text else ""))
    return EXIT_INTERRUPTED


def main(argv=None) -> int:
    """Run the command line; return the exit status (0 success, 2 bad input, 130 Ctrl-C)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before the command started, or while its result printed
        return _interrupted()


def _main(argv):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(declare=_named_command(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    command = args._command
    args._argv = [PROG, *argv]  # recorded in reports (kernelcv select's report.json)
    module = command.load()
    library = logging.getLogger(PROG)
    handler = _NoteHandler()
    level = library.level
    library.setLevel(logging.INFO)
    library.addHandler(handler)
    try:
        return _run(module, command, args, handler.messages)
    finally:
        library.removeHandler(handler)
        library.setLevel(level)


def _run(module, command, args, logged):
    from .._allocator import keep_freed_memory

    keep_freed_memory()  # a command allocates the same large arrays many times
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            summary = module.run_command(args, args._parser)
        except SystemExit as exc:  # a usage error found after parsing
            return exc.code if isinstance(exc.code, int) else EXIT_ERROR
        except (KernelCVError, OSError) as exc:
            _report_warnings(caught)
            _say("error", _error_message(exc))
            return EXIT_ERROR
        except MemoryError as exc:  # the process's own limit (ulimit -v, a cgroup)
            _report_warnings(caught)
            detail = " ".join(str(exc).split())
            _say("error", "out of memory" + (f" ({detail})" if detail else "")
                 + "; no output file was written -- lower --memory-budget below the "
                 "memory this process may use (the budget's default is half the RAM, "
                 "which a process limit can undercut), or use fewer rows or --method rff")
            return EXIT_ERROR
        except KeyboardInterrupt:
            return _interrupted(module, args)
    for note in logged:
        _say("note", note)
    _report_warnings(caught)
    for note in summary.get("notes") or []:
        # the cv command shows these as warnings (its problems())
        if not str(note).startswith(("degenerate", "BIF series not converged",
                                     "BIF value ill-conditioned", "BIF value not certified")):
            _say("note", note)
    if args.json:
        from ..reports.io import jsonable  # numpy, loaded by now: the command has run

        if command.name == "cv":
            for problem in module.problems(summary):
                _say("warning", problem)
        text = json.dumps(jsonable(summary), indent=2, allow_nan=False)
    else:
        text = module.render(summary, args)
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `kernelcv select ... | head`: the reader left early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK
