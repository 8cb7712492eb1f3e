"""Keep freed memory for reuse inside a kernelcv command (glibc's ``mallopt``).

A search allocates and frees the same large arrays again and again: a Gram matrix per
kernel setting, a fold's training block per refit, the stacked pair problems of a
multiclass candidate. With glibc's defaults each one larger than the (dynamic) mmap
threshold is a fresh ``mmap`` whose pages the kernel zeroes and maps one fault at a
time, and memory freed at the top of the heap is handed back to the system as soon as
it exceeds 128 KiB, so the next array of the same size faults its pages in again.
Measured with ``/usr/bin/time`` on ``kernelcv select --machine svm`` (one BLAS thread,
the benchmark's grid and folds): w8a-2000 112-153 k minor faults and 0.60-0.84 s of
system time, 47-58 k and 0.39-0.50 s with the settings below; vowel (one-vs-one)
59-61 k and 0.21-0.23 s -> 18 k and 0.10-0.13 s; glass 51 k and 0.17-0.18 s -> 17 k
and 0.05-0.08 s.

:func:`keep_freed_memory` raises the mmap threshold to :data:`MMAP_THRESHOLD` (glibc's
largest accepted value on 64-bit systems, so arrays below 32 MiB, about 2,000 x 2,000
float64 values, come from the heap) and the trim threshold to :data:`TRIM_THRESHOLD`
(freed heap memory up to that much stays with the process for the next array). The
process then holds on to its peak heap until it exits, which suits a command that runs
one search and ends; the library never calls it (an application that imports kernelcv
keeps its own allocator settings). Nothing happens where ``mallopt`` does not exist
(macOS, Windows, musl) or where the user tuned glibc's allocator through its environment
variables.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

# glibc's mallopt parameter numbers (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# The largest mmap threshold glibc accepts on 64-bit systems (HEAP_MAX_SIZE / 2).
MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 1024 * 1024 * 1024
# A user's own allocator settings win over ours.
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                 "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES")


def _mallopt():
    """glibc's ``mallopt`` as a ctypes function, or None where there is none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int]
    function.restype = ctypes.c_int
    return function


def keep_freed_memory(environ=None) -> bool:
    """Ask glibc to keep freed memory for reuse (see the module notes).

    Parameters
    ----------
    environ : mapping, default ``os.environ``; the settings are left alone when it holds
        one of :data:`USER_SETTINGS`.

    Returns
    -------
    bool
        Whether both settings were applied.
    """
    environ = os.environ if environ is None else environ
    if any(name in environ for name in USER_SETTINGS):
        return False
    mallopt = _mallopt()
    if mallopt is None:
        return False
    # mallopt returns 1 on success and 0 for a value it refuses.
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
