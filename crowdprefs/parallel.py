"""Run a study's independent tasks on every core, or on a Dask cluster.

The studies (``plan``'s campaigns, ``stats power``'s resampled query sets, the crowd model's
bootstrap and predictive check, the MTC transfer splits) are many independent tasks over the same
inputs. A :class:`Runner` maps a pure, module-level ``task(shared, item)`` over the items and
returns the results in the items' order; the study does not know which engine ran it.

One engine interface, :class:`concurrent.futures.Executor`, covers both places a study runs:

* locally, a :class:`~concurrent.futures.ProcessPoolExecutor` whose workers are forked from the
  study's process (or from a fork server where the caller runs threads of its own) and hold
  ``shared`` once;
* on a cluster, ``dask.distributed``'s executor (``Client.get_executor``), after
  ``Client.scatter(..., broadcast=True)`` has sent ``shared`` to each worker once.

Both take the same tasks, so a study gives the same result locally and on a cluster. Randomness
belongs to the task: each derives its stream from (seed, task index), never from the worker or
the order tasks finish in, so **the result is identical for any number of jobs**. At most a few
tasks per worker are in flight (bounded memory), and BLAS runs one thread per task wherever the
task runs (the jobs are the parallelism; and a threaded BLAS would sum in another order, so the
last bits of a result would depend on the engine).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from threadpoolctl import threadpool_limits

from crowdprefs.errors import InputError
from crowdprefs.progress import paused

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

#: Environment variables giving the defaults of ``--jobs`` and ``--scheduler``.
JOBS_VARIABLE = "CROWDPREFS_JOBS"
SCHEDULER_VARIABLE = "CROWDPREFS_SCHEDULER"

#: Chunks of tasks in flight per worker: enough to keep it busy, few enough to bound memory.
IN_FLIGHT_PER_WORKER = 2

#: Chunks per worker a study's tasks are cut into: few enough that sending them costs little
#: beside the work, enough to keep the workers evenly busy to the end.
CHUNKS_PER_WORKER = 32

#: Seconds to wait for a Dask scheduler before giving up.
CONNECT_TIMEOUT = 10


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Runner:
    """Where a study's tasks run: ``jobs`` local processes (1: in this process, as a plain
    loop), or the Dask cluster whose scheduler is at ``scheduler`` (``jobs`` is then unused)."""

    jobs: int = 1
    scheduler: str | None = None

    @classmethod
    def from_options(cls, jobs: int | None = None, scheduler: str | None = None) -> Runner:
        """The runner of the ``--jobs`` and ``--scheduler`` options, defaulting to
        ``CROWDPREFS_JOBS`` (else every core) and ``CROWDPREFS_SCHEDULER`` (else none)."""
        scheduler = scheduler or os.environ.get(SCHEDULER_VARIABLE) or None
        if jobs is None:
            text = os.environ.get(JOBS_VARIABLE, "").strip()
            if text and not (text.isdigit() and int(text) >= 1):
                raise InputError(f"{JOBS_VARIABLE} must be a whole number ≥ 1, got {text!r}")
            jobs = int(text) if text else cores()
        if jobs < 1:
            raise InputError(f"the jobs must be a whole number ≥ 1, got {jobs}")
        return cls(jobs=jobs, scheduler=scheduler)

    @property
    def where(self) -> str:
        """Where the tasks run, for a progress line."""
        if self.scheduler:
            return f"on the Dask cluster at {self.scheduler}"
        return "in this process" if self.jobs == 1 else f"on {self.jobs} processes"

    def map(
        self,
        task: Callable[[S, T], R],
        shared: S,
        items: Sequence[T],
        on_done: Callable[[int], None] | None = None,
    ) -> list[R]:
        """``[task(shared, item) for item in items]``, computed where this runner says;
        ``on_done(done)`` after each task, with the number of tasks done so far."""
        if not items:
            return []
        if self.scheduler is None and (self.jobs == 1 or len(items) == 1):
            results = []
            with threadpool_limits(1):  # as in a worker: a threaded BLAS sums in another order
                for done, item in enumerate(items, 1):
                    results.append(task(shared, item))
                    if on_done:
                        on_done(done)
            return results
        with self._engine(task, shared) as (submit, workers):
            size = -(-len(items) // (workers * CHUNKS_PER_WORKER))
            chunks = [list(items[i : i + size]) for i in range(0, len(items), size)]
            return _drain(submit, chunks, workers, on_done)

    @contextmanager
    def _engine(self, task: Callable, shared: Any) -> Iterator[tuple[Callable, int]]:
        """``(submit(chunk) -> Future, workers)`` of a process pool or a Dask cluster."""
        if self.scheduler is None:
            executor = _local_pool(self.jobs, task, shared)
            with _closing(executor):
                yield lambda chunk: executor.submit(_call_installed, task, chunk), self.jobs
            return
        client = _connect(self.scheduler)
        try:
            [handle] = client.scatter([shared], broadcast=True, hash=False)
            workers = len(client.scheduler_info(n_workers=-1)["workers"])
            executor = client.get_executor(pure=False)
            with _closing(executor):
                yield lambda chunk: executor.submit(_call, task, handle, chunk), max(1, workers)
        finally:
            client.close()


#: Serial execution: the default of every study function.
SERIAL = Runner()


def _drain(
    submit: Callable[[list], Future],
    chunks: list[list],
    workers: int,
    on_done: Callable[[int], None] | None,
) -> list:
    """Submit the chunks a window at a time; the results in the items' order."""
    results: list[list] = [[] for _ in chunks]
    pending: dict[Future, int] = {}
    upcoming = iter(enumerate(chunks))
    window = workers * IN_FLIGHT_PER_WORKER
    done = 0

    def fill() -> None:
        while len(pending) < window:
            step = next(upcoming, None)
            if step is None:
                return
            pending[submit(step[1])] = step[0]

    fill()
    while pending:
        finished, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in finished:
            index = pending.pop(future)
            results[index] = future.result()
            done += len(chunks[index])
            if on_done:
                on_done(done)
        fill()
    return [result for chunk in results for result in chunk]


