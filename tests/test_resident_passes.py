"""The squared hinge's Newton passes with state kept between passes (rows on a Dask cluster,
kernelcv.random_features.resident) against the stateless passes over row chunks, here in
one process: the same Newton sums whatever the partitions, the chunks, the models of the
pass and the state (kept, dropped, features kept or recomputed); the windowed line search
gives the step sizes of the search that makes one pass per iteration, in no more passes;
and the whole path gives the same fold-out models and held-out errors.
tests/test_dask_rows.py runs the same passes on a real LocalCluster."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelcv.features import FeatureMap
from kernelcv.random_features import resident
from kernelcv.random_features.dask_rows import add_results
from kernelcv.random_features.newton import ChunkPasses, squared_hinge_sums_path
from kernelcv.random_features.rowmap import LocalRows
from kernelcv.reading.rowchunks import ArraySource


class InProcessRows:
    """The interface ResidentPasses uses of DaskRows, with "workers" in this process."""

    def __init__(self, X, y, fold_ids, cuts, keep, n_workers=2):
        self.y, self.fold_ids = y, fold_ids
        self.n_folds = int(fold_ids.max()) + 1
        edges = [0, *cuts, y.shape[0]]
        self.parts = [(X[a:b], y[a:b], fold_ids[a:b], a)
                      for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]
        self.workers = [list(range(w, len(self.parts), n_workers)) for w in range(n_workers)]
        self.keep, self.passes = keep, 0

    def fold_counts(self):
        return np.bincount(self.fold_ids, minlength=self.n_folds)

    def on_workers(self, function, *args, **kwargs):
        self.passes += 1
        out = None
        for positions in self.workers:
            if positions:
                out = add_results(out, function(*args, positions,
                                                [self.parts[p] for p in positions], **kwargs))
        return out

    def forget(self, function, *args):
        function(*args)

    def newton_passes(self, fmap, gamma, projection, chunk_rows):
        return resident.ResidentPasses(self, fmap, gamma, projection, chunk_rows, self.keep)


def _problem(seed, n, d, t, D, kind="rff"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)
    fold_ids = rng.permutation(np.arange(n) % t)
    fmap = FeatureMap(kind, D, seed)
    fmap.draw(n, d)
    if kind == "nystroem":
        fmap.set_landmarks(X[fmap.landmark_rows_])
    return rng, X, y, fold_ids, fmap


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(12, 160), t=st.integers(2, 5),
       D=st.integers(2, 12), keep=st.booleans(), chunk=st.integers(3, 50),
       parts=st.integers(1, 4), workers=st.integers(1, 3),
       scale=st.sampled_from([1e-3, 0.05, 1.0, 30.0]),
       kind=st.sampled_from(["rff", "nystroem"]))
def test_resident_newton_sums_equal_the_stateless_sums(seed, n, t, D, keep, chunk, parts,
                                                       workers, scale, kind):
    rng, X, y, fold_ids, fmap = _problem(seed, n, 3, t, D, kind)
    cuts = sorted(rng.choice(np.arange(1, n), size=min(parts - 1, n - 1), replace=False))
    rows = InProcessRows(X, y, fold_ids, cuts, keep, workers)
    gamma = 0.3
    passes = resident.ResidentPasses(rows, fmap, gamma, fmap.projection(gamma), chunk, keep)
    stateless = ChunkPasses(LocalRows(ArraySource(X, y), y, fold_ids), fmap, gamma,
                            fmap.projection(gamma), chunk)
    coef, intercept = rng.normal(size=(t, D)), rng.normal(size=t)
    for step in range(6):
        models = sorted(rng.choice(t, size=rng.integers(1, t + 1), replace=False).tolist())
        if step == 3:  # a worker restarted, or a partition moved: the state is a cache
            resident.drop_state(passes.token)
        grad, hessian = passes.newton(coef, intercept, models)
        want_grad, want_hessian = stateless.newton(coef, intercept, models)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(hessian[models], want_hessian[models], rtol=1e-9,
                                   atol=1e-9)
        coef = coef + scale * rng.normal(size=(t, D))  # small moves update the Hessians
        intercept = intercept + scale * rng.normal(size=t)
    passes.close()
    assert not [key for key in resident._STATES if key[0] == passes.token]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(12, 200), t=st.integers(2, 4),
       D=st.integers(2, 10), keep=st.booleans(), window=st.integers(1, 40),
       lam=st.sampled_from([1e-6, 1e-3, 1e-1, 10.0]),
       scale=st.sampled_from([1e-2, 1.0, 20.0]))
def test_windowed_line_search_equals_one_pass_per_iteration(seed, n, t, D, keep, window,
                                                            lam, scale):
    with _window(window):
        _line_search_case(seed, n, t, D, keep, lam, scale)


def _line_search_case(seed, n, t, D, keep, lam, scale):
    rng, X, y, fold_ids, fmap = _problem(seed, n, 2, t, D)
    rows = InProcessRows(X, y, fold_ids, [n // 3, 2 * n // 3], keep)
    local = LocalRows(ArraySource(X, y), y, fold_ids)
    gamma, chunk = 0.5, 17
    passes = resident.ResidentPasses(rows, fmap, gamma, None, chunk, keep)
    stateless = ChunkPasses(local, fmap, gamma, None, chunk)
    coef, intercept = scale * rng.normal(size=(t, D)), rng.normal(size=t)
    step_coef, step_intercept = scale * rng.normal(size=(t, D)), rng.normal(size=t)
    counts = local.fold_counts()
    m = counts.sum() - counts
    models = list(range(t))
    passes.newton(coef, intercept, models)  # the line search follows a Newton pass
    rows.passes = 0
    got = passes.step_sizes(coef, intercept, step_coef, step_intercept, lam, m, models, 30)
    local.passes = 0
    want = stateless.step_sizes(coef, intercept, step_coef, step_intercept, lam, m, models,
                                30)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    assert rows.passes <= max(local.passes, 1)
    passes.close()


@contextlib.contextmanager
def _window(size):
    """resident.WINDOW = size for one hypothesis example."""
    saved, resident.WINDOW = resident.WINDOW, size
    try:
        yield
    finally:
        resident.WINDOW = saved


@pytest.mark.parametrize("keep", [True, False])
def test_the_path_equals_the_stateless_path(keep):
    _, X, y, fold_ids, fmap = _problem(7, 900, 4, 5, 16)
    lams = np.array([1e-1, 1e-2, 1e-3, 1e-4, 1e-6])
    rows = InProcessRows(X, y, fold_ids, [250, 500, 700], keep)
    got, got_unconverged, got_errors = squared_hinge_sums_path(rows, fmap, 0.4, lams, 64,
                                                               classifier=True)
    local = LocalRows(ArraySource(X, y), y, fold_ids)
    want, want_unconverged, want_errors = squared_hinge_sums_path(local, fmap, 0.4, lams,
                                                                  64, classifier=True)
    assert got_unconverged == want_unconverged == 0
    np.testing.assert_array_equal(got_errors, want_errors)  # 0-1 error counts
    assert 0 < got_errors.sum() < 0.5 * lams.size * y.size
    np.testing.assert_allclose(got.coef, want.coef, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got.intercept, want.intercept, rtol=1e-6, atol=1e-8)
    assert rows.passes < local.passes  # the line search mostly runs here between passes
    assert not resident._STATES  # every path dropped its state


def test_state_budget():
    # 250,000 rows of D = 100 on a worker, 5 folds: 200 MB of features (and 2 x 12.8 MB
    # while a 16,000-row partition's are formed), 95 MB of state
    rows, data = {"a": 250_000}, {"a": 42e6}
    assert resident.state_fits(rows, data, {"a": 2**30}, 100, 5, 16_000) == (True, True)
    assert resident.state_fits(rows, data, {"a": 400e6}, 100, 5, 16_000) == (True, False)
    assert resident.state_fits(rows, data, {"a": 200e6}, 100, 5, 16_000) == (False, False)
    assert resident.state_fits(rows, data, {"a": 0}, 100, 5, 16_000) == (True, True)
    assert resident.state_bytes(250_000, 100, 5, True, 16_000) - \
        resident.state_bytes(250_000, 100, 5, False, 16_000) == (250_000 + 32_000) * 800


class ArrayLine:
    """LineSums of one model straight from its u and b arrays, split in two "workers"."""

    def __init__(self, u, b):
        self.u, self.b, self.passes = u, b, 0

    def line_sums(self, sizes, models):
        self.passes += 1
        out = None
        for part in (slice(0, self.u.size // 2), slice(self.u.size // 2, None)):
            u, b = self.u[part], self.b[part]
            on = u - sizes[0] * b > 0
            moving = b != 0
            window, low, high = resident._window(u[moving] / b[moving], u[moving], b[moving],
                                                 sizes[0], resident.WINDOW)
            sums = resident.LineSums(np.array([(b * u)[on].sum()]),
                                     np.array([(b * b)[on].sum()]), [window],
                                     np.array([low]), np.array([high]))
            out = sums if out is None else out + sums
        return out


def _exact_step(u, b, wd, dd, lam, m, iterations=30):
    """The 1-D Newton iterations of newton._line_search on the arrays themselves."""
    s = 1.0
    for _ in range(iterations):
        on = u - s * b > 0
        slope = -(2.0 / m) * np.sum(b[on] * (u[on] - s * b[on])) + 2.0 * lam * (wd + s * dd)
        curve = (2.0 / m) * np.sum(b[on] ** 2) + 2.0 * lam * dd
        if curve <= 0:
            break
        new = s - slope / curve
        if abs(new - s) <= 1e-12 * max(1.0, abs(s)):
            return max(new, 0.0)
        s = new
    return max(s, 0.0)


@pytest.mark.parametrize("ties", [0, 3, 40])
def test_the_window_holds_rows_whose_breakpoint_is_the_step(ties):
    """Rows whose breakpoint u / b equals s are in the window whatever its size (with
    WINDOW = 2 and three such rows the window once left them out and the step was off)."""
    rng = np.random.default_rng(ties)
    u, b = rng.normal(size=60), rng.normal(size=60)
    u[:ties] = b[:ties] = np.abs(rng.normal(size=ties)) + 0.5  # breakpoint 1, where s starts
    coef, step = rng.normal(size=(1, 4)), rng.normal(size=(1, 4))
    wd, dd = float(coef[0] @ step[0]), float(step[0] @ step[0])
    for lam in (1e-3, 1e-1, 3.0):
        with _window(2):
            lines = ArrayLine(u, b)
            got = resident.windowed_step_sizes(lines, coef, step, lam, np.array([60]), [0], 30)
        assert got[0] == pytest.approx(_exact_step(u, b, wd, dd, lam, 60), rel=1e-10, abs=1e-12)
