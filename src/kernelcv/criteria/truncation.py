"""How far a truncated BIF series may be from its limit, judged from its own terms.

The BIF terms ``T_s`` of fold i are a Neumann series ``T_{s+1} = -N_i T_s``: they shrink
geometrically at the rate ``rho(N_i)`` in the end, but that rate can be close to 1 (about
``1/(1 + n lam)`` for an isolated point, see NUMERICS.md), and the first terms can be
tiny *because* the series has barely started (at ``lam -> 0`` the full fit interpolates,
``g ~ 0``, and every term is ~g while the rate is ~1: their sum is O(1)).

So a term's size alone says nothing; the tail after ``s`` terms is estimated per fold as
a geometric series with the observed rate::

    m_s[i]  = max_{j in S_i} |T_s[j]|,
    rho[i]  = the larger of the last two ratios m_s / m_{s-1} (two ratios, so three terms,
              are needed before the rate is trusted),
    tail[i] = 2 m_s[i] rho[i] / (1 - rho[i])    (inf when rho[i] >= 1; the factor 2 is a
              safety margin: the observed rate still drifts).

Converted into the units of the CV error (:func:`truncation_error`), this is the
estimate a BIF result carries; :data:`TOLERANCE` says when it is too large to ignore.
Only truncation is covered: for losses other than the square loss, the series limit
(order "inf", one Newton step) is itself an approximation where points change loss piece.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MIN_TERMS", "TOLERANCE", "UNCONVERGED", "fold_maxima", "tail", "truncation_error",
           "unconverged_note", "within_tolerance"]

#: How the warning of an unconverged BIF value starts (notes, warnings, the CLI).
UNCONVERGED = "BIF series not converged"

#: Terms observed before the geometric rate is trusted (two ratios).
MIN_TERMS = 3

#: The geometric tail is an estimate, not a bound (the rate still drifts): it is doubled.
SAFETY = 2.0

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


def tail(history) -> np.ndarray:
    """Estimated ``max |sum_{k > s} T_k|`` per fold after the s terms of ``history``.

    ``history`` is the list of :func:`fold_maxima` of ``T_1 .. T_s``. Folds whose last
    term is exactly 0 have no tail (the series stopped, e.g. no point in a quadratic
    piece); with fewer than :data:`MIN_TERMS` terms the others are unknown (inf).
    """
    last = history[-1]
    if len(history) < MIN_TERMS:
        return np.where(last > 0, np.inf, 0.0)
    rate = np.maximum(_ratio(history[-3], history[-2]), _ratio(history[-2], history[-1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        geometric = np.where(rate < 1, SAFETY * last * rate / (1 - rate), np.inf)
    return np.where(last > 0, geometric, 0.0)


def truncation_error(predictions, y, fold_ids, remainder, metric) -> float:
    """How much the CV error may move when each held-out value moves by its remainder.

    ``remainder`` is the (t,) tail estimate of each fold (:func:`tail`, plus the terms
    computed after the order used). For the 0-1 error: the share of samples whose
    prediction is within its remainder of 0 (they may change sign). For the MSE: the mean
    of ``(|r_j| + e_j)^2 - r_j^2`` with the residual ``r_j`` and remainder ``e_j``.
    """
    e = np.asarray(remainder, dtype=np.float64)[fold_ids]
    if metric == "0-1":
        return float(np.mean(np.abs(predictions) <= e))
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
