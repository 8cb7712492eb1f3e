"""How far a truncated BIF series may be from its limit, judged from its own terms.

The BIF terms ``T_s`` of fold i are a Neumann series ``T_{s+1} = -N_i T_s``: they shrink
geometrically at the rate ``rho(N_i)`` in the end, but that rate can be close to 1 (about
``1/(1 + n lam)`` for an isolated point, see NUMERICS.md), and the first terms can be
tiny *because* the series has barely started (at ``lam -> 0`` the full fit interpolates,
``g ~ 0``, and every term is ~g while the rate is ~1: their sum is O(1)).

So a term's size alone says nothing, and neither do the first few ratios: an isolated
held-out point whose own term shrinks at 0.99 can hide behind a neighbour's much larger
term that shrinks at 0.3 (the fold's largest term then shrinks at 0.3 for a while). The
tail after ``s`` terms is estimated per fold as a geometric series::

    m_s[i]  = max_{j in S_i} |T_s[j]|,
    rho[i]  = the largest of: the last two observed ratios m_s / m_{s-1} (two ratios, so
              three terms, are needed), and the spectral radius of fold i's term map
              estimated by power iteration from a random start (:func:`power_rate`),
    tail[i] = 2 max(m_s, rho m_{s-1}) rho / (1 - rho)   (inf when rho >= 1; the factor 2
              is a safety margin: the estimated rate is a lower estimate of rho).

When a fold's estimated rate reaches :data:`SLOW_RATE` the tail is not estimated: the
caller measures the remainder against the series limit (order "inf", one solve per
fold), so the slow regime, where ``1 / (1 - rho)`` makes every estimate fragile, is exact.
This is an estimate, not a bound: a mode that neither the series' first term nor the
random start holds a visible share of can still be missed (on 68,000 random krr, lssvm
and l2svm problems with n <= 30, lam in [1e-6, 10], none was).

Converted into the units of the CV error (:func:`truncation_error`), this is the
estimate a BIF result carries; :data:`TOLERANCE` says when it is too large to ignore.
Only truncation is covered: for losses other than the square loss, the series limit
(order "inf", one Newton step) is itself an approximation where points change loss piece.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MIN_TERMS", "SLOW_RATE", "TOLERANCE", "UNCONVERGED", "fold_maxima", "power_rate",
           "tail", "too_slow", "truncation_error", "unconverged_note", "within_tolerance"]

#: How the warning of an unconverged BIF value starts (notes, warnings, the CLI).
UNCONVERGED = "BIF series not converged"

#: Terms observed before the geometric rate is trusted (two ratios).
MIN_TERMS = 3

#: The geometric tail is an estimate, not a bound (the rate still drifts): it is doubled.
SAFETY = 2.0

#: Power-iteration steps of :func:`power_rate` (each costs one series term).
POWER_STEPS = 8

#: Folds whose estimated rate is at least this converge too slowly for their terms to
#: tell the tail: its size grows like ``1 / (1 - rho)`` and a rate estimated from a few
#: steps can be far below a rho near 1 (measured: 0.99 for 0.9997). The remainder is
#: then measured against the limit instead (:func:`too_slow`).
SLOW_RATE = 0.9

#: A BIF CV value is flagged when its truncation-error estimate exceeds this: an absolute
#: 0.01 of 0-1 error (one held-out point in a hundred could change sign), or 1 % of the
#: CV value for the MSE.
TOLERANCE = {"0-1": 0.01, "mse": 0.01}


def fold_maxima(values, fold_ids, t) -> np.ndarray:
    """``max |values[j]|`` over each fold's members, as a (t,) array."""
    out = np.zeros(t)
    np.maximum.at(out, fold_ids, np.abs(values))
    return out


def _ratio(previous, current):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(previous > 0, current / previous, np.where(current > 0, np.inf, 0.0))


def power_rate(apply, n, t, steps=POWER_STEPS) -> np.ndarray:
    """Spectral radius of each fold's term map ``T -> T_next``, by power iteration.

    The series' own terms start from ``T_1``, which can hold almost nothing of the
    slowest mode (the tiny held-out term of an isolated point whose rate is 0.99 hides
    behind a neighbour's large term of rate 0.3, and the observed ratios say 0.3). A
    random start (fixed seed: the same inputs give the same estimate) holds a share of
    every mode. ``apply`` maps an (n, t) matrix to its (n, t) image, column i by fold
    i's map. The estimate is the geometric mean of the last two growth factors (a pair
    of eigenvalues +-rho alternates); it approaches rho from below. It stops early once
    a fold reaches :data:`SLOW_RATE` (the caller then measures the remainder) or, after
    five steps, when no fold's tail factor ``rho / (1 - rho)`` moved by more than 10 %
    (+ 0.01). Cost: 5 to ``steps`` applications (each costs one series term).
    """
    V = np.random.default_rng(0).standard_normal((n, t))
    V /= np.linalg.norm(V, axis=0)
    growth, estimates = [], []
    for step in range(steps):
        V = apply(V)
        size = np.linalg.norm(V, axis=0)
        growth.append(size)
        V /= np.where(size > 0, size, 1.0)[None, :]
        if step:
            estimates.append(np.sqrt(growth[-1] * growth[-2]))
            if too_slow(estimates[-1]) or (step >= 4 and _settled(*estimates[-2:])):
                break
    return np.maximum(estimates[-1], estimates[-2]) if len(estimates) > 1 else estimates[-1]


