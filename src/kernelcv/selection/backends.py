"""Evaluate independent tasks one by one, in local workers, or on a Dask cluster.

The grid search splits its work into tasks that do not depend on each other (one task is
one kernel setting evaluated for every ``lam``). :func:`run_tasks` runs such tasks on one
of several backends and hands each result back as soon as it is ready, so that the caller
can advance a progress bar and append to a checkpoint file while the rest still runs.

Every call has the form ``function(**shared, **task)``. ``shared`` holds the arguments
that all tasks have in common, typically the data matrix ``X`` and the labels ``y``; they
can be large, and each backend takes care to move them to a worker as few times as it
can (see :func:`run_tasks`). Each ``task`` is a small mapping of the settings that differ.

Backends
--------
``"sequential"``
    A plain loop in the calling process. Nothing is copied or pickled.
``"loky"``
    joblib's pool of worker processes on this machine.
``"threading"``
    joblib's pool of threads in this process; worthwhile when the work releases the GIL
    (as numpy and scipy linear algebra mostly do).
``"dask"``
    A ``dask.distributed`` cluster, reached through an existing ``Client`` or the
    address of its scheduler. Needs the optional dependency ``kernelcv[dask]``.
``"auto"``
    ``"dask"`` when a scheduler is given, otherwise ``"sequential"`` for ``n_jobs`` 1 or
    ``None`` and ``"loky"`` for anything else.
"""

from __future__ import annotations

import importlib.util
import numbers
import os
import signal
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from kernelcv.exceptions import KernelCVError

__all__ = ["BACKENDS", "DASK_CONNECT_TIMEOUT", "LOST_CLUSTER", "run_tasks"]

# Errors by which distributed reports a lost worker or scheduler (by class name: they live
# in modules that differ between its releases).
LOST_CLUSTER = ("FutureCancelledError", "CancelledError", "KilledWorker", "CommClosedError",
                "TimeoutError")

#: Names accepted by the ``backend`` argument of :func:`run_tasks`.
BACKENDS = ("auto", "sequential", "loky", "threading", "dask")

#: Seconds to wait for a Dask scheduler given by its address before giving up. The same
#: limit applies to waiting for a running worker when the shared arguments are scattered.
DASK_CONNECT_TIMEOUT = 10.0

# joblib's warning when its result generator is closed before the end (joblib 1.4-1.6).
_JOBLIB_EARLY_EXIT_WARNING = r"(?s).*adjusting the input task iterator"

_DASK_MISSING = "the dask backend needs dask.distributed: pip install 'kernelcv[dask]'"


