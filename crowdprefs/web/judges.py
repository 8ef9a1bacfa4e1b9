"""Simulated judges answering over HTTP, and a local server to answer to.

Each judge is an ``httpx.AsyncClient`` with its own cookie jar: it opens its invitation link,
asks for a question (``POST /next``), reads the question page's form (action and CSRF token),
posts an answer and follows to the next question, as a browser would. What it posts comes from
an *oracle* ``(assignment_id, judge_index) -> fields``: the choice and the page's play log.
:func:`simulated_oracle` answers like worker ``judge_index`` of the project's simulated crowd
(:mod:`crowdprefs.crowds.simulated`), having heard every clip once, so a web campaign of
simulated judges builds the same kind of lists as the simulated crowd. A judge asked to pass
the headphone check listens as through headphones (:func:`pass_headphone_check`). How a judge
paces itself is its :class:`Behaviour`: seconds spent on each question, whether it downloads the
page's clips, and the pause before it tries again after a 503 "come back", a server error or a
failed connection (each retried, and counted in the :class:`JudgeReport`).

Traffic goes only to the given base URL, which :class:`LocalServer` binds on 127.0.0.1; every
loop is bounded by a deadline and an answer count, and stops by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import uvicorn

from crowdprefs.campaign.project import Project
from crowdprefs.campaign.store import Store
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.errors import CrowdError
from crowdprefs.quality.crowd_model import simulate_answers
from crowdprefs.web import assign, headphones
from crowdprefs.web.app import KEEP_ALIVE_SECONDS, create_app
from crowdprefs.web.clock import Clock, TimeLapse, wall_clock
from crowdprefs.web.security import RESEARCHER_TOKEN_ENV, new_token

Oracle = Callable[[str, int], dict[str, str]]
"""``(assignment_id, judge_index) → form fields`` of the answer (``choice`` and the play log)."""
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
STATE = re.compile(r'id="done" data-state="(\w+)"')
NOISE = re.compile(r'src="(/headphones/(\d+)/(\d+))"')
CLIP = re.compile(r'<audio [^>]*src="(/clip/[^"]+)"')


class LocalServer:
    """The judges' site (its application: ``app``) in a background thread on ``127.0.0.1`` and
    a free port, telling time by ``clock`` (:mod:`crowdprefs.web.clock`)."""

    def __init__(self, root: Path, researcher_token: str, clock: Clock = wall_clock) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.app = create_app(root, researcher_token, clock=clock)
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    def __enter__(self) -> LocalServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise CrowdError("the local web server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.socket.close()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServerProcess:
    """The judges' site of the project at ``root`` as a child process on ``127.0.0.1``
    (``crowdprefs serve``, with ``workers`` processes; stopped on exit, or killed with
    :meth:`kill` and started again on the same port with :meth:`start`)."""

    def __init__(self, root: Path, researcher_token: str, workers: int = 1) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [
            sys.executable,
            "-m",
            "crowdprefs",
            "serve",
            str(root),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            str(workers),
        ]
        self.env = {**os.environ, RESEARCHER_TOKEN_ENV: researcher_token}
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> ServerProcess:
        self.log = tempfile.TemporaryFile()
        try:
            self.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def start(self) -> None:
        """Start the server and wait until it answers ``GET /healthz`` (60 s at most)."""
        self.process = subprocess.Popen(  # the server logs to stdout, its errors to stderr
            self.command, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.seek(0)
                last = self.log.read().decode(errors="replace").strip().splitlines()[-1:]
                raise CrowdError(f"the web server exited: {' '.join(last)}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise CrowdError("the web server did not answer within 60 s")

    def kill(self) -> None:
        """``kill -9`` the server's main process, as a crash would, and reap it (a server of
        one process: workers would outlive it)."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.seek(0)
        self.output = self.log.read().decode(errors="replace")
        self.log.close()


@dataclass
class JudgeReport:
    """What the simulated judges did: the assignments whose answer the server accepted (``303``),
    latencies in seconds of the answer posts (``latencies``), of the hand-outs (``POST /next``
    and the question page) and of the clip downloads; answers refused (``refused``, a 4xx);
    503 "come back in a minute" pages (``busy``, retried); and errors (HTTP ≥ 500 but 503,
    failed connections: retried too)."""

    accepted: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    handouts: list[float] = field(default_factory=list)
    clips: list[float] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    busy: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def answers(self) -> int:
        return len(self.accepted)

    def p95(self) -> float:
        return float(np.percentile(self.latencies, 95)) if self.latencies else float("nan")


