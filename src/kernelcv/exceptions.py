"""Errors raised by kernelcv.

Every problem with user input raises :class:`KernelCVError` (a ``ValueError``) with a
message that says what was wrong and what to do instead. The command-line interface
prints that message on one line and exits with status 2.
"""


class KernelCVError(ValueError):
    """Invalid input or settings: the message explains the problem and the remedy."""


class MemoryBudgetError(KernelCVError):
    """An n x n matrix would exceed the memory budget; the message gives the estimate."""


class ConvergenceError(KernelCVError):
    """A solver did not reach its tolerance within the iteration limit."""
