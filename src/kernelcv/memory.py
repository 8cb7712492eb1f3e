"""Memory budget for dense n x n matrices.

Kernel methods hold Gram matrices (and for some criteria an eigenvector matrix) of
``n * n * 8`` bytes each. Before allocating them, :func:`check_dense_budget` compares
the estimate with a budget and refuses with advice instead of letting the machine swap.

The budget is, in order of precedence: the ``memory_budget`` argument, the environment
variable ``KERNELCV_MEMORY_BUDGET`` (bytes, or a number with a ``K``/``M``/``G``/``T``
suffix, e.g. ``8G``), else half of the memory the process may use: the physical memory,
or less under an address-space limit (``ulimit -v``) or a container's cgroup limit.
"""

from __future__ import annotations

import os
import re

from .exceptions import KernelCVError, MemoryBudgetError

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_bytes(value: str | int | float) -> int:
    """Parse ``8G``, ``512M``, ``1.5G`` or a plain number of bytes."""
    if isinstance(value, int | float):
        if value <= 0:
            raise KernelCVError(f"memory budget must be positive, got {value}")
        return int(value)
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)i?B?\s*", str(value), re.IGNORECASE)
    if not match:
        raise KernelCVError(
            f"cannot read memory budget {value!r}: give bytes or a number with K, M, G or T"
        )
    number = float(match.group(1)) * _UNITS[match.group(2).upper()]
    if number <= 0:
        raise KernelCVError(f"memory budget must be positive, got {value!r}")
    return int(number)


def physical_memory() -> int:
    """Physical memory in bytes (POSIX ``sysconf``), or 8 GiB when it cannot be read."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def process_memory_limit() -> int:
    """The memory this process may use: the smallest of the physical memory, its address
    space limit (``ulimit -v``) and its cgroup's ``memory.max`` (a container's limit)."""
    limits = [physical_memory()]
    try:
        import resource  # POSIX only

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
            limits.append(int(soft))
    except (ImportError, ValueError, OSError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as handle:
            text = handle.read().strip()
        if text.isdigit():
            limits.append(int(text))
    except OSError:
        pass
    return min(limits)


def memory_budget(budget: str | int | float | None = None) -> int:
    """The budget in bytes (argument, then ``KERNELCV_MEMORY_BUDGET``, then half of
    :func:`process_memory_limit`: RAM, ``ulimit -v`` or the container's limit)."""
    if budget is not None:
        return parse_bytes(budget)
    env = os.environ.get("KERNELCV_MEMORY_BUDGET")
    if env:
        return parse_bytes(env)
    return process_memory_limit() // 2


def format_bytes(n_bytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n_bytes) < 1024 or unit == "TiB":
            return f"{n_bytes:.1f} {unit}" if unit != "B" else f"{int(n_bytes)} B"
        n_bytes /= 1024
    raise AssertionError("unreachable")


def check_dense_budget(
    n_rows: int,
    n_cols: int,
    n_matrices: float,
    what: str,
    budget: str | int | float | None = None,
    itemsize: int = 8,
) -> int:
    """Refuse when ``n_matrices`` dense ``n_rows x n_cols`` arrays would exceed the budget.

    Returns the estimate in bytes. Raises :class:`MemoryBudgetError` with the estimate
    and the remedies otherwise.
    """
    need = int(n_rows) * int(n_cols) * itemsize * n_matrices
    limit = memory_budget(budget)
    if need > limit:
        raise MemoryBudgetError(
            f"{what} needs about {format_bytes(need)} ({n_matrices:g} dense "
            f"{n_rows} x {n_cols} float64 matrices) but the memory budget is "
            f"{format_bytes(limit)}; use a random subsample of the data, or raise the budget "
            "with memory_budget= / --memory-budget / KERNELCV_MEMORY_BUDGET if the machine "
            "really has the memory"
        )
    return need


def dense_array(X, what: str, budget: str | int | float | None = None):
    """A sparse ``X`` made dense, refusing first when it would exceed the budget.

    A sparse svmlight file with one feature index of 50,000,000 is a few bytes on disk
    and ``n x 5e7`` dense floats in memory: this checks ``n_rows x n_cols`` against the
    budget (:func:`memory_budget`) before ``toarray`` allocates it.

    Parameters
    ----------
    X : scipy sparse matrix (or anything else, returned as it is)
    what : what needs the dense array, for the message (e.g. ``"kernelcv tune"``).
    budget : the memory budget, as for :func:`memory_budget`.

    Raises
    ------
    MemoryBudgetError
        When the dense array would exceed the budget; the message gives the shape and
        the highest feature index as the likely cause.
    """
    if not hasattr(X, "toarray"):
        return X
    n_rows, n_cols = X.shape
    need = int(n_rows) * int(n_cols) * 8
    limit = memory_budget(budget)
    if need > limit:
        raise MemoryBudgetError(
            f"{what} needs the data as a dense {n_rows} x {n_cols} array, about "
            f"{format_bytes(need)}, but the memory budget is {format_bytes(limit)}; the "
            f"highest feature index in the file is {n_cols}: check it, or remove unused "
            "feature indices")
    return X.toarray()