@dataclass(frozen=True)
class Behaviour:
    """How a simulated judge paces itself: seconds spent on each question before answering
    (drawn uniformly from ``think``; ``(0, 0)``: a judge who hammers; judges arrive spread
    over the first ``think[1]`` seconds), whether it downloads the page's clips as a browser
    does (``<audio preload="auto">``), and the pause before it tries again after a 503, an
    error or a "no question is free" page."""

    think: tuple[float, float] = (0.0, 0.0)
    clips: bool = False
    pause: float = 0.05
    speed: float = 0.0
    """With a speed, the judge also stays on each question the time its answer's play log
    reports (``seconds_on_page``), that many times faster: the speed of the site's
    :class:`~crowdprefs.web.clock.TimeLapse`, which then sees that time pass."""


def read_wav(data: bytes) -> np.ndarray:
    """A 16-bit stereo WAV as ``(samples, 2)`` floats."""
    with wave.open(io.BytesIO(data)) as handle:
        frames = handle.readframes(handle.getnframes())
    return np.frombuffer(frames, dtype="<i2").reshape(-1, 2) / 32767


async def pass_headphone_check(client: httpx.AsyncClient, page: httpx.Response) -> httpx.Response:
    """Answer the headphone check on ``page`` as a listener with headphones (the noise whose
    two ears differ hides the tone) and return the page that follows."""
    form = {"csrf": CSRF.search(page.text).group(1)}
    for path, trial, sound in NOISE.findall(page.text):
        noise = await client.get(path)
        noise.raise_for_status()
        if headphones.tone_sound(read_wav(noise.content)):
            form[f"trial_{trial}"] = sound
    return await client.post("/headphones", data=form, follow_redirects=True)


async def _send(
    client: httpx.AsyncClient,
    method: str,
    path: str,
    report: JudgeReport,
    timing: list[float] | None,
    behaviour: Behaviour,
    deadline: float,
    **kwargs: object,
) -> httpx.Response | None:
    """``method path`` as a patient person sends it: again after ``behaviour.pause`` when the
    connection fails or the server errs (both counted in ``report.errors``) or answers 503
    (``report.busy``); the latency of the answer that came goes to ``timing``. ``None`` once
    ``deadline`` passed."""
    while time.monotonic() < deadline:
        started = time.perf_counter()
        try:
            response = await client.request(method, path, **kwargs)
        except httpx.TransportError as error:
            report.errors.append(f"{type(error).__name__} {method} {path}")
        else:
            if response.status_code == 503:
                report.busy += 1
            elif response.status_code >= 500:
                report.errors.append(f"{response.status_code} {method} {path}")
            else:
                if timing is not None:
                    timing.append(time.perf_counter() - started)
                return response
        await asyncio.sleep(behaviour.pause)
    return None


async def _open(
    client: httpx.AsyncClient,
    method: str,
    path: str,
    report: JudgeReport,
    behaviour: Behaviour,
    deadline: float,
) -> httpx.Response | None:
    """The page ``method path`` leads to, following redirects as a browser does; ``POST /next``
    and the question pages are timed as hand-outs."""
    timing = report.handouts if path == "/next" else None
    response = await _send(client, method, path, report, timing, behaviour, deadline)
    while response is not None and response.is_redirect:
        path = response.headers["location"]
        timing = report.handouts if path.startswith("/hit/") else None
        response = await _send(client, "GET", path, report, timing, behaviour, deadline)
    return response


async def _fetch_clips(
    client: httpx.AsyncClient,
    page: httpx.Response,
    report: JudgeReport,
    behaviour: Behaviour,
    deadline: float,
) -> None:
    """Download the page's own clips at once, as a browser preloads its players."""
    paths = dict.fromkeys(CLIP.findall(page.text))
    await asyncio.gather(
        *(_send(client, "GET", p, report, report.clips, behaviour, deadline) for p in paths)
    )


