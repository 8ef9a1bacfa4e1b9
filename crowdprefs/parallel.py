"""Run a study's independent tasks on every core, or on a Dask cluster.

The studies (``plan``'s campaigns, ``stats power``'s resampled query sets, the crowd model's
bootstrap and predictive check, the MTC transfer splits) are many independent tasks over the same
inputs. A :class:`Runner` maps a pure, module-level ``task(shared, item)`` over the items and
returns the results in the items' order; the study does not know which engine ran it.

One engine interface, :class:`concurrent.futures.Executor`, covers both places a study runs:

* locally, a :class:`~concurrent.futures.ProcessPoolExecutor` (``forkserver`` processes, the
  study's modules preloaded), whose initializer installs ``shared`` in each worker once;
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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from threadpoolctl import threadpool_limits

from crowdprefs.errors import InputError

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

#: Environment variables giving the defaults of ``--jobs`` and ``--scheduler``.
JOBS_VARIABLE = "CROWDPREFS_JOBS"
SCHEDULER_VARIABLE = "CROWDPREFS_SCHEDULER"

#: Tasks in flight per worker: enough to keep it busy, few enough to bound memory.
IN_FLIGHT_PER_WORKER = 2

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
            return _drain(submit, items, workers, on_done)

    @contextmanager
    def _engine(self, task: Callable, shared: Any) -> Iterator[tuple[Callable, int]]:
        """``(submit(item) -> Future, workers)`` of a process pool or a Dask cluster."""
        if self.scheduler is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload([__name__, task.__module__])
            executor = ProcessPoolExecutor(
                self.jobs, mp_context=context, initializer=_install, initargs=(shared,)
            )
            with _closing(executor):
                yield lambda item: executor.submit(_call_installed, task, item), self.jobs
            return
        client = _connect(self.scheduler)
        try:
            [handle] = client.scatter([shared], broadcast=True, hash=False)
            workers = len(client.scheduler_info(n_workers=-1)["workers"])
            executor = client.get_executor(pure=False)
            with _closing(executor):
                yield lambda item: executor.submit(task, handle, item), max(1, workers)
        finally:
            client.close()


#: Serial execution: the default of every study function.
SERIAL = Runner()


def _drain(
    submit: Callable[[Any], Future],
    items: Sequence,
    workers: int,
    on_done: Callable[[int], None] | None,
) -> list:
    """Submit the items a window at a time; collect the results in the items' order."""
    results: list = [None] * len(items)
    pending: dict[Future, int] = {}
    upcoming = iter(enumerate(items))
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
            results[pending.pop(future)] = future.result()
            done += 1
            if on_done:
                on_done(done)
        fill()
    return results


@contextmanager
def _closing(executor: Executor) -> Iterator[None]:
    """Shut ``executor`` down; on an error or an interrupt, cancel what has not started."""
    try:
        yield
    except BaseException:
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


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
    """Initializer of a local worker: keep ``shared``; one BLAS thread (the jobs are the
    parallelism)."""
    global _shared
    _shared = shared
    threadpool_limits(1)


def _call_installed(task: Callable, item: Any) -> Any:
    return task(_shared, item)