def run_tasks(
    function: Callable[..., Any],
    tasks: Iterable[Mapping[str, Any]],
    *,
    shared: Mapping[str, Any] | None = None,
    n_jobs: int | None = 1,
    backend: str = "auto",
    scheduler: Any = None,
) -> Iterator[tuple[int, Any]]:
    """Run ``function(**shared, **tasks[i])`` for every task; yield results as they finish.

    Parameters
    ----------
    function : callable
        The work of one task. It must return a picklable value, and for the ``"loky"``
        and ``"dask"`` backends the worker processes must be able to unpickle
        ``function`` itself: a function defined at module level in an installed package
        is sent by reference (its module and name) and imported by the worker; one
        defined in a script or notebook is sent by value with cloudpickle.
    tasks : iterable of mapping
        Keyword arguments of each call; they are read into a list at once, and the
        index yielded with each result is the position in that list.
    shared : mapping, optional
        Keyword arguments common to all calls, such as the data matrix and the labels.
        Their names must be strings and must not also appear in a task.
        Where they go:

        * ``"sequential"`` and ``"threading"``: the objects are used as they are, in
          this process; nothing is copied.
        * ``"loky"``: joblib pickles the arguments of each batch of tasks for the
          worker processes. numpy arrays larger than 1 MB are the exception: joblib
          writes each one to a temporary file once (it recognises the array by a hash
          of its content) and sends only a reference, through which the workers
          memory-map the file. Small arguments travel with every batch, which costs
          little.
        * ``"dask"``: each shared argument is scattered to the cluster once, before any
          task is submitted, and copied to every running worker (``broadcast=True``);
          a worker that joins later fetches it from a peer when it first needs it. A
          worker therefore receives and unpickles each shared argument once, however
          many tasks it runs; the tasks refer to the scattered data by its key. The
          scattered data is released when the iteration ends.
    n_jobs : int or None, default 1
        Number of joblib workers, with joblib's meaning: ``-1`` uses all CPU cores,
        ``-2`` all but one, and so on; ``None`` leaves the choice to joblib (one
        worker unless a ``joblib.parallel_config`` context says otherwise). Must not be
        0. With ``backend="auto"``, ``1`` and ``None`` select the sequential backend.
        The ``"sequential"`` and ``"dask"`` backends ignore it (the size of a Dask
        cluster is set where the cluster is started).
    backend : {"auto", "sequential", "loky", "threading", "dask"}, default "auto"
        Where the tasks run; see the module documentation. ``"auto"`` picks ``"dask"``
        when ``scheduler`` is given, ``"sequential"`` when ``n_jobs`` is 1 or ``None``,
        and ``"loky"`` otherwise.
    scheduler : str or distributed.Client, optional
        For the Dask backend only: the address of a running scheduler (for example
        ``"tcp://127.0.0.1:8786"``), for which a client is opened when the iteration
        starts and closed when it ends, or an existing ``distributed.Client``, which is
        used and left open. When ``backend="dask"`` and this is ``None``, the current
        default client is used (the one most recently created, or set with
        ``Client.as_current()``).

    Yields
    ------
    index : int
        Position of the finished task in ``tasks``.
    result : object
        What ``function`` returned for that task.

    Raises
    ------
    KernelCVError
        For an unknown backend, an invalid ``n_jobs``, tasks that are not mappings,
        names given both in ``shared`` and in a task, a missing ``dask.distributed``
        installation, a missing default Dask client, or a scheduler that cannot be
        reached within :data:`DASK_CONNECT_TIMEOUT` seconds.
    Exception
        An exception raised by ``function`` ends the iteration and reaches the caller
        with its original type (joblib and Dask re-raise it from the worker). Tasks
        not yet started are cancelled.

    Notes
    -----
    Arguments are checked, and the default Dask client is looked up, when
    ``run_tasks`` is called; the work (and the connection to a scheduler given by its
    address) starts with the first request for a result. Results come in the order in
    which tasks finish, which with more than one worker is generally not the order of
    ``tasks``. With no tasks nothing is started and nothing is yielded.

    To stop early, call ``close()`` on the iterator, or wrap it in
    ``contextlib.closing`` and leave the ``with`` block; merely leaving a ``for`` loop
    has the same effect only once the iterator is garbage-collected. Closing cancels
    the tasks that have not started, releases the scattered data and closes a Dask
    client that this function opened (a client passed in stays open). joblib stops its
    loky worker processes at that point and starts new ones on the next call; threads
    finish the task they are running. An exception from a task cleans up the same way.

    Examples
    --------
    >>> def power(base, exponent):
    ...     return base**exponent
    >>> sorted(run_tasks(power, [{"exponent": 2}, {"exponent": 3}], shared={"base": 2}))
    [(0, 4), (1, 8)]
    """
    if not callable(function):
        raise KernelCVError(f"function must be callable, got {type(function).__name__}")
    if backend not in BACKENDS:
        raise KernelCVError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    _check_n_jobs(n_jobs)
    shared = _check_shared(shared)
    tasks = _check_tasks(tasks, shared)
    if scheduler is not None and backend not in ("auto", "dask"):
        raise KernelCVError(
            f"a scheduler is only used by the dask backend, not by backend={backend!r}: "
            "pass backend='dask' or leave scheduler out"
        )

    if backend == "auto":
        if scheduler is not None:
            backend = "dask"
        elif n_jobs in (1, None):
            backend = "sequential"
        else:
            backend = "loky"

    if backend == "sequential":
        return _run_sequential(function, tasks, shared)
    if backend in ("loky", "threading"):
        return _run_joblib(function, tasks, shared, n_jobs, backend)
    distributed = import_distributed()
    if scheduler is None:
        scheduler = default_client(distributed)
    elif not isinstance(scheduler, (str, distributed.Client)):
        raise KernelCVError(
            "scheduler must be an address such as 'tcp://127.0.0.1:8786' or a "
            f"distributed.Client, got {type(scheduler).__name__}"
        )
    elif isinstance(scheduler, str):
        check_address(distributed, scheduler)
    return _run_dask(function, tasks, shared, scheduler, distributed)


