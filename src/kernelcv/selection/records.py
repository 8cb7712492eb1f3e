"""Small pieces the CV methods share: order parsing, one setting's Gram matrix and the
JSON-able record of one evaluated candidate (with its per-fold errors, or the per-fold
losses of a named score, :class:`~kernelcv.criteria.scoring.HeldoutScore`)."""

from __future__ import annotations

import numpy as np

from ..criteria.scoring import HeldoutScore
from ..criteria.spectral_torch import device_gram
from ..exceptions import KernelCVError
from ..kernels import GramFactory, make_kernel
from ..machines import Machine

#: The status of a candidate (and the source of a value) whose CV error is exact refit CV's.
EXACT_STATUS = "exact"


def parse_order(order):
    """Validate a BIF order: an int >= 1, ``"inf"`` or ``"auto"``."""
    if isinstance(order, str):
        if order in ("inf", "auto"):
            return order
        try:
            order = int(order)
        except ValueError:
            raise KernelCVError(
                f"order must be a positive integer, 'inf' or 'auto', got {order!r}") from None
    if isinstance(order, float) and order == float("inf"):
        return "inf"
    if isinstance(order, bool) or int(order) != order or order < 1:
        raise KernelCVError(f"order must be a positive integer, 'inf' or 'auto', got {order!r}")
    return int(order)


def gram_for_setting(data, setting: dict, memory_budget=None, device=None):
    """The Gram matrix of ``setting`` on ``data`` (a :class:`GramFactory` or the X matrix):
    numpy, or formed on a torch ``device`` (:class:`~kernelcv.devices.Device`) from the
    shared distances (:func:`~kernelcv.criteria.spectral_torch.device_gram`)."""
    factory = data if isinstance(data, GramFactory) else GramFactory(
        data, memory_budget=memory_budget)
    kernel = make_kernel(setting["kernel"], setting.get("gamma"), setting.get("degree", 3),
                         setting.get("coef0", 1.0))
    if device is not None and device.is_torch:
        return device_gram(factory.base_for(kernel), kernel, device)
    return factory.gram(kernel)


def loss_delta(machine: Machine) -> float:
    """The Huber band width delta of a smoothed machine (0 for the others)."""
    return float(getattr(machine.loss, "width", 0.0))


def fold_losses(ev, y, folds, scoring: HeldoutScore | None, machine=None) -> list[float]:
    """Per-fold values a search minimises: the criterion's errors (0-1 or MSE), or the
    negated per-fold scores of ``scoring`` computed from the held-out values (weighted by
    ``machine``'s sample weights when it has them; a probability score of a multiclass
    machine reads its machines' values)."""
    if scoring is None:
        return [float(e) for e in ev.fold_errors]
    weights = None if machine is None else machine.row_weights
    values, scheme = ev.predictions, None
    if machine is not None and machine.is_multiclass and scoring.reads_machines:
        values, scheme = ev.decisions, (machine.n_classes, machine.multiclass)
    return [float(v) for v in scoring.fold_losses(y, values, folds, weights, scheme)]


def cv_record(ev, lam: float, folds, y=None, scoring: HeldoutScore | None = None,
              machine=None) -> dict:
    """The JSON-able record of one :class:`~kernelcv.criteria.evaluate.Evaluation`.

    ``unconverged``, ``ill_conditioned`` and ``uncertified`` are the BIF value's flags
    (truncation error, rounding error and the certified bound on the distance from exact
    refit CV above tolerance; always False for the other criteria).
    With ``scoring`` the record's ``fold_errors`` and ``score`` are the negated per-fold
    scores and their mean (``cv_error`` stays the 0-1 error or MSE); ``y`` are the labels
    the held-out values are scored against.
    """
    losses = fold_losses(ev, y, folds, scoring, machine)
    return {
        "lam": lam, "score": ev.cv_error if scoring is None else float(np.mean(losses)),
        "cv_error": ev.cv_error, "fold_errors": losses,
        "fold_sizes": [int(c) for c in np.bincount(folds)],
        "n_folds": int(folds.max()) + 1,
        "order_used": ev.order_used, "degenerate": bool(ev.degenerate),
        "unconverged": bool(ev.unconverged), "ill_conditioned": bool(ev.ill_conditioned),
        "uncertified": bool(ev.uncertified),
        "heldout_ratio": float(ev.heldout_ratio), "seconds": ev.seconds,
        "fit_seconds": ev.fit_seconds, "notes": list(ev.notes),
        "plateau_loss": majority_plateau(y, ev.predictions),
    }


def majority_plateau(y, predictions) -> float | None:
    """The held-out hinge loss ``(1/n) sum_i max(0, 1 - y_i f_{-S(i)}(x_i))`` of a binary
    classifier whose held-out decision values all have one sign (it predicts one class
    for every point); None for any other candidate, regression and the class codes of a
    multiclass scheme.

    The screening walks rank such a candidate after every candidate that predicts both
    classes, whatever their CV errors, and among themselves by CV error, then this loss:
    on a small subsample whole regions of the grid predict the majority class and tie at
    its rate (german.numer, 170 rows: 39 of 41 coarse points at 0.294), and with the grid
    order as the only tie-break the walk settled on the first of them (test error 0.300
    against 0.252). O(n).
    """
    if y is None or predictions is None:
        return None
    y = np.asarray(y)
    values = np.asarray(predictions)
    if (values.shape != y.shape or not np.issubdtype(values.dtype, np.floating)
            or not np.all(np.abs(y) == 1)):
        return None
    if not (np.all(values > 0) or np.all(values <= 0)):
        return None
    loss = float(np.mean(np.maximum(0.0, 1.0 - y * values)))
    return loss if np.isfinite(loss) else None
