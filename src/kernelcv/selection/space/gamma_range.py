"""The default gamma grid of the rbf and laplace kernels, taken from the data's distances.

The papers' grid (``gamma = 1/(2 sigma^2)``, ``sigma = 2^-10..2^10``: the odd powers
``2^-21..2^19``) assumes features on a unit scale. On real data its narrow end gives
kernel matrices that are numerically the identity (a third of a1a's grid), and on
unscaled data its wide end can stop short of the useful widths. The default grid keeps the
papers' lattice (odd powers of 2, a factor 4 apart) and takes its two ends from the data.
``d_ij`` is the kernel's distance between rows i and j as kernelcv computes it (squared
Euclidean for rbf, L1 for laplace), n the number of rows, ``u = 2^-53`` the unit roundoff:

* **narrow end: numerically the identity.** A gamma is dropped when every off-diagonal
  entry between distinct rows is below ``u / n``, i.e. ``exp(-gamma d_min) < u / n`` with
  ``d_min`` the smallest distance between distinct rows (identical rows have
  ``K_ij = 1`` at every gamma and are left out). Every row's off-diagonal sum is then
  below u: ``K v`` equals ``v`` to working precision for every v, and a held-out decision
  value ``b + sum_j K_sj alpha_j`` differs from the intercept b by less than
  ``u max|alpha|``, the rounding level of the training values ``alpha_i + b``. (Without
  an intercept the signs of those tiny values still vote like nearest neighbours; the
  largest gamma kept is already that vote.)
* **wide end: near-constant.** Let gamma_C be the largest lattice value at which every
  entry of K is within ``tau = 2^-12`` of 1 (``exp(-gamma d_max) >= 1 - tau``); the values
  below it are dropped. From gamma_C down, K is ``1 - gamma D`` to relative accuracy
  ``tau / 2`` in its non-constant part, so with an intercept (free b, hence
  ``sum alpha = 0``) the machine at ``(gamma_C / 4^k, lam)`` is the one at
  ``(gamma_C, 4^k lam)`` to that accuracy: the lam grid at gamma_C already holds it
  (the most regularised machines aside). A rule at the rounding level (every entry
  within u of 1, or numerical rank one) lies far below the papers' wide end -- about
  ``2^-42`` on a1a -- and would add values rather than drop them.

Values outside the papers' range follow the bulk of the distances, so that a few
near-duplicate or outlying rows do not stretch the grid: beyond ``2^19`` (features on a
small scale) a value is added only while the median off-diagonal entry is at least
``u / n``, below ``2^-21`` (unscaled features) only while the median entry is not within
tau of 1 -- the median distance of an evenly spaced subsample of at most ``MEDIAN_ROWS``
rows. (On LIBSVM's breast-cancer_scale, rows 1e-12 apart keep K off the identity up to
``2^45``; the grid stops at ``2^19``.) Over ``MAX_VALUES`` lattice values (distances
spanning many orders of magnitude) the range is trimmed evenly at both ends, with a note.

Cost: one pass over the pairwise distances in blocks of rows, O(n^2 d) time -- about one
Gram matrix, where the search builds one per gamma -- and O(n b) memory for blocks of b
rows, plus O(n d log n) to find identical rows and O(m^2 d) for the median of m <= 1000
rows.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from ...exceptions import KernelCVError
from ...kernels import KERNEL_BASE, base_matrix
from .grids import default_gammas

UNIT_ROUNDOFF = 2.0**-53
CONSTANT_TOLERANCE = 2.0**-12
MAX_VALUES = 41  # twice the papers' 21 values
MEDIAN_ROWS = 1000
_BLOCK_ENTRIES = 2**22  # distances held at a time (32 MiB of float64)
_DISTANCE_NAMES = {"sqeuclidean": "squared Euclidean", "manhattan": "L1"}
_LOWEST, _HIGHEST = -510, 509  # lattice indices k of 2^(2k+1) within float64's range
_PAPER_LOW, _PAPER_HIGH = -11, 9  # 2^-21 and 2^19, the ends of the papers' grid


def identical_rows(X) -> np.ndarray:
    """One integer label per row; equal labels mark identical rows. O(n d log n)."""
    if not sp.issparse(X):
        return np.unique(np.asarray(X), axis=0, return_inverse=True)[1].reshape(-1)
    X = sp.csr_matrix(X, copy=True)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    keys: dict[tuple[bytes, bytes], int] = {}
    labels = np.empty(X.shape[0], dtype=np.int64)
    for i in range(X.shape[0]):
        start, stop = X.indptr[i], X.indptr[i + 1]
        key = (X.indices[start:stop].tobytes(), X.data[start:stop].tobytes())
        labels[i] = keys.setdefault(key, len(keys))
    return labels


def distance_range(X, kernel: str) -> tuple[float, float]:
    """``(d_min, d_max)``: the smallest distance between distinct rows (inf when all rows
    are identical) and the largest distance, as the kernel's Gram matrix uses them.

    The distances come from :func:`kernelcv.kernels.base_matrix`, one block of rows at
    a time against all rows: O(n^2 d) time, O(n b) memory.
    """
    kind = KERNEL_BASE[kernel]
    labels = identical_rows(X)
    n = X.shape[0]
    rows = max(1, _BLOCK_ENTRIES // max(n, 1))
    d_min, d_max = math.inf, 0.0
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        D = base_matrix(kind, X[start:stop], X)
        d_max = max(d_max, float(D.max()))
        distinct = labels[start:stop, None] != labels[None, :]
        if np.any(distinct):
            d_min = min(d_min, float(D[distinct].min()))
    return d_min, d_max


def median_distance(X, kernel: str) -> float:
    """The median distance between distinct rows of an evenly spaced subsample of at most
    :data:`MEDIAN_ROWS` rows (0 when there is no pair). O(m^2 d)."""
    n = X.shape[0]
    rows = np.unique(np.linspace(0, n - 1, min(n, MEDIAN_ROWS)).astype(np.int64))
    sample = X[rows]
    D = base_matrix(KERNEL_BASE[kernel], sample)
    upper = D[np.triu_indices(rows.size, 1)]
    return float(np.median(upper)) if upper.size else 0.0


def is_identity(gamma: float, d_min: float, n_samples: int) -> bool:
    """Whether every off-diagonal entry between distinct rows, ``exp(-gamma d_ij)``, is
    below ``u / n`` (computed as the Gram matrix computes it)."""
    return bool(np.exp(np.multiply(d_min, -gamma)) < UNIT_ROUNDOFF / n_samples)


def is_near_constant(gamma: float, d_max: float) -> bool:
    """Whether every entry of the Gram matrix is within ``tau`` of 1."""
    return bool(np.exp(np.multiply(d_max, -gamma)) >= 1.0 - CONSTANT_TOLERANCE)


def _lattice(k: int) -> float:
    return 2.0 ** (2 * k + 1)


def _last(test, start: int) -> int:
    """The largest lattice index k (near ``start``) with ``test(2^(2k+1))`` true, for a
    test that is true below some k and false above it."""
    k = min(max(start, _LOWEST), _HIGHEST)
    while k > _LOWEST and not test(_lattice(k)):
        k -= 1
    while k < _HIGHEST and test(_lattice(k + 1)):
        k += 1
    return k


def _index_near(threshold: float) -> int:
    """The lattice index k of 2^(2k+1) at or below a positive threshold (a start)."""
    if not math.isfinite(threshold):
        return _HIGHEST
    if threshold <= 0:
        return _LOWEST
    return math.floor((math.log2(threshold) - 1.0) / 2.0)


@dataclass(frozen=True)
class GammaGrid:
    """A data-derived gamma grid and how it was derived (the report's ``grid`` entry).

    ``values`` ascending; ``d_min``, ``d_max``: the distances of the two rules (None and
    0 when all rows are identical), ``d_median`` the subsample's median (None when the
    range stays within the papers' and needs none);
    ``identity_from``: the lattice value above the narrow end when its Gram matrix is
    numerically the identity (else None: the end was capped or trimmed); ``constant_to``:
    the wide end; ``dropped_identity`` / ``dropped_constant``: the papers' values left
    out at each end; ``added``: values outside the papers' grid; ``trimmed``: lattice
    values cut to keep ``MAX_VALUES``.
    """

    kernel: str
    distance: str
    n_samples: int
    d_min: float | None
    d_max: float
    d_median: float | None
    values: tuple
    identity_from: float | None
    constant_to: float
    dropped_identity: tuple
    dropped_constant: tuple
    added: tuple
    trimmed: int
    seconds: float

    def to_dict(self) -> dict:
        out = asdict(self)
        for key in ("values", "dropped_identity", "dropped_constant", "added"):
            out[key] = list(out[key])
        out.update({"unit_roundoff": UNIT_ROUNDOFF, "identity_below": UNIT_ROUNDOFF
                    / self.n_samples, "constant_tolerance": CONSTANT_TOLERANCE})
        return out

    def edge_reasons(self) -> dict:
        """Why a choice at an end of this grid needs no wider grid, for
        :func:`kernelcv.selection.after_grid.edges.edge_note`: at the narrow end when the next
        lattice value is numerically the identity, at the wide end when the kernel there
        is near-constant (not where the range was capped or trimmed)."""
        reasons = {}
        if self.identity_from is not None and self.identity_from == 4.0 * self.values[-1]:
            reasons["high"] = (f"from gamma = {self.identity_from:g} the kernel matrix is "
                               "numerically the identity: a held-out value is the intercept "
                               "plus rounding")
        if self.d_min is not None and is_near_constant(self.values[0], self.d_max):
            reasons["low"] = ("the kernel is near-constant there: a smaller gamma repeats "
                              "these machines with a 4x larger lam per factor 4")
        return {"gamma": reasons} if reasons else {}

    def note(self, hint: str = "--gamma-grid paper (gammas='paper') searches the papers' "
             "grid") -> str:
        """One line for the search's notes: the range, what was dropped and why, and
        ``hint`` (how to get the papers' grid instead)."""
        paper = default_gammas()
        parts = [f"gamma grid from the data ({self.distance} distances {_num(self.d_min)}"
                 f"..{_num(self.d_max)}, {self.seconds:.2g} s): {_power(self.values[0])}.."
                 f"{_power(self.values[-1])}, {len(self.values)} values"]
        dropped = []
        if self.dropped_identity:
            dropped.append(f"{len(self.dropped_identity)} numerically the identity (from "
                           f"{_power(self.identity_from)} every off-diagonal entry < u/n)")
        if self.dropped_constant:
            dropped.append(f"{len(self.dropped_constant)} near-constant (below "
                           f"{_power(self.constant_to)}, the widest kept, where every entry "
                           "is within 2^-12 of 1)")
        if dropped:
            parts.append(f"of the papers' {len(paper)}, " + " and ".join(dropped)
                         + " left out")
        if self.added:
            parts.append(f"{len(self.added)} outside the papers' 2^-21..2^19")
        if self.trimmed:
            parts.append(f"{self.trimmed} trimmed at the ends (over {MAX_VALUES} values: "
                         "scaling the features (--scale standard) narrows the range)")
        return "; ".join(parts + [hint])


def data_gamma_grid(X, kernel: str) -> GammaGrid:
    """The default gamma grid of ``kernel`` (rbf or laplace) on the rows of ``X``.

    See the module docstring for the two rules; cost O(n^2 d) time, O(n b) memory.
    When all rows are identical every kernel is constant and the papers' grid is used.
    """
    if kernel not in ("rbf", "laplace"):
        raise KernelCVError(f"a data-derived gamma grid needs the rbf or laplace kernel, "
                            f"got {kernel!r}")
    tic = time.perf_counter()
    n = X.shape[0]
    d_min, d_max = distance_range(X, kernel)
    paper = default_gammas()
    distance = _DISTANCE_NAMES[KERNEL_BASE[kernel]]
    if not math.isfinite(d_min) or d_max <= 0:
        return GammaGrid(kernel, distance, n, None, d_max, None, tuple(paper), None, paper[0],
                         (), (), (), 0, time.perf_counter() - tic)
    k_high = _last(lambda g: not is_identity(g, d_min, n),
                   _index_near(math.log(n / UNIT_ROUNDOFF) / d_min))
    k_low = _last(lambda g: is_near_constant(g, d_max),
                  _index_near(-math.log1p(-CONSTANT_TOLERANCE) / d_max))
    # Only a range beyond the papers' ends needs the median (an O(m^2 d) subsample).
    d_median = median_distance(X, kernel) if k_high > _PAPER_HIGH or k_low < _PAPER_LOW \
        else None
    if k_high > _PAPER_HIGH and d_median > 0:  # beyond the papers' end: the median decides
        k_median = _last(lambda g: not is_identity(g, d_median, n),
                         _index_near(math.log(n / UNIT_ROUNDOFF) / d_median))
        k_high = min(k_high, max(_PAPER_HIGH, k_median))
    if k_low < _PAPER_LOW and d_median > 0:  # below the papers' end: the median decides
        k_median = _last(lambda g: is_near_constant(g, d_median),
                         _index_near(-math.log1p(-CONSTANT_TOLERANCE) / d_median))
        k_low = max(k_low, min(_PAPER_LOW, k_median))
    k_low = min(k_low, k_high)
    trimmed = 0
    if k_high - k_low + 1 > MAX_VALUES:
        excess = k_high - k_low + 1 - MAX_VALUES
        trimmed = excess
        k_low += excess // 2
        k_high -= excess - excess // 2
    values = tuple(_lattice(k) for k in range(k_low, k_high + 1))
    identity_from = _lattice(k_high + 1) if is_identity(_lattice(k_high + 1), d_min, n) \
        else None
    return GammaGrid(
        kernel=kernel, distance=distance, n_samples=n, d_min=d_min, d_max=d_max,
        d_median=d_median, values=values, identity_from=identity_from, constant_to=values[0],
        dropped_identity=tuple(g for g in paper if is_identity(g, d_min, n)),
        dropped_constant=tuple(g for g in paper if g < values[0]
                               and not is_identity(g, d_min, n)),
        added=tuple(g for g in values if g not in paper), trimmed=trimmed,
        seconds=time.perf_counter() - tic)


def _power(value) -> str:
    if value is None:
        return "-"
    exponent = math.log2(value)
    return f"2^{int(exponent)}" if exponent == int(exponent) else f"{value:g}"


def _num(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def degenerate_settings(settings, X) -> frozenset[int]:
    """Indices of the rbf / laplace settings whose Gram matrix on the rows of ``X`` is
    numerically the identity, or near-constant with a larger near-constant gamma among
    ``settings`` (the module's two rules, applied to a given grid instead of the lattice).

    The coarse-to-fine screen leaves them out of its start
    (:mod:`kernelcv.selection.screening`): with an intercept an identity kernel's held-out
    values are the fold's intercept to rounding (one class per fold), and a near-constant
    one repeats the largest near-constant gamma at a larger lam; without one, an identity
    kernel's values are rounding noise that votes like nearest neighbours. Other kernels,
    and data whose rows are all identical, give the empty set.

    Cost: :func:`distance_range`, O(n^2 d) time and O(n b) memory.
    """
    kinds = {setting.get("kernel") for setting in settings}
    if (len(kinds) != 1 or not kinds <= {"rbf", "laplace"}
            or not (isinstance(X, np.ndarray) or sp.issparse(X)) or X.shape[0] < 2):
        return frozenset()
    d_min, d_max = distance_range(X, kinds.pop())
    if not math.isfinite(d_min) or d_max <= 0:
        return frozenset()
    n = X.shape[0]
    gammas = [float(setting["gamma"]) for setting in settings]
    constant = [g for g in gammas if is_near_constant(g, d_max)]
    widest_kept = max(constant) if constant else None
    return frozenset(i for i, g in enumerate(gammas)
                     if is_identity(g, d_min, n) or (constant and g < widest_kept))
