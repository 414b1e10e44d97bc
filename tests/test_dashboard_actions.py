"""The dashboard's other changes, over HTTP with a signed-in moderator: retry a failed job, pause and
resume a stream, reload the lore after its diff — each audited with the moderator's name."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import httpx

from memory.consolidate import jobs
from tests import test_dashboard as dashboard_tests

if TYPE_CHECKING:
    from memory import runtime

twitch = dashboard_tests.twitch
port = dashboard_tests.port
settings = dashboard_tests.settings
stream = dashboard_tests.stream
dashboard = dashboard_tests.dashboard


def csrf_of(page: httpx.Response) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


async def test_retry_pause_resume_and_lore_reload(
    dashboard: tuple[str, runtime.Services],
) -> None:
    base, services = dashboard
    db = services.db
    await jobs.enqueue(db.pool, "consolidate_turn", "t-bad", {"turn_id": "t-bad"}, 1)
    worker_id = await jobs.register_worker(db, "test")
    job = await jobs.claim(db, worker_id)
    assert job is not None
    await jobs.fail(db, job.id, worker_id, "boom: the turn is gone")
    async with httpx.AsyncClient() as client:
        await dashboard_tests.sign_in(client, base, dashboard_tests.MODERATOR[1])
        page = await client.get(f"{base}/jobs")
        assert "boom: the turn is gone" in page.text and "<strong>failed</strong> 1" in page.text
        token = csrf_of(page)
        retried = await client.post(f"{base}/jobs/{job.id}/retry", data={"csrf": token})
        assert retried.headers["location"] == f"/jobs?retried={job.id}"
        again = await jobs.get(db, job.id)
        assert again is not None and again.status is jobs.JobStatus.TODO

        paused = await client.post(f"{base}/streams/s1/pause", data={"csrf": token})
        assert paused.status_code == 303 and await services.operations.is_paused("s1")
        page = await client.get(f"{base}/streams")
        assert "paused" in page.text and 'action="/streams/s1/resume"' in page.text
        await client.post(f"{base}/streams/s1/resume", data={"csrf": token})
        assert not await services.operations.is_paused("s1")

        lore = await client.get(f"{base}/lore")
        assert "Replace the lore with these files" in lore.text  # nothing loaded yet: all added
        reloaded = await client.post(f"{base}/lore", data={"csrf": token})
        assert reloaded.headers["location"].startswith("/lore?loaded=")
        lore = await client.get(f"{base}/lore")
        assert "nothing to reload" in lore.text
    audit = await db.pool.fetch("SELECT actor, action FROM memory_audit ORDER BY id")
    assert [tuple(r) for r in audit] == [
        ("web:modmia", "job_retry"),
        ("web:modmia", "pause"),
        ("web:modmia", "resume"),
        ("web:modmia", "lore_load"),
    ]