async def _rest(seconds: float, stop: asyncio.Event) -> bool:
    """Wait ``seconds``, or less when ``stop`` is set meanwhile; whether it was."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()


async def _judge(
    client: httpx.AsyncClient,
    token: str,
    index: int,
    oracle: Oracle,
    report: JudgeReport,
    stop: asyncio.Event,
    deadline: float,
    max_answers: int,
    behaviour: Behaviour,
) -> None:
    rng = np.random.default_rng(index)
    if await _rest(rng.uniform(0, behaviour.think[1]), stop):  # people do not all come at once
        return
    await _open(client, "GET", f"/invite/{token}", report, behaviour, deadline)
    page = await _open(client, "POST", "/next", report, behaviour, deadline)
    while page is not None and not stop.is_set() and report.answers < max_answers:
        path = page.url.path
        if path == "/headphones" and 'data-state="open"' in page.text:
            page = await pass_headphone_check(client, page)
            continue
        if path.startswith("/hit/") and page.status_code == 200:
            shown, assignment = time.monotonic(), path.rsplit("/", 1)[1]
            match = CSRF.search(page.text)
            if match is None:
                raise CrowdError(f"question page {path} has no CSRF token")
            if behaviour.clips:
                await _fetch_clips(client, page, report, behaviour, deadline)
            if await _rest(rng.uniform(*behaviour.think), stop):
                return
            form = {"csrf": match.group(1), **oracle(assignment, index)}
            on_page = float(form.get("seconds_on_page", 0))
            if behaviour.speed and await _rest(on_page / behaviour.speed, stop):
                return
            if not behaviour.speed and "seconds_on_page" in form:  # the time it really stayed
                form["seconds_on_page"] = f"{time.monotonic() - shown:.1f}"
            posted = await _send(
                client, "POST", path, report, report.latencies, behaviour, deadline, data=form
            )
            if posted is None:
                return
            if posted.status_code == 303:
                report.accepted.append(assignment)
                page = await _open(
                    client, "GET", posted.headers["location"], report, behaviour, deadline
                )
                continue
            report.refused.append(f"{posted.status_code} {path}")
        else:
            state = STATE.search(page.text)
            if state is None:
                raise CrowdError(f"unexpected page {path} ({page.status_code})")
            if state.group(1) == "finished":
                return
            if await _rest(max(behaviour.pause, rng.uniform(*behaviour.think)), stop):
                return
        page = await _open(client, "POST", "/next", report, behaviour, deadline)


def run_judges(
    base_url: str,
    tokens: list[str],
    oracle: Oracle,
    *,
    watch: Callable[[], bool] | None = None,
    max_seconds: float = 120.0,
    max_answers: int = 100_000,
    behaviour: Behaviour = Behaviour(),
    report: JudgeReport | None = None,
    indices: list[int] | None = None,
) -> JudgeReport:
    """Let one simulated judge per token answer concurrently, paced by ``behaviour``, until each
    sees the finished page, ``watch()`` (called about every 0.2 s) returns true, ``max_seconds``
    pass or ``max_answers`` were accepted in all; ``report`` (a new one by default) is filled as
    they go, so another thread may follow it. The oracle knows judge *k* by ``indices[k]``
    (default: ``k``)."""
    report = report if report is not None else JudgeReport()
    deadline = time.monotonic() + max_seconds
    stopped = asyncio.Event()

    async def watcher() -> None:
        while not stopped.is_set() and time.monotonic() < deadline:
            if watch is not None and watch():
                stopped.set()
            await asyncio.sleep(0.2)

    async def main() -> None:
        # a browser opens up to six connections to a site (to load a page's clips at once)
        connections = 6 if behaviour.clips else 1
        # an idle connection is dropped before the server may close it, or a request sent on it
        # as the server closes it fails (a browser sends it again unseen; httpx does not)
        limits = httpx.Limits(
            max_connections=connections,
            max_keepalive_connections=connections,
            keepalive_expiry=KEEP_ALIVE_SECONDS - 1,
        )
        tls = ssl.create_default_context()  # one for all: each of its own takes ~10 ms of CPU
        clients = [
            httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60.0, verify=tls)
            for _ in tokens
        ]
        watching = asyncio.create_task(watcher())
        try:
            await asyncio.gather(
                *(
                    _judge(c, t, i, oracle, report, stopped, deadline, max_answers, behaviour)
                    for i, c, t in zip(indices or range(len(tokens)), clients, tokens, strict=True)
                )
            )
        finally:
            stopped.set()
            await watching
            await asyncio.gather(*(c.aclose() for c in clients))

    asyncio.run(main())
    return report


def simulated_oracle(root: Path) -> Oracle:
    """Answers of the project's simulated crowd (``[simulated]`` section): judge *i* is worker
    *i* of its pool (``i`` modulo the pool size, :func:`judge_worker`), answering the
    assignment's pair after hearing each clip once. Its play log reports the worker's time on
    the page (``seconds_on_page``): the simulated crowd's work time for the answer, at least
    the clips' listening time (the page opens the answer only once every clip has played)."""
    with Project(root) as project:
        crowd = SimulatedCrowd.for_project(project)
        settings = assign.WebSettings.from_project(project)
        location = project.store.location
    n = len(crowd.pool.ids)
    local = threading.local()

    def store() -> Store:
        """This thread's own connection to the state (the server writes through its own)."""
        if not hasattr(local, "store"):
            local.store = Store(location, lock=False)
        return local.store

    drawn: dict[int, pd.DataFrame] = {}

    def everyone(pair: dict, listen: float) -> pd.DataFrame:
        """Each worker's choice for the pair (on the pair's sides) and work seconds, drawn
        once per pair; ``listen``: seconds to hear its clips once (NaN: unknown)."""
        if pair["pair_id"] not in drawn:
            frame = simulate_answers(
                pd.DataFrame([pair]).assign(answers_wanted=n, listen_seconds=listen),
                crowd.similarity,
                crowd.pool,
                crowd.model,
                crowd.seed,
            )
            drawn[pair["pair_id"]] = frame.set_index("worker_id")[["choice", "seconds"]]
        return drawn[pair["pair_id"]]

    def answer(assignment: str, index: int) -> dict[str, str]:
        """The worker's choice as the question shows the pair, and the play log of hearing
        its clips once."""
        found = store().web_question(assignment)
        if found is None:
            raise CrowdError(f"the server handed out an unknown question {assignment}")
        pair = found.pair
        shown = assign.shown_pair(pair, assignment, settings)
        clips = assign.clip_seconds(shown)
        listen = sum(seconds or 0.0 for seconds in clips.values())
        known = all(seconds is not None for seconds in clips.values())
        choice, seconds = everyone(pair, listen if known else np.nan).loc[crowd.pool.ids[index % n]]
        fields = {"choice": assign.on_pair_sides(choice, pair["a_is_x"], shown["a_is_x"])}
        for role, heard in clips.items():
            fields |= {f"plays_{role}": "1", f"listen_{role}": f"{heard or 0:.2f}"}
        fields["seconds_on_page"] = f"{max(seconds, listen):.1f}"
        return fields

    return answer


