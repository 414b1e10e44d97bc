"""Memory chat commands: parsing, authorization from badges, a per-viewer cooldown, short replies.

Commands arrive in a batch (kind ``command``, never sent to the model) and ``CommandHandler.handle``
answers each one (``memory.ports.CommandHandler``). The effects go through ``MemoryCommands``, the
same operations as ``python -m memory.admin`` (cache invalidation, audit row with the actor).

Grammar (prefix ``!`` by default)::

    !forget last | !forget <memory id> | !forget me [confirm]      the viewer, about themselves
    !correct <memory id> <new text>  |  !memory
    !forget @login last|<memory id>|all [confirm]                  moderators and the broadcaster
    !correct @login <memory id> <new text>  |  !memory @login
    !quiet  |  !unquiet                                            moderators and the broadcaster
    !lore reload  |  !pause  |  !resume                            the broadcaster

Replies never repeat a forgotten or corrected text: chat is public.
"""

from __future__ import annotations

import enum
import logging
import textwrap
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from memory import errors, identity
from memory.ops.wording import counted

if TYPE_CHECKING:
    from config.settings import TwitchSettings
    from memory import models

logger = logging.getLogger(__name__)

#: one chat message (Twitch's limit)
MAX_REPLY_CHARS = 500


class Clock(Protocol):
    """Time for the cooldowns; tests inject one they move by hand."""

    def monotonic(self) -> float: ...


class _MonotonicClock:
    def monotonic(self) -> float:
        return time.monotonic()


class MemoryCommands(Protocol):
    """The memory operations behind the commands. ``actor`` is who asked (``twitch:<login>``).

    A ``memory_id`` that is not in ``user_id``'s personal space raises ``errors.UnknownMemory``.
    """

    async def find_viewer(self, login: str) -> str | None:
        """The user id of a viewer by login, None when unknown."""
        ...

    async def forget_last(self, actor: str, user_id: str, stream: str) -> int: ...

    async def forget_memory(self, actor: str, user_id: str, memory_id: str) -> int: ...

    async def forget_viewer(self, actor: str, user_id: str) -> int: ...

    async def correct(self, actor: str, user_id: str, memory_id: str, text: str) -> None: ...

    async def summary(self, user_id: str, *, brief: bool = False) -> str:
        """A short summary of what is held about the viewer ("" when nothing); ``brief``: memory
        ids and what the profile holds, never the viewer's words (a moderator asking in public)."""
        ...

    async def reload_lore(self, actor: str) -> int: ...

    async def pause(self, actor: str, stream: str) -> None: ...

    async def resume(self, actor: str, stream: str) -> None: ...

    async def quiet(self, actor: str, stream: str, quiet: bool) -> bool:
        """Turn the channel's quiet switch on/off (no replies but commands); False: it already was."""
        ...


class Action(enum.StrEnum):
    FORGET_LAST = "forget_last"
    FORGET_MEMORY = "forget_memory"
    FORGET_VIEWER = "forget_viewer"
    CORRECT = "correct"
    SUMMARY = "summary"
    LORE_RELOAD = "lore_reload"
    PAUSE = "pause"
    RESUME = "resume"
    QUIET = "quiet"
    UNQUIET = "unquiet"


class Role(enum.IntEnum):
    VIEWER = 0
    MODERATOR = 1
    BROADCASTER = 2


BROADCASTER_ONLY = frozenset({Action.LORE_RELOAD, Action.PAUSE, Action.RESUME})
MODERATOR_ONLY = frozenset({Action.QUIET, Action.UNQUIET})


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    action: Action
    #: normalized login of the viewer acted upon; None: the author
    target: str | None = None
    memory_id: str | None = None
    text: str | None = None
    confirm: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """A known command written wrongly; ``text`` is the usage line to answer with."""

    text: str


USAGE = {
    "forget": "usage: !forget last | !forget <memory id> | !forget me",
    "forget_mod": "usage: !forget @login last|<memory id>|all",
    "correct": "usage: !correct <memory id> <new text>",
    "lore": "usage: !lore reload",
}


