"""Class probabilities from the out-of-fold decision values a search already has.

The chosen candidate's exact refit CV gives every training row a decision value from a
model that did not see it. One scale ``a >= 0`` is fitted to them by maximum likelihood:

* two classes: ``P(classes_[1] | x) = 1 / (1 + exp(-a f(x)))`` (Platt's sigmoid with its
  offset fixed at 0),
* more classes, one-vs-rest: ``P(class c | x) = softmax(a s(x))_c`` over the machines'
  values ``s``, whose arg-max is the prediction;
* more classes, one-vs-one: ``softmax(a v(x) + b c(x))`` with ``v`` the class's votes
  and ``c`` the summed values of its pairs' machines (scale ``a, b >= 0``, fitted
  together). Its arg-max can differ from the vote (on 1.6 % of digits' test rows), so
  the predicted class and the most probable one then swap probabilities. On 10-class
  digits the test log-loss was 0.134 (SVC(probability=True): 0.119); one scale of the
  vote-based class scores, which never needs the swap, gave 0.287.

Fixing the offset at 0 (and scaling the scores, never shifting them) is what makes the
most probable class the predicted one -- SVC's Platt scaling, fitted with an offset on
its own internal CV, can disagree with its ``predict`` (scikit-learn issue 13211). The
negative log-likelihoods are convex in the scales: a bounded scalar minimisation, or
L-BFGS-B on (a, b). Cost O(n k) per evaluation (O(n m) for the m pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .multiclass import class_scores, pair_votes

# Largest scale tried, relative to the spread of the scores: separable out-of-fold values
# would otherwise push a to infinity (probabilities of exactly 0 and 1).
_MAX_SCALE = 1e3


@dataclass(frozen=True)
class ScoreScale:
    """The fitted scale ``a`` and the out-of-fold log-loss it reached (nats per row)."""

    scale: float
    log_loss: float

    def to_dict(self) -> dict:
        """JSON-able form (a saved model's header)."""
        return {"kind": "score", "scale": self.scale, "log_loss": self.log_loss}

    def probabilities(self, scores) -> np.ndarray:
        """(n, k) class probabilities: ``scores`` is (n,) for two classes (positive means
        the second class), else (n, k) class scores."""
        scores = np.asarray(scores, dtype=np.float64)
        p = np.exp(_log_probabilities(scores, self.scale))
        # the predicted class (f > 0 for two classes, else the largest score)
        predicted = (scores > 0).astype(np.intp) if scores.ndim == 1 \
            else np.argmax(scores, axis=1)
        return _predicted_on_top(p, predicted)


def _log_softmax(z, axis=1):
    """``log softmax(z)`` along ``axis`` (scipy's, without importing scipy.special on the
    command line's path)."""
    top = np.max(z, axis=axis, keepdims=True)
    shifted = z - np.where(np.isfinite(top), top, 0.0)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def fit_score_scale(scores, codes, weights=None) -> ScoreScale:
    """Fit ``a`` to out-of-fold ``scores`` ((n,) or (n, k)) and true class ``codes``
    (0/1 for two classes, 0..k-1 for more); ``weights``: the rows' sample weights of the
    log-likelihood (None: equal)."""
    from scipy.optimize import minimize_scalar  # fitting only: not on predict's path

    scores = np.asarray(scores, dtype=np.float64)
    codes = np.asarray(codes, dtype=np.intp)
    spread = float(np.std(scores)) or 1.0
    upper = _MAX_SCALE / spread

    def loss(a):
        return -float(np.average(_log_probabilities(scores, a)[np.arange(codes.size), codes],
                                 weights=weights))

    found = minimize_scalar(loss, bounds=(0.0, upper), method="bounded",
                            options={"xatol": 1e-10 * upper})
    scale = float(found.x)
    return ScoreScale(scale=scale, log_loss=loss(scale))


def _log_probabilities(scores, a) -> np.ndarray:
    if scores.ndim == 1:  # two classes: log sigmoid of -a f and of a f
        z = a * scores
        return np.column_stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)])
    return _log_softmax(a * scores, axis=1)


@dataclass(frozen=True)
class PairScale:
    """One-vs-one probabilities: ``softmax(a votes + b summed pair values)``, with the
    predicted class (most votes, ties by the squashed values) made the most probable."""

    vote_scale: float
    value_scale: float
    n_classes: int
    log_loss: float

    def to_dict(self) -> dict:
        """JSON-able form (a saved model's header)."""
        return {"kind": "pair", "vote_scale": self.vote_scale,
                "value_scale": self.value_scale, "n_classes": self.n_classes,
                "log_loss": self.log_loss}

    def probabilities(self, machine_values) -> np.ndarray:
        """(n, k) class probabilities from the (n, m) pair machines' values."""
        votes, values = pair_votes(machine_values, self.n_classes)
        p = np.exp(_log_softmax(self.vote_scale * votes + self.value_scale * values, axis=1))
        predicted = np.argmax(votes + values / (3.0 * (np.abs(values) + 1.0)), axis=1)
        return _predicted_on_top(p, predicted)