def judge_worker(judge_id: str, workers: int) -> int:
    """The worker of the simulated crowd's pool (of ``workers``) whose answers the simulated
    judge ``judge_id`` (``J0001``, …) gives: judge *k* is worker *k − 1* modulo the pool."""
    return (int(judge_id.lstrip("J")) - 1) % workers


RELEASED_BY = datetime.max.replace(tzinfo=UTC).isoformat(timespec="milliseconds")
"""A deadline every hand-out has passed: releasing by it releases every open hand-out."""


def release_held(project: Project) -> int:
    """Release every question handed out and not answered (their slots go back to the pool);
    how many. For a new run of simulated judges: the judges of an earlier run (one that
    crashed) never come back for what they held."""
    return project.store.release_expired_assignments(RELEASED_BY)


DEMO_SPEED = 30.0
"""How much faster than the wall clock a simulated web campaign's site tells time."""


def run_web_campaign(
    root: Path,
    *,
    judges: int = 40,
    max_seconds: float = 900.0,
    watch: Callable[[], bool] | None = None,
    speed: float = DEMO_SPEED,
) -> JudgeReport:
    """A whole campaign through the web crowd: ``judges`` simulated judges post their answers
    over HTTP to a local server, which aggregates each batch and publishes the next until every
    list is closed (or ``max_seconds`` pass). ``watch`` is called about every 0.2 s.

    The judges are new ones, so what judges of an earlier run still hold (a run that crashed)
    is released first; each answers as its pool worker (:func:`judge_worker`), taking its work
    time on a site whose clock runs ``speed`` times faster (a
    :class:`~crowdprefs.web.clock.TimeLapse` given to the app)."""
    with Project(root) as project:
        release_held(project)
        invited = assign.invite(project, judges)
    oracle = simulated_oracle(root)
    tokens = [token for _, token in invited]
    indices = [int(judge_id.lstrip("J")) - 1 for judge_id, _ in invited]
    with LocalServer(root, new_token(), TimeLapse(speed)) as server:
        return run_judges(
            server.url,
            tokens,
            oracle,
            watch=watch,
            max_seconds=max_seconds,
            behaviour=Behaviour(speed=speed),
            indices=indices,
        )
