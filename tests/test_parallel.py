"""Studies on every core and on a Dask cluster: the same results for any number of jobs.

Every study command runs through the installed console script with ``--jobs 1``, ``2`` and
``4`` and the outputs are compared byte for byte; a ``LocalCluster`` of two worker processes
gives the same through ``--scheduler``. The suite itself runs with ``CROWDPREFS_JOBS=1``
(conftest): here the variable is removed to test the default, every core.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from console_script import crowdprefs, script
from demo_inputs import finished_demo

from crowdprefs.demo import make_collection
from crowdprefs.errors import InputError
from crowdprefs.io import write_lists
from crowdprefs.parallel import JOBS_VARIABLE, SCHEDULER_VARIABLE, Runner


def _draw(shared: dict, item: int) -> tuple[float, int]:
    """A task whose randomness comes from (seed, item), as the studies' tasks do."""
    return float(np.random.default_rng([shared["seed"], item]).random()), os.getpid()


def _fail_on_three(shared: None, item: int) -> int:
    if item == 3:
        raise InputError("task 3 refuses")
    return item


def _default_env() -> dict[str, str]:
    """The environment of a user who set neither variable."""
    return {k: v for k, v in os.environ.items() if k not in (JOBS_VARIABLE, SCHEDULER_VARIABLE)}


def test_runner_returns_results_in_item_order_whatever_the_jobs():
    items = list(range(40))
    done: list[int] = []
    serial = Runner(1).map(_draw, {"seed": 7}, items)
    for jobs in (2, 4):
        results = Runner(jobs).map(_draw, {"seed": 7}, items, on_done=done.append)
        assert [value for value, _ in results] == [value for value, _ in serial]
        assert done[-1] == len(items) and done == sorted(done)
        done.clear()
    assert {pid for _, pid in serial} == {os.getpid()}


def test_workers_come_from_a_fork_server_while_other_threads_run():
    """A caller with threads of its own gets workers from the fork server (a fork would copy
    locks those threads hold); the results are the same as forked workers'."""
    import threading

    forked = Runner(2).map(_draw, {"seed": 3}, list(range(10)))
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait)
    busy.start()
    try:
        served = Runner(2).map(_draw, {"seed": 3}, list(range(10)))
    finally:
        stop.set()
        busy.join()
    assert [v for v, _ in served] == [v for v, _ in forked]
    assert os.getpid() not in {pid for _, pid in served}


def test_a_task_error_reaches_the_caller_unchanged():
    for jobs in (1, 2):
        with pytest.raises(InputError, match="task 3 refuses"):
            Runner(jobs).map(_fail_on_three, None, list(range(8)))


def test_jobs_default_to_every_core_or_the_variable(monkeypatch):
    monkeypatch.delenv(JOBS_VARIABLE, raising=False)
    monkeypatch.delenv(SCHEDULER_VARIABLE, raising=False)
    assert Runner.from_options() == Runner(jobs=len(os.sched_getaffinity(0)))
    monkeypatch.setenv(JOBS_VARIABLE, "3")
    assert Runner.from_options().jobs == 3 and Runner.from_options(1).jobs == 1
    monkeypatch.setenv(SCHEDULER_VARIABLE, "tcp://h:8786")
    assert Runner.from_options().scheduler == "tcp://h:8786"
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(JOBS_VARIABLE, bad)
        with pytest.raises(InputError, match=JOBS_VARIABLE):
            Runner.from_options()


@pytest.fixture(scope="module")
def collection(tmp_path_factory) -> Path:
    """Candidates and a hidden truth for ``plan``."""
    root = tmp_path_factory.mktemp("plan")
    candidates, truth = make_collection(2010, sizes=(5, 8, 12, 7))
    candidates.to_csv(root / "c.csv", index=False)
    write_lists(truth, root / "t.qrel")
    return root


