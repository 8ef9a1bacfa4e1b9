"""Simulated judges answering over HTTP, and a local server to answer to.

Each judge is an ``httpx.AsyncClient`` with its own cookie jar: it opens its invitation link,
asks for a question (``POST /next``), reads the question page's form (action and CSRF token),
posts an answer and follows to the next question, as a browser would. What it posts comes from
an *oracle* ``(assignment_id, judge_index) -> fields``: the choice and the page's play log.
:func:`simulated_oracle` answers like worker ``judge_index`` of the project's simulated crowd
(:mod:`crowdprefs.crowds.simulated`), having heard every clip once, so a web campaign of
simulated judges builds the same kind of lists as the simulated crowd. A judge asked to pass
the headphone check listens as through headphones (:func:`pass_headphone_check`).

Traffic goes only to the given base URL, which :class:`LocalServer` binds on 127.0.0.1; every
loop is bounded by a deadline and an answer count, and stops by itself.
"""

from __future__ import annotations

import asyncio
import functools
import io
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import uvicorn

from crowdprefs.campaign.project import STATE_NAME, Project
from crowdprefs.campaign.store import Store
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.errors import CrowdError
from crowdprefs.quality.crowd_model import simulate_answers
from crowdprefs.web import assign, headphones
from crowdprefs.web.app import create_app
from crowdprefs.web.security import RESEARCHER_TOKEN_ENV, new_token

Oracle = Callable[[str, int], dict[str, str]]
"""``(assignment_id, judge_index) → form fields`` of the answer (``choice`` and the play log)."""
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
STATE = re.compile(r'id="done" data-state="(\w+)"')
NOISE = re.compile(r'src="(/headphones/(\d+)/(\d+))"')