# -- argument checks ---------------------------------------------------------------------


def _check_n_jobs(n_jobs):
    if n_jobs is None:
        return
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise KernelCVError(
            f"n_jobs must be an integer (-1 for all CPU cores) or None, got {n_jobs!r}"
        )
    if n_jobs == 0:
        raise KernelCVError("n_jobs must not be 0: use 1 to run serially, -1 for all CPU cores")


def _check_shared(shared):
    if shared is None:
        return {}
    if not isinstance(shared, Mapping):
        raise KernelCVError(
            f"shared must be a mapping of argument names to values, got {type(shared).__name__}"
        )
    bad = [name for name in shared if not isinstance(name, str)]
    if bad:
        raise KernelCVError(f"the names in shared must be strings, got {bad[0]!r}")
    return dict(shared)


def _check_tasks(tasks, shared):
    tasks = list(tasks)
    for i, task in enumerate(tasks):
        if not isinstance(task, Mapping):
            raise KernelCVError(
                f"each task must be a mapping of keyword arguments; task {i} is a "
                f"{type(task).__name__}"
            )
        bad = [name for name in task if not isinstance(name, str)]
        if bad:
            raise KernelCVError(f"the names in task {i} must be strings, got {bad[0]!r}")
        clash = sorted(set(task) & set(shared))
        if clash:
            raise KernelCVError(
                f"task {i} sets {', '.join(clash)}, which shared also sets: give each "
                "argument in one place only"
            )
    return tasks


def _call_indexed(function, index, shared, task):
    """Run one task in a worker; return its index with the result to match them up."""
    return index, function(**shared, **task)


# -- sequential and joblib ---------------------------------------------------------------


def _run_sequential(function, tasks, shared):
    for index, task in enumerate(tasks):
        yield index, function(**shared, **task)


#: Seconds between a loky worker's checks that the process that started it still lives.
PARENT_POLL_SECONDS = 0.5


def _worker_setup(parent):
    """Run once in each loky worker process when it starts.

    The worker ignores SIGINT: Ctrl-C in a terminal reaches the whole process group, and
    the parent alone should answer it (it stops the workers); otherwise every worker
    prints a ``KeyboardInterrupt`` traceback. A daemon thread ends the worker when
    ``parent`` is gone (``kill -9`` of the parent), instead of loky's idle timeout of
    five minutes.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True,
                     name="kernelcv-parent-watch").start()


def _exit_with_parent(parent):
    """Wait until this process's parent is no longer ``parent``; then exit at once."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


def _parallel(n_jobs, backend):
    """A joblib ``Parallel`` yielding results as they finish (loky: with the worker setup)."""
    from joblib import Parallel

    options = {"n_jobs": n_jobs, "backend": backend, "return_as": "generator_unordered"}
    if backend == "loky":
        try:
            return Parallel(**options, initializer=_worker_setup, initargs=(os.getpid(),))
        except TypeError:  # a joblib without initializer: the workers keep the defaults
            pass
    return Parallel(**options)


def _run_joblib(function, tasks, shared, n_jobs, backend):
    from joblib import delayed

    try:
        parallel = _parallel(n_jobs, backend)
    except (TypeError, ValueError) as exc:  # joblib < 1.4 lacks "generator_unordered"
        import joblib

        raise KernelCVError(
            f"the {backend} backend needs joblib>=1.4 (installed: {joblib.__version__}): "
            "pip install -U joblib"
        ) from exc
    if not tasks:
        return
    calls = (
        delayed(_call_indexed)(function, index, shared, task) for index, task in enumerate(tasks)
    )
    results = parallel(calls)
    try:
        # Not ``yield from``: that would close ``results`` itself, outside the filter.
        for item in results:  # noqa: UP028
            yield item
    finally:
        # After an early stop, closing joblib's generator cancels what has not run yet
        # and stops the workers. joblib then warns that tasks were cancelled; here that
        # is what the caller asked for, so the warning is dropped. Nothing is yielded
        # inside this block, so the filter never applies to the caller's code.
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=_JOBLIB_EARLY_EXIT_WARNING, category=UserWarning
            )
            results.close()


# -- dask --------------------------------------------------------------------------------


def import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise KernelCVError(_DASK_MISSING) from exc
    return distributed


