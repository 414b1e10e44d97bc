"""Inspect, export, forget and correct memories; pause memory writing; every change audited.

These are the operations the admin CLI (``python -m memory.admin``) and the chat commands
call, with an ``actor`` naming who acts (``admin:cli``, ``twitch:<login>``). Authorisation is the
caller's job; ``owner=`` lets a chat command restrict an operation to the viewer's own memories.

Every change writes a ``memory_audit`` row and calls the cache-invalidation hook for each viewer
involved. What was forgotten is tombstoned so a retried or replayed consolidation does not bring it
back. Unknown viewers, memories and turns raise ``errors.UnknownViewer`` / ``UnknownMemory`` /
``UnknownTurn`` before anything changes.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory import errors, identity, models, sql
from memory.adapters import postgres
from memory.consolidate import consolidation, documents, marks, viewer_lock
from memory.consolidate import profile as profile_module
from memory.ops import erasure
from memory.spaces import lore, records
from memory.spaces import store as spaces

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path

    from memory import ports

logger = logging.getLogger(__name__)

#: kinds a viewer's personal space holds
PERSONAL_KINDS = frozenset(
    {records.MemoryKind.PERSONAL, records.MemoryKind.FACT, records.MemoryKind.CORRECTION}
)
REDACTED = erasure.REDACTED


@dataclass(frozen=True, slots=True, kw_only=True)
class Viewer:
    user_id: str
    login: str
    display_name: str | None = None


def ambiguity(named: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """``'alice' names 2 viewers: user 1001 ('alice', seen 2026-11-20), user 2003 ('ALICE', …)``:
    each login as last seen in chat, invisible characters escaped."""
    candidates = ", ".join(
        f"user {row['user_id']} ({row['seen_as'] or row['login']!r}, seen {row['last_seen']:%Y-%m-%d})"
        for row in rows
    )
    return f"{named!r} names {len(rows)} viewers: {candidates}; name one by user id"


@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetReport:
    """What ``forget_viewer`` removed."""

    user_id: str
    memories: int
    profile_facts: int
    #: what the erasure changed everywhere else (``everywhere`` only)
    erased: erasure.Erasure | None = None

    @property
    def episodes_redacted(self) -> int:
        return self.erased.episodes_redacted if self.erased else 0

    @property
    def episodes_deleted(self) -> int:
        return self.erased.episodes_deleted if self.erased else 0

    @property
    def messages_redacted(self) -> int:
        """Transcript message texts erased (``everywhere`` only)."""
        return self.erased.counts.get("messages", 0) if self.erased else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "memories": self.memories,
            "profile_facts": self.profile_facts,
            "episodes_redacted": self.episodes_redacted,
            "episodes_deleted": self.episodes_deleted,
            "messages_redacted": self.messages_redacted,
            "erased": self.erased.to_json() if self.erased else None,
        }


def record_json(record: records.MemoryRecord) -> dict[str, Any]:
    """A memory with its provenance, JSON-ready (``inspect --json``, ``export``)."""
    data = spaces.to_payload(record)
    del data["schema"]  # a storage detail
    return data


class Operations:
    """The memory operations, over Postgres (profiles, audit, tombstones) and the memory spaces."""

    def __init__(
        self,
        db: postgres.Database,
        spaces: ports.MemorySpaces,
        *,
        invalidator: consolidation.CacheInvalidator | None = None,
        profiles: profile_module.ProfileStore | None = None,
        history: ports.WorkingHistory | None = None,
        preview_window: int | None = None,
    ) -> None:
        self.db = db
        self.spaces = spaces
        self.invalidator = invalidator or consolidation.NoCache()
        self.profiles = profiles or profile_module.ProfileStore(db)
        self.eraser = erasure.Eraser(
            db,
            spaces,
            history=history,
            invalidator=self.invalidator,
            preview_window=preview_window,
        )

    # -- reading ---------------------------------------------------------------------------
    async def resolve_viewer(self, login_or_id: str) -> Viewer:
        """The one viewer with that login (normalized) or, failing that, that user id.

        Raises ``errors.AmbiguousViewer`` listing the candidates (user id, login as last seen,
        last seen) when several viewers' logins normalise alike — it never picks one."""
        key = identity.normalize_login(login_or_id)
        with postgres.wrap_errors("read viewer"):
            rows = (
                await self.db.pool.fetch(sql.queries["memory_viewers_by_login"], key) if key else []
            )
        if len(rows) > 1:
            raise errors.AmbiguousViewer(
                ambiguity(login_or_id, rows),
                viewer=login_or_id,
                candidates=[row["user_id"] for row in rows],
            )
        if rows:
            row = rows[0]
            return Viewer(
                user_id=row["user_id"], login=row["login"], display_name=row["display_name"]
            )
        return await self.viewer_by_id(login_or_id, named=login_or_id)

    async def viewer_by_id(self, user_id: str, *, named: str | None = None) -> Viewer:
        """The viewer with that stable user id (``--user-id``): never a login lookup."""
        with postgres.wrap_errors("read viewer"):
            row = await self.db.pool.fetchrow(sql.queries["memory_viewer_by_id"], user_id)
        if row is None:
            what = f"unknown viewer {named!r}" if named else f"unknown user id {user_id!r}"
            raise errors.UnknownViewer(what, viewer=named or user_id)
        return Viewer(user_id=row["user_id"], login=row["login"], display_name=row["display_name"])

    async def inspect(self, user_id: str) -> list[records.MemoryRecord]:
        """A viewer's personal memories (oldest first)."""
        records = await self.spaces.list(identity.personal_key(user_id))
        return sorted(records, key=lambda r: (r.first_ts or r.created_at, r.id))

    async def export(self, viewer: Viewer) -> dict[str, Any]:
        """Everything held about a viewer: personal memories, profile, episodes they took part in,
        and the channel-state rows about them (notes, requests, relationships, inside jokes)."""
        memories = await self.inspect(viewer.user_id)
        profile = await self.profiles.get(viewer.user_id)
        episodes = [record_json(r) for r in await self._episodes_with(viewer.user_id)]
        with postgres.wrap_errors("read state"):
            rows = await self.db.pool.fetch(sql.queries["erasure_state_about"], viewer.user_id)
        state: dict[str, list[Any]] = {
            "notes": [],
            "requests": [],
            "relationships": [],
            "inside_jokes": [],
        }
        for row in rows:
            state[row["kind"]].append(json.loads(row["row"]))
        return {
            "viewer": {
                "user_id": viewer.user_id,
                "login": viewer.login,
                "display_name": viewer.display_name,
            },
            "memories": [record_json(r) for r in memories],
            "profile": profile.to_json() if profile else None,
            "episodes": episodes,
            "state": state,
        }

    async def find(self, memory_id: str, *, owner: str | None = None) -> records.MemoryRecord:
        """A memory by id (``owner``: it must be that viewer's); ``errors.UnknownMemory`` else."""
        where = [identity.personal_key(owner)] if owner is not None else None
        record = await self.spaces.find(memory_id, spaces=where)
        if record is None or (owner is not None and record.user_id != owner):
            raise errors.UnknownMemory(f"unknown memory {memory_id!r}", memory_id=memory_id)
        return record

    async def search_own(
        self, user_id: str, text: str, *, limit: int = 3
    ) -> list[records.MemoryHit]:
        """A viewer's memories closest to ``text`` (for "forget what I said about …"; superseded
        ones too: they are erasable like any memory)."""
        return await self.spaces.search(
            identity.personal_key(user_id),
            text,
            limit=limit,
            kinds=PERSONAL_KINDS,
            include_superseded=True,
        )

    # -- forgetting ------------------------------------------------------------------------
    async def forget_memory(
        self, memory_id: str, *, actor: str, owner: str | None = None
    ) -> records.MemoryRecord:
        """Delete one memory (and the facts condensed from it, and the profile facts derived from
        them); tombstoned first, under the viewer lock, so no consolidation writes them back."""
        record = await self.find(memory_id, owner=owner)
        async with viewer_lock.hold(self.db, lock_ids(record)) as conn:
            doomed = [record.id, *(r.id for r in await self._condensed_from(record))]
            await self._tombstone("memory", *doomed, conn=conn)
            await self.spaces.delete(record.space, doomed)
            await self._drop_threads([record.space], record.origin_message_ids)
            await self.profiles.delete_memories(doomed)
            await marks.apply(  # the marks it set go
                self.spaces, self.db, record.space, actor=actor, profiles=self.profiles
            )
        await self.audit(actor, "forget_memory", record.id, {"space": record.space})
        await self._invalidate([record.user_id] if record.user_id else [], record.space)
        return record

    async def _drop_threads(self, spaces_: Iterable[str], message_ids: Iterable[str]) -> int:
        """Re-index, without it, every memory of ``spaces_`` embedded with one of ``message_ids``
        as the thread it continues (``MemoryRecord.context_thread``: the author's message before
        the question a reply answers, the same viewer's space); returns how many."""
        gone = set(message_ids)
        dropped = 0
        for space in spaces_:
            dropped += await erasure.reindex_without(
                self.spaces, space, lambda record: record.context_thread_id in gone,
                context_thread=None, context_thread_id=None,
            )  # fmt: skip
        return dropped

    async def _condensed_from(self, record: records.MemoryRecord) -> list[records.MemoryRecord]:
        """The ``FACT`` memories condensed from a raw statement (same personal space)."""
        if record.kind is not records.MemoryKind.PERSONAL:
            return []
        return [
            r
            for r in await self.spaces.list(record.space, limit=consolidation.LIST_LIMIT)
            if r.kind is records.MemoryKind.FACT
            and record.id in r.extra.get("source_memory_ids", ())
        ]

    async def forget_turn(self, turn_id: str, *, actor: str) -> int:
        """Delete every memory that came from one turn, in every space; returns how many."""
        with postgres.wrap_errors("read turn"):
            row = await self.db.pool.fetchrow(sql.queries["memory_turn_authors"], turn_id)
        if row is None:
            raise errors.UnknownTurn(f"unknown turn {turn_id!r}", turn_id=turn_id)
        async with viewer_lock.hold(self.db, row["user_ids"]) as conn:
            await self._tombstone("turn", turn_id, conn=conn)
            # a turn's memories live in its authors' spaces and its stream's
            personal = [identity.personal_key(u) for u in row["user_ids"]]
            where = [*personal, identity.episodic_key(row["stream"])]
            removed = await self.spaces.delete_turn(turn_id, spaces=where)
            await self._drop_threads(personal, row["message_ids"])
            touched = await self.profiles.delete_turn(turn_id)
            for user_id in row["user_ids"]:  # the marks the turn's memories set go with them
                space = identity.personal_key(user_id)
                await marks.apply(self.spaces, self.db, space, actor=actor, profiles=self.profiles)
        users = sorted(set(row["user_ids"]) | set(touched))
        await self.audit(
            actor, "forget_turn", turn_id, {"memories": removed, "stream": row["stream"]}
        )
        for user_id in users:
            await self.invalidator.invalidate_viewer(user_id, everywhere=True)
        return removed

    async def forget_viewer(
        self, user_id: str, *, actor: str, everywhere: bool = False
    ) -> ForgetReport:
        """Delete a viewer's whole personal space and profile (``everywhere``: erase their words
        from every other store too, ``memory.ops.erasure``; what the chat commands do)."""
        async with viewer_lock.hold(self.db, [user_id]) as conn:
            with postgres.wrap_errors("forget viewer"):
                until = await conn.fetchval(sql.queries["memory_viewer_forget_until"], user_id)
            await self._tombstone("viewer", user_id, until=until, conn=conn)
            memories = await self.spaces.drop(identity.personal_key(user_id))
            facts = await self.profiles.delete_viewer(user_id)
            report = ForgetReport(user_id=user_id, memories=memories, profile_facts=facts)
            if everywhere:
                erased = await self.eraser.erase_viewer(user_id, actor=actor)
                report = dataclasses.replace(report, erased=erased)
        await self.audit(
            actor, "forget_viewer", user_id, {**report.to_json(), "everywhere": everywhere}
        )
        await self.invalidator.invalidate_viewer(user_id, everywhere=everywhere)
        return report

    async def _episodes_with(self, user_id: str) -> list[records.MemoryRecord]:
        with postgres.wrap_errors("read streams"):
            rows = await self.db.pool.fetch(sql.queries["memory_viewer_streams"], user_id)
        found: list[records.MemoryRecord] = []
        for row in rows:
            records = await self.spaces.list(identity.episodic_key(row["stream"]), limit=100_000)
            found.extend(r for r in records if user_id in r.participants)
        return found

    # -- correcting ------------------------------------------------------------------------
    async def correct(
        self, memory_id: str, text: str, *, actor: str, owner: str | None = None
    ) -> records.MemoryRecord:
        """Replace a memory with a correction document linked to the original turn (ranked above
        it: the original is deleted and tombstoned, and corrections get the ranking boost)."""
        text = text.strip()
        if not text:
            raise errors.InvalidMemory("a correction needs a text")
        original = await self.find(memory_id, owner=owner)
        if original.kind is records.MemoryKind.LORE:
            raise errors.InvalidMemory("lore is corrected by editing config/lore and reloading it")
        root = original.corrects if original.kind is records.MemoryKind.CORRECTION else original.id
        # the original's provenance (viewer, stream, turn, origin messages, times) carries over
        correction = dataclasses.replace(
            original,
            id=documents.point_id(
                original.turn_id or "", original.user_id or "", "correction", root or ""
            ),
            kind=records.MemoryKind.CORRECTION,
            text=text,
            created_at=models.utcnow(),
            corrects=root,
            extra={"corrected_by": actor},
        )
        async with viewer_lock.hold(self.db, lock_ids(original)) as conn:
            await self.spaces.upsert([correction])
            doomed: list[str] = []
            if original.id != correction.id:  # else a correction corrected again: replaced
                doomed = [original.id, *(r.id for r in await self._condensed_from(original))]
                await self._tombstone("memory", *doomed, conn=conn)
                await self.spaces.delete(original.space, doomed)
                # the replies embedded with the original's words: the correction says otherwise
                await self._drop_threads([original.space], original.origin_message_ids)
            await self.profiles.delete_memories([original.id, *doomed])
            if original.user_id and original.space == identity.personal_key(original.user_id):
                await self.profiles.apply_memories([correction])
                await marks.apply(
                    self.spaces,
                    self.db,
                    original.space,
                    {correction.id},
                    actor=actor,
                    profiles=self.profiles,
                )
        await self.audit(
            actor, "correct", original.id, {"correction_id": correction.id, "space": original.space}
        )
        await self._invalidate([original.user_id] if original.user_id else [], original.space)
        return correction

    # -- pausing and lore ------------------------------------------------------------------
    async def pause(self, stream: str, *, actor: str) -> bool:
        """Pause memory writing for a stream; False when it already was."""
        with postgres.wrap_errors("pause stream"):
            changed = await self.db.pool.fetchval(sql.queries["memory_pause_stream"], stream, actor)
        await self.audit(actor, "pause", stream, {"changed": changed is not None})
        return changed is not None

    async def resume(self, stream: str, *, actor: str) -> bool:
        """Resume memory writing for a stream; False when it was not paused."""
        with postgres.wrap_errors("resume stream"):
            changed = await self.db.pool.fetchval(sql.queries["memory_resume_stream"], stream)
        await self.audit(actor, "resume", stream, {"changed": changed is not None})
        return changed is not None

    async def is_paused(self, stream: str) -> bool:
        with postgres.wrap_errors("read pause"):
            return bool(await self.db.pool.fetchval(sql.queries["memory_stream_paused"], stream))

    async def load_lore(self, directory: Path, *, actor: str) -> int:
        """Replace the lore space with the files of ``directory``; returns the entries loaded."""
        count = await lore.load(self.spaces, directory)
        await invalidate_kind(self.invalidator, "lore")
        await self.audit(
            actor, "lore_load", identity.LORE_KEY, {"directory": str(directory), "entries": count}
        )
        return count

    # -- audit -----------------------------------------------------------------------------
    async def audit(self, actor: str, action: str, target: str, details: Mapping[str, Any]) -> None:
        with postgres.wrap_errors("write audit"):
            await self.db.pool.execute(
                sql.queries["memory_audit_insert"], actor, action, target, json.dumps(details)
            )
        logger.info("%s: %s %s", actor, action, target, extra={"action": f"memory_{action}"})

    async def audit_log(self, limit: int = 50) -> list[dict[str, Any]]:
        with postgres.wrap_errors("read audit"):
            rows = await self.db.pool.fetch(sql.queries["memory_audit_list"], limit)
        return [{**dict(row), "details": json.loads(row["details"])} for row in rows]

    async def _tombstone(
        self,
        kind: str,
        *targets: str,
        until: Any = None,
        conn: postgres.Connection | None = None,
    ) -> None:
        """Remember what is forgotten (before it is deleted: a crash in between leaves it gone
        for any later consolidation, not back)."""
        with postgres.wrap_errors("write tombstone"):
            for target in targets:
                await (conn or self.db.pool).execute(
                    sql.queries["memory_add_tombstone"], kind, target, until
                )

    async def _invalidate(self, user_ids: Sequence[str], space: str) -> None:
        everywhere = not space.startswith("viewer:")
        for user_id in user_ids:
            await self.invalidator.invalidate_viewer(user_id, everywhere=everywhere)
        if space.startswith("stream:"):
            await invalidate_kind(self.invalidator, "episodic")
        elif space == identity.LORE_KEY:
            await invalidate_kind(self.invalidator, "lore")


def lock_ids(record: records.MemoryRecord) -> list[str]:
    """Whose viewer lock guards a memory: its owner, or the authors of an episode's turn."""
    return [record.user_id] if record.user_id else list(record.participants)


async def invalidate_kind(invalidator: consolidation.CacheInvalidator, kind: str) -> None:
    """Drop the cached stream-wide results of one kind, when the invalidator can (the retriever's
    ``invalidate_kind``; an invalidator without it only drops viewers)."""
    drop = getattr(invalidator, "invalidate_kind", None)
    if drop is not None:
        await drop(kind)
