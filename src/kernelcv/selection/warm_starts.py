"""Warm starts across the tasks of one search: the fit at the nearest lam of a setting.

A task evaluates the lam values of one kernel setting from the largest down, each full fit
starting from the previous one (:meth:`kernelcv.selection.methods.CVMethod.evaluate_setting`).
A screened search (:mod:`kernelcv.selection.screening`) visits a setting in several
rounds, so without this store every round's first lam started from zero coefficients:
for the Huber SVM at a large C that is 20-30 Newton iterations where a start from a
neighbouring lam needs 1-6 (vowel's 55 one-vs-one pairs at gamma = 2: 65 ms cold, 3-7 ms
warm). :class:`WarmStarts` keeps the coefficients of every full fit of the search, per
kernel setting, and a task starts each lam from the stored fit at the nearest lam (in
``|log lam' - log lam|``; the larger lam on a tie, the direction of the in-task chain).

The optimum does not depend on the start (the solvers stop at a relative change of 1e-10),
so records agree with those of cold starts to that tolerance; only the cost changes.
Machines that start from LIBSVM's solution at their size (binary from 1,000 rows,
:meth:`kernelcv.machines.Machine.starts_from_libsvm`) still do: a given start does not
change that rule.

The store lives in one process: pickled, it arrives empty, so each joblib or Dask worker
keeps its own (a task there starts from what that worker has fitted); the threads of the
``"threading"`` backend share it under a lock. Entries are keyed by
the setting and the number of training rows, so a subsample's fits never start an
all-rows fit (screening gives each subsample its own store anyway). Memory: the
coefficients only (``n`` floats per binary fit, the pairs' rows for a multiclass one),
at most :data:`WARM_MAX_FLOATS` in all; beyond it new fits are not kept.
"""

from __future__ import annotations

import math
import threading
from typing import NamedTuple

import numpy as np

# Coefficients kept at most (8 bytes each: 32 MB).
WARM_MAX_FLOATS = 4_000_000


class Start(NamedTuple):
    """The part of a fit a warm start reads: coefficients and intercept."""

    alpha: np.ndarray
    intercept: float


def _slim(fit):
    """A fit (or a multiclass list of fits, None for a failed one) reduced to its start."""
    if fit is None:
        return None
    if isinstance(fit, list):
        return [_slim(part) for part in fit]
    return Start(alpha=np.array(fit.alpha, dtype=np.float64), intercept=float(fit.intercept))


def _size(start) -> int:
    if start is None:
        return 0
    if isinstance(start, list):
        return sum(_size(part) for part in start)
    return int(start.alpha.shape[0])


def _setting_key(setting: dict, n_samples: int):
    return (int(n_samples), tuple(sorted((str(k), v) for k, v in setting.items())))


class WarmStarts:
    """The full fits of one search's evaluations, per kernel setting and lam.

    Parameters
    ----------
    max_floats : int, the most coefficients kept (:data:`WARM_MAX_FLOATS`).

    Cost: ``nearest`` is O(fits of the setting); ``add`` copies the coefficients.
    """

    def __init__(self, max_floats: int = WARM_MAX_FLOATS):
        self.max_floats = int(max_floats)
        self._fits: dict = {}
        self._floats = 0
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"max_floats": self.max_floats}  # a worker starts with an empty store

    def __setstate__(self, state):
        self.__init__(state["max_floats"])

    def __len__(self):
        with self._lock:
            return sum(len(fits) for fits in self._fits.values())

    def nearest(self, setting: dict, n_samples: int, lam: float):
        """The stored start of ``setting`` at the lam nearest ``lam``, or None."""
        target = math.log(lam)
        with self._lock:
            fits = self._fits.get(_setting_key(setting, n_samples))
            if not fits:
                return None
            # distances rounded so that a geometric grid's equal steps tie despite rounding
            best = min(fits, key=lambda stored: (round(abs(math.log(stored) - target), 9),
                                                 -stored))
            return fits[best]

    def add(self, setting: dict, n_samples: int, lam: float, fit) -> None:
        """Keep ``fit`` (a fit result or a list of them) as the start of ``(setting, lam)``."""
        start = _slim(fit)
        if start is None:
            return
        with self._lock:
            fits = self._fits.setdefault(_setting_key(setting, n_samples), {})
            growth = _size(start) - _size(fits.get(float(lam)))
            if self._floats + growth > self.max_floats:
                return
            self._floats += growth
            fits[float(lam)] = start
