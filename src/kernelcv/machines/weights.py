"""Class and sample weights: each row's loss term scaled by its weight.

With weights ``c_j`` a machine minimises

    (1/n) sum_j c_j loss(y_j, f(x_j)) + lam ||f||_H^2,

which is scikit-learn's ``SVC(class_weight=...)`` and ``fit(..., sample_weight=...)``:
its ``C`` becomes ``C c_j`` for row j (``lam = 1 / (2 n C)`` as before; ``n`` counts rows,
not weights). A fold-out problem keeps every retained row's weight, so the weights live
in the loss: :class:`WeightedLoss` scales the base loss's value and both derivatives by
each row's weight, and every solver, criterion and refit that works with
``loss.derivatives`` (the Newton solver, BIF, exact refits, the certificate, the MM
engine) solves the weighted problem unchanged.

A row's weight is the product of two parts:

* **class weights** -- a function of the row's label (+1 or -1 for a binary machine), so
  they need no bookkeeping when rows are selected;
* **sample weights** -- one number per row (:class:`RowWeights`), aligned with the rows
  the loss is given: wherever a subset of rows is fitted (a fold's training part, a
  one-vs-one pair, a screening subsample) the machine is first narrowed to those rows
  (:meth:`WeightedLoss.take`, ``Machine.take``).

Multiclass schemes give each binary machine the weights of its own classes: one-vs-one
pair (a, b) weighs a's rows by ``c_a`` and b's by ``c_b`` (as LIBSVM does); one-vs-rest
machine c weighs class c by ``c_c`` and the rest by 1 (as LIBLINEAR does).

``"balanced"`` is ``c_k = n / (K n_k)`` for K classes with ``n_k`` rows each, computed
once from all the rows given to the search (scikit-learn's ``compute_class_weight``).
``GridSearchCV`` recomputes it inside each fold from the fold's training rows; with
stratified folds the two differ by the rounding of the class counts per fold. Here the
weights are part of the problem that is cross-validated, the same for every fold, so the
fast criteria and the refits agree.
"""

from __future__ import annotations

import hashlib
import numbers
from dataclasses import dataclass, replace

import numpy as np

from ..exceptions import KernelCVError


class RowWeights:
    """(n,) sample weights of the rows a loss is given, compared and hashed by identity
    (so a machine holding them stays a hashable value)."""

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = values

    def take(self, rows) -> RowWeights:
        """The weights of ``rows`` (indices or a boolean mask), in that order."""
        return RowWeights(self.values[rows])

    def along(self, y) -> np.ndarray:
        """The weights shaped to multiply a loss of ``y``: (n,), ``y[:, None]``-shaped
        (n, k) (rows first, as the certificate and the MM engine stack folds) or
        ``y[None, :]``-shaped (1, n) (the solver's intercept scan)."""
        y = np.asarray(y)
        n = self.values.shape[0]
        if y.ndim == 1 and y.shape[0] == n:
            return self.values
        if y.ndim == 2 and y.shape[0] == n:
            return self.values[:, None]
        if y.ndim == 2 and y.shape == (1, n):
            return self.values[None, :]
        raise ValueError(f"sample weights of {n} rows do not match targets of shape "
                         f"{y.shape}")


@dataclass(frozen=True)
class WeightedLoss:
    """A loss with weight ``positive`` on rows labelled +1 and ``negative`` on rows
    labelled -1 (class weights; both 1 for a regressor), times ``rows``, the rows' sample
    weights (None: 1 each): value and derivatives times each row's weight.

    Its kinks (``knots``) and Huber ``width`` / ``epsilon`` are the base loss's;
    ``weight_bound`` (the largest row weight) scales the curvature bounds of the
    certificate and the MM engine.
    """

    base: object
    negative: float = 1.0
    positive: float = 1.0
    rows: RowWeights | None = None

    @property
    def name(self) -> str:
        return f"weighted_{self.base.name}"

    @property
    def weight_bound(self) -> float:
        top = max(self.negative, self.positive)
        return top if self.rows is None else top * float(np.max(self.rows.values))

    def __getattr__(self, attribute):
        # the base loss's parameters (width, epsilon) and knots, as written there
        if attribute in ("width", "epsilon", "knots"):
            return getattr(self.base, attribute)
        raise AttributeError(attribute)

    def weights(self, y) -> np.ndarray:
        """Each row's weight, shaped to multiply a loss of ``y``."""
        c = np.where(np.asarray(y) > 0, self.positive, self.negative) \
            if self.negative != self.positive else np.full(np.shape(y), self.positive)
        return c if self.rows is None else c * self.rows.along(y)

    def take(self, rows) -> WeightedLoss:
        """This loss for the subset ``rows`` of its rows (class weights need nothing)."""
        return self if self.rows is None else replace(self, rows=self.rows.take(rows))

    def value(self, y, f):
        return self.weights(y) * self.base.value(y, f)

    def derivatives(self, y, f):
        g, h = self.base.derivatives(y, f)
        c = self.weights(y)
        return c * g, c * h


