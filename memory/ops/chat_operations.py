"""The chat commands over ``memory.ops.operations.Operations`` (the same operations as
``python -m memory.admin``: audit row with the actor, cache invalidation, tombstones).

``build(settings, ops)`` is what ``memory.runtime`` wires as ``Services.commands``.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from memory import errors
from memory.ops import commands
from memory.ops.wording import counted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from config.settings import Settings
    from memory import reply
    from memory.history import redaction
    from memory.ops import operations
    from memory.spaces import records as records_module

#: a memory id may be given by its first characters (the ``!memory`` summary shows this many)
SHORT_ID = 6
#: memories listed by ``!memory``, newest first
SUMMARY_ITEMS = 5


#: characters the ``!memory`` list may take (the reply adds its own words, Twitch allows 500)
SUMMARY_CHARS = 380
#: characters of one memory's text in the ``!memory`` list
ITEM_CHARS = 90


def summarise(held: Sequence[records_module.MemoryRecord]) -> str:
    """The newest memories as ``text [short id]``, whole items only: a text is shortened, an id
    never; what does not fit is counted (``+N more``), so the reply is never cut inside an id."""
    items: list[str] = []
    used = 0
    for record in held[:SUMMARY_ITEMS]:
        item = (
            f"{textwrap.shorten(record.text, ITEM_CHARS, placeholder='…')} [{record.id[:SHORT_ID]}]"
        )
        if items and used + len(item) + 2 > SUMMARY_CHARS:
            break
        items.append(item)
        used += len(item) + 2
    more = len(held) - len(items)
    return "; ".join(items) + (f" (+{more} more)" if more else "")


class OperationsCommands:
    """``commands.MemoryCommands`` implemented with ``Operations``; every change is owner-checked."""

    def __init__(
        self,
        ops: operations.Operations,
        settings: Settings,
        quiet_switch: reply.ReplyState | None = None,
        redactor: redaction.Redactor | None = None,
    ) -> None:
        self.ops = ops
        self.lore_dir = settings.lore_dir
        self.quiet_switch = quiet_switch
        self.redactor = redactor

    async def find_viewer(self, login: str) -> str | None:
        try:
            return (await self.ops.resolve_viewer(login)).user_id
        except errors.UnknownViewer:
            return None

    async def _own(self, user_id: str) -> list[records_module.MemoryRecord]:
        """The viewer's personal memories, newest first."""
        records = await self.ops.inspect(user_id)
        return sorted(records, key=lambda r: (r.last_ts or r.created_at, r.id), reverse=True)

    async def _memory_id(self, user_id: str, memory_id: str) -> str:
        """A full id from an id or an unambiguous prefix of one of the viewer's memories."""
        if len(memory_id) < SHORT_ID:
            return memory_id
        matches = [r.id for r in await self._own(user_id) if r.id.startswith(memory_id)]
        return matches[0] if len(matches) == 1 else memory_id

    async def forget_last(self, actor: str, user_id: str, stream: str) -> int:
        """Forget the viewer's memories from their latest consolidated turn (this stream first)."""
        records = await self._own(user_id)
        latest = next((r for r in records if r.stream == stream), records[0] if records else None)
        if latest is None:
            return 0
        same_turn = (
            [r for r in records if r.turn_id == latest.turn_id] if latest.turn_id else [latest]
        )
        for record in same_turn:
            await self.ops.forget_memory(record.id, actor=actor, owner=user_id)
        return len(same_turn)

    async def forget_memory(self, actor: str, user_id: str, memory_id: str) -> int:
        full = await self._memory_id(user_id, memory_id)
        await self.ops.forget_memory(full, actor=actor, owner=user_id)
        return 1

    async def forget_viewer(self, actor: str, user_id: str) -> int:
        """``!forget me`` / ``!forget @x all``: everything, everywhere (as the reply says)."""
        report = await self.ops.forget_viewer(user_id, actor=actor, everywhere=True)
        return report.memories

    async def correct(self, actor: str, user_id: str, memory_id: str, text: str) -> None:
        full = await self._memory_id(user_id, memory_id)
        await self.ops.correct(full, text, actor=actor, owner=user_id)

    async def summary(self, user_id: str, *, brief: bool = False) -> str:
        records = await self._own(user_id)
        if brief:
            return await self._brief(user_id, records)
        text = summarise(records)
        # stored text is redacted at ingestion; this is the last guard before public chat
        return self.redactor.redact_text(text) if self.redactor else text

    async def _brief(self, user_id: str, records: list[records_module.MemoryRecord]) -> str:
        """Counts, ids and the profile's slot names: never the viewer's words."""
        if not records:
            return ""
        ids = " ".join(r.id[:SHORT_ID] for r in records[:SUMMARY_ITEMS])
        more = f" (+{len(records) - SUMMARY_ITEMS})" if len(records) > SUMMARY_ITEMS else ""
        profile = await self.ops.profiles.get(user_id)
        slots = sorted({f.slot.split(":")[0] for f in profile.facts}) if profile else []
        held = f"; profile: {', '.join(slots)}" if slots else ""
        return f"{counted(len(records), 'memory')}, ids {ids}{more}{held}"

    async def reload_lore(self, actor: str) -> int:
        return await self.ops.load_lore(self.lore_dir, actor=actor)

    async def pause(self, actor: str, stream: str) -> None:
        await self.ops.pause(stream, actor=actor)

    async def resume(self, actor: str, stream: str) -> None:
        await self.ops.resume(stream, actor=actor)

    async def quiet(self, actor: str, stream: str, quiet: bool) -> bool:
        if self.quiet_switch is None:
            raise errors.StoreUnavailable("the quiet switch is not wired here")
        return await set_quiet(self.ops, self.quiet_switch, stream, quiet, actor=actor)


async def set_quiet(
    ops: operations.Operations,
    switch: reply.ReplyState,
    stream: str,
    quiet: bool,
    *,
    actor: str,
) -> bool:
    """Turn the quiet switch of ``stream``'s channel on or off, audited (``!quiet``/``!unquiet``,
    the dashboard); False when it already was."""
    changed = await switch.set_quiet(stream, quiet, actor=actor)
    await ops.audit(actor, "quiet" if quiet else "unquiet", stream, {"changed": changed})
    return changed


def build(
    settings: Settings,
    ops: operations.Operations,
    quiet_switch: reply.ReplyState | None = None,
    redactor: redaction.Redactor | None = None,
) -> commands.CommandHandler:
    """The command handler of ``python -m bot run`` (``memory.ports.CommandHandler``)."""
    return commands.CommandHandler(
        OperationsCommands(ops, settings, quiet_switch, redactor),
        settings.twitch,
        moderator_summary=settings.redaction.moderator_summary,
    )