def parse(text: str, prefix: str = "!") -> Command | Usage | None:
    """The memory command in ``text``; None when it is not one (other ``!`` commands included)."""
    if not text.startswith(prefix):
        return None
    words = text[len(prefix) :].split()
    if not words:
        return None
    name, args = words[0].lower(), words[1:]
    target = None
    if args and args[0].startswith("@"):
        target = identity.normalize_login(args[0]) or None
        args = args[1:]
    if name == "forget":
        return _parse_forget(args, target)
    if name == "correct":
        if len(args) < 2:
            return Usage(text=USAGE["correct"])
        return Command(
            action=Action.CORRECT, target=target, memory_id=args[0], text=" ".join(args[1:])
        )
    if name == "memory" and not args:
        return Command(action=Action.SUMMARY, target=target)
    if name == "lore":
        ok = [a.lower() for a in args] == ["reload"]
        return Command(action=Action.LORE_RELOAD) if ok else Usage(text=USAGE["lore"])
    if name in ("pause", "resume", "quiet", "unquiet") and not args and target is None:
        return Command(action=Action(name))
    return None


def _parse_forget(args: list[str], target: str | None) -> Command | Usage:
    lowered = [a.lower() for a in args]
    confirm = lowered[-1:] == ["confirm"]
    if confirm:
        lowered = lowered[:-1]
    usage = Usage(text=USAGE["forget_mod" if target else "forget"])
    if len(lowered) != 1:
        return usage
    word = lowered[0]
    if word == "last" and not confirm:
        return Command(action=Action.FORGET_LAST, target=target)
    if word == ("all" if target else "me"):
        return Command(action=Action.FORGET_VIEWER, target=target, confirm=confirm)
    if word in ("me", "all", "last") or confirm:
        return usage
    return Command(action=Action.FORGET_MEMORY, target=target, memory_id=args[0])


def role_of(event: models.ChatEvent) -> Role:
    if event.is_broadcaster:
        return Role.BROADCASTER
    if event.is_moderator:
        return Role.MODERATOR
    return Role.VIEWER


def refusal(command: Command, event: models.ChatEvent, present: set[str]) -> str | None:
    """Why ``event``'s author may not run ``command`` (a short reason), or None when they may."""
    role = role_of(event)
    if command.action in BROADCASTER_ONLY:
        return None if role is Role.BROADCASTER else "only the broadcaster can do that."
    if command.action in MODERATOR_ONLY:
        return None if role >= Role.MODERATOR else "only moderators can do that."
    about_self = command.target is None or command.target == identity.normalize_login(event.login)
    if not about_self:
        return None if role >= Role.MODERATOR else "you can only manage your own memory."
    if event.user_id not in present:
        return "you can manage your memory only while you are chatting."
    return None