def fit_pair_scale(machine_values, codes, n_classes: int, weights=None) -> PairScale:
    """Fit :class:`PairScale` to out-of-fold pair values and true class codes (the
    log-likelihood weighted by the rows' ``weights`` when given)."""
    from scipy.optimize import minimize  # fitting only: not on predict's path

    votes, values = pair_votes(machine_values, n_classes)
    codes = np.asarray(codes, dtype=np.intp)
    rows = np.arange(codes.size)

    def loss(scales):
        return -float(np.average(_log_softmax(scales[0] * votes + scales[1] * values,
                                             axis=1)[rows, codes], weights=weights))

    start = fit_score_scale(votes + values / (3.0 * (np.abs(values) + 1.0)), codes,
                            weights).scale
    found = minimize(loss, x0=[start, 0.0], method="L-BFGS-B",
                     bounds=[(0.0, _MAX_SCALE), (0.0, _MAX_SCALE)])
    a, b = (float(v) for v in found.x)
    return PairScale(vote_scale=a, value_scale=b, n_classes=n_classes, log_loss=loss(found.x))


def calibration_from_dict(entry) -> ScoreScale | PairScale:
    """The scale :meth:`ScoreScale.to_dict` or :meth:`PairScale.to_dict` wrote; ValueError
    for anything else (a damaged header)."""
    if not isinstance(entry, dict) or entry.get("kind") not in ("score", "pair"):
        raise ValueError("the calibration entry is not a probability scale")
    numbers = {key: float(value) for key, value in entry.items() if key != "kind"}
    if not all(np.isfinite(v) and v >= 0 for k, v in numbers.items() if k != "log_loss"):
        raise ValueError("the calibration's scales are not finite non-negative numbers")
    if entry["kind"] == "score":
        return ScoreScale(scale=numbers["scale"], log_loss=numbers["log_loss"])
    return PairScale(vote_scale=numbers["vote_scale"], value_scale=numbers["value_scale"],
                     n_classes=int(numbers["n_classes"]), log_loss=numbers["log_loss"])


def machine_probabilities(calibration, values, n_classes: int, scheme: str) -> np.ndarray:
    """(n, k) class probabilities (columns in the classes' sorted order) from a model's
    decision values: (n,) for two classes, else (n, m) binary machines' values of the
    one-vs-one (:class:`PairScale`) or one-vs-rest scheme (class scores, then
    :class:`ScoreScale`)."""
    values = np.asarray(values, dtype=np.float64)
    if isinstance(calibration, PairScale):
        return calibration.probabilities(values)
    if values.ndim == 2:
        values = class_scores(values, n_classes, scheme)
    return calibration.probabilities(values)


def _predicted_on_top(p, predicted) -> np.ndarray:
    """``p`` with each row's ``predicted`` class the strictly most probable (the first
    arg-max): where another class is likelier, the two swap probabilities; where the
    predicted class only ties with one before it (a scale of 0 gives uniform rows), it
    takes a share of ``1e-9`` of the others, renormalised. In place; returns ``p``."""
    likeliest = np.argmax(p, axis=1)
    swap = np.flatnonzero(likeliest != predicted)
    top = p[swap, likeliest[swap]]
    p[swap, likeliest[swap]] = p[swap, predicted[swap]]
    p[swap, predicted[swap]] = top
    tied = np.flatnonzero(np.argmax(p, axis=1) != predicted)
    if tied.size:
        p[tied] *= 1.0 - 1e-9
        p[tied, predicted[tied]] += 1e-9
    return p


def fit_scheme_scale(values, codes, n_classes: int, scheme: str,
                     weights=None) -> ScoreScale | PairScale:
    """The probability scale of a model's out-of-fold decision values: (n,) for two
    classes (codes 0/1), else (n, m) binary machines' values of the one-vs-one
    (:class:`PairScale`) or one-vs-rest scheme (:class:`ScoreScale` of the class
    scores); ``codes`` the true classes; ``weights`` the rows' sample weights."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 2 and scheme == "ovo":
        return fit_pair_scale(values, codes, n_classes, weights)
    if values.ndim == 2:
        values = class_scores(values, n_classes, scheme)
    return fit_score_scale(values, codes, weights)