@contextmanager
def _closing(executor: Executor) -> Iterator[None]:
    """Shut ``executor`` down; on an error or an interrupt, cancel what has not started."""
    try:
        yield
    except BaseException:
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


def _local_pool(jobs: int, task: Callable, shared: Any) -> ProcessPoolExecutor:
    """``jobs`` worker processes, each given ``shared`` once.

    Forked from this process when, its progress bars paused, it runs no other thread: the
    workers start at once, with everything this process has loaded and ``shared`` already in
    their memory. Otherwise (a caller's threads) from a fork server that imports this module and
    the task's: a process forked while another thread runs may inherit a lock held for ever."""
    with paused():
        if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
            executor = ProcessPoolExecutor(
                jobs, multiprocessing.get_context("fork"), _install, (shared,)
            )
            executor.submit(int)  # the first task forks every worker, now
            return executor
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__, task.__module__])
    return ProcessPoolExecutor(jobs, context, _install, (shared,))


def _connect(address: str):
    """A Dask client of the scheduler at ``address``, or one clear error."""
    try:
        from distributed import Client
    except ImportError:
        raise InputError(
            "a Dask scheduler needs dask.distributed: pip install 'crowdprefs[cluster]'"
        ) from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as error:
        raise InputError(f"cannot reach the Dask scheduler at {address!r}: {error}") from None


# Worker side of the local engine: the shared inputs, installed once per process.
_shared: Any = None


def _install(shared: Any) -> None:
    """Initializer of a local worker: keep ``shared`` for every chunk it runs."""
    global _shared
    _shared = shared


def _call(task: Callable, shared: Any, chunk: list) -> list:
    """A chunk of tasks in a worker, each on one BLAS thread, as :meth:`Runner.map` runs them
    in its own process (a threaded BLAS sums in another order)."""
    with threadpool_limits(1):
        return [task(shared, item) for item in chunk]


def _call_installed(task: Callable, chunk: list) -> list:
    return _call(task, _shared, chunk)
