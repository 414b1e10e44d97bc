"""The embedded Postgres started ahead (``pg_embedded.start_early``): taken once, started once;
stopped at exit without pg_ctl's 100 ms polls (``pg_embedded._quick_stop``)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

import pytest

from memory.adapters import pg_embedded

if TYPE_CHECKING:
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


#: a fresh interpreter that starts the embedded Postgres of a folder and exits (the wheel stops the
#: server at exit, the last process using it); the wheel's commands are logged to stderr
_START_AND_EXIT = (
    "import logging, sys\n"
    "from pathlib import Path\n"
    "logging.basicConfig(level=logging.INFO, stream=sys.stderr)\n"
    "from memory.adapters import pg_embedded\n"
    "print(pg_embedded.start_embedded(Path(sys.argv[1])))\n"
)


def test_the_server_is_stopped_at_exit_by_watching_its_lock_file(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    for _ in range(2):  # the second start finds the folder as the first stop left it
        done = subprocess.run(
            [sys.executable, "-c", _START_AND_EXIT, str(tmp_path)],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.startswith("postgresql://")
        assert "'-W', 'stop'" in done.stderr  # the quick stop, not pg_ctl's 100 ms polls
        assert "'-w', 'stop'" not in done.stderr
        assert not (tmp_path / "postgres" / "postmaster.pid").exists()  # gone when it exited


class _Wheel:
    """The wheel's module as ``_quick_stop`` sees it: a ``pg_ctl`` that records its calls."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

        def pg_ctl(args: list[str], pgdata: Path | None = None, **kwargs: object) -> str:
            self.calls.append(list(args))
            return "ok"

        self.pg_ctl = pg_ctl


def test_a_server_that_does_not_stop_in_time_is_a_failed_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = _Wheel()
    pg_embedded._quick_stop(wheel)  # type: ignore[arg-type]
    pg_embedded._quick_stop(wheel)  # type: ignore[arg-type]  # once only
    assert wheel.pg_ctl(["-w", "start"], pgdata=tmp_path) == "ok"  # other commands as they were
    assert wheel.pg_ctl(["-w", "stop"], pgdata=tmp_path) == "ok"  # no lock file: stopped
    (tmp_path / "postmaster.pid").write_text(f"{os.getpid()}\n", encoding="utf-8")  # a live one
    monkeypatch.setattr(pg_embedded, "STOP_TIMEOUT_SECONDS", 0.05)
    with pytest.raises(subprocess.CalledProcessError):  # the wheel then kills the server
        wheel.pg_ctl(["-w", "stop"], pgdata=tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "postmaster.pid").write_text(f"{dead.pid}\n", encoding="utf-8")
    monkeypatch.setattr(pg_embedded, "STOP_TIMEOUT_SECONDS", 60.0)
    assert wheel.pg_ctl(["-w", "stop"], pgdata=tmp_path) == "ok"  # killed before it removed it
    assert wheel.calls == [["-w", "start"], ["-W", "stop"], ["-W", "stop"], ["-W", "stop"]]


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
