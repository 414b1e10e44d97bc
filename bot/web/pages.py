"""The dashboard's pages: viewers, one viewer (forget / correct), lore (reload with its diff),
the job queue (retry), streams (pause / resume, quiet / unquiet). Editing the lore in the browser:
``bot.web.lore_edit``; the turns: ``bot.web.turns``.

Every change goes through the same operations as ``python -m memory.admin`` (audit row with
``web:<login>``, tombstones, cache invalidation) and is a POST carrying the session's CSRF token,
after a confirmation page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette import responses
from starlette.exceptions import HTTPException

from bot.web import turns
from memory import errors, identity, reply, sql
from memory.adapters import postgres
from memory.consolidate import queue_status
from memory.ops import admin_channel, admin_memory, chat_operations
from memory.spaces import lore

if TYPE_CHECKING:
    from starlette.requests import Request

    from bot.web import site as site_module


def _site(request: Request) -> site_module.Site:
    site: site_module.Site = request.app.state.site
    return site


async def viewers(request: Request) -> responses.Response:
    site = _site(request)
    search = request.query_params.get("q", "").strip() or None
    rows = await admin_channel.list_viewers(site.services.db, site.services.spaces, search, 100)
    return site.render(request, "viewers.html", viewers=rows, q=search or "")


async def viewer(request: Request) -> responses.Response:
    site = _site(request)
    ops = site.services.operations
    found = await ops.resolve_viewer(request.path_params["user_id"])
    held = await ops.export(found)
    origin_ids = [i for m in held["memories"] for i in m.get("origin_message_ids", [])]
    with postgres.wrap_errors("read messages"):
        messages = await site.services.db.pool.fetch(
            sql.queries["memory_turn_messages"], origin_ids
        )
        state = await site.services.db.pool.fetch(sql.queries["web_viewer_state"], found.user_id)
    by_id = {m["id"]: m for m in messages}
    used = [m["id"] for m in held["memories"]] + [e["id"] for e in held["episodes"]]
    return site.render(
        request,
        "viewer.html",
        viewer=found,
        memories=held["memories"],
        sources=by_id,
        profile=held["profile"],
        episodes=held["episodes"],
        state=state,
        recalled_in=await turns.recalled_in(site.services.db, used),
        done=request.query_params.get("done"),
    )


async def memory_action(request: Request) -> responses.Response:
    """GET: the confirmation page of forget / correct; POST: do it."""
    site = _site(request)
    ops = site.services.operations
    action = request.path_params["action"]
    if action not in ("forget", "correct"):
        raise HTTPException(404)
    record = await ops.find(request.path_params["memory_id"])
    if request.method == "GET":
        return site.render(request, "memory_action.html", memory=record, action=action)
    form = await site.checked_form(request)
    actor = site.user(request).actor
    back = f"/viewers/{record.user_id}" if record.user_id else "/viewers"
    if action == "forget":
        await ops.forget_memory(record.id, actor=actor)
        return responses.RedirectResponse(f"{back}?done=forgot", status_code=303)
    await ops.correct(record.id, str(form.get("text", "")), actor=actor)
    return responses.RedirectResponse(f"{back}?done=corrected", status_code=303)


async def lore_page(request: Request) -> responses.Response:
    site = _site(request)
    directory = site.services.settings.lore_dir
    current = await site.services.spaces.list(identity.LORE_KEY, limit=100_000)
    diff = admin_memory.lore_diff(current, lore.read(directory))
    if request.method == "POST":
        await site.checked_form(request)
        count = await site.services.operations.load_lore(directory, actor=site.user(request).actor)
        return responses.RedirectResponse(f"/lore?loaded={count}", status_code=303)
    return site.render(
        request,
        "lore.html",
        entries=sorted(current, key=lambda r: r.text),
        diff=diff,
        changes=len(diff["added"]) + len(diff["removed"]) + len(diff["changed"]),
        directory=directory,
        files=lore.files(directory),
        loaded=request.query_params.get("loaded"),
    )


async def jobs(request: Request) -> responses.Response:
    site = _site(request)
    db = site.services.db
    if request.method == "POST":
        await site.checked_form(request)
        job_id = int(request.path_params["job_id"])
        await queue_status.retry(db, job_id)
        await site.services.operations.audit(site.user(request).actor, "job_retry", str(job_id), {})
        return responses.RedirectResponse(f"/jobs?retried={job_id}", status_code=303)
    return site.render(
        request,
        "jobs.html",
        status=await queue_status.status(db),
        failed=await queue_status.listed(db, "failed", 50),
        retried=request.query_params.get("retried"),
    )


async def streams(request: Request) -> responses.Response:
    """Streams; POST ``pause``/``resume`` (memory writing) or ``quiet``/``unquiet`` (the bot's
    replies: the Postgres switch of chat's ``!quiet``), audited with the moderator's name."""
    site = _site(request)
    ops = site.services.operations
    if request.method == "POST":
        await site.checked_form(request)
        stream, action = request.path_params["stream"], request.path_params["action"]
        actor = site.user(request).actor
        if action == "pause":
            await ops.pause(stream, actor=actor)
        elif action == "resume":
            await ops.resume(stream, actor=actor)
        elif action in ("quiet", "unquiet"):
            switch = reply.ReplyState(site.services.db)
            await chat_operations.set_quiet(ops, switch, stream, action == "quiet", actor=actor)
        else:
            raise HTTPException(404)
        return responses.RedirectResponse("/streams", status_code=303)
    rows = await admin_channel.list_streams(site.services.db, 100)
    return site.render(request, "streams.html", streams=rows)


async def not_found(request: Request, exc: Exception) -> responses.Response:
    """An unknown viewer, memory or job: a page saying so (404), not a traceback."""
    site = _site(request)
    return site.render(request, "error.html", message=str(exc), status_code=404)


#: the domain errors an operator can cause from a page, shown as a 404 page
NOT_FOUND = (
    errors.UnknownViewer,
    errors.UnknownMemory,
    errors.UnknownTurn,
    queue_status.JobError,
    errors.InvalidMemory,
)