def default_client(distributed):
    try:
        return distributed.default_client()
    except ValueError as exc:
        raise KernelCVError(
            "the dask backend found no running distributed.Client: pass "
            "scheduler='tcp://host:port' or a Client, or create a Client first"
        ) from exc


def one_line(exc):
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def check_address(distributed, address):
    """Refuse a malformed scheduler address at once.

    ``distributed.Client`` refuses it too, but the half-made client then waits 20 s to
    close and prints a ``Client.__del__`` traceback at exit.
    """
    from distributed.comm import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        get_backend(scheme)  # an unknown scheme such as foo://
        if scheme != "inproc":  # tcp, tls, ws, wss, ucx: host:port
            parse_host_port(location)
    except (ValueError, TypeError) as exc:
        raise KernelCVError(
            f"cannot reach Dask scheduler at {address}: {one_line(exc)}; give an address "
            "such as tcp://127.0.0.1:8786"
        ) from None
    # Addresses an address string alone cannot open: Client() fails on them only after
    # its half-made self has waited 20 s to close and printed a traceback at exit.
    reason = None
    if scheme in ("tls", "wss"):
        reason = (f"{scheme}:// needs TLS credentials, which an address cannot carry; "
                  "create a distributed.Client with its security= and pass the Client")
    elif scheme == "inproc":
        reason = ("inproc:// names a scheduler inside this process; pass its Client (or "
                  "use a tcp:// address)")
    elif scheme == "ucx" and not any(importlib.util.find_spec(name)
                                     for name in ("ucp", "ucxx", "distributed_ucxx")):
        reason = "ucx:// needs the UCX packages (ucx-py), which are not installed"
    if reason is not None:
        raise KernelCVError(f"cannot use the Dask scheduler at {address}: {reason}")


def connect(distributed, address):
    try:
        return distributed.Client(address, timeout=DASK_CONNECT_TIMEOUT, set_as_default=False)
    except Exception as exc:  # OSError, TimeoutError, ValueError for a malformed address
        raise KernelCVError(f"cannot reach Dask scheduler at {address}: {one_line(exc)}") from exc


def _run_dask(function, tasks, shared, scheduler, distributed):
    if not tasks:
        return
    owns_client = isinstance(scheduler, str)
    client = connect(distributed, scheduler) if owns_client else scheduler
    token = uuid.uuid4().hex
    shared_futures = {}
    pending = set()
    try:
        if shared:
            # Unique keys: two searches on one cluster must not share (or release) each
            # other's data, which key-by-name or key-by-hash scattering could do.
            keys = {name: f"kernelcv-shared-{name}-{token}" for name in shared}
            try:
                scattered = client.scatter(
                    {keys[name]: value for name, value in shared.items()},
                    broadcast=True,
                    hash=False,
                )
            except TimeoutError as exc:
                raise KernelCVError(
                    f"the Dask cluster at {client.scheduler.address} has no running "
                    f"worker to receive the shared arguments: {one_line(exc)}"
                ) from exc
            shared_futures = {name: scattered[keys[name]] for name in shared}
        name = getattr(function, "__name__", "task")
        futures = [
            # Futures nested in the ``shared_futures`` dict are replaced on the worker by
            # the scattered values that it already holds.
            client.submit(
                _call_indexed,
                function,
                index,
                shared_futures,
                task,
                key=f"kernelcv-{name}-{token}-{index}",
            )
            for index, task in enumerate(tasks)
        ]
        pending = set(futures)
        for future in distributed.as_completed(futures, loop=client.loop):
            pending.discard(future)
            try:
                index, result = future.result()
            except Exception as exc:
                if type(exc).__name__ in LOST_CLUSTER:
                    raise KernelCVError(
                        "the Dask cluster lost a worker or its scheduler during the search "
                        f"({one_line(exc)}); nothing was written: rerun (with --checkpoint "
                        "the finished kernel settings are kept), with more memory per "
                        "worker if one was killed for memory") from None
                raise
            future.release()  # the worker may drop the result now that we have it
            yield index, result
    finally:
        # Runs on normal end, on an exception (from a task or the connection) and on
        # close() by a consumer that stopped early.
        if client.status == "running":
            leftovers = list(pending) + list(shared_futures.values())
            if leftovers:
                client.cancel(leftovers)
        if owns_client:
            client.close()
