"""Multiclass classification by binary machines: one-vs-one and one-vs-rest.

With k classes coded ``0..k-1``:

* ``"ovo"`` (one-vs-one, as scikit-learn's ``SVC`` and ``OneVsOneClassifier``): one
  machine per pair ``(a, b)``, ``a < b``, trained on the rows of classes a and b only,
  with ``+1 = b``; k (k - 1) / 2 machines. A point's class is the one with the most votes
  (machine (a, b) votes b when its value is positive, else a), ties broken by the summed
  confidences ``s_c`` (each machine adds its value to b's sum and subtracts it from a's),
  squashed to ``s / (3 (|s| + 1))`` so they never outweigh one vote -- scikit-learn's
  ``OneVsOneClassifier`` rule, so the two predict the same classes.
* ``"ovr"`` (one-vs-rest): one machine per class c on all rows (``+1 = c``); the class
  of the largest value wins.

Cost against one binary machine on all n rows (``O(n^3)`` solvers): one-vs-rest k of them;
one-vs-one k (k - 1) / 2 machines on about 2n/k rows, ``4 (k - 1) / k^2`` of one, so
one-vs-one is the cheaper scheme for every k >= 3 (0.9 at k = 3, 0.36 at k = 10) unless
the machines share one factorisation (closed-form KRR / LS-SVM one-vs-rest: the classes
are right-hand sides of the same system).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..exceptions import KernelCVError
from ..features import LinearFeatureModel

STRATEGIES = ("ovo", "ovr")


@dataclass(frozen=True)
class BinaryProblem:
    """One binary machine of a multiclass scheme.

    ``positive`` is the class coded +1; ``negative`` the class coded -1 (one-vs-one) or
    None (every other class, one-vs-rest). ``rows`` are the training rows it uses (None:
    all of them).
    """

    positive: int
    negative: int | None
    rows: np.ndarray | None

    @property
    def label(self) -> str:
        """``"b vs a"`` or ``"c vs rest"`` in class codes."""
        return f"{self.positive} vs {'rest' if self.negative is None else self.negative}"

    def targets(self, codes) -> np.ndarray:
        """The +-1 labels of the problem's rows."""
        chosen = codes if self.rows is None else codes[self.rows]
        return np.where(chosen == self.positive, 1.0, -1.0)


def check_strategy(strategy: str) -> str:
    """``strategy`` if it is ``"ovo"`` or ``"ovr"``, else a :class:`KernelCVError`."""
    if strategy not in STRATEGIES:
        raise KernelCVError(f"multiclass strategy must be 'ovo' or 'ovr', got {strategy!r}")
    return strategy


def binary_problems(codes, n_classes: int, strategy: str) -> list[BinaryProblem]:
    """The binary machines of ``strategy`` for class codes ``0..n_classes-1``.

    Order: pairs ``(0, 1), (0, 2), ..., (k-2, k-1)`` for one-vs-one (scikit-learn's
    order), classes ``0..k-1`` for one-vs-rest. Cost O(n k) (one-vs-one row lists).
    """
    codes = np.asarray(codes)
    if check_strategy(strategy) == "ovr":
        return [BinaryProblem(c, None, None) for c in range(n_classes)]
    return [BinaryProblem(b, a, np.flatnonzero((codes == a) | (codes == b)))
            for a in range(n_classes) for b in range(a + 1, n_classes)]


def class_scores(decisions, n_classes: int, strategy: str) -> np.ndarray:
    """(n, k) scores whose arg-max is the predicted class (see the module notes).

    ``decisions`` is (n, m): column p the values of machine p of :func:`binary_problems`.
    One-vs-rest: the values themselves. One-vs-one: votes plus squashed confidences.
    """
    decisions = np.asarray(decisions, dtype=np.float64)
    if check_strategy(strategy) == "ovr":
        return decisions
    votes, confidence = pair_votes(decisions, n_classes)
    return votes + confidence / (3.0 * (np.abs(confidence) + 1.0))


def pair_votes(decisions, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, k) votes and summed values of the one-vs-one machines' (n, m) ``decisions``:
    pair (a, b), a < b, votes for b where its value is positive (else for a) and adds its
    value to b's sum and subtracts it from a's."""
    decisions = np.asarray(decisions, dtype=np.float64)
    n = decisions.shape[0]
    votes = np.zeros((n, n_classes))
    confidence = np.zeros((n, n_classes))
    p = 0
    for a in range(n_classes):
        for b in range(a + 1, n_classes):
            value = decisions[:, p]
            confidence[:, a] -= value
            confidence[:, b] += value
            votes[:, b] += value > 0
            votes[:, a] += value <= 0
            p += 1
    return votes, confidence


def predict_codes(decisions, n_classes: int, strategy: str) -> np.ndarray:
    """Class codes from the machines' values (arg-max of :func:`class_scores`)."""
    return np.argmax(class_scores(decisions, n_classes, strategy), axis=1)


class MulticlassFeatureModel(LinearFeatureModel):
    """The binary machines of a scheme as linear models on the same features.

    ``W`` (D, m) and ``c`` (m,): column p is machine p of :func:`binary_problems`;
    ``classes`` the k original labels, sorted (code j is ``classes[j]``). Predicts the
    vote (one-vs-one) or arg-max (one-vs-rest) of the m values (:func:`predict_codes`);
    ``decision_function`` gives the (n, m) values. The final model of a multiclass
    ``method="rff"`` search in feature space.
    """

    def __init__(self, feature_map, gamma, W, c, classes, strategy, coef_on_columns=None):
        super().__init__(feature_map, gamma, W, c, tuple(classes), coef_on_columns)
        self.strategy = check_strategy(strategy)

    def predict(self, X) -> np.ndarray:
        """The original labels of the scheme's predicted classes."""
        codes = predict_codes(self.decision_function(X), len(self.classes), self.strategy)
        return np.asarray(self.classes)[codes]