class LocalServer:
    """The judges' site in a background thread on ``127.0.0.1`` and a free port."""

    def __init__(self, root: Path, researcher_token: str) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        config = uvicorn.Config(
            create_app(root, researcher_token), log_level="warning", access_log=False
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
    (``python -m crowdprefs.web``; stopped on exit)."""

    def __init__(self, root: Path, researcher_token: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [
            sys.executable,
            "-m",
            "crowdprefs.web",
            str(root),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        self.env = {**os.environ, RESEARCHER_TOKEN_ENV: researcher_token}
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> ServerProcess:
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            self.command, env=self.env, stdout=subprocess.DEVNULL, stderr=self.log
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.seek(0)
                last = self.log.read().decode(errors="replace").strip().splitlines()[-1:]
                raise CrowdError(f"the web server exited: {' '.join(last)}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        self.__exit__()
        raise CrowdError("the web server did not answer within 60 s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@dataclass
class JudgeReport:
    """What the simulated judges did: answers posted, submit latencies (s), refusals."""

    answers: int = 0
    latencies: list[float] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def p95(self) -> float:
        return float(np.percentile(self.latencies, 95)) if self.latencies else float("nan")


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


async def _judge(
    client: httpx.AsyncClient,
    token: str,
    index: int,
    oracle: Oracle,
    report: JudgeReport,
    stop: Callable[[], bool],
    deadline: float,
    max_answers: int,
) -> None:
    response = await client.get(f"/invite/{token}", follow_redirects=True)
    response.raise_for_status()
    response = await client.post("/next", follow_redirects=True)
    while time.monotonic() < deadline and not stop() and report.answers < max_answers:
        path = response.url.path
        if path == "/headphones" and 'data-state="open"' in response.text:
            response = await pass_headphone_check(client, response)
            continue
        if path.startswith("/hit/"):
            assignment = path.rsplit("/", 1)[1]
            match = CSRF.search(response.text)
            if match is None:
                raise CrowdError(f"question page {path} has no CSRF token")
            form = {"csrf": match.group(1), **oracle(assignment, index)}
            started = time.perf_counter()
            posted = await client.post(path, data=form)
            report.latencies.append(time.perf_counter() - started)
            if posted.status_code == 303:
                report.answers += 1
                response = await client.get(posted.headers["location"], follow_redirects=True)
                continue
            report.refused.append(f"{posted.status_code} {path}")
        else:
            state = STATE.search(response.text)
            if state is None:
                raise CrowdError(f"unexpected page {path} ({response.status_code})")
            if state.group(1) == "finished":
                return
            await asyncio.sleep(0.05)
        response = await client.post("/next", follow_redirects=True)


def run_judges(
    base_url: str,
    tokens: list[str],
    oracle: Oracle,
    *,
    watch: Callable[[], bool] | None = None,
    max_seconds: float = 120.0,
    max_answers: int = 100_000,
) -> JudgeReport:
    """Let one simulated judge per token answer concurrently until each sees the finished page,
    ``watch()`` (called about every 0.2 s) returns true, ``max_seconds`` pass or ``max_answers``
    were posted in all."""
    report = JudgeReport()
    deadline = time.monotonic() + max_seconds
    stopped = asyncio.Event()

    async def watcher() -> None:
        while not stopped.is_set() and time.monotonic() < deadline:
            if watch is not None and watch():
                stopped.set()
            await asyncio.sleep(0.2)

    async def main() -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        clients = [
            httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60.0) for _ in tokens
        ]
        watching = asyncio.create_task(watcher())
        try:
            await asyncio.gather(
                *(
                    _judge(c, t, i, oracle, report, stopped.is_set, deadline, max_answers)
                    for i, (c, t) in enumerate(zip(clients, tokens, strict=True))
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
    *i* of its pool (``i`` modulo the pool size), answering the assignment's pair after hearing
    each clip once."""
    with Project(root) as project:
        crowd = SimulatedCrowd.for_project(project)
        settings = assign.WebSettings.from_project(project)
    n = len(crowd.pool.ids)
    local = threading.local()

    def store() -> Store:
        """This thread's own connection to the state (the server writes through its own)."""
        if not hasattr(local, "store"):
            local.store = Store(root / STATE_NAME)
        return local.store

    @functools.lru_cache(maxsize=4096)
    def everyone(pair_id: int) -> tuple[dict[str, str], dict]:
        """Each worker's choice for the pair (on the pair's sides), and the pair."""
        pair = store().web_pair(pair_id)
        frame = simulate_answers(
            pd.DataFrame([pair]).assign(answers_wanted=n),
            crowd.similarity,
            crowd.pool,
            crowd.model,
            crowd.seed,
        )
        return dict(zip(frame["worker_id"], frame["choice"], strict=True)), pair

    def answer(assignment: str, index: int) -> dict[str, str]:
        """The worker's choice as the question shows the pair, and the play log of hearing
        its clips once."""
        found = store().web_assignment(assignment)
        if found is None:
            raise CrowdError(f"the server handed out an unknown question {assignment}")
        choices, pair = everyone(found.pair_id)
        shown = assign.shown_pair(pair, assignment, settings)
        choice = choices[crowd.pool.ids[index % n]]
        fields = {"choice": assign.on_pair_sides(choice, pair["a_is_x"], shown["a_is_x"])}
        for role, seconds in assign.clip_seconds(shown).items():
            fields |= {f"plays_{role}": "1", f"listen_{role}": f"{seconds or 0:.2f}"}
        return fields

    return answer


def run_web_campaign(
    root: Path,
    *,
    judges: int = 40,
    max_seconds: float = 900.0,
    watch: Callable[[], bool] | None = None,
) -> JudgeReport:
    """A whole campaign through the web crowd: ``judges`` simulated judges post their answers
    over HTTP to a local server, which aggregates each batch and publishes the next until every
    list is closed (or ``max_seconds`` pass). ``watch`` is called about every 0.2 s."""
    with Project(root) as project:
        tokens = [token for _, token in assign.invite(project, judges)]
    oracle = simulated_oracle(root)
    with LocalServer(root, new_token()) as server:
        return run_judges(server.url, tokens, oracle, watch=watch, max_seconds=max_seconds)
