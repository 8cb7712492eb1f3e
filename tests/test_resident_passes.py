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

    def features_fit(self, n_features):
        return self.keep

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
        return resident.ResidentPasses(self, fmap, gamma, projection, chunk_rows)


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
    passes = resident.ResidentPasses(rows, fmap, gamma, fmap.projection(gamma), chunk)
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
    assert passes.token not in resident._STATES


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
    passes = resident.ResidentPasses(rows, fmap, gamma, None, chunk)
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


def test_feature_cache_budget():
    # 250,000 rows of D = 100 on a worker: 200 MB of features, 75 MB of state
    rows = {"a": 250_000}
    fits = resident.feature_cache_fits(rows, {"a": 42e6}, {"a": 2**30}, 100, 5)
    assert fits
    assert not resident.feature_cache_fits(rows, {"a": 42e6}, {"a": 400e6}, 100, 5)
    assert resident.feature_cache_fits(rows, {"a": 42e6}, {"a": 0}, 100, 5)  # no limit
    assert resident.state_bytes(250_000, 100, 5, True) - \
        resident.state_bytes(250_000, 100, 5, False) == 250_000 * 100 * 8
