"""The rff search on a Dask cluster by rows: a real LocalCluster of 2 worker processes,
each with a memory limit smaller than the data, computes the same CV errors and choice as
the in-memory search (to 1e-8, same seed and folds), from an array, a dask.array and a
streamed file; an unreachable scheduler and a lost worker are one-line errors."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from kernelcv import Execution, FeatureSpace, make_machine
from kernelcv.cli import main
from kernelcv.exceptions import KernelCVError
from kernelcv.random_features import dask_rows, resident
from kernelcv.random_features.final import fit_final
from kernelcv.reading.textchunks import open_svmlight_files
from kernelcv.selection import backends
from kernelcv.selection.search import grid_search
from kernelcv.validation import check_data, make_folds

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

N, D = 100_000, 20  # 16 MB of X; each worker may use 12 MB
GRID = {"gammas": [0.02, 0.2], "Cs": [1.0, 16.0], "folds": 5}


@pytest.fixture(scope="module")
def client():
    settings = {"distributed.worker.memory.pause": False,
                "distributed.worker.memory.terminate": False,
                "logging": {"distributed": "error"}}
    with dask.config.set(settings):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           processes=True, memory_limit="12MB",
                                           dashboard_address=":0")
        client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, D))
    y = np.where(X[:, 0] - X[:, 1] ** 2 + 0.5 * rng.normal(size=N) > -1.0, 1.0, -1.0)
    return X, y


@pytest.fixture(autouse=True)
def small_partitions(monkeypatch):
    monkeypatch.setattr(dask_rows, "PARTITION_BYTES", 2 * 2**20)


def _same(result, reference):
    np.testing.assert_array_equal(result.fold_ids, reference.fold_ids)
    np.testing.assert_allclose([c["cv_error"] for c in result.candidates],
                               [c["cv_error"] for c in reference.candidates], atol=1e-8)
    assert result.best_params == reference.best_params


def test_cluster_sums_equal_the_in_memory_search(client, data):
    X, y = data
    reference = grid_search(X, y, "svm",
                            method=FeatureSpace(refine=False, max_features=128), **GRID)
    result = grid_search(X, y, "svm", method=FeatureSpace(refine=False, max_features=128), **GRID,
                         execution=Execution(scheduler=client))
    _same(result, reference)
    assert len(client.run(lambda dask_worker: len(dask_worker.data))) == 2


def _blocks_from_file(path, rows):
    """A dask.array of X whose blocks the workers read from an .npy file themselves."""
    from dask import delayed

    def block(a, b):
        return np.load(path, mmap_mode="r")[a:b].copy()

    return da.concatenate([da.from_delayed(delayed(block)(a, min(a + rows, N)),
                                           (min(a + rows, N) - a, D), dtype=np.float64)
                           for a in range(0, N, rows)])


def test_cluster_from_a_dask_array_and_a_streamed_file(client, data, tmp_path):
    X, y = data
    options = {"features": 64, "feature_loss": "square"}
    reference = grid_search(X, y, "svm", method=FeatureSpace(refine=False, **options), **GRID)
    np.save(tmp_path / "X.npy", X)
    Xd = _blocks_from_file(str(tmp_path / "X.npy"), 12_500)
    result = grid_search(Xd, da.from_array(y, chunks=12_500), "svm",
                         method=FeatureSpace(refine=False, **options), **GRID,
                         execution=Execution(scheduler=client))
    _same(result, reference)
    small = slice(0, 2000)
    dump_svmlight_file(X[small], y[small], str(tmp_path / "part.svm"))
    source = open_svmlight_files(tmp_path / "part.svm", block_bytes=2**14)[0]
    options = {"method": FeatureSpace(features=24, feature_loss="squared_hinge"),
               "gammas": [0.2], "Cs": [1.0, 16.0], "folds": 3}
    reference = grid_search(source, None, "l2svm", **options)
    result = grid_search(source, None, "l2svm", **options,
                         execution=Execution(backend="dask", scheduler=client))
    _same(result, reference)


def test_cluster_sums_of_three_classes_equal_the_in_memory_search(client, data):
    """More than two classes on the cluster: sums per (fold, class) cell, every binary
    machine's fold-out models from them; the same CV errors and choice as the search in
    this process (tests/test_rff_multiclass.py checks those against per-machine refits)."""
    X = data[0][:20_000]
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5]).astype(float)  # 3 classes
    machine = make_machine("l2svm", multiclass="ovr")
    options = {**GRID, "method": FeatureSpace(refine=False, max_features=32)}
    result = grid_search(X, y, machine, **options, execution=Execution(scheduler=client))
    local = grid_search(X, y, machine, **options)
    assert [c["cv_error"] for c in result.candidates] == pytest.approx(
        [c["cv_error"] for c in local.candidates], abs=1e-12)
    assert result.best_index == local.best_index
    assert result.best["cv_error"] < 0.3  # chance: about 0.6


def test_unreachable_scheduler_is_a_clear_error(tmp_path, monkeypatch, capsys, data):
    monkeypatch.setattr(backends, "DASK_CONNECT_TIMEOUT", 2.0)
    X, y = data
    tic = time.perf_counter()
    with pytest.raises(KernelCVError, match="cannot reach Dask scheduler"):
        grid_search(X[:500], y[:500], "svm", method=FeatureSpace(refine=False), **GRID,
                    execution=Execution(scheduler="tcp://127.0.0.1:9"))
    assert time.perf_counter() - tic < 30
    dump_svmlight_file(X[:300], y[:300], str(tmp_path / "t.svm"))
    code = main(["select", str(tmp_path / "t.svm"), "--machine", "svm", "--method", "rff",
                 "--scheduler", "tcp://127.0.0.1:9", "--out", str(tmp_path / "out"),
                 "--no-progress"])
    assert code == 2 and "cannot reach Dask scheduler" in capsys.readouterr().err
    assert not (tmp_path / "out" / "report.json").exists()


@pytest.mark.parametrize("fits, note", [
    ((True, True), None), ((True, False), "recompute them each time"),
    ((False, False), "recomputes the features and the whole Hessians")])
def test_squared_hinge_passes_keep_their_state_on_the_workers(client, data, monkeypatch,
                                                             fits, note):
    """The squared hinge's passes run once per worker with their state kept there
    (resident.py), the features kept or recomputed each pass, or stateless when not even
    the state fits: the same CV errors and choice as in memory; the report says what did
    not fit; the workers forget every path's state."""
    monkeypatch.setattr(dask_rows, "state_fits", lambda *args: fits)
    X, y = data[0][:30_000], data[1][:30_000]
    options = {**GRID, "method": FeatureSpace(refine=False, features=48)}
    reference = grid_search(X, y, "svm", **options)
    result = grid_search(X, y, "svm", **options, execution=Execution(scheduler=client))
    _same(result, reference)
    said = [n for n in result.notes if "Dask workers' memory limits" in n]
    assert said == ([] if note is None else [pytest.approx(said[0])]) and \
        (note is None or note in said[0])
    assert not any(client.run(lambda: len(resident._STATES)).values())


