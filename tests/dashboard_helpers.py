"""Small helpers shared by the dashboard and start-up tests."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port nothing listens on right now (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