def _plan(root: Path, name: str, *extra: object, env: dict | None = None):
    out = root / f"{name}.csv"
    result = crowdprefs(
        "plan", "--candidates", root / "c.csv", "--truth", root / "t.qrel", "--campaigns", 6,
        "--adaptive", "sequential", "--seed", 3, "-o", out, *extra, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out.read_bytes(), result.stdout


def test_plan_is_identical_on_1_2_and_4_jobs_and_by_default(collection):
    one = _plan(collection, "one", "--jobs", 1)
    assert _plan(collection, "two", "--jobs", 2) == one
    assert _plan(collection, "four", "--jobs", 4) == one
    default = crowdprefs(
        "plan", "--candidates", collection / "c.csv", "--truth", collection / "t.qrel",
        "--campaigns", 6, "--adaptive", "sequential", "--seed", 3,
        "-o", collection / "default.csv", env=_default_env(),
    )  # fmt: skip
    assert default.returncode == 0, default.stderr
    assert (collection / "default.csv").read_bytes() == one[0]
    assert len(pd.read_csv(collection / "default.csv")) == 12


def test_stats_power_and_stability_are_identical_on_1_and_2_jobs(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.uniform(0.2, 0.8, (5, 30)) + 0.05 * np.arange(5)[:, None]
    scores = pd.DataFrame(
        [
            (f"S{i}", f"q{j:02d}", "AG@5", round(values[i, j], 4))
            for i in range(5)
            for j in range(30)
        ],
        columns=["system", "query", "measure", "score"],
    )
    scores.to_csv(tmp_path / "scores.csv", index=False)
    for kind in ("power", "stability"):
        outputs = []
        for jobs in (1, 2):
            result = crowdprefs(
                "stats", kind, "--scores", tmp_path / "scores.csv", "--samples", 40,
                "--size-step", 5, "--format", "csv", "--jobs", jobs,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            outputs.append(result.stdout)
        assert outputs[0] == outputs[1] and len(pd.read_csv(pd.io.common.StringIO(outputs[0])))


@pytest.mark.parametrize(
    ("option", "message"),
    [(["--jobs", "0"], "--jobs"), (["--jobs", "two"], "--jobs")],
)
def test_plan_refuses_bad_jobs_in_one_line(collection, option, message):
    result = crowdprefs("plan", "--candidates", collection / "c.csv", *option)
    assert result.returncode != 0 and message in result.stderr
    assert "Traceback" not in result.stderr


def test_ctrl_c_stops_a_parallel_study_in_one_line_and_leaves_no_worker(collection):
    """Ctrl-C reaches the whole process group, workers included: the command ends with one
    line and 130, writes nothing, and no worker outlives it."""
    import signal
    import subprocess
    import time

    out = collection / "interrupted.csv"
    command = [
        script(), "plan", "--candidates", collection / "c.csv", "--truth",
        collection / "t.qrel", "--campaigns", 5000, "--jobs", 2, "-o", out,
    ]  # fmt: skip
    started = subprocess.Popen(
        list(map(str, command)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, env=_default_env(),
        # as from a terminal: a test process may run with Ctrl-C ignored (a server test, the
        # test runner's worker), and an ignored signal stays ignored across exec
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    time.sleep(4)
    os.killpg(started.pid, signal.SIGINT)
    _, err = started.communicate(timeout=120)
    assert started.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert not out.exists()
    time.sleep(1)  # multiprocessing's resource tracker ends on its own, a moment after
    group = subprocess.run(
        ["ps", "-o", "stat=,args=", "-g", str(started.pid)], capture_output=True, text=True
    ).stdout.splitlines()
    running = [line for line in group if not line.lstrip().startswith("Z")]  # Z: exited
    assert not running, running


def test_a_bad_jobs_variable_or_an_unreachable_scheduler_is_one_line(collection):
    bad = crowdprefs("plan", "--candidates", collection / "c.csv", env={JOBS_VARIABLE: "many"})
    assert bad.returncode != 0 and f"{JOBS_VARIABLE} must be a whole number" in bad.stderr
    assert "Traceback" not in bad.stderr
    gone = crowdprefs(
        "plan", "--candidates", collection / "c.csv", "--campaigns", 2,
        "--scheduler", "tcp://127.0.0.1:9", "-o", collection / "gone.csv",
    )  # fmt: skip
    assert gone.returncode != 0 and "cannot reach the Dask scheduler" in gone.stderr
    assert "Traceback" not in gone.stderr and not (collection / "gone.csv").exists()


@pytest.mark.slow
def test_a_dask_cluster_gives_the_same_study_as_one_process(collection):
    distributed = pytest.importorskip("distributed")
    one = _plan(collection, "local", "--jobs", 1)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        address = cluster.scheduler_address
        assert _plan(collection, "cluster", "--scheduler", address) == one
        assert _plan(collection, "variable", env={SCHEDULER_VARIABLE: address}) == one
        runner = Runner(scheduler=address)
        results = runner.map(_draw, {"seed": 7}, list(range(12)))
        assert [v for v, _ in results] == [
            v for v, _ in Runner(1).map(_draw, {"seed": 7}, list(range(12)))
        ]
        assert len({pid for _, pid in results} - {os.getpid()}) >= 1


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A whole demo campaign's answers and lists, as files ``crowd-model fit`` reads."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.quality.frames import project_answers
    from crowdprefs.results_file import write_results

    root = tmp_path_factory.mktemp("fit")
    with Project(finished_demo(root / "demo"), lock=False) as project:
        write_results(project_answers(project), root / "results.csv")
        write_lists(driver.lists(project), root / "lists.qrel")
    return root


def test_crowd_model_fit_is_identical_on_1_and_2_jobs(recorded):
    """The bootstrap replicates and the predictive check's campaigns are tasks: the model file
    and the printed check are the same byte for byte."""
    outputs = []
    for jobs in (1, 2):
        model = recorded / f"model-{jobs}.toml"
        result = crowdprefs(
            "crowd-model", "fit", recorded / "results.csv", "--lists", recorded / "lists.qrel",
            "--bootstrap", 4, "--campaigns", 6, "--jobs", jobs, "-o", model,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "predictive check" in result.stdout and "95% interval" in result.stdout
        outputs.append((model.read_bytes(), result.stdout.replace(str(model), "MODEL")))
    assert outputs[0] == outputs[1]
    assert b"bootstrap_replicates = 4" in outputs[0][0]


def test_progress_writes_plain_lines_where_stderr_is_not_a_terminal(monkeypatch, capsys):
    """A batch job's log gets a line per task every CROWDPREFS_PROGRESS_SECONDS (markup and
    control characters of the description shown as text); quick work writes none."""
    from crowdprefs import progress

    monkeypatch.setenv("CROWDPREFS_PROGRESS_SECONDS", "0.000001")
    with progress.make_progress() as bar:
        task = bar.add_task("simulating [b]x[/b] \x1b[31m", total=3)
        for _ in range(3):
            bar.advance(task)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines[-1].startswith("simulating x \\x1b[31m: 3/3 (") and len(lines) == 3
    monkeypatch.delenv("CROWDPREFS_PROGRESS_SECONDS")  # 10 s: quick work writes nothing
    with progress.make_progress() as bar:
        bar.advance(bar.add_task("quick", total=1))
    assert not capsys.readouterr().err.strip()


def test_nested_progress_bars_come_back_outer_first_after_a_fork_pause():
    """A bar started inside another (a study's progress inside a command's) is drawn inside
    it; after the pause around forking the workers, the outer one is on top again (restarted
    inner first, each would hold the other and rich recursed without end)."""
    from crowdprefs import progress

    with progress.make_progress() as outer, progress.make_progress() as inner:
        outer.add_task("command", total=2)
        inner.add_task("study", total=2)
        stack = progress.stderr._live_stack
        assert stack == [outer.live, inner.live]
        with progress.paused():
            assert stack == [] and progress._SHOWN == []
        assert stack == [outer.live, inner.live]
        outer.refresh()  # renders the inner bar inside it, once
    assert progress._SHOWN == []
