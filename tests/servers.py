"""Servers a fault test owns: a throw-away Postgres cluster and a Redis server on free ports.

The fault tests take these down and bring them back; they never touch the machine's own Postgres
(5432) or Redis (6379). Every process here is started by the test and stopped by its PID.
Postgres refuses to run as root, so as root the cluster runs as the ``postgres`` system user (the
Debian package's; ``.ci/run`` installs it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

from tests import conftest

if TYPE_CHECKING:
    from collections.abc import Iterator

#: how long a server may take to answer after a start (a loaded CI machine is slow)
START_DEADLINE_SECONDS = 30.0


def _missing(what: str) -> NoReturn:
    """Skip locally; fail where the services are required (CI: ``.ci/run`` installs them)."""
    if conftest.REQUIRE_SERVICES:
        pytest.fail(what)
    pytest.skip(what)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
        return True
    return False


def _wait_until(check: object, what: str) -> None:
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)  # polling a server's state with a bounded deadline, not waiting for work
    raise TimeoutError(f"{what} did not come up within {START_DEADLINE_SECONDS:g} s")


def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    if found:
        return found[-1].parent
    which = shutil.which("pg_ctl")
    return Path(which).resolve().parent if which else None


class PostgresServer:
    """A Postgres cluster of the test's own (``initdb`` in a temporary folder, trust auth, no
    fsync), listening on 127.0.0.1:``port``. :meth:`stop` and :meth:`start` take it down and back."""

    def __init__(self) -> None:
        bindir = _postgres_bin()
        if bindir is None:
            _missing("no PostgreSQL server binaries (apt-get install postgresql)")
        self.bindir = bindir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="lm-fault-pg-"))
        self.data = self.root / "data"
        self._as_postgres = hasattr(os, "geteuid") and os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
            self.root.chmod(0o755)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bindir / tool), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
                  "-w", "start")  # fmt: skip
        _wait_until(lambda: _answers(self.port), f"Postgres on port {self.port}")

    def stop(self) -> None:
        """Take the server down now (fast shutdown: connections are cut)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class RedisServer:
    """A ``redis-server`` of the test's own on 127.0.0.1:``port`` (no persistence)."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            _missing("no redis-server (apt-get install redis-server)")
        self.binary = binary
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        _wait_until(lambda: _answers(self.port), f"Redis on port {self.port}")

    def stop(self) -> None:
        """Take the server down now (by the PID this test started)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=30)
            self.proc = None


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.destroy()


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()
