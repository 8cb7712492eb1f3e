"""Class probabilities from the out-of-fold decision values a search already has.

The chosen candidate's exact refit CV gives every training row a decision value from a
model that did not see it. One scale ``a >= 0`` is fitted to them by maximum likelihood:

* two classes: ``P(classes_[1] | x) = 1 / (1 + exp(-a f(x)))`` (Platt's sigmoid with its
  offset fixed at 0),
* more classes: ``P(class c | x) = softmax(a s(x))_c`` over the class scores ``s`` whose
  arg-max is the prediction (:func:`kernelcv.machines.multiclass.class_scores`).

Fixing the offset at 0 (and scaling the scores, never shifting them) is what makes the
most probable class always the predicted one -- SVC's Platt scaling, fitted with an
offset on its own internal CV, can disagree with its ``predict`` (scikit-learn issue
13211). The negative log-likelihood is convex in ``a``: a bounded scalar minimisation.
Cost O(n k) per evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

# Largest scale tried, relative to the spread of the scores: separable out-of-fold values
# would otherwise push a to infinity (probabilities of exactly 0 and 1).
_MAX_SCALE = 1e3


@dataclass(frozen=True)
class ScoreScale:
    """The fitted scale ``a`` and the out-of-fold log-loss it reached (nats per row)."""

    scale: float
    log_loss: float

    def probabilities(self, scores) -> np.ndarray:
        """(n, k) class probabilities: ``scores`` is (n,) for two classes (positive means
        the second class), else (n, k) class scores."""
        scores = np.asarray(scores, dtype=np.float64)
        return np.exp(_log_probabilities(scores, self.scale))


def fit_score_scale(scores, codes) -> ScoreScale:
    """Fit ``a`` to out-of-fold ``scores`` ((n,) or (n, k)) and true class ``codes``
    (0/1 for two classes, 0..k-1 for more)."""
    scores = np.asarray(scores, dtype=np.float64)
    codes = np.asarray(codes, dtype=np.intp)
    spread = float(np.std(scores)) or 1.0
    upper = _MAX_SCALE / spread

    def loss(a):
        return -float(np.mean(_log_probabilities(scores, a)[np.arange(codes.size), codes]))

    found = minimize_scalar(loss, bounds=(0.0, upper), method="bounded",
                            options={"xatol": 1e-10 * upper})
    scale = float(found.x)
    return ScoreScale(scale=scale, log_loss=loss(scale))


def _log_probabilities(scores, a) -> np.ndarray:
    if scores.ndim == 1:  # two classes: log sigmoid of -a f and of a f
        z = a * scores
        return np.column_stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)])
    return log_softmax(a * scores, axis=1)