def test_the_memory_limit_decides_what_the_workers_keep(client, data):
    """Half the 12 MB limit of this cluster's workers holds the state of 3,000 rows each
    (1.5 MB) and their 4 features, not their 64 (4.6 MB with the partitions' while they
    are formed); 15,000 rows each do not fit even without features (6 MB)."""
    X, y = data
    _, y_pm, _ = check_data(X, y, True)
    for n, want in ((6_000, [(True, True), (True, False)]),
                    (30_000, [(False, False), (False, False)])):
        with dask_rows.dask_rows(client, X[:n], y_pm[:n],
                                 make_folds(y_pm[:n], 5, True, 0)) as rows:
            assert [rows._state_fits(4), rows._state_fits(64)] == want


def test_final_model_of_streamed_rows_runs_its_passes_on_the_workers(client, data,
                                                                    tmp_path, monkeypatch):
    """--stream --scheduler --final linear: the squared hinge's final model scatters the
    rows once and runs its Newton passes on the workers, instead of reading the file
    again at every pass here; the same model as the streamed fit in this process."""
    X, y = data
    dump_svmlight_file(X[:4000], y[:4000], str(tmp_path / "f.svm"))
    source = open_svmlight_files(tmp_path / "f.svm", block_bytes=2**16)[0]
    options = {"method": FeatureSpace(features=24, feature_loss="squared_hinge"),
               "gammas": [0.02], "Cs": [4.0], "folds": 3}
    cluster = Execution(scheduler=client)
    result = grid_search(source, None, "l2svm", **options, execution=cluster)
    labels = source.labels()
    reads = []
    original = type(source).chunks
    monkeypatch.setattr(type(source), "chunks",
                        lambda self, *a, **k: (reads.append(1), original(self, *a, **k))[1])
    here, _, _ = fit_final(source, labels, result, "linear")
    here_reads, reads[:] = len(reads), []
    there, _, _ = fit_final(source, labels, result, "linear", execution=cluster)
    assert len(reads) <= 2 < here_reads  # the scatter (and the landmarks), not every pass
    np.testing.assert_allclose(there.w, here.w, rtol=1e-7, atol=1e-9)
    assert there.c == pytest.approx(here.c, rel=1e-7, abs=1e-9)
    majority = max(np.mean(y[4000:6000] == 1), np.mean(y[4000:6000] == -1))
    assert np.mean(there.predict(X[4000:6000]) == y[4000:6000]) > majority + 0.05


