"""The squared hinge's Newton passes on a Dask cluster, with their state kept on the workers.

:func:`~kernelcv.random_features.newton.squared_hinge_sums_path` needs, at every Newton
step of its t fold-out models, each model's gradient parts and active Hessian
``sum_A [z; 1][z; 1]^T`` over all rows, and at every line-search iteration two sums
along the step. Stateless passes (:class:`~kernelcv.random_features.newton.ChunkPasses`)
recompute the features and every model's whole active Hessian at each pass, O(t n D^2)
per Newton step, and a pass was a map-reduce over every partition: on a 2-worker
LocalCluster 100,000 x 20 rows took 10x the in-memory search (issue 42).

Here each worker keeps, between the passes of one (gamma, D) path and for the
partitions it holds, a :class:`WorkerState`:

* the features Z of its rows, when they fit the budget (:func:`state_fits`: half the
  worker's memory limit, with the partitions it holds); else they are recomputed chunk
  by chunk when a pass needs them (and when not even the rest of the state fits, the
  passes are the stateless ones);
* every model's values F and active set A on its rows, and the sum over those rows of
  every model's active Hessian (the worker's share of it);
* the line search's ``a = y F`` and ``b = y (Z dw + dc)`` of the current step.

A Newton pass then costs O(t c D) for the values and O(|changed| D^2) for the Hessian
(the rows that entered or left A; the whole Hessian again when more than a quarter of A
changed or after 50 updates, as :func:`~kernelcv.random_features.linear_cv._active_gram`
does in memory); a line-search iteration costs O(t c) and no features. One task per
worker does all its partitions and returns one sum, which the client adds.

The state is a cache. Every task's arguments carry all it needs (the map, gamma, the
current models and step), and a task that finds no state, or a state built from other
partitions (a new path, a restarted worker, a partition moved), computes it again from
its partitions, so the sums never depend on it. :meth:`ResidentPasses.close` drops it
at the end of the path. Tested against the in-memory path and the stateless passes on a
LocalCluster (``tests/test_dask_rows.py``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import numpy as np

from .linear_cv import _augmented_gram
from .sums import fold_errors, held_out_values

#: Share of a worker's memory limit that its partitions and cached features may use.
CACHE_SHARE = 0.5
#: A Hessian is updated by the changed rows while at most this share of A changed ...
UPDATE_SHARE = 0.25
#: ... and at most this many times in a row (rounding accumulates), as in memory.
MAX_UPDATES = 50
#: The states of this process: (path token, the partitions of the pass) ->
#: :class:`WorkerState`, so that workers sharing a process (``processes=False``) never
#: share a state, and a worker whose partitions changed starts a new one.
_STATES: dict = {}


def _state(token, indices) -> WorkerState:
    return _STATES.setdefault((token, tuple(indices)), WorkerState())


@dataclass
class Setup:
    """What a worker needs to compute a path's features: the fitted map, gamma, the
    Nystroem projection (None for RFF), rows per chunk and whether to keep Z."""

    fmap: object
    gamma: float
    projection: object
    chunk_rows: int
    keep_features: bool

    def features(self, X) -> np.ndarray:
        return self.fmap.features(self.fmap.base(X), self.gamma, projection=self.projection)


class BlockState:
    """One partition's share of a worker's state (see the module docstring).

    Arrays are (t, c), a model per row, and the work arrays are kept from pass to pass:
    workers started by a Dask nanny run with ``MALLOC_TRIM_THRESHOLD_`` set, which turns
    every fresh array over 128 KiB into new zeroed pages (measured: the same passes took
    1.9x as long with fresh temporaries)."""

    def __init__(self, y, fold_ids, n_models):
        t, c = n_models, y.shape[0]
        self.y = y
        self.train = fold_ids[None, :] != np.arange(t)[:, None]
        self.Z = None
        self.values = np.empty((t, c))  # F at the Newton pass ``values_pass``
        self.values_pass = None
        self.work = np.empty((t, c))
        self.on = np.empty((t, c), dtype=bool)
        self.new_active = np.empty((t, c), dtype=bool)
        self.active = None  # the active sets the Hessians were formed from
        self.slack = self.b = self.gain = self.square = None  # along the current step
        self.breakpoints = None  # per model: (1 - a) / b, 1 - a, b of its moving rows
        self.step_pass = None

    def chunks(self, setup: Setup, X):
        """``(start, stop, Z[start:stop])`` over the partition: the kept Z at once, or
        computed chunk by chunk."""
        n = self.y.shape[0]
        if setup.keep_features:
            if self.Z is None:
                self.Z = setup.features(X)
            yield 0, n, self.Z
            return
        for start in range(0, n, setup.chunk_rows):
            stop = min(start + setup.chunk_rows, n)
            yield start, stop, setup.features(X[start:stop])

    def rows(self, setup: Setup, X, index) -> np.ndarray:
        """The features of the rows ``index`` (a boolean mask) of the partition."""
        if self.Z is not None:
            return self.Z[index]
        return setup.features(X[np.flatnonzero(index)])


class WorkerState:
    """A worker's state for one path and one set of partitions (the key of
    :data:`_STATES`): their :class:`BlockState` s and the worker's share of every model's
    active Hessian."""

    def __init__(self):
        self.blocks = {}
        self.gram = None  # (t, D + 1, D + 1)
        self.valid = None  # (t,) whether gram[i] is that of the blocks' active[i]
        self.updates = None  # (t,) updates since gram[i] was last formed whole

    def block(self, index, y, fold_ids, n_models) -> BlockState:
        block = self.blocks.get(index)
        if block is None or block.train.shape != (n_models, fold_ids.shape[0]):
            block = self.blocks[index] = BlockState(y, fold_ids, n_models)
        return block


def worker_newton(token, setup, indices, parts, coef, intercept, models, pass_id):
    """One worker's Newton sums over its partitions ``parts`` (their global ``indices``):
    ``(grad_parts (t, D + 1), hessian (t, D + 1, D + 1))`` as
    :func:`~kernelcv.random_features.newton.chunk_newton_sums` sums them, zero for the
    models not in ``models``."""
    state = _state(token, indices)
    t, D = coef.shape
    grad = np.zeros((t, D + 1))
    blocks = []
    for index, (X, y, fold_ids, _) in zip(indices, parts, strict=True):
        block = state.block(index, y, fold_ids, t)
        F, W, on = block.values, block.work, block.new_active
        for start, stop, Z in block.chunks(setup, X):
            part = slice(start, stop)
            np.matmul(coef, Z.T, out=F[:, part])
            F[:, part] += intercept[:, None]
            np.multiply(F[:, part], y[None, part], out=W[:, part])
            np.subtract(1.0, W[:, part], out=W[:, part])  # r = 1 - y f
            np.greater(W[:, part], 0.0, out=on[:, part])
            on[:, part] &= block.train[:, part]
            W[:, part] *= y[None, part]
            W[:, part] *= on[:, part]  # y r on the active rows, else 0
            grad[:, :D] += W[:, part] @ Z
        grad[:, D] += W.sum(axis=1)
        block.values_pass = pass_id
        blocks.append((block, X))
    hessian = _update_hessians(state, setup, blocks, np.asarray(models, dtype=int), t, D)
    others = np.setdiff1d(np.arange(t), models)
    grad[others] = 0.0
    hessian[others] = 0.0
    return grad, hessian


def _update_hessians(state, setup, blocks, models, t, D):
    """The worker's share of each model's active Hessian at the new active sets
    (``block.new_active``): updated by the rows that changed, or formed whole (module
    docstring)."""
    if state.gram is None or state.gram.shape[0] != t or \
            any(block.active is None for block, _ in blocks):
        state.gram = np.zeros((t, D + 1, D + 1))
        state.valid = np.zeros(t, dtype=bool)
        state.updates = np.zeros(t, dtype=int)
    whole = []
    for i in models:
        if state.valid[i] and state.updates[i] < MAX_UPDATES:
            changed = sum(int(np.count_nonzero(block.new_active[i] != block.active[i]))
                          for block, _ in blocks)
            size = sum(int(np.count_nonzero(block.new_active[i])) for block, _ in blocks)
            if changed <= UPDATE_SHARE * max(size, 1):
                for block, X in blocks:
                    new, old = block.new_active[i], block.active[i]
                    entered, left = new & ~old, old & ~new
                    if entered.any():
                        state.gram[i] += _augmented_gram(block.rows(setup, X, entered))
                    if left.any():
                        state.gram[i] -= _augmented_gram(block.rows(setup, X, left))
                state.updates[i] += 1 if changed else 0
                continue
        whole.append(i)
    if whole:
        state.gram[whole] = 0.0
        for block, X in blocks:
            for start, stop, Z in block.chunks(setup, X):
                for i in whole:
                    state.gram[i] += _augmented_gram(Z[block.new_active[i, start:stop]])
        state.valid[whole] = True
        state.updates[whole] = 0
    for block, _ in blocks:
        if block.active is None:
            block.active = block.new_active.copy()
        else:  # the models not in this pass keep the sets their Hessians were formed from
            block.active[models] = block.new_active[models]
    return state.gram.copy()


@dataclass
class LineSums:
    """The line-search sums of a pass at the step sizes s (one per model), added over
    rows and workers. With the slack ``u = 1 - a`` (``a = y f``) and ``b = y (z.dw +
    dc)``, a row is active at s when ``u - s b > 0``; ``P = sum_A b u`` and
    ``Q = sum_A b^2`` over each model's active rows at s (so ``sum_A b r = P - s Q``).
    ``window[i]`` (k x 2: u and b) holds the rows whose breakpoints ``u / b`` (where they
    change side) lie nearest to s, and no other row changes side in
    ``(low[i], high[i])`` (added windows: the largest low, the smallest high)."""

    P: np.ndarray
    Q: np.ndarray
    window: list
    low: np.ndarray
    high: np.ndarray

    def __add__(self, other: LineSums) -> LineSums:
        return LineSums(self.P + other.P, self.Q + other.Q,
                        [np.vstack([u, v]) for u, v in zip(self.window, other.window,
                                                           strict=True)],
                        np.maximum(self.low, other.low), np.minimum(self.high, other.high))


#: Rows per side of a worker's window around each model's step size.
WINDOW = 512


def _window(points, slack, b, s, size):
    """The ``size`` rows whose breakpoints ``points`` lie nearest to s on each side, and
    every row whose breakpoint is s: ``(their u and b (k x 2), low, high)``, no other
    breakpoint in [low, high] but at its ends, and low < s < high."""
    low, high, picked = -np.inf, np.inf, [np.flatnonzero(points == s)]  # ties: always
    for side, sign in ((points > s, 1.0), (points < s, -1.0)):
        rows = np.flatnonzero(side)
        if rows.size > size:
            rows = rows[np.argpartition(sign * points[rows], size - 1)[:size]]
            if sign > 0:
                high = float(points[rows].max())
            else:
                low = float(points[rows].min())
        picked.append(rows)
    rows = np.concatenate(picked)
    return np.column_stack([slack[rows], b[rows]]), low, high


def _set_step(block, setup, X, coef, intercept, step_coef, step_intercept, pass_id):
    """u = 1 - y f, b = y (z.dw + dc), b u and b^2 of the step of Newton pass
    ``pass_id`` (f from that pass when the block has it)."""
    t, c = block.values.shape
    if block.slack is None:
        block.slack, block.b = np.empty((t, c)), np.empty((t, c))
        block.gain, block.square = np.empty((t, c)), np.empty((t, c))
    y, F = block.y, block.values
    for start, stop, Z in block.chunks(setup, X):
        part = slice(start, stop)
        if block.values_pass != pass_id:
            np.matmul(coef, Z.T, out=F[:, part])
            F[:, part] += intercept[:, None]
        np.matmul(step_coef, Z.T, out=block.b[:, part])
    block.values_pass = pass_id
    block.b += step_intercept[:, None]
    block.b *= y[None, :]
    np.multiply(F, y[None, :], out=block.slack)
    np.subtract(1.0, block.slack, out=block.slack)
    np.multiply(block.b, block.slack, out=block.gain)
    np.multiply(block.b, block.b, out=block.square)
    block.breakpoints = [None] * t
    block.step_pass = pass_id


def worker_line(token, setup, indices, parts, coef, intercept, step_coef, step_intercept,
                sizes, models, pass_id):
    """One worker's :class:`LineSums` over its partitions at the step sizes ``sizes``
    (zero, with empty windows, for the models not in ``models``)."""
    state = _state(token, indices)
    t = coef.shape[0]
    out = LineSums(np.zeros(t), np.zeros(t), [np.empty((0, 2))] * t,
                   np.full(t, -np.inf), np.full(t, np.inf))
    for index, (X, y, fold_ids, _) in zip(indices, parts, strict=True):
        block = state.block(index, y, fold_ids, t)
        if block.step_pass != pass_id:
            _set_step(block, setup, X, coef, intercept, step_coef, step_intercept, pass_id)
        W, on = block.work, block.on
        np.multiply(block.b, sizes[:, None], out=W)
        np.subtract(block.slack, W, out=W)  # r = u - s b
        np.greater(W, 0.0, out=on)
        on &= block.train
        np.multiply(block.gain, on, out=W)
        P = W.sum(axis=1)
        np.multiply(block.square, on, out=W)
        Q = W.sum(axis=1)
        windows, low, high = [np.empty((0, 2))] * t, np.full(t, -np.inf), np.full(t, np.inf)
        for i in models:
            if block.breakpoints[i] is None:
                rows = np.flatnonzero(block.train[i] & (block.b[i] != 0))
                u, b = block.slack[i, rows], block.b[i, rows]
                block.breakpoints[i] = (u / b, u, b)
            windows[i], low[i], high[i] = _window(*block.breakpoints[i], sizes[i], WINDOW)
        out = out + LineSums(P, Q, windows, low, high)
    others = np.setdiff1d(np.arange(t), models)
    out.P[others] = 0.0
    out.Q[others] = 0.0
    return out


def windowed_step_sizes(passes, coef, step_coef, lam, m, models, iterations):
    """The exact line search of :func:`~kernelcv.random_features.newton._line_search`
    (1-D Newton iterations on each model's piecewise-linear derivative, from s = 1), in
    fewer passes: between passes the iterations go on here, with the window of
    :class:`LineSums`, for as long as s stays inside it; a pass is needed again only for
    a model whose s left its window."""
    sizes = np.ones(coef.shape[0])
    wd = np.einsum("ij,ij->i", coef, step_coef)
    dd = np.einsum("ij,ij->i", step_coef, step_coef)
    left = {int(i): iterations for i in models}
    while left:
        sums = passes.line_sums(sizes, sorted(left))
        for i in list(left):
            u, b = sums.window[i][:, 0], sums.window[i][:, 1]
            gain, square = b * u, b * b
            s = sizes[i]
            on = u - s * b > 0
            P0, Q0 = sums.P[i] - gain[on].sum(), sums.Q[i] - square[on].sum()
            finished = False
            while left[i] > 0:
                left[i] -= 1
                on = u - s * b > 0
                P, Q = P0 + gain[on].sum(), Q0 + square[on].sum()
                slope = -(2.0 / m[i]) * (P - s * Q) + 2.0 * lam * (wd[i] + s * dd[i])
                curve = (2.0 / m[i]) * Q + 2.0 * lam * dd[i]
                if curve <= 0:
                    finished = True
                    break
                new = s - slope / curve
                finished = abs(new - s) <= 1e-12 * max(1.0, abs(s))
                s = new
                if finished or not sums.low[i] < s < sums.high[i]:
                    break
            sizes[i] = s
            if finished or left[i] <= 0:
                del left[i]
    return np.maximum(sizes, 0.0)


def worker_errors(token, setup, indices, parts, coef, intercept, classifier):
    """One worker's (t, k) sums of held-out errors: each row's value under its own
    fold's models (``coef`` t x D x k, ``intercept`` t x k) from the kept features."""
    state = _state(token, indices)
    t = coef.shape[0]
    out = np.zeros((t, coef.shape[2]))
    for index, (X, y, fold_ids, _) in zip(indices, parts, strict=True):
        block = state.block(index, y, fold_ids, t)
        for start, stop, Z in block.chunks(setup, X):
            folds = fold_ids[start:stop]
            F = held_out_values(Z, folds, coef, intercept)
            out += fold_errors(F, y[start:stop], folds, t, classifier)
    return out


def drop_state(token) -> None:
    """Forget a path's states in this process (run on every worker)."""
    for key in [key for key in list(_STATES) if key[0] == token]:
        _STATES.pop(key, None)


def state_bytes(rows: int, n_features: int, n_models: int, keep_features: bool,
                partition_rows: int = 0) -> int:
    """Bytes a worker's state holds for ``rows`` rows (``partition_rows`` in its largest
    partition): nine float and four boolean ``t x rows`` arrays (values, work, u, b, b u,
    b^2, the breakpoints' three; the sets), two copies of the t Hessians and, when the
    features are kept, Z plus two partitions' worth of Z while it is formed and masked."""
    D, t = n_features, n_models
    own = rows * t * (9 * 8 + 4) + 2 * t * (D + 1) ** 2 * 8
    return int(own + ((rows + 2 * partition_rows) * D * 8 if keep_features else 0))


def state_fits(worker_rows, worker_data_bytes, worker_limits, n_features, n_models,
               partition_rows=0) -> tuple[bool, bool]:
    """``(keep_state, keep_features)``: whether every worker's partitions and state fit
    within :data:`CACHE_SHARE` of its memory limit (a limit of 0: no limit), without and
    with the features."""
    fits = []
    for keep in (False, True):
        fits.append(all(
            not worker_limits.get(worker) or worker_data_bytes.get(worker, 0) + state_bytes(
                rows, n_features, n_models, keep, partition_rows)
            <= CACHE_SHARE * worker_limits[worker]
            for worker, rows in worker_rows.items()))
    return fits[0], fits[0] and fits[1]


class ResidentPasses:
    """The Newton and line-search sums of one (gamma, D) path with state on the workers
    (module docstring); the interface of :class:`~kernelcv.random_features.newton.
    ChunkPasses`."""

    def __init__(self, rows, fmap, gamma, projection, chunk_rows, keep=True):
        self.rows = rows
        self.token = uuid.uuid4().hex
        self.setup = Setup(fmap, float(gamma), projection, int(chunk_rows), keep)
        self.pass_id = 0

    def newton(self, coef, intercept, models):
        self.pass_id += 1
        return self.rows.on_workers(worker_newton, self.token, self.setup, coef=coef,
                                    intercept=intercept, models=list(models),
                                    pass_id=self.pass_id)

    def step_sizes(self, coef, intercept, step_coef, step_intercept, lam, m, models,
                   iterations):
        """The exact line search (:func:`windowed_step_sizes`)."""
        self._step = (coef, intercept, step_coef, step_intercept)
        return windowed_step_sizes(self, coef, step_coef, lam, m, models, iterations)

    def line_sums(self, sizes, models) -> LineSums:
        coef, intercept, step_coef, step_intercept = self._step
        return self.rows.on_workers(worker_line, self.token, self.setup, coef=coef,
                                    intercept=intercept, step_coef=step_coef,
                                    step_intercept=step_intercept, sizes=sizes,
                                    models=list(models), pass_id=self.pass_id)

    def heldout_errors(self, models, classifier: bool) -> np.ndarray:
        """(t, k) sums of each fold's held-out errors under its models
        (:func:`worker_errors`, from the features the workers kept)."""
        return self.rows.on_workers(worker_errors, self.token, self.setup,
                                    coef=models.coef, intercept=models.intercept,
                                    classifier=classifier)

    def close(self):
        """Drop the state on every worker."""
        self.rows.forget(drop_state, self.token)
