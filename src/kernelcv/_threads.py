"""Keep two BLAS thread pools from fighting each other.

The numpy and scipy wheels on PyPI each bundle their own OpenBLAS, each with its own
thread pool whose idle threads busy-wait for a while after a call. kernelcv alternates
numpy products (``K @ v``) with scipy factorisations and solves (``cho_solve``) in tight
loops; with both pools spinning on the same cores, a 500 x 500 solve-then-multiply took
9.4 ms instead of 0.44 ms on the 2-core development machine. Inside kernelcv's
computations numpy's pool is therefore limited to one thread when a second BLAS library
(scipy's) is loaded; scipy's factorisations keep all their threads. Nothing changes when
numpy and scipy share one BLAS (e.g. conda builds).
"""

from __future__ import annotations

import contextlib
from functools import lru_cache

from threadpoolctl import ThreadpoolController


@lru_cache(maxsize=1)
def _controller_and_numpy_pools():
    import scipy.linalg  # noqa: F401  (load scipy's BLAS so it is listed)

    controller = ThreadpoolController()
    blas = [info for info in controller.info() if info.get("user_api") == "blas"]
    if len(blas) < 2:
        return controller, []
    numpy_pools = [info["filepath"] for info in blas if "numpy" in info["filepath"]]
    return controller, numpy_pools


@contextlib.contextmanager
def separate_blas_pools():
    """Limit numpy's own BLAS pool to one thread while the block runs (see module doc)."""
    controller, numpy_pools = _controller_and_numpy_pools()
    if not numpy_pools:
        yield
        return
    with controller.select(filepath=numpy_pools).limit(limits=1):
        yield


# Below this many samples one BLAS thread is faster than several: the matrices are too
# small to split, and on a busy machine spinning pool threads made a 300-sample grid
# search ~100x slower (measured on the 2-core development machine).
SINGLE_THREAD_BELOW = 1500


@contextlib.contextmanager
def blas_threads_for(n_samples: int):
    """One BLAS thread for every pool on small problems; else :func:`separate_blas_pools`."""
    if n_samples >= SINGLE_THREAD_BELOW:
        with separate_blas_pools():
            yield
        return
    controller, _ = _controller_and_numpy_pools()
    with controller.limit(limits=1, user_api="blas"):
        yield
