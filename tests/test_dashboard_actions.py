"""The dashboard's other changes, over HTTP with a signed-in moderator: retry a failed job, pause and
resume a stream, make the bot quiet, reload and edit the lore after its diff — each audited with the
moderator's name."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import httpx

from memory import reply
from memory.consolidate import jobs
from tests import test_dashboard as dashboard_tests

if TYPE_CHECKING:
    from config import settings as settings_module
    from memory import runtime

twitch = dashboard_tests.twitch
port = dashboard_tests.port
settings = dashboard_tests.settings
stream = dashboard_tests.stream
dashboard = dashboard_tests.dashboard
lore_dir = dashboard_tests.lore_dir


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


async def test_quiet_toggle_and_lore_edit_over_http(
    dashboard: tuple[str, runtime.Services], settings: settings_module.Settings
) -> None:
    base, services = dashboard
    switch = reply.ReplyState(services.db)
    mascot = settings.lore_dir / "mascot.yaml"
    original = mascot.read_text()
    async with httpx.AsyncClient() as client:
        await dashboard_tests.sign_in(client, base, dashboard_tests.MODERATOR[1])
        token = csrf_of(await client.get(f"{base}/streams"))
        assert (await client.post(f"{base}/streams/s1/quiet", data={})).status_code == 403
        assert not await switch.is_quiet("s1")
        await client.post(f"{base}/streams/s1/quiet", data={"csrf": token})
        assert await switch.is_quiet("s1")
        page = await client.get(f"{base}/streams")
        assert 'action="/streams/s1/unquiet"' in page.text
        await client.post(f"{base}/streams/s1/unquiet", data={"csrf": token})
        assert not await switch.is_quiet("s1")

        await client.post(f"{base}/lore", data={"csrf": token})  # load the files as they are
        edited = original.replace("tiny knitted scarf", "tiny knitted hat")
        field = "file:mascot.yaml"
        preview = await client.post(
            f"{base}/lore/preview", data={"csrf": token, field: edited.replace("\n", "\r\n")}
        )
        assert preview.status_code == 200
        assert "~ replaced: Biscotto" in preview.text and "tiny knitted hat" in preview.text
        assert mascot.read_text() == original  # a preview writes nothing

        broken = await client.post(
            f"{base}/lore/replace", data={"csrf": token, field: "entries: [\n"}
        )
        assert broken.status_code == 400 and "invalid YAML" in broken.text
        escape = await client.post(
            f"{base}/lore/replace", data={"csrf": token, "file:../secrets.md": "## x\ny"}
        )
        assert escape.status_code == 400
        forged = await client.post(f"{base}/lore/replace", data={field: edited})
        assert forged.status_code == 403
        assert mascot.read_text() == original

        done = await client.post(f"{base}/lore/replace", data={"csrf": token, field: edited})
        assert done.headers["location"].startswith("/lore?loaded=")
    assert mascot.read_text() == edited
    lore = await services.spaces.list("lore")
    assert any("tiny knitted hat" in r.text for r in lore)
    assert not any("tiny knitted scarf" in r.text for r in lore)
    audit = await services.db.pool.fetch(
        "SELECT actor, action, target FROM memory_audit ORDER BY id"
    )
    assert [tuple(r) for r in audit] == [
        ("web:modmia", "quiet", "s1"),
        ("web:modmia", "unquiet", "s1"),
        ("web:modmia", "lore_load", "lore"),
        ("web:modmia", "lore_load", "lore"),
    ]