def _settled(before, after) -> bool:
    """Whether no fold's tail factor ``rho / (1 - rho)`` moved by more than 10 % + 0.01."""
    factor = [rho / (1.0 - np.minimum(rho, SLOW_RATE)) for rho in (before, after)]
    return bool(np.all(np.abs(factor[1] - factor[0]) <= 0.1 * factor[1] + 0.01))


def too_slow(rate) -> bool:
    """Whether some fold's estimated rate (:func:`power_rate`) is at least :data:`SLOW_RATE`."""
    return bool(np.max(rate, initial=0.0) >= SLOW_RATE)


def tail(history, rate_floor=None) -> np.ndarray:
    """Estimated ``max |sum_{k > s} T_k|`` per fold after the s terms of ``history``.

    ``history`` is the list of :func:`fold_maxima` of ``T_1 .. T_s``; ``rate_floor``
    the (t,) estimate of :func:`power_rate`, a floor under the observed ratios. The size
    the tail starts from is the last term or the one before shrunk by the rate,
    whichever is larger: a held-out term that happens to be 0 does not end a series
    whose map is not 0. Folds whose terms are all 0 have no tail (no point in a
    quadratic piece); with fewer than :data:`MIN_TERMS` terms the others are unknown
    (inf).
    """
    last = history[-1]
    if len(history) < MIN_TERMS:
        return np.where(last > 0, np.inf, 0.0)
    rate = np.maximum(_ratio(history[-3], history[-2]), _ratio(history[-2], history[-1]))
    if rate_floor is not None:
        rate = np.maximum(rate, rate_floor)
    size = np.maximum(last, np.minimum(rate, 1.0) * history[-2])
    with np.errstate(divide="ignore", invalid="ignore"):
        geometric = np.where(rate < 1, SAFETY * size * rate / (1 - rate), np.inf)
    return np.where(size > 0, geometric, 0.0)


def truncation_error(predictions, y, fold_ids, remainder, metric) -> float:
    """How much the CV error may move when each held-out value moves by its remainder.

    ``remainder`` is the (t,) tail estimate of each fold (:func:`tail`, plus the terms
    computed after the order used). For the 0-1 error: the share of samples whose
    prediction is within its (positive) remainder of 0 (they may change sign). For the
    MSE: the mean of ``(|r_j| + e_j)^2 - r_j^2`` with the residual ``r_j`` and remainder
    ``e_j``.
    """
    e = np.asarray(remainder, dtype=np.float64)[fold_ids]
    if metric == "0-1":
        # a remainder of 0 (order inf) moves nothing, even a value exactly at 0
        return float(np.mean((e > 0) & (np.abs(predictions) <= e)))
    if not np.all(np.isfinite(e)):
        return float("inf")
    residual = np.abs(y - predictions)
    return float(np.mean(2.0 * residual * e + e * e))


def within_tolerance(error, cv_error, metric) -> bool:
    """Whether a truncation-error estimate is below :data:`TOLERANCE` (relative for MSE)."""
    if error is None:
        return True
    limit = TOLERANCE[metric]
    if metric == "mse":
        limit *= abs(cv_error) if np.isfinite(cv_error) else 0.0
    return bool(error <= limit)


def unconverged_note(order_used, error, metric) -> str:
    """The one-sentence warning of a BIF value whose truncation error is too large."""
    unit = "0-1 error" if metric == "0-1" else "MSE"
    limit = (f"{TOLERANCE[metric]:g}" if metric == "0-1"
             else f"{100 * TOLERANCE[metric]:g} % of the value")
    size = "unbounded (the series terms do not shrink yet)" if not np.isfinite(error) \
        else f"about {error:.3g}"
    return (f"{UNCONVERGED} at order {order_used}: the truncation error of this "
            f"CV {unit} is {size}, above the tolerance {limit}; use order 'inf' or method "
            "'exact'")
