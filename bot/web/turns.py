"""The dashboard's turn view: why the bot said what it said, or why it stayed silent.

A turn shows the chat lines it answered (who said what), the plan (viewers, scores, signals,
sources), what was recalled in the order the prompt carries it (source, viewer, text, when it was
said: the prompt's own label and the memory's chat time), the reply or the reason it stayed silent,
and the timings as a bar per source. Everything comes from the transcript: the turn's journaled
report and the messages it answered. Viewers link to their page; a viewer's page links each memory
to the turns that recalled it (``recalled_in``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory import errors, identity, models, sql
from memory.adapters import postgres
from memory.history import transcript
from memory.recall import context, timelabel

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from starlette import responses
    from starlette.requests import Request

    from bot.web import site as site_module

#: turns on the list page
LIST_LIMIT = 30
#: turns a viewer's memory links to (the newest)
RECALLED_IN_LIMIT = 5
#: timing keys that are stages of the turn, not sources, in the order shown
STAGES = (("memory_total", "memory stage"), ("model", "model"), ("turn_total", "whole turn"))
#: why the model gave no reply (a ``model`` entry of ``degraded``), in words
MODEL_MISSES = {
    "no_text": "the model answered no text",
    "timeout": "the model did not answer within the reply timeout",
}
#: why a turn stayed silent (``memory.reply``), in words
SILENT_REASONS = {
    "not_addressed": "nobody addressed the bot",
    "viewer_cooldown": "the viewer was answered moments ago",
    "quiet": "the channel is quiet (!quiet)",
    "ambient_interval": "it spoke unprompted too recently",
}
SECTION_TITLES = dict(context.SECTIONS)


@dataclass(frozen=True, slots=True, kw_only=True)
class Recalled:
    """One recalled memory, at its place in the prompt's memory block."""

    item: models.RecallItem
    #: the prompt section it is shown in
    section: str
    #: the viewer's user id (None: stream-wide, or a login the transcript never saw)
    user_id: str | None
    #: when it was said, as the prompt labels it ("earlier this stream", "3 weeks ago")
    when: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    name: str
    ms: float
    #: the bar's length, in percent of the turn's longest timing
    width: float
    #: why the source is missing from the prompt (``timeout``, ``error``, ``budget``), if it is
    degraded: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnView:
    id: str
    stream: str
    status: str
    created_at: datetime
    report: Mapping[str, Any]
    reply: str | None
    error: str | None
    #: the chat lines the turn answered, in order
    lines: tuple[models.ChatEvent, ...]
    recalled: tuple[Recalled, ...]
    #: a bar per source (planned ones in plan order), and per stage (memory, model, whole turn)
    sources: tuple[Timing, ...]
    stages: tuple[Timing, ...]
    #: login -> user id of every viewer the turn involves (its chat, plan and recall)
    viewers: Mapping[str, str]

    def user_id_of(self, login: str) -> str | None:
        """The user id of a viewer the turn involves (None: a login the transcript never saw)."""
        return self.viewers.get(identity.normalize_login(login))

    @property
    def command(self) -> str | None:
        command: str | None = self.report.get("command")
        return command

    @property
    def reason(self) -> str | None:
        reason: str | None = self.report.get("reason")
        return reason

    @property
    def no_reply(self) -> str:
        """Why a turn that asked the model has no reply, in words."""
        for degraded in self.report.get("degraded") or ():
            if degraded.get("source") == "model":
                return MODEL_MISSES.get(degraded.get("reason"), degraded.get("reason") or "")
        return "the bot ran without a model (--no-llm); the prompt stood in"

    @property
    def silent_reason(self) -> str:
        return SILENT_REASONS.get(self.reason or "", self.reason or "no reason recorded")

    @property
    def plan(self) -> Mapping[str, Any]:
        plan: Mapping[str, Any] = self.report.get("plan") or {}
        return plan

    @property
    def degraded(self) -> list[Mapping[str, str]]:
        return list(self.report.get("degraded") or [])


def _report(value: Any) -> dict[str, Any]:
    report = json.loads(value) if isinstance(value, str) else value
    return report if isinstance(report, dict) else {}


def timings(report: Mapping[str, Any]) -> tuple[tuple[Timing, ...], tuple[Timing, ...]]:
    """The per-source bars (planned sources first, in plan order) and the stage bars, all on one
    scale: the longest of them (the whole turn, when it was measured) is the full width."""
    measured: dict[str, float] = {k: float(v) for k, v in (report.get("timings_ms") or {}).items()}
    longest = max(measured.values(), default=0.0)
    degraded = {d["source"]: d["reason"] for d in report.get("degraded") or []}

    def bar(key: str, name: str) -> Timing:
        width = 100 * measured[key] / longest if longest else 0.0
        return Timing(name=name, ms=measured[key], width=width, degraded=degraded.get(key))

    stages = {key for key, _ in STAGES}
    planned = [
        f"{s['kind']}:{s['viewer']}" if s.get("viewer") else s["kind"]
        for s in (report.get("plan") or {}).get("sources", [])
    ]
    order = [k for k in planned if k in measured]
    order += [k for k in measured if k not in stages and k not in order]
    return (
        tuple(bar(k, k) for k in order),
        tuple(bar(k, name) for k, name in STAGES if k in measured),
    )


