"""The embedded Postgres (``pg_embedded``): started ahead (``start_early``), taken once, started
once; stopped by the last live process using it, whatever became of the others: a
server a crash left is adopted and stopped, a pid is only a label (the users' locks decide), a
stale ``postmaster.pid`` of a reused pid does not pass for a server. Real servers, real processes;
each test's folder is its own, and what a failed test leaves on it is stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

import pytest

from memory.adapters import pg_embedded
from tests import live_bot

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def test_a_start_begun_early_is_taken_once_with_its_dsn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[tuple[Path, str]] = []

    def start(data_dir: Path) -> str:
        started.append((data_dir, threading.current_thread().name))
        return f"postgresql://embedded/{data_dir.name}"

    monkeypatch.setattr(pg_embedded, "start_embedded", start)
    pg_embedded.start_early(tmp_path)
    pg_embedded.start_early(tmp_path / ".")  # the same folder: not started again
    early = pg_embedded.take_early(tmp_path)
    assert early is not None
    assert early.result(timeout=5) == f"postgresql://embedded/{tmp_path.name}"
    assert started == [(tmp_path.resolve(), "embedded-postgres-start")]
    assert pg_embedded.take_early(tmp_path) is None  # taken: open_database starts it itself


def test_a_failed_early_start_is_raised_where_it_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def start(data_dir: Path) -> str:
        raise OSError("initdb failed")

    monkeypatch.setattr(pg_embedded, "start_embedded", start)
    pg_embedded.start_early(tmp_path)
    early = pg_embedded.take_early(tmp_path)
    assert early is not None
    with pytest.raises(OSError, match="initdb failed"):
        early.result(timeout=5)


#: a fresh interpreter that uses the embedded Postgres of a folder (``argv[1]``): it prints the DSN,
#: then (``argv[2]`` = ``wait``) waits until its standard input closes, and exits; the log to stderr
_USER = (
    "import logging, sys\n"
    "from pathlib import Path\n"
    "logging.basicConfig(level=logging.INFO, stream=sys.stderr, format='%(message)s')\n"
    "from memory.adapters import pg_embedded\n"
    "print(pg_embedded.start_embedded(Path(sys.argv[1])), flush=True)\n"
    "if sys.argv[2:] == ['wait']:\n"
    "    sys.stdin.read()\n"
)


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}


def _use(folder: Path) -> subprocess.CompletedProcess[str]:
    """A process that starts (or takes) the folder's server and exits."""
    done = subprocess.run(
        [sys.executable, "-c", _USER, str(folder)],
        env=_environment(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("postgresql://")
    return done


def _user(folder: Path) -> subprocess.Popen[str]:
    """A process that uses the folder's server until its standard input closes (returned once
    it printed the DSN: the server is ready)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _USER, str(folder), "wait"], env=_environment(),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("postgresql://"), proc.stderr
    return proc


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A data folder of this test's own; whatever server a failed test left on it is stopped."""
    data = tmp_path / "data"
    yield data
    live_bot.stop_postgres_of(data)


def test_the_server_is_stopped_when_its_only_user_exits(folder: Path) -> None:
    for _ in range(2):  # the second start finds the folder as the first stop left it
        done = _use(folder)
        assert "embedded Postgres stopped in" in done.stderr
        assert "adopted" not in done.stderr
        assert not (folder / "postgres" / "postmaster.pid").exists()  # gone when it exited
        assert list((folder / pg_embedded.USERS).glob("*.lock")) == []


def test_a_live_user_keeps_the_server_and_the_last_one_stops_it(folder: Path) -> None:
    first = _user(folder)
    try:
        server = live_bot.postgres_of(folder)
        assert server is not None
        second = _use(folder)  # starts nothing, and leaves the server to the first
        assert f"keeps running: pid {first.pid} of this data folder uses it" in second.stderr
        assert live_bot.postgres_of(folder) == server
    finally:
        _, err = first.communicate(timeout=120)  # its stdin closed: it ends its use and exits
    assert first.returncode == 0, err
    assert "embedded Postgres stopped in" in err
    assert live_bot.postgres_of(folder) is None


def test_a_server_a_crash_left_is_adopted_and_stopped_and_pids_are_only_labels(
    folder: Path,
) -> None:
    """``kill -9`` of the only user leaves its server running; the next process adopts it and
    stops it at its exit. A lock file whose pid now belongs to another live process (pid 1, here)
    but whose lock nobody holds is a dead user's: pid reuse does not keep a server running."""
    crashed = _user(folder)
    crashed.kill()
    crashed.wait(timeout=30)
    server = live_bot.postgres_of(folder)
    assert server is not None  # what a crash leaves
    (folder / pg_embedded.USERS / "1.lock").write_text("1 init, not ours\n")
    done = _use(folder)
    assert (
        f"the embedded Postgres left by pid 1, {crashed.pid} was adopted; it will stop when "
        "this bot exits"
    ) in done.stderr.splitlines()
    assert f"the embedded Postgres left by pid 1, {crashed.pid} stopped" in done.stderr
    assert live_bot.postgres_of(folder) is None
    assert list((folder / pg_embedded.USERS).glob("*.lock")) == []


def test_a_stale_postmaster_pid_naming_a_reused_pid_does_not_pass_for_a_server(
    folder: Path,
) -> None:
    """A crash of the server itself leaves ``postmaster.pid``; when its pid now names another
    process (this test's, here), the next start starts a server instead of taking that process
    for one."""
    _use(folder)  # the folder made, its server stopped
    stale = folder / "postgres" / "postmaster.pid"
    stale.write_text(f"{os.getpid()}\n{folder / 'postgres'}\n1700000000\n5432\n\n\n0 0\nready\n")
    done = _use(folder)
    assert "not its server: a stale file, removed" in done.stderr
    assert "adopted" not in done.stderr
    assert live_bot.postgres_of(folder) is None


def test_a_server_that_does_not_stop_in_time_gets_an_immediate_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop signals the server and watches its lock file; a server still there after the
    timeout is sent SIGQUIT (Postgres's immediate shutdown)."""
    sent: list[int] = []
    lock = tmp_path / "postmaster.pid"
    lock.write_text(f"{os.getpid()}\n", encoding="utf-8")  # a live process: it "runs"

    def kill(pid: int, signum: int) -> None:
        if signum == 0:  # is it alive? (this process: yes)
            return
        sent.append(signum)
        if signum == signal.SIGQUIT:
            lock.unlink()  # gone at once

    monkeypatch.setattr(os, "kill", kill)
    pg_embedded._stop(12345, tmp_path, timeout=0.05)
    assert sent == [signal.SIGINT, signal.SIGQUIT]


#: a fresh interpreter that starts the embedded Postgres in an evaluation's temporary data folder,
#: leaves the folder (removed) and exits
_TEMPORARY_AND_EXIT = (
    "from memory.adapters import pg_embedded\n"
    "from memory.eval import harness\n"
    "with harness.temporary_data_dir('lm-stop-') as tmp:\n"
    "    pg_embedded.start_embedded(tmp)\n"
    "    print(tmp, flush=True)\n"
)


def _servers_of(folder: str) -> list[int]:
    """The processes whose command line names ``folder`` (a Postgres started there)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                    if folder.encode() in handle.read():
                        found.append(int(entry.name))
            except OSError:  # gone meanwhile
                continue
    return found


def test_a_server_started_in_a_temporary_folder_is_stopped_before_the_folder_goes() -> None:
    """The wheel lists the processes using a server in its data folder: with the folder removed
    first, its stop at exit found none and left the server running (three a quality gate)."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "-c", _TEMPORARY_AND_EXIT],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    folder = done.stdout.strip()
    assert folder and not os.path.exists(folder)
    left = _servers_of(folder)
    for pid in left:  # this test's own server: never leave it running
        os.kill(pid, 15)
    assert left == []
