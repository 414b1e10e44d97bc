"""Retention: texts older than ``settings.retention.max_age_days`` are purged.

Off by default. When set, a ``retention`` job runs on the Postgres job queue once per
``interval_seconds`` (one job per interval: its dedupe key is the interval's number, so several bot
and worker processes schedule it once); each run schedules the next. A run purges, with the chat
time of the cutoff:

- personal and episodic memories (embedded Qdrant vacuumed after) and profile facts stated before it;
- message texts, the replies, reports and tool calls of the turns that ended before it, and the
  history summaries of the streams whose texts went — through the audited ``erase_before`` function
  (texts become ``[erased]``; an ``erasures`` row with the cutoff and the counts);
- the cached retrieval results of the kinds touched.

Each run writes a ``memory_audit`` row (action ``retention``: cutoff and counts, never a text).
Redis working-history lists expire on their own (``settings.redis.history_ttl_seconds``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory import models, sql
from memory.adapters import postgres
from memory.consolidate import consolidation

if TYPE_CHECKING:
    from config.settings import Settings
    from memory.consolidate import jobs
    from memory.ops import operations
    from memory.spaces import records

logger = logging.getLogger(__name__)

JOB_KIND = "retention"
ACTOR = "retention"
#: the memory spaces retention purges (lore is the streamer's, kept)
PURGED_PREFIXES = ("viewer:", "stream:")


@dataclass(frozen=True, slots=True, kw_only=True)
class RetentionReport:
    cutoff: datetime
    #: memories deleted from personal / episodic spaces
    personal: int
    episodic: int
    profile_facts: int
    #: the transcript counts of ``erase_before`` (messages, turns, tool_calls, summaries)
    erased: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "cutoff": self.cutoff.isoformat(),
            "personal": self.personal,
            "episodic": self.episodic,
            "profile_facts": self.profile_facts,
            **self.erased,
        }


def _when(record: records.MemoryRecord) -> datetime:
    """A memory's age is the chat time of its newest message (its creation time without one)."""
    return record.last_ts or record.first_ts or record.created_at


async def purge(
    ops: operations.Operations, cutoff: datetime, *, actor: str = ACTOR
) -> RetentionReport:
    """Purge everything older than ``cutoff`` (chat time); audited. Idempotent."""
    spaces = ops.spaces
    deleted = {"viewer:": 0, "stream:": 0}
    touched: list[str] = []
    users: set[str] = set()
    for space in await spaces.spaces():
        kind = next((p for p in PURGED_PREFIXES if space.startswith(p)), None)
        if kind is None:
            continue
        old = [
            r for r in await spaces.list(space, limit=consolidation.LIST_LIMIT) if _when(r) < cutoff
        ]
        if old:
            deleted[kind] += await spaces.delete(space, [r.id for r in old])
            touched.append(space)
            users.update(r.user_id for r in old if r.user_id)
    await spaces.vacuum(touched)
    with postgres.wrap_errors("retention"):
        rows = await ops.db.pool.fetch(sql.queries["erasure_profiles_before"], cutoff)
        erased = json.loads(
            await ops.db.pool.fetchval(sql.queries["erasure_before"], cutoff, actor)
        )
    users.update(row["user_id"] for row in rows)
    report = RetentionReport(
        cutoff=cutoff,
        personal=deleted["viewer:"],
        episodic=deleted["stream:"],
        profile_facts=len(rows),
        erased={k: int(v) for k, v in erased.items()},
    )
    for user_id in sorted(users):
        await ops.invalidator.invalidate_viewer(user_id)
    drop = getattr(ops.invalidator, "invalidate_kind", None)
    if drop is not None:
        await drop("episodic")
    await ops.audit(actor, "retention", "all", report.to_json())
    return report


def cutoff_of(settings: Settings, now: datetime | None = None) -> datetime | None:
    """The chat time before which texts go now; None while retention is off."""
    days = settings.retention.max_age_days
    if days is None:
        return None
    return (now or models.utcnow()) - timedelta(days=days)


def _bucket(settings: Settings, now: datetime) -> int:
    return int(now.timestamp() // settings.retention.interval_seconds)


async def schedule(
    db: postgres.Database, settings: Settings, *, now: datetime | None = None, ahead: int = 0
) -> int | None:
    """Put the retention run of the current interval (+ ``ahead``) on the job queue, due at the
    interval's start; None when it is there already (or retention is off)."""
    if settings.retention.max_age_days is None:
        return None
    bucket = _bucket(settings, now or models.utcnow()) + ahead
    due = datetime.fromtimestamp(bucket * settings.retention.interval_seconds, UTC)
    with postgres.wrap_errors("schedule retention"):
        job_id: int | None = await db.pool.fetchval(
            sql.queries["retention_schedule"],
            JOB_KIND,
            f"retention:{bucket}",
            json.dumps({"interval": bucket}),
            settings.worker.max_attempts,
            due,
        )
    return job_id


async def start(db: postgres.Database, settings: Settings) -> None:
    """At start-up (bot, worker): make sure this interval's run and the next are scheduled."""
    if settings.retention.max_age_days is None:
        return
    await schedule(db, settings)
    await schedule(db, settings, ahead=1)
    logger.info(
        "retention on: texts older than %s days are purged every %s s",
        settings.retention.max_age_days,
        settings.retention.interval_seconds,
        extra={"action": "retention_start"},
    )


def make_handler(ops: operations.Operations, settings: Settings) -> jobs.Handler:
    """The ``retention`` job handler: purge now, then schedule the next interval's run."""

    async def handle(job: jobs.Job) -> None:
        cutoff = cutoff_of(settings)
        if cutoff is not None:
            report = await purge(ops, cutoff)
            logger.info(
                "retention: purged before %s: %s",
                cutoff.isoformat(),
                report.to_json(),
                extra={"action": "retention"},
            )
        await schedule(ops.db, settings, ahead=1)

    return handle