def _recall_items(report: Mapping[str, Any]) -> list[models.RecallItem]:
    return [models.RecallItem.from_json(item) for item in report.get("recall") or []]


async def _viewer_ids(db: postgres.Database, logins: set[str]) -> dict[str, str]:
    if not logins:
        return {}
    with postgres.wrap_errors("read viewers"):
        rows = await db.pool.fetch(sql.queries["web_viewer_ids"], sorted(logins))
    return {row["login"]: row["user_id"] for row in rows}


async def views(db: postgres.Database, rows: Sequence[postgres.Record]) -> list[TurnView]:
    """The view of each turn row (``web_recent_turns`` / ``web_turn``), with its chat lines and
    the user ids of the viewers it names: two queries for all of them."""
    reports = [_report(row["report"]) for row in rows]
    ids = sorted({i for row in rows for i in row["message_ids"]})
    by_id = {event.id: event for event in await transcript.Transcript(db).messages(ids)}
    known: dict[str, str] = {}
    for line in by_id.values():
        known.setdefault(identity.normalize_login(line.login), line.user_id)
    for report in reports:
        for viewer in (report.get("plan") or {}).get("viewers", []):
            known.setdefault(identity.normalize_login(viewer["login"]), viewer["user_id"])
    recalled = [_recall_items(report) for report in reports]
    named = {identity.normalize_login(i.viewer) for items in recalled for i in items if i.viewer}
    known |= await _viewer_ids(db, named - known.keys())
    return [
        _view(row, report, items, by_id, known)
        for row, report, items in zip(rows, reports, recalled, strict=True)
    ]


def _view(
    row: postgres.Record,
    report: Mapping[str, Any],
    items: Sequence[models.RecallItem],
    by_id: Mapping[str, models.ChatEvent],
    known: Mapping[str, str],
) -> TurnView:
    lines = tuple(by_id[i] for i in row["message_ids"] if i in by_id)
    # the turn's chat time, as the prompt's time labels had it: its newest message
    clock = timelabel.ChatClock(
        now=timelabel.newest([line.ts for line in lines] or [row["created_at"]]),
        stream=row["stream"],
    )
    recalled = tuple(
        Recalled(
            item=item,
            section=SECTION_TITLES.get(context.SECTION_OF.get(item.source, item.source), ""),
            user_id=known.get(identity.normalize_login(item.viewer)) if item.viewer else None,
            when=timelabel.label(item, clock),
        )
        for item in items
    )
    logins = [line.login for line in lines]
    logins += [v["login"] for v in (report.get("plan") or {}).get("viewers", [])]
    logins += [i.viewer for i in items if i.viewer]
    involved = {
        identity.normalize_login(login): known[identity.normalize_login(login)]
        for login in logins
        if identity.normalize_login(login) in known
    }
    sources, stages = timings(report)
    return TurnView(
        id=row["id"],
        stream=row["stream"],
        status=row["status"],
        created_at=row["created_at"],
        report=report,
        reply=row["reply"],
        error=row["error"],
        lines=lines,
        recalled=recalled,
        sources=sources,
        stages=stages,
        viewers=involved,
    )


async def recalled_in(db: postgres.Database, memory_ids: Sequence[str]) -> dict[str, list[str]]:
    """memory id -> the newest turns (ids) whose recall carried it."""
    if not memory_ids:
        return {}
    with postgres.wrap_errors("read turns"):
        rows = await db.pool.fetch(
            sql.queries["web_memory_turns"], list(memory_ids), RECALLED_IN_LIMIT
        )
    found: dict[str, list[str]] = {}
    for row in rows:
        found.setdefault(row["memory_id"], []).append(row["turn_id"])
    return found


def _site(request: Request) -> site_module.Site:
    site: site_module.Site = request.app.state.site
    return site


async def turn_list(request: Request) -> responses.Response:
    """The newest turns (of one stream with ``?stream=``), each in full."""
    site = _site(request)
    stream = request.query_params.get("stream") or None
    db = site.services.db
    with postgres.wrap_errors("read turns"):
        rows = await db.pool.fetch(sql.queries["web_recent_turns"], LIST_LIMIT, stream)
    shown = await views(db, rows)
    return site.render(request, "turns.html", turns=shown, stream=stream or "")


async def turn_page(request: Request) -> responses.Response:
    site = _site(request)
    turn_id = request.path_params["turn_id"]
    db = site.services.db
    with postgres.wrap_errors("read turn"):
        row = await db.pool.fetchrow(sql.queries["web_turn"], turn_id)
    if row is None:
        raise errors.UnknownTurn(f"unknown turn {turn_id!r}")
    [shown] = await views(db, [row])
    return site.render(request, "turn.html", turn=shown)
