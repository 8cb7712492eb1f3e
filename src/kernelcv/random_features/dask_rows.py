"""The training rows on a Dask cluster, by row partitions: the chunk sums as map-reduce.

:class:`DaskRows` has the interface of :class:`~kernelcv.random_features.rowmap.LocalRows`
(``map_reduce``, ``take``, ``fold_counts``, ``n_rows``, ``n_dims``, ``n_folds``), but
its rows live on the workers, partition by partition, and never all in one process:

* an in-memory array or a row source read here (a file streamed a block at a time) is
  cut into partitions of at most :data:`PARTITION_BYTES`, as many per worker on every
  worker and of equal size (:func:`balanced_partition_rows`), each scattered to one
  worker (round robin) as soon as it is read, with its targets and fold ids;
* a ``dask.array`` X stays where it is computed: each row block becomes one partition
  on the cluster (``client.compute`` of the block with its targets and fold ids).

``map_reduce(function, chunk_rows, **kw)`` scatters ``kw`` once, runs ``function`` over
the chunks of every partition on the worker that holds it (a partition's chunks add up
there), and adds the partition results pairwise on the cluster, so one result comes back.
The sums are the same as :class:`LocalRows`'s up to the order of floating-point
additions (tested to 1e-8). Worker memory: its partitions (spilled to disk by Dask when
over ``memory_limit``) plus one chunk and the sums.

``on_workers(function, ...)`` is the cheaper pass of the squared hinge's Newton method
(``newton_passes``, :mod:`kernelcv.random_features.resident`): one ``Client.run`` per
worker on the partitions it holds, the workers' results added here, with state kept on
the workers between passes (within half of each worker's memory limit, else stateless
map-reduce passes and a note in :attr:`DaskRows.notes`).

A scheduler that cannot be reached within
:data:`~kernelcv.selection.backends.DASK_CONNECT_TIMEOUT` seconds, and a worker lost
during the search (its scattered partitions cannot be recomputed), are one-line
:class:`~kernelcv.exceptions.KernelCVError` s, never a hang; the caller writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools

import numpy as np
import scipy.sparse as sp

from ..exceptions import KernelCVError
from ..reading.rowchunks import DaskArraySource, is_row_source
from ..selection.backends import (
    check_address,
    connect,
    default_client,
    import_distributed,
    one_line,
)
from .newton import ChunkPasses
from .resident import ResidentPasses, state_fits

#: Bytes of X per partition scattered from here.
PARTITION_BYTES = 64 * 2**20
# Errors by which distributed reports lost data or a lost worker.
_LOST = ("FutureCancelledError", "CancelledError", "KilledWorker", "CommClosedError")


def add_results(out, part):
    """Add a chunk function's result ``part`` to ``out`` (lists and tuples by element;
    :class:`~kernelcv.random_features.sums.FoldSums` and arrays by value)."""
    if out is None:
        return part
    if isinstance(out, list | tuple):
        return type(out)(add_results(a, b) for a, b in zip(out, part, strict=True))
    return out + part


def balanced_partition_rows(n_rows: int, row_bytes: float, n_workers: int) -> int:
    """Rows per partition: every worker gets the same number of partitions of (about) the
    same size, none over :data:`PARTITION_BYTES`.

    The partition count is the smallest multiple of the worker count whose partitions
    fit the byte limit (``n_workers * ceil(n bytes / (n_workers * PARTITION_BYTES))``),
    so partitions dealt round robin give each worker an equal share of the rows (within
    one partition's rows of rounding). Before, partitions were cut at the byte limit:
    100,000 x 20 dense rows (16 MB) were one partition, all the work of one worker.
    """
    workers = max(int(n_workers), 1)
    limit = max(1, int(PARTITION_BYTES // max(float(row_bytes), 8.0)))
    count = workers * max(1, -(-int(n_rows) // (workers * limit)))
    return max(1, -(-int(n_rows) // count))


def _partition_map(function, part, chunk_rows, kwargs):
    """``function`` over the chunks of one partition ``(X, y, fold_ids, start)``."""
    X, y, fold_ids, _ = part
    out = None
    for a in range(0, y.shape[0], chunk_rows):
        out = function(X[a:a + chunk_rows], y[a:a + chunk_rows], fold_ids[a:a + chunk_rows],
                       out=out, **kwargs)
    return out


def _partition_take(part, rows):
    """The rows of ``rows`` (global indices, sorted) that this partition holds."""
    X, y, _, start = part
    inside = rows[(rows >= start) & (rows < start + y.shape[0])]
    return inside, X[inside - start]


#: What a worker answers when a partition it was said to hold is not in its memory.
_MISSING = "kernelcv: partition not here"


async def _run_here(function, args, kwargs, where, dask_worker=None):
    """On a worker (by ``Client.run``): ``function`` on the partitions ``where`` gives
    it, in a thread so that the worker's event loop stays responsive."""
    mine = where.get(dask_worker.address)
    if not mine:
        return None
    try:
        parts = [dask_worker.data[key] for _, key in mine]
    except KeyError:
        return _MISSING
    positions = [p for p, _ in mine]
    call = functools.partial(function, *args, positions, parts, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(None, call)


def _added(results):
    out = None
    for result in results:
        if result is not None:
            out = add_results(out, result)
    return out


def _partition_size(part) -> int:
    return int(part[1].shape[0])


def _make_partition(X, y, fold_ids, start):
    return np.asarray(X, dtype=np.float64), y, fold_ids, start


class DaskRows:
    """The training rows as partitions on a Dask cluster (see the module docstring)."""

    def __init__(self, client, partitions, n_rows, n_dims, y, fold_ids, row_bytes,
                 distributed):
        self.client = client
        self.partitions = partitions
        self.n_rows, self.n_dims = int(n_rows), int(n_dims)
        self.y = np.asarray(y)  # the labels stay here too (n values: the growth's baseline)
        self.fold_ids = np.asarray(fold_ids)
        self.n_folds = int(self.fold_ids.max()) + 1
        self.row_bytes = float(row_bytes)
        self.source = self  # what the callers read row_bytes from
        self._distributed = distributed
        self.passes = 0
        self._placement = None
        self._sizes = None
        self.notes = []

    @classmethod
    def scatter(cls, client, distributed, X, y, fold_ids):
        """Partitions of an array or a row source, scattered as they are read."""
        source = X if is_row_source(X) else None
        n, d = (X.n_rows, X.n_dims) if source else X.shape
        row_bytes = source.row_bytes if source else 8.0 * d
        names = sorted(client.scheduler_info()["workers"])
        rows = balanced_partition_rows(n, row_bytes, len(names))
        workers = itertools.cycle(names or [None])
        pieces = (source.chunks(rows) if source else
                  ((np.arange(a, min(a + rows, n)), X[a:a + rows], None)
                   for a in range(0, n, rows)))
        partitions = []
        for index, block, _ in pieces:
            a, b = int(index[0]), int(index[-1]) + 1
            target = next(workers)
            part = (block, np.asarray(y[a:b], dtype=np.float64), fold_ids[a:b], a)
            partitions.append(client.scatter([part], hash=False,  # one future per part
                                             workers=None if target is None else [target])[0])
        return cls(client, partitions, n, d, y, fold_ids, row_bytes, distributed)

    @classmethod
    def from_dask_array(cls, client, distributed, source: DaskArraySource, y, fold_ids):
        """One partition per row block of a ``dask.array``, computed on the cluster."""
        from dask import delayed

        X = source.X.rechunk({1: -1}) if source.X.numblocks[1] != 1 else source.X
        parts = []
        for block, (a, b) in zip(X.to_delayed()[:, 0], source.row_blocks(), strict=True):
            parts.append(delayed(_make_partition)(block, np.asarray(y[a:b], dtype=np.float64),
                                                  fold_ids[a:b], a))
        return cls(client, client.compute(parts), source.n_rows, source.n_dims, y,
                   fold_ids, source.row_bytes, distributed)

    def fold_counts(self) -> np.ndarray:
        return np.bincount(self.fold_ids, minlength=self.n_folds)

    def _results(self, futures):
        """Wait for futures; a lost worker or cancelled data is a one-line error."""
        try:
            return self.client.gather(futures)
        except Exception as exc:
            lost = [i for i, p in enumerate(self.partitions) if p.status != "finished"]
            if lost or type(exc).__name__ in _LOST:
                raise KernelCVError(
                    "a Dask worker was lost during the search: the data partitions it held "
                    f"({len(lost)} of {len(self.partitions)}) cannot be recovered "
                    f"({one_line(exc)}); nothing was written: rerun, with more memory "
                    "per worker if it was killed for memory") from None
            raise

    def map_reduce(self, function, chunk_rows: int, **kwargs):
        """``function`` over every chunk of every partition, the results added."""
        self.passes += 1
        shared = self.client.scatter([kwargs], hash=False)[0]  # one future for the dict
        futures = [self.client.submit(_partition_map, function, part, chunk_rows, shared,
                                      pure=False) for part in self.partitions]
        while len(futures) > 1:  # pairwise sums on the cluster: one result comes back
            paired = [self.client.submit(add_results, a, b, pure=False)
                      for a, b in zip(futures[0::2], futures[1::2], strict=False)]
            futures = paired + ([futures[-1]] if len(futures) % 2 else [])
        try:
            return self._results(futures)[0]
        finally:  # drop our references: the cluster forgets the result and the arguments
            del futures, shared

    def _check_landed(self):
        """Wait for the partitions (computed ones must have landed; nothing comes here);
        a lost one is the one-line error of :meth:`_results`."""
        with contextlib.suppress(Exception):  # cancelled or lost: the statuses say so
            self._distributed.wait(self.partitions)
        if any(part.status != "finished" for part in self.partitions):
            self._results(self.partitions)

    def placement(self) -> dict:
        """``{worker address: [partition positions]}``: where the partitions are (asked
        of the scheduler once, when first needed)."""
        if self._placement is None:
            self._check_landed()
            who = self.client.who_has(self.partitions)
            placement = {}
            for position, part in enumerate(self.partitions):
                holders = sorted(who.get(part.key, ()))
                placement.setdefault(holders[0] if holders else None, []).append(position)
            self._placement = placement
        return self._placement

    def on_workers(self, function, *args, **kwargs):
        """``function(*args, indices, parts, **kwargs)`` once per worker on the partitions
        it holds (their positions and their data), the workers' results added here.

        One call per worker and pass, by ``Client.run`` (the worker runs it in a thread
        beside its event loop, on the partitions in its memory: about 6 ms a pass on a
        2-worker LocalCluster, against 24 ms for tasks through the scheduler). When a
        worker no longer holds a partition (moved, or recomputed elsewhere after a worker
        was lost), the pass runs as tasks, one per worker, which fetch what they need,
        and the scheduler is asked again where the partitions are.
        """
        self.passes += 1
        where = {worker: [(p, self.partitions[p].key) for p in positions]
                 for worker, positions in self.placement().items()}
        if None not in where:
            try:
                results = self.client.run(_run_here, function, args, kwargs, where,
                                          workers=list(where))
            except Exception:
                self._check_landed()  # a lost partition: the one-line error
                results = None  # else the tasks below run it (or raise the real error)
            if results is not None and not any(
                    isinstance(r, str) and r == _MISSING for r in results.values()):
                return _added(results.values())
            self._placement = None
        placement = self.placement()
        futures = [self.client.submit(function, *args, positions,
                                      [self.partitions[p] for p in positions], **kwargs,
                                      pure=False, workers=None if worker is None else [worker],
                                      allow_other_workers=True)
                   for worker, positions in placement.items()]
        out = _added(self._results(futures))
        if None in placement:
            self._placement = None  # ask again at the next pass
        return out

    def forget(self, function, *args):
        """Run ``function(*args)`` on every worker (dropping a state kept there)."""
        with contextlib.suppress(Exception):
            self.client.run(function, *args)

    def newton_passes(self, fmap, gamma, projection, chunk_rows):
        """The squared hinge's Newton passes with their state on the workers
        (:class:`~kernelcv.random_features.resident.ResidentPasses`), its features kept
        when they fit (:func:`~kernelcv.random_features.resident.state_fits`); the
        stateless passes when not even the rest fits. A note says which."""
        keep_state, keep_features = self._state_fits(fmap.n_features)
        if not keep_state:
            self._note("the Dask workers' memory limits leave no room for the squared "
                       "hinge's state (about 76 bytes per row and fold), so every pass "
                       "recomputes the features and the whole Hessians (much slower): give "
                       "the workers more memory, or use feature_loss 'square'")
            return ChunkPasses(self, fmap, gamma, projection, chunk_rows)
        if not keep_features:
            self._note(f"the Dask workers' memory limits leave no room for the "
                       f"{fmap.n_features} features of their rows, so the squared hinge's "
                       "passes recompute them each time (slower): give the workers more "
                       "memory, or use feature_loss 'square'")
        return ResidentPasses(self, fmap, gamma, projection, chunk_rows, keep_features)

    def _note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def _state_fits(self, n_features: int) -> tuple[bool, bool]:
        sizes = self._partition_rows()
        workers = self.client.scheduler_info()["workers"]
        rows = {worker: sum(sizes[p] for p in positions)
                for worker, positions in self.placement().items()}
        data = {worker: count * (self.row_bytes + 24) for worker, count in rows.items()}
        limits = {w: int(info.get("memory_limit") or 0) for w, info in workers.items()}
        limits[None] = 0
        return state_fits(rows, data, limits, n_features, self.n_folds, max(sizes))

    def _partition_rows(self) -> list[int]:
        """Rows of each partition (partitions hold consecutive rows)."""
        if self._sizes is None:
            self._sizes = self.client.gather([self.client.submit(
                _partition_size, part, pure=False) for part in self.partitions])
        return self._sizes

    def take(self, rows):
        """The given rows of X, in the given order (gathered from their partitions)."""
        rows = np.asarray(rows)
        order = np.argsort(rows, kind="stable")
        parts = self._results([self.client.submit(_partition_take, part, rows[order],
                                                  pure=False) for part in self.partitions])
        blocks = [block for index, block in parts if index.size]
        stacked = sp.vstack(blocks, format="csr") if sp.issparse(blocks[0]) else \
            np.vstack(blocks)  # in sorted row order: partitions hold consecutive rows
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        return stacked[inverse]

    def close(self):
        """Release the partitions (the workers drop them)."""
        for part in self.partitions:
            with contextlib.suppress(Exception):
                part.release()
        self.partitions = []


@contextlib.contextmanager
def dask_rows(scheduler, X, y, fold_ids):
    """:class:`DaskRows` of X on the cluster at ``scheduler`` (an address, a Client, or
    None for the default client), released (and a client opened here closed) at the end."""
    distributed = import_distributed()
    owns = isinstance(scheduler, str)
    if owns:
        check_address(distributed, scheduler)
        client = connect(distributed, scheduler)
    else:
        client = default_client(distributed) if scheduler is None else scheduler
    rows = None
    try:
        if isinstance(X, DaskArraySource):
            rows = DaskRows.from_dask_array(client, distributed, X, y, fold_ids)
        else:
            rows = DaskRows.scatter(client, distributed, X, y, fold_ids)
        yield rows
    finally:
        if rows is not None:
            rows.close()
        if owns:
            client.close()