def unweighted(loss):
    """The loss without class or sample weights."""
    return loss.base if isinstance(loss, WeightedLoss) else loss


def loss_for_rows(loss, rows):
    """``loss`` narrowed to ``rows`` of the rows it is given (a sample-weighted loss keeps
    the weights of those rows; any other loss is returned as it is)."""
    return loss.take(rows) if isinstance(loss, WeightedLoss) else loss


def weight_bound(loss) -> float:
    """The largest row weight of ``loss`` (1 without weights)."""
    return float(getattr(loss, "weight_bound", 1.0))


def weights_digest(values) -> str:
    """A short fingerprint of row weights (for a checkpoint's identity). O(n)."""
    return hashlib.sha256(np.ascontiguousarray(values, dtype=np.float64).tobytes()
                          ).hexdigest()[:16]


def normalise_class_weight(class_weight):
    """``None``, ``"balanced"`` or a tuple of ``(label, weight)`` pairs from a user's
    ``class_weight`` (a dict ``{label: weight}``, as scikit-learn's); every weight a
    positive finite number. A one-line :class:`KernelCVError` otherwise."""
    if class_weight is None or (isinstance(class_weight, str)
                                and class_weight == "balanced"):
        return class_weight
    if isinstance(class_weight, tuple) and all(
            isinstance(item, tuple) and len(item) == 2 for item in class_weight):
        pairs = class_weight
    elif isinstance(class_weight, dict):
        pairs = tuple(class_weight.items())
    else:
        raise KernelCVError(f"class_weight must be None, 'balanced' or a dict {{label: "
                            f"weight}}, got {class_weight!r}")
    for label, weight in pairs:
        if (isinstance(weight, bool) or not isinstance(weight, numbers.Real)
                or not np.isfinite(weight) or not weight > 0):
            raise KernelCVError(f"class_weight[{label!r}] must be a positive finite number, "
                                f"got {weight!r}")
    return tuple((label, float(weight)) for label, weight in pairs)


def resolve_class_weight(class_weight, mapping, y) -> tuple[float, ...]:
    """Each class's weight, in the order of the class codes of ``mapping``
    (``{-1: label, 1: label}`` or ``{0: label, ...}``, see
    :func:`kernelcv.validation.check_data`), from ``class_weight`` as
    :func:`normalise_class_weight` returns it; ``y`` holds the codes (for "balanced").

    A class missing from a dict weighs 1 (as in scikit-learn); a label of the dict that is
    no class of ``y`` is refused. Cost O(n).
    """
    codes = sorted(mapping)
    if class_weight == "balanced":
        counts = np.array([np.count_nonzero(y == code) for code in codes], dtype=np.float64)
        return tuple(float(v) for v in y.shape[0] / (len(codes) * counts))
    given = {}
    for label, weight in class_weight:
        matches = [code for code in codes if _same_label(mapping[code], label)]
        if not matches:
            known = ", ".join(repr(mapping[code]) for code in codes)
            raise KernelCVError(f"class_weight names the class {label!r}, which is not in y "
                                f"(its classes: {known})")
        given[matches[0]] = weight
    return tuple(given.get(code, 1.0) for code in codes)


def _same_label(known, given) -> bool:
    """Whether a class weight's label names the data's label ``known``; a label written
    as text (the command line's) names a numeric label of the same value."""
    known, given = _plain(known), _plain(given)
    if known == given:
        return True
    if isinstance(given, str) and not isinstance(known, str):
        try:
            return float(given) == float(known)
        except (TypeError, ValueError):
            return False
    return False


def _plain(label):
    """A label as the plain Python value check_data keeps (numpy scalars unwrapped)."""
    return label.item() if hasattr(label, "item") else label
