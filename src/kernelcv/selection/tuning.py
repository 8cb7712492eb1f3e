"""Gradient tuning driver: minimise a smooth criterion from several starting points.

:func:`minimize_restarts` runs scipy's nonlinear conjugate gradient (``"CG"``, the
paper's optimiser, default) or ``"L-BFGS-B"`` from the given start and from
``n_restarts - 1`` random perturbations of it (seeded by ``random_state``). The criterion
is a callable returning ``(value, gradient)`` on an unconstrained vector (positivity is
the criterion's business, e.g. by logarithms). The driver never solves a model itself.

What it records: every restart's starting point, final value, iterations, evaluations,
scipy status and message, seconds and objective history (the value at each accepted
iterate), and over all restarts the best point ever evaluated. An evaluation that raises
a linear-algebra error or returns a non-finite value ends that restart as ``"failed"``;
the best point seen so far is kept, so a failure costs progress, never the result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from ..exceptions import KernelCVError

OPTIMIZERS = {"cg": "CG", "lbfgs": "L-BFGS-B", "CG": "CG", "L-BFGS-B": "L-BFGS-B"}


class _EvaluationFailed(Exception):
    """Raised inside the objective wrapper to stop a restart."""


@dataclass
class TuningResult:
    """Outcome of :func:`minimize_restarts`.

    ``params``/``value`` are the best point ever evaluated (over all restarts);
    ``history`` is the objective along the iterates of the restart that found it;
    ``restarts`` holds one dict per restart; ``failures`` the messages of failed ones.
    """

    params: np.ndarray
    value: float
    history: list
    restarts: list = field(default_factory=list)
    n_iter: int = 0
    n_evaluations: int = 0
    seconds: float = 0.0

    @property
    def failures(self) -> list[str]:
        return [f"restart {i}: {r['message']}" for i, r in enumerate(self.restarts)
                if r["status"] == "failed"]

    @property
    def seconds_per_iteration(self) -> float:
        return self.seconds / max(self.n_iter, 1)

    def to_dict(self) -> dict:
        return {"value": self.value, "n_iter": self.n_iter,
                "n_evaluations": self.n_evaluations, "seconds": self.seconds,
                "seconds_per_iteration": self.seconds_per_iteration,
                "history": list(self.history),
                "restarts": [{k: v for k, v in r.items() if k != "start"}
                             for r in self.restarts]}


class _Tracker:
    """Wraps the objective: counts evaluations, remembers recent values and the best."""

    def __init__(self, fun):
        self.fun = fun
        self.best_value = np.inf
        self.best_params = None
        self.recent: dict[bytes, float] = {}
        self.n_evaluations = 0

    def __call__(self, x):
        self.n_evaluations += 1
        try:
            value, grad = self.fun(x)
        except np.linalg.LinAlgError as exc:
            raise _EvaluationFailed(f"linear algebra failed ({exc})") from None
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            raise _EvaluationFailed("the criterion or its gradient is not finite")
        if len(self.recent) > 64:
            self.recent.clear()
        self.recent[np.asarray(x).tobytes()] = float(value)
        if value < self.best_value:
            self.best_value = float(value)
            self.best_params = np.array(x, dtype=np.float64)
        return float(value), np.asarray(grad, dtype=np.float64)


def minimize_restarts(fun, x0, *, optimizer="CG", n_restarts=3, max_iter=100,
                      random_state=None, init_scale=1.0, gtol=1e-6, ftol=1e-5,
                      patience=5) -> TuningResult:
    """Minimise ``fun`` (returning ``(value, grad)``) from ``n_restarts`` starting points.

    Parameters
    ----------
    fun : callable, x -> (float, ndarray)
    x0 : ndarray, first starting point; the others are ``x0 + init_scale * N(0, I)``.
    optimizer : "CG" (default) or "L-BFGS-B" (also "cg", "lbfgs").
    n_restarts : int >= 1.
    max_iter : int >= 1, iterations per restart.
    random_state : None, int or Generator for the perturbed starts.
    gtol : gradient-norm tolerance passed to scipy.
    ftol, patience : a restart also stops (status ``"converged"``) once the objective
        has decreased by less than ``ftol`` over the last ``patience`` iterations; the
        smooth LOO error is in [0, 1], so 1e-5 is far below one misclassification.

    Returns
    -------
    TuningResult

    Raises
    ------
    KernelCVError
        When not a single evaluation succeeded (no point to return).
    """
    method = OPTIMIZERS.get(optimizer)
    if method is None:
        raise KernelCVError(f"unknown optimizer {optimizer!r}; choose cg or lbfgs")
    if int(n_restarts) < 1 or int(max_iter) < 1:
        raise KernelCVError("n_restarts and max_iter must be at least 1")
    rng = np.random.default_rng(random_state)
    x0 = np.asarray(x0, dtype=np.float64)
    starts = [x0] + [x0 + init_scale * rng.standard_normal(x0.shape)
                     for _ in range(int(n_restarts) - 1)]
    tracker = _Tracker(fun)
    restarts, histories = [], []
    tic = time.perf_counter()
    for start in starts:
        restarts.append(_one_restart(tracker, start, method, int(max_iter), gtol, ftol,
                                     int(patience)))
        histories.append(restarts[-1]["history"])
    if tracker.best_params is None:
        raise KernelCVError("the optimiser failed at every starting point: "
                            + "; ".join(r["message"] for r in restarts))
    best = int(np.argmin([r["value"] for r in restarts]))
    return TuningResult(params=tracker.best_params, value=tracker.best_value,
                        history=histories[best], restarts=restarts,
                        n_iter=sum(r["n_iter"] for r in restarts),
                        n_evaluations=tracker.n_evaluations,
                        seconds=time.perf_counter() - tic)


def _one_restart(tracker, start, method, max_iter, gtol, ftol, patience) -> dict:
    history: list[float] = []
    flat = []
    evaluations = tracker.n_evaluations
    tic = time.perf_counter()

    def callback(xk):
        value = tracker.recent.get(np.asarray(xk).tobytes())
        if value is None:
            value = tracker(xk)[0]
        history.append(value)
        if len(history) > patience and history[-patience - 1] - value < ftol:
            flat.append(True)
            raise StopIteration

    record = {"start": start.tolist()}
    try:
        first = tracker(start)[0]
        history.append(first)
        options = {"maxiter": max_iter, "gtol": gtol}
        res = minimize(tracker, start, jac=True, method=method, callback=callback,
                       options=options)
        record.update(value=float(res.fun), n_iter=int(res.nit), message=str(res.message),
                      status="converged" if flat else _status(res))
        if flat:
            record["message"] = (f"objective decreased by less than {ftol:g} over "
                                 f"{patience} iterations")
    except _EvaluationFailed as exc:
        record.update(value=min(history) if history else np.inf, n_iter=len(history),
                      message=str(exc), status="failed")
    if history:
        record["value"] = min(record["value"], min(history))
    record.update(history=history, n_evaluations=tracker.n_evaluations - evaluations,
                  seconds=time.perf_counter() - tic)
    return record


def _status(res) -> str:
    """converged, max_iter (stopped at the iteration limit) or stalled (the line search
    could not improve further: precision loss / abnormal termination at a flat point)."""
    if res.success:
        return "converged"
    if not np.isfinite(res.fun):
        return "failed"
    message = str(res.message).lower()
    if "maximum number" in message or "iterations" in message and "limit" in message:
        return "max_iter"
    return "stalled"
