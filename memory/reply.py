"""When the bot speaks: the reply policy of a turn (addressed | ambient | always) and the quiet switch.

A batch gets a reply when one of its chat events addresses the bot: ``@<persona name>`` or
``@<bot login>`` (any case, anywhere in the message, trailing punctuation or not: ``ciao @Mnemo,``),
the persona name or login as a word (``Mnemo?``, never inside another word: ``mnemonic``,
``@mnemo_fan``), a reply thread to one of the bot's own chat messages, or a configured platform
event (sub, raid, cheer). Chat commands are answered by their handler whatever the policy. ``ambient`` may also speak unprompted, at most once per
``ambient_interval_seconds`` of chat time, to a batch with a question for the room. A viewer who was
just answered waits ``viewer_cooldown_seconds`` (chat time) before addressing the bot again gets
another reply. The quiet switch (``!quiet`` / ``!unquiet``) is a Postgres row per channel, so every
process serving the channel (and the dashboard) sees the same switch.

Everything else is a *silent* turn: journaled and consolidated, but no planner, no recall, no model.
Times are chat time (the events' own timestamps), so a replay decides exactly as the live bot did.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory import identity, models, sql
from memory.adapters import postgres

if TYPE_CHECKING:
    from datetime import datetime

    from config.settings import ReplySettings

#: reasons of a silent turn (the report's ``reason`` and the metrics label)
QUIET = "quiet"
NOT_ADDRESSED = "not_addressed"
VIEWER_COOLDOWN = "viewer_cooldown"
AMBIENT_INTERVAL = "ambient_interval"
#: reasons of a reply
ADDRESSED = "addressed"
AMBIENT = "ambient"
ALWAYS = "always"

_MENTION = re.compile(r"@([A-Za-z0-9_]+)")


@dataclass(frozen=True, slots=True)
class Decision:
    speak: bool
    reason: str


class ReplyState:
    """The quiet switch per channel and the bot's own chat messages, in Postgres."""

    def __init__(self, db: postgres.Database) -> None:
        self.db = db

    async def is_quiet(self, stream: str) -> bool:
        with postgres.wrap_errors("read quiet switch"):
            return bool(await self.db.pool.fetchval(sql.queries["reply_is_quiet"], stream))

    async def set_quiet(self, stream: str, quiet: bool, *, actor: str) -> bool:
        """Turn the switch of ``stream``'s channel on or off; False when it already was."""
        with postgres.wrap_errors("set quiet switch"):
            if quiet:
                changed = await self.db.pool.fetchval(sql.queries["reply_quiet_on"], stream, actor)
            else:
                changed = await self.db.pool.fetchval(sql.queries["reply_quiet_off"], stream)
        return changed is not None

    async def is_bot_message(self, message_id: str) -> bool:
        """Whether ``message_id`` is one of the bot's own chat messages (a delivered reply)."""
        with postgres.wrap_errors("read deliveries"):
            return bool(
                await self.db.pool.fetchval(sql.queries["reply_is_bot_message"], message_id)
            )


def _word(name: str) -> re.Pattern[str]:
    """``name`` or ``@name`` as a whole word, in any case: not inside a longer word or login."""
    return re.compile(rf"(?<![\w@])@?{re.escape(name)}(?![\w@])", re.IGNORECASE)


def has_room_question(event: models.ChatEvent) -> bool:
    """A question for the room: a ``?`` in a message that names no one with ``@``."""
    return "?" in event.text and not _MENTION.search(event.text)


class ReplyPolicy:
    """Decides, per batch, whether the bot speaks. One instance serves every stream of a process."""

    def __init__(
        self,
        settings: ReplySettings,
        *,
        bot_name: str,
        bot_login: str | None = None,
        state: ReplyState | None = None,
    ) -> None:
        self.settings = settings
        self.state = state
        self._names: list[re.Pattern[str]] = []
        self._logins: set[str] = set()
        self._add_name(bot_name)
        if bot_login:
            self.set_bot_login(bot_login)
        #: (stream, user id) → chat time of the last reply that answered that viewer
        self._answered: dict[tuple[str, str], datetime] = {}
        #: stream → chat time of the last unprompted (ambient) reply
        self._ambient: dict[str, datetime] = {}

    def _add_name(self, name: str) -> None:
        if name.strip():
            self._names.append(_word(name.strip()))

    def set_bot_login(self, login: str) -> None:
        """The Twitch login of the bot account (from the token at start-up): ``@login`` addresses."""
        normalized = identity.normalize_login(login)
        if normalized and normalized not in self._logins:
            self._logins.add(normalized)
            self._add_name(normalized)

    async def addresses(self, event: models.ChatEvent) -> bool:
        """Whether ``event`` speaks to the bot."""
        if event.kind is models.EventKind.EVENT:
            return (event.event or "") in self.settings.events
        if any(p.search(event.text) for p in self._names):
            return True
        if event.reply_to and self.state is not None:
            return await self.state.is_bot_message(event.reply_to)
        return False

    async def decide(self, batch: models.Batch) -> Decision:
        """Speak or stay silent on ``batch`` (and remember a reply for the cooldowns)."""
        if self.state is not None and await self.state.is_quiet(batch.stream):
            return Decision(False, QUIET)
        if self.settings.policy == "always":
            return Decision(True, ALWAYS)
        now = batch.closed_at
        addressers = {e.user_id for e in batch.chat if await self.addresses(e)}
        if addressers:
            cooldown = self.settings.viewer_cooldown_seconds
            fresh = {
                u
                for u in addressers
                if (last := self._answered.get((batch.stream, u))) is None
                or (now - last).total_seconds() >= cooldown
            }
            if not fresh:
                return Decision(False, VIEWER_COOLDOWN)
            for user_id in fresh:
                self._answered[(batch.stream, user_id)] = now
            return Decision(True, ADDRESSED)
        if self.settings.policy == "ambient" and any(has_room_question(e) for e in batch.chat):
            last = self._ambient.get(batch.stream)
            if (
                last is not None
                and (now - last).total_seconds() < self.settings.ambient_interval_seconds
            ):
                return Decision(False, AMBIENT_INTERVAL)
            self._ambient[batch.stream] = now
            return Decision(True, AMBIENT)
        return Decision(False, NOT_ADDRESSED)