class CommandHandler:
    """Answers memory commands; implements ``memory.ports.CommandHandler``."""

    def __init__(
        self,
        operations: MemoryCommands,
        settings: TwitchSettings,
        *,
        clock: Clock | None = None,
        moderator_summary: str = "ids",
    ) -> None:
        self.operations = operations
        self.prefix = settings.prefix
        self.cooldown = settings.command_cooldown_seconds
        self.confirm_window = settings.forget_confirm_seconds
        #: ``!memory @viewer`` by a moderator: ``ids`` (brief) or ``full``
        self.moderator_summary = moderator_summary
        self.clock: Clock = clock or _MonotonicClock()
        self._last: dict[str, float] = {}
        #: (author id, target id) → when a ``!forget me`` / ``!forget @x all`` was asked
        self._pending: dict[tuple[str, str], float] = {}

    async def handle(self, event: models.ChatEvent, batch: models.Batch) -> str | None:
        """The public reply to ``event`` (None: not a memory command, or on cooldown)."""
        parsed = parse(event.text, self.prefix)
        if parsed is None:
            return None
        now = self.clock.monotonic()
        if self._cooling(event, parsed, now):
            logger.info("command of %s ignored: cooldown", event.login)
            return None
        self._last[event.user_id] = now
        if isinstance(parsed, Usage):
            return f"@{event.login} {parsed.text}"
        present = {e.user_id for e in batch.events}
        if reason := refusal(parsed, event, present):
            return f"@{event.login} {reason}"
        try:
            return await self._run(parsed, event)
        except errors.UnknownMemory:
            return f"@{event.login} I can't find that memory."
        except errors.InvalidMemory:
            return f"@{event.login} I can't change that memory from chat."
        except errors.UnknownViewer:
            return f"@{event.login} I don't know @{parsed.target}."
        except errors.AmbiguousViewer as exc:  # never a guess between two people
            return f"@{event.login} {exc} (python -m memory.admin … --user-id)."
        except errors.StoreUnavailable:
            logger.warning("command %s failed: memory unavailable", parsed.action)
            return f"@{event.login} my memory is unavailable right now, try again later."

    def _cooling(self, event: models.ChatEvent, parsed: Command | Usage, now: float) -> bool:
        if isinstance(parsed, Command) and parsed.confirm:
            return False  # the confirmation of a request just made is never on cooldown
        last = self._last.get(event.user_id)
        return last is not None and now - last < self.cooldown

    async def _target(self, command: Command, event: models.ChatEvent) -> str:
        if command.target is None or command.target == identity.normalize_login(event.login):
            return event.user_id
        user_id = await self.operations.find_viewer(command.target)
        if user_id is None:
            raise errors.UnknownViewer()
        return user_id

    async def _run(self, command: Command, event: models.ChatEvent) -> str:
        actor = f"twitch:{identity.normalize_login(event.login)}"
        ops = self.operations
        who = f"@{event.login}"
        if command.action is Action.LORE_RELOAD:
            count = await ops.reload_lore(actor)
            return f"{who} lore reloaded ({counted(count, 'entry')})."
        if command.action is Action.PAUSE:
            await ops.pause(actor, event.stream)
            return f"{who} memory writing paused for this stream."
        if command.action is Action.RESUME:
            await ops.resume(actor, event.stream)
            return f"{who} memory writing resumed."
        if command.action in MODERATOR_ONLY:
            return await self._quiet(command, event, actor)
        user_id = await self._target(command, event)
        about = "" if user_id == event.user_id else f" about @{command.target}"
        if command.action is Action.SUMMARY:
            brief = bool(about) and self.moderator_summary == "ids"
            held = await ops.summary(user_id, brief=brief) or "nothing yet."
            return fit(f"{who} what I remember{about or ' about you'}: {held}")
        if command.action is Action.FORGET_LAST:
            count = await ops.forget_last(actor, user_id, event.stream)
            return (
                f"{who} done, I forgot {counted(count, 'recent memory', 'recent memories')}{about}."
            )
        if command.action is Action.FORGET_MEMORY:
            await ops.forget_memory(actor, user_id, command.memory_id or "")
            return f"{who} done, that memory is forgotten."
        if command.action is Action.CORRECT:
            await ops.correct(actor, user_id, command.memory_id or "", command.text or "")
            return f"{who} done, that memory is corrected."
        return await self._forget_viewer(command, event, actor, user_id, about)

    async def _quiet(self, command: Command, event: models.ChatEvent, actor: str) -> str:
        on = command.action is Action.QUIET
        changed = await self.operations.quiet(actor, event.stream, on)
        if on:
            state = "quiet now" if changed else "already quiet"
            return f"@{event.login} {state}: I only answer commands until !unquiet."
        return (
            f"@{event.login} {'back' if changed else 'I was not quiet'}: I answer when addressed."
        )

    async def _forget_viewer(
        self, command: Command, event: models.ChatEvent, actor: str, user_id: str, about: str
    ) -> str:
        key = (event.user_id, user_id)
        now = self.clock.monotonic()
        asked = self._pending.pop(key, None)
        again = f"!forget {f'@{command.target} all' if about else 'me'} confirm"
        if not command.confirm:
            self._pending[key] = now
            return (
                f"@{event.login} this forgets everything I remember{about or ' about you'}. "
                f"Type {again} within {int(self.confirm_window)} s to go ahead."
            )
        if asked is None or now - asked > self.confirm_window:
            return f"@{event.login} nothing to confirm: ask first, then {again}."
        await self.operations.forget_viewer(actor, user_id)
        return f"@{event.login} done, I forgot everything{about or ' about you'}."


def fit(text: str) -> str:
    """``text`` cut on a word boundary to one chat message (Twitch's 500 characters)."""
    return textwrap.shorten(text, MAX_REPLY_CHARS, placeholder="…")