def test_final_model_of_rows_in_memory_runs_on_the_workers(client, data, monkeypatch):
    """A cluster named, the squared hinge's final feature-space model of rows in memory
    runs its Newton passes on the workers: the model of the in-memory fit."""
    X, y = data[0][:20_000], data[1][:20_000]
    options = {"method": FeatureSpace(features=32, refine=False), "gammas": [0.02],
               "Cs": [4.0], "folds": 3}
    cluster = Execution(scheduler=client)
    result = grid_search(X, y, "svm", **options, execution=cluster)
    here, _, _ = fit_final(X, y, result, "linear")
    passes = []
    original = dask_rows.DaskRows.on_workers
    monkeypatch.setattr(dask_rows.DaskRows, "on_workers",
                        lambda self, *a, **k: (passes.append(1), original(self, *a, **k))[1])
    there, _, _ = fit_final(X, y, result, "linear", execution=cluster)
    assert len(passes) >= 2  # Newton and line-search passes on the workers
    np.testing.assert_allclose(there.w, here.w, rtol=1e-6, atol=1e-8)
    assert there.c == pytest.approx(here.c, rel=1e-6, abs=1e-8)
    assert not any(client.run(lambda: len(resident._STATES)).values())


def test_a_pass_on_moved_partitions_runs_as_tasks(client, data):
    X, y = data
    _, y_pm, _ = check_data(X, y, True)
    folds = make_folds(y_pm, 5, True, 0)

    def sums(positions, parts):
        return np.array([sum(part[1].shape[0] for part in parts),
                         sum(float(part[0].sum()) for part in parts)])

    with dask_rows.dask_rows(client, X, y_pm, folds) as rows:
        want = rows.on_workers(sums)
        assert want[0] == N and want[1] == pytest.approx(X.sum(), rel=1e-12)
        placement = rows.placement()
        assert len(placement) == 2 and None not in placement
        first, second = list(placement)
        rows._placement = {first: placement[second], second: placement[first]}  # wrong
        got = rows.on_workers(sums)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert rows.placement() == placement  # asked again


def test_a_lost_worker_is_a_clear_error(client, data):
    X, y = data
    _, y_pm, _ = check_data(X, y, True)
    folds = make_folds(y_pm, 5, True, 0)
    with dask_rows.dask_rows(client, X, y_pm, folds) as rows:
        pids = client.run(os.getpid)
        os.kill(next(iter(pids.values())), signal.SIGKILL)
        deadline = time.monotonic() + 20
        while all(p.status == "finished" for p in rows.partitions):
            assert time.monotonic() < deadline, "the scheduler did not notice"
            time.sleep(0.1)
        with pytest.raises(KernelCVError, match="worker was lost"):
            rows.map_reduce(dask_rows.add_results, 1000)
        with pytest.raises(KernelCVError, match="worker was lost"):
            rows.on_workers(lambda positions, parts: 1.0)


@pytest.mark.parametrize("n, row_bytes, workers", [
    (100_000, 160.0, 2), (500_000, 160.0, 2), (500_000, 160.0, 4), (7, 160.0, 3),
    (1_000_003, 8.0 * 300, 5), (10, 8.0, 1)])
def test_partitions_give_every_worker_an_equal_share(n, row_bytes, workers):
    # issue 42: 500,000 x 20 rows were cut at 64 MB, one worker got 84 % of them
    rows = dask_rows.balanced_partition_rows(n, row_bytes, workers)
    sizes = [min(rows, n - a) for a in range(0, n, rows)]
    assert max(sizes) * row_bytes <= max(dask_rows.PARTITION_BYTES, row_bytes)
    shares = [sum(sizes[w::workers]) for w in range(workers)]  # dealt round robin
    if n >= workers:
        assert max(shares) - min(shares) <= rows
        assert max(shares) <= -(-n // workers) + rows // 2 + 1
