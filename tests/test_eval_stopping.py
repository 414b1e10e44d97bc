"""An evaluation stopped by a signal leaves nothing running and nothing behind.

``python -m memory.eval`` runs the system on embedded stores in temporary data folders. Stopped
halfway — Ctrl-C (SIGINT), ``kill`` (SIGTERM), its terminal closed (SIGHUP), ``kill`` when started
as a shell's background job (``cmd &``: SIGINT ignored) — it stops as Ctrl-C stops it: exit code
130, one line saying so, no traceback, its temporary folders removed and their embedded Postgres
stopped. With ``--jobs`` the worker processes, which a signal to the command
alone never reaches, clean up the same way.

The runs are real subprocesses with ``TMPDIR`` a folder of the test's own (a short path: the
embedded Postgres's socket lives in the data folder, and a socket's path has at most 107 bytes), so
their temporary data folders are the test's to inspect. Readiness is a line of the run's log (``-v``), never a sleep.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memory.eval import REPO_ROOT, longmemeval
from tests import cli, live_bot

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.slow

STARTS = {"terminal": live_bot.AS_FROM_A_TERMINAL, "background": live_bot.AS_A_BACKGROUND_JOB}


@pytest.fixture
def tmp() -> Iterator[Path]:
    """The runs' ``TMPDIR``."""
    with tempfile.TemporaryDirectory(prefix="lm-stop-") as folder:
        yield Path(folder)


@pytest.fixture
def runs(tmp: Path) -> Iterator[list[live_bot.LiveBot]]:
    """The runs a test starts: killed at its end if still running, and an embedded Postgres left
    in one of their temporary folders stopped (a failed test leaves nothing running)."""
    started: list[live_bot.LiveBot] = []
    yield started
    for run in started:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()
    for folder in tmp.glob("livememory-*"):
        live_bot.stop_postgres_of(folder)


def _start(runs: list[live_bot.LiveBot], tmp: Path, start: str, *argv: str) -> live_bot.LiveBot:
    return _command(runs, tmp, start, "-m", "memory.eval", "quality", "-v", *argv)


def _command(runs: list[live_bot.LiveBot], tmp: Path, start: str, *argv: str) -> live_bot.LiveBot:
    env = {"TMPDIR": str(tmp)}
    process = subprocess.Popen(
        [sys.executable, "-c", start, *argv],
        env={**cli.environment(), **env},
        cwd=tmp,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    run = live_bot.LiveBot(process=process, env=env, cwd=tmp)
    runs.append(run)
    return run


def _servers(tmp: Path) -> list[int]:
    folders = tmp.glob("livememory-*")
    return [pid for folder in folders if (pid := live_bot.postgres_of(folder)) is not None]


def _stopped_cleanly(
    run: live_bot.LiveBot, tmp: Path, said: str = "interrupted: no results were written\n"
) -> None:
    assert run.wait_exit() == 130, "".join(run.log)
    assert run.log[-1] == said
    assert not any("Traceback" in line for line in run.log), "".join(run.log)
    assert _servers(tmp) == [], "an embedded Postgres of the run is left"
    assert list(tmp.glob("livememory-*")) == [], "a temporary folder is left"
    assert run.out.get(timeout=live_bot.LINE_SECONDS) is None  # no results table


@pytest.mark.parametrize(
    ("start", "signum"),
    [
        ("terminal", signal.SIGINT),
        ("terminal", signal.SIGTERM),
        ("background", signal.SIGTERM),
        ("terminal", signal.SIGHUP),
    ],
)
def test_a_signal_stops_a_run_and_its_embedded_postgres(
    runs: list[live_bot.LiveBot], tmp: Path, start: str, signum: signal.Signals
) -> None:
    run = _start(runs, tmp, STARTS[start], "--sources", "synthetic")
    run.wait_log(lambda line: "embedded Postgres ready" in line, "the embedded Postgres")
    assert len(_servers(tmp)) == 1
    run.process.send_signal(signum)
    _stopped_cleanly(run, tmp)


def test_a_signal_stops_the_worker_processes_of_a_run_with_jobs(
    runs: list[live_bot.LiveBot], tmp: Path
) -> None:
    """LongMemEval with ``--jobs 2``: each worker replays its chunk in a folder of its own; the
    signal goes to the command alone, as ``kill PID`` sends it."""
    data_dir = REPO_ROOT.parent / "shared" / "data"
    if not (data_dir / longmemeval.RELATIVE_PATH).is_file():
        pytest.skip(f"LongMemEval's development part is not in {data_dir}")
    args = ("--sources", "longmemeval", "--longmemeval-first", "8", "--jobs", "2")
    run = _start(runs, tmp, STARTS["terminal"], *args, "--data-dir", str(data_dir))
    for worker in ("a first", "a second"):  # 4 channels each: both are mid-chunk after their first
        run.wait_log(lambda line: "longmemeval 1/4 replayed" in line, f"{worker} worker's channel")
    assert len(_servers(tmp)) == 2
    run.process.send_signal(signal.SIGTERM)
    _stopped_cleanly(run, tmp)
    finished = [line for line in run.log if "longmemeval 4/4 replayed" in line]
    assert finished == [], "a worker replayed its whole chunk: the signal did not reach it"


@pytest.mark.parametrize("start", ["terminal", "background"])
def test_a_signal_stops_a_development_script_and_its_embedded_postgres(
    runs: list[live_bot.LiveBot], tmp: Path, start: str
) -> None:
    """A script of ``scripts/`` that replays a case (``calibrate_floor.py``) stops on SIGTERM as
    the evaluation does (``stopping.run_interrupted``): without it, the signal ended the process
    and left the replay's embedded Postgres running in a folder nobody removes."""
    script = REPO_ROOT / "scripts" / "calibrate_floor.py"
    args = ("-v", "--source", "synthetic", "--embedder", "offline", "--cache", str(tmp / "cache"))
    run = _command(runs, tmp, STARTS[start], str(script), *args)
    run.wait_log(lambda line: "embedded Postgres ready" in line, "the embedded Postgres")
    assert len(_servers(tmp)) == 1
    run.process.send_signal(signal.SIGTERM)
    _stopped_cleanly(run, tmp, said="interrupted\n")
    assert list((tmp / "cache").iterdir()) == [], "an interrupted replay was kept"
