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
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager, suppress
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

#: The most local processes per core (``--jobs``, ``CROWDPREFS_JOBS``): more only slow a study
#: down, and thousands would exhaust the system's processes and threads.
JOBS_PER_CORE = 4


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def max_jobs() -> int:
    """The most local processes a study may run on: :data:`JOBS_PER_CORE` per core."""
    return JOBS_PER_CORE * cores()


def jobs_range() -> str:
    """The jobs accepted, in words (every message about jobs names the ceiling)."""
    return f"a whole number in [1, {max_jobs()}] ({JOBS_PER_CORE} per core of the {cores()} here)"


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
            # ASCII digits only: str.isdigit() also takes '³', which int() refuses
            if text and not (text.isascii() and text.isdigit() and 1 <= int(text) <= max_jobs()):
                raise InputError(f"{JOBS_VARIABLE} must be {jobs_range()}, got {text!r}")
            jobs = int(text) if text else cores()
        if not 1 <= jobs <= max_jobs():
            raise InputError(f"the jobs must be {jobs_range()}, got {jobs}")
        if scheduler is not None:
            scheduler_address(scheduler)
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
    """A Dask client of the scheduler at ``address``, or one clear error within
    :data:`CONNECT_TIMEOUT` seconds, with nothing of a client left behind.

    The address is checked first, then a scheduler is asked who it is (a program that answers
    something else, or nothing, is not one); only then is a client built."""
    deadline = time.monotonic() + CONNECT_TIMEOUT
    _identify_scheduler(address)
    from distributed import Client

    client = Client.__new__(Client)  # kept, to be closed, if building it fails
    try:
        client.__init__(
            address, timeout=max(1.0, deadline - time.monotonic()), set_as_default=False
        )
    except Exception as error:
        _abandon(client)
        raise InputError(
            f"cannot reach the Dask scheduler at {address!r}: {_first_line(error)}"
        ) from None
    except BaseException:
        _abandon(client)
        raise
    return client


def _identify_scheduler(address: str) -> None:
    """Ask the program at ``address`` who it is, within :data:`CONNECT_TIMEOUT` seconds; one
    clear error unless it says it is a Dask scheduler.

    Dask reads the first bytes of an answer as a message length, so an HTTP server or any other
    program would make it allocate exabytes or fail deep inside; a port that accepts and never
    answers would hang it (its handshake has no time limit)."""
    import asyncio

    from distributed.comm import connect

    where = f"the Dask scheduler at {address!r}"
    scheduler_address(address)

    async def identity() -> object:
        comm = await connect(address, timeout=CONNECT_TIMEOUT)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        reply = asyncio.run(asyncio.wait_for(identity(), CONNECT_TIMEOUT))
    except TimeoutError:
        raise InputError(f"cannot reach {where}: no answer within {CONNECT_TIMEOUT} s") from None
    except TypeError as error:  # TLS without its settings
        raise InputError(f"cannot reach {where}: {_first_line(error)}") from None
    except OSError as error:  # refused, unreachable, closed: Dask's own words
        raise InputError(f"cannot reach {where}: {_first_line(error)}") from None
    except Exception:  # bytes Dask cannot read as a message: another program answers
        reply = None
    if not (isinstance(reply, dict) and reply.get("type") == "Scheduler"):
        raise InputError(
            f"the program at {address!r} is not a Dask scheduler (it answered, but not in "
            "Dask's protocol); give the address 'dask scheduler' prints"
        )


def scheduler_address(address: str) -> str:
    """``address`` if Dask can read it as a scheduler's address (a known scheme, a host and a
    port from 1 to 65535), checked without connecting; one clear error otherwise."""
    try:
        from distributed.comm.addressing import parse_address, parse_host_port
        from distributed.comm.registry import get_backend
    except ImportError:
        raise InputError(
            "a Dask scheduler needs dask.distributed: pip install 'crowdprefs[cluster]'"
        ) from None
    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):
            _, port = parse_host_port(location)
            if not 0 < port < 65536:
                raise ValueError(f"port {port} is not in 1–65535")
    except (ValueError, TypeError) as error:
        raise InputError(
            f"the Dask scheduler at {address!r} is not an address like tcp://HOST:8786: "
            f"{_first_line(error)}"
        ) from None
    return address


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _abandon(client: Any) -> None:
    """Close a client whose building failed, at once: left to itself it waits 20 s to close
    when collected, then prints a traceback."""
    with suppress(Exception):
        client.close(timeout=1)
    with suppress(AttributeError):
        client.status = "closed"  # nothing left for its finaliser to close
        client._loop_runner.stop()


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
