"""The embedded Postgres started ahead (``pg_embedded.start_early``): taken once, started once."""

from __future__ import annotations

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
