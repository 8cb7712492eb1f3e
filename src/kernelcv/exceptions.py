"""Errors raised by kernelcv.

Every problem with user input raises :class:`KernelCVError` (a ``ValueError``) with a
message that says what was wrong and what to do instead. The command-line interface
prints that message on one line and exits with status 2.
"""


import re

# The repr of a numpy scalar since numpy 2 (``np.float64(1.0)``, ``np.int64(3)``,
# ``np.str_('a')``, ``np.True_``): messages show the plain value instead.
_NUMPY_SCALAR = re.compile(r"np\.(?:float|int|uint|complex|bool|str)_?\d*\(([^()]*)\)"
                           r"|np\.(True|False)_")


class KernelCVError(ValueError):
    """Invalid input or settings: the message explains the problem and the remedy.

    A numpy scalar's repr in the message (``np.float64(1.0)``) is shown as its plain
    value (``1.0``), whichever code formatted it.
    """

    def __init__(self, *args):
        if len(args) == 1 and isinstance(args[0], str):
            args = (_NUMPY_SCALAR.sub(lambda m: m.group(1) or m.group(2), args[0]),)
        super().__init__(*args)


class MemoryBudgetError(KernelCVError):
    """An n x n matrix would exceed the memory budget; the message gives the estimate."""


class ConvergenceError(KernelCVError):
    """A solver did not reach its tolerance within the iteration limit."""


class GridEdgeWarning(UserWarning):
    """The chosen candidate lies on an edge of its grid: a better value may lie outside.

    Python searches (``grid_search``, ``KernelSearchCV``) warn with it; the same text is
    in the result's notes (the command line prints it as a note).
    """
