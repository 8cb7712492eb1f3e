"""How many BLAS threads kernelcv's computations use: one, unless threads clearly help.

Two problems with the default BLAS threads:

* The numpy and scipy wheels on PyPI each bundle their own OpenBLAS, each with its own
  thread pool whose idle threads busy-wait for a while after a call. kernelcv alternates
  numpy products (``K @ v``) with scipy factorisations and solves (``cho_solve``) in
  tight loops; with both pools spinning on the same cores, a 500 x 500
  solve-then-multiply took 9.4 ms instead of 0.44 ms on the 2-core development machine.
* kernelcv's work is many small-to-medium factorisations and solves (Newton steps on
  active sets, one refit per fold): too small to split across threads, so threads mostly
  wait for each other, and a thread that shares its core with another process stalls the
  whole call. ``benchmarks/bench_threads.py`` (2-core machine, 10 folds, synthetic data)
  measured the previous policy (numpy's pool at one thread, scipy's at all threads,
  inside ``cross_validate``): default threads / one thread = 1.5-2.5 for exact and BIF
  CV of the Huber SVM and exact CV of the L2-SVM at n = 4000 on an idle machine (only
  BIF CV of the L2-SVM gained, 0.67); next to other CPU-bound processes up to 75 (exact
  L2-SVM CV at n = 500: 13.2 s instead of 0.18 s). With the policy below the ratios at
  n = 500-4000 were 0.75-1.35 both ways (geometric mean 0.98), the noise of the shared
  machine: both settings then make the same one-thread calls.

The policy (:func:`blas_threads_for`): every BLAS pool at one thread for problems below
``THREADED_FROM`` samples, and whenever fewer than two cores are idle; from
``THREADED_FROM`` samples on an idle machine, numpy's pool at one thread and the other
pools at the number of idle cores. Idle cores are the CPUs this process may run on
(``os.sched_getaffinity``) minus the busier of the 1-minute load average and the
processes runnable right now (``/proc/loadavg``, this one excluded), so a competitor
started a second ago counts too. :func:`separate_blas_pools` (for callers that do not
know n) applies the same rule without the size test. Nothing is limited when numpy and
scipy share one BLAS on an idle machine (e.g. conda builds) and n is large.
"""

from __future__ import annotations

import contextlib
import math
import os
from functools import lru_cache

from threadpoolctl import ThreadpoolController

# From this many samples BLAS threads may be used (when cores are idle). Measured up to
# n = 4000 on the 2-core development machine, where threads lost in 4 of 5 tasks even on
# an idle machine; above that (not measured) the O(n^3) factorisations are expected to
# be large enough to gain from threads.
THREADED_FROM = 10_000


@lru_cache(maxsize=1)
def _controller_and_numpy_pools():
    import scipy.linalg  # noqa: F401  (load scipy's BLAS so it is listed)

    controller = ThreadpoolController()
    blas = [info for info in controller.info() if info.get("user_api") == "blas"]
    if len(blas) < 2:
        return controller, []
    numpy_pools = [info["filepath"] for info in blas if "numpy" in info["filepath"]]
    return controller, numpy_pools


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _running_elsewhere() -> float:
    """Runnable tasks now (``/proc/loadavg``'s 4th field) besides this thread; 0 if unknown."""
    try:
        with open("/proc/loadavg", encoding="ascii") as handle:
            fields = handle.read().split()
        return max(0.0, float(fields[3].split("/")[0]) - 1.0)
    except (OSError, IndexError, ValueError):
        return 0.0


def idle_cores() -> int:
    """Available CPUs minus the load (1-minute average or runnable now, the larger)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return max(0, math.floor(available_cpus() - max(load, _running_elsewhere()) + 0.5))


@contextlib.contextmanager
def _one_thread():
    controller, _ = _controller_and_numpy_pools()
    with controller.limit(limits=1, user_api="blas"):
        yield


@contextlib.contextmanager
def _threaded(threads: int):
    """numpy's pool at one thread (when a second BLAS is loaded), the others at ``threads``."""
    controller, numpy_pools = _controller_and_numpy_pools()
    with contextlib.ExitStack() as stack:
        stack.enter_context(controller.limit(limits=threads, user_api="blas"))
        if numpy_pools:
            stack.enter_context(controller.select(filepath=numpy_pools).limit(limits=1))
        yield


@contextlib.contextmanager
def separate_blas_pools():
    """BLAS threads for a block of unknown size: one thread unless >= 2 cores are idle.

    With idle cores, numpy's pool runs one thread and the others use the idle cores (see
    the module doc).
    """
    threads = idle_cores()
    with _one_thread() if threads < 2 else _threaded(threads):
        yield


@contextlib.contextmanager
def blas_threads_for(n_samples: int):
    """One BLAS thread in every pool below ``THREADED_FROM`` samples or on a busy machine;
    else :func:`separate_blas_pools`' threads (see the module doc)."""
    if n_samples < THREADED_FROM:
        with _one_thread():
            yield
        return
    with separate_blas_pools():
        yield


def n_rows(data) -> int:
    """Number of samples of ``y`` (or X) for :func:`blas_threads_for`; 0 when unknown, so
    that invalid input reaches the validation that explains it."""
    try:
        return int(len(data))
    except TypeError:
        return 0
