"""Consolidation: a finished turn becomes memory (the ``consolidate_turn`` job handler).

Split by author. A viewer's personal space (``identity.personal_key(user_id)``) receives only that
viewer's own chat messages that pass the noise filter (``memory.consolidate.noise``) — never the bot's reply,
other viewers' messages, known bot accounts, commands or platform events — and the viewer's profile is
updated from them. The stream's episodic space (``identity.episodic_key(stream)``) receives one
document per turn: the public messages (``login: text``), participants, timestamps and the bot's reply
(``extra["reply"]``); a turn of reactions alone ("KEKW", "ahah"), unanswered, is no episode: it
holds nothing to find, and e5 rates a line that short near to every question. Consolidation never
writes the lore space.

Skipped: paused streams (nothing written), forgotten turns, forgotten memories, a forgotten viewer's
messages up to the time they were forgotten, redacted messages, and the viewers the turn's ingestion
barrier excludes (no personal memory, no profile update; the episodic record stays).

Idempotent: point ids are uuid5 of turn id + author + kind (+ message id, or a fact's normalized
text), so a retried job replaces the same points. With ``settings.ollama.extract_facts`` and a chat
model, a viewer's kept statements are also condensed into ``FACT`` memories (``memory.consolidate.facts``); the
raw memories stay either way. A re-run whose extraction answers replaces the turn's earlier facts.

A viewer's newer statement about the same thing marks their older memories superseded
(``memory.consolidate.supersede``, applied by ``memory.consolidate.marks`` after the upsert, under
the viewer locks): kept and listed, left out of recall as current; ``settings.memory.supersede``.

Forget and correct win over a running consolidation: the writes run under the authors' viewer locks
(``memory.consolidate.viewer_lock``) after the tombstones are read again, and a tombstoned raw memory, fact or
episode — or a fact condensed from a forgotten statement — is never written back.

Ablations (``settings.memory``, evaluation only): ``use_episodic``/``use_profile=False`` write no
episode / update no profile; ``attribution_split=False`` writes every kept message, with its author's
user id, to one shared space (``identity.SHARED_PERSONAL_KEY``), which forget/correct do not reach.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from memory import errors, identity, models, sql
from memory.adapters import postgres
from memory.consolidate import barrier, documents, facts, marks, noise, tombstones, viewer_lock
from memory.consolidate import profile as profile_module
from memory.history import transcript
from memory.spaces import records as memory_records

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence
    from datetime import datetime

    from config.settings import Settings
    from memory import ports
    from memory.consolidate import jobs

logger = logging.getLogger(__name__)

#: the job kind this module handles
JOB_KIND = "consolidate_turn"
#: at most this many memories are listed from one space to find a turn's earlier facts
LIST_LIMIT = 100_000


class BarrierSource(Protocol):
    """Which viewers a turn's ingestion barrier keeps out of personal memory."""

    async def excluded(self, turn_id: str) -> barrier.BarrierDecision: ...


class NoBarrier:
    """No barrier: every eligible viewer is ingested."""

    async def excluded(self, turn_id: str) -> barrier.BarrierDecision:
        return barrier.NO_BARRIER


class StateBarrier:
    """The barrier recorded by the tool runner in ``turn_barriers``."""

    def __init__(self, db: postgres.Database) -> None:
        self.db = db

    async def excluded(self, turn_id: str) -> barrier.BarrierDecision:
        return await barrier.barrier_for_turn(self.db, turn_id)


class CacheInvalidator(Protocol):
    """Drops what the retrieval caches hold about a viewer (the retriever implements it).

    An invalidator may also have ``async invalidate_kind(kind)`` (``episodic``, ``lore``): it is
    called when present (``operations.invalidate_kind``), so older invalidators keep working."""

    async def invalidate_viewer(self, user_id: str, *, everywhere: bool = False) -> object: ...


class NoCache:
    async def invalidate_viewer(self, user_id: str, *, everywhere: bool = False) -> None:
        return None

    async def invalidate_kind(self, kind: str) -> None:
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """What consolidating one turn did."""

    turn_id: str
    stream: str
    #: personal memories written (raw statements)
    personal: int = 0
    #: condensed facts written
    facts: int = 0
    #: episodic documents written (0 or 1)
    episodic: int = 0
    #: user ids whose personal space or profile changed
    viewers: tuple[str, ...] = ()
    #: message id → why it did not become a personal memory
    dropped: Mapping[str, str] = field(default_factory=dict)
    #: why the whole turn was skipped (``paused``, ``forgotten``), else None
    skipped: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Draft:
    """A turn's personal memories and episode once the forgotten parts are left out."""

    personal: list[memory_records.MemoryRecord]
    dropped: dict[str, str]
    episode: memory_records.MemoryRecord | None


@dataclass(frozen=True, slots=True)
class _Before:
    """The chat message before another: the noise filter's context, the question a memory answers;
    ``earlier``: the message before it (the thread a reply continues: ``_thread``)."""

    user_id: str
    message_id: str
    text: str
    earlier: _Before | None = None


def _after(before: _Before | None, user_id: str, message_id: str, text: str) -> _Before:
    """The message after ``before``, with ``before`` (without its own ``earlier``) before it."""
    earlier = dataclasses.replace(before, earlier=None) if before is not None else None
    return _Before(user_id, message_id, text, earlier)


@dataclass(frozen=True, slots=True)
class _Message:
    event: models.ChatEvent
    redacted: bool


def _event(row: postgres.Record) -> _Message:
    return _Message(event=transcript.event_from_row(row), redacted=bool(row["redacted"]))


@dataclass(frozen=True, slots=True)
class _Prior:
    """A chat message of the stream just before the turn (``memory_messages_before``)."""

    message_id: str
    user_id: str
    text: str
    ts: datetime
    redacted: bool
    #: the turns that hold it (where its memory is)
    turn_ids: tuple[str, ...]

    @classmethod
    def of(cls, row: postgres.Record) -> _Prior:
        return cls(
            row["id"],
            row["user_id"],
            row["text"],
            row["ts"],
            row["redacted"],
            tuple(row["turn_ids"]),
        )


def _context(prior: Sequence[_Prior]) -> _Before | None:
    """The message before the turn, with the one before it (``prior``: the nearest first)."""
    context: _Before | None = None
    for p in reversed(prior):
        context = _after(context, p.user_id, p.message_id, p.text)
    return context


def _withheld(
    turn_id: str,
    messages: Sequence[_Message],
    prior: Sequence[_Prior],
    forgotten: tombstones.Tombstones,
) -> frozenset[str]:
    """The messages, of the turn and just before it, that no reply may be embedded with as the
    thread it continues: redacted, or their memory, their turn or their author forgotten."""
    held = [(p.turn_ids, p.user_id, p.message_id, p.ts, p.redacted) for p in prior]
    held += [((turn_id,), m.event.user_id, m.event.id, m.event.ts, m.redacted) for m in messages]
    return frozenset(
        message_id
        for turn_ids, user_id, message_id, ts, redacted in held
        if redacted or forgotten.erased(turn_ids, user_id, message_id, ts)
    )


def _thread(
    before: _Before | None, user_id: str, withheld: frozenset[str] = frozenset()
) -> tuple[str, str] | None:
    """(id, text) of ``user_id``'s own message just before ``before`` (another viewer's), the
    thread a reply to ``before`` continues; None when that message is somebody else's or its
    words were forgotten (``withheld``)."""
    earlier = before.earlier if before is not None else None
    if earlier is None or earlier.user_id != user_id or earlier.message_id in withheld:
        return None
    return earlier.message_id, earlier.text


def _reaction(event: models.ChatEvent) -> bool:
    """A chat line that is only a reaction ("KEKW", "ahah"); a platform event never is."""
    return event.kind is not models.EventKind.EVENT and noise.is_reaction(event.text)


#: a leading "@name " (the name in group 1): a reply thread's (the chat client puts the parent's
#: author there) or the viewer's own
_LEADING_MENTION = re.compile(r"^\s*@(\w+)[\s,:]*")


def _asked_of(reply: str, login: str) -> str | None:
    """The question of the bot's ``reply`` that a reply to it by ``login`` answers: its last one,
    when the reply @names nobody or them (``documents.put_to``)."""
    return documents.asked_question(reply) if documents.put_to(reply, login) else None


@dataclass(frozen=True, slots=True)
class _BotWords:
    """The bot's reply a viewer's message answers: in the reply thread under it (``thread``), or
    as the viewer's first message after it when it named them or came just before."""

    before: _Before
    thread: bool


def bot_logins(settings: Settings) -> frozenset[str]:
    """Normalized logins whose messages never become memory: the known (third-party) bots. The bot
    itself is told by its user id (``twitch.bot_id``): a viewer named like the persona is a viewer."""
    return frozenset(identity.normalize_login(name) for name in settings.memory.known_bots if name)


class Consolidator:
    """Turns a finished turn into personal memories, profile facts and an episodic document."""

    def __init__(
        self,
        db: postgres.Database,
        spaces: ports.MemorySpaces,
        settings: Settings,
        *,
        profiles: profile_module.ProfileStore | None = None,
        barrier_source: BarrierSource | None = None,
        invalidator: CacheInvalidator | None = None,
        model: ports.ChatModel | None = None,
    ) -> None:
        self.db = db
        self.spaces = spaces
        self.settings = settings
        self.profiles = profiles or profile_module.ProfileStore(db)
        self.barrier = barrier_source or NoBarrier()
        self.invalidator = invalidator or NoCache()
        self.model = model if settings.ollama.extract_facts else None
        self.bots = bot_logins(settings)
        self.bot_ids = frozenset(filter(None, [settings.twitch.bot_id]))
        #: the persona name and the bot login: a message naming them is addressed to the bot
        self.bot_names = tuple(filter(None, (settings.bot_name, settings.bot_login)))

    def add_bot_name(self, login: str) -> None:
        """The bot account's login, learnt at start-up (``Services.learn_bot_login``)."""
        if login and login not in self.bot_names:
            self.bot_names = (*self.bot_names, login)

    def is_bot(self, event: models.ChatEvent) -> bool:
        return event.user_id in self.bot_ids or identity.normalize_login(event.login) in self.bots

    async def consolidate(self, turn_id: str) -> Result:
        """Consolidate one turn; safe to run again (same ids, no duplicates).

        The slow part (barrier, fact extraction) runs unlocked; the writes run under the authors'
        viewer locks (``memory.consolidate.viewer_lock``) after the tombstones are read again, so a forget or
        correct that ran meanwhile is never undone."""
        with postgres.wrap_errors("read turn"):
            turn = await self.db.pool.fetchrow(sql.queries["transcript_get_turn"], turn_id)
            if turn is None:
                raise errors.JobValidationError(f"unknown turn {turn_id!r}", turn_id=turn_id)
            stream = turn["stream"]
            if await self.db.pool.fetchval(sql.queries["memory_stream_paused"], stream):
                logger.info("stream %s is paused: turn %s not consolidated", stream, turn_id)
                return Result(turn_id=turn_id, stream=stream, skipped="paused")
            rows = await self.db.pool.fetch(
                sql.queries["memory_turn_messages"], list(turn["message_ids"])
            )
            before = (
                await self.db.pool.fetch(
                    sql.queries["memory_messages_before"], stream, rows[0]["id"]
                )
                if rows
                else []
            )
            answered = await self._bot_words(turn_id, stream, rows)
        messages = [_event(row) for row in rows]
        prior = [_Prior.of(row) for row in before]
        gone = await self._tombstones(self.db.pool, turn_id, messages, prior)
        if ("turn", turn_id) in gone:
            return Result(turn_id=turn_id, stream=stream, skipped="forgotten")
        decision = await self.barrier.excluded(turn_id)
        draft = self._draft(turn_id, turn, messages, gone, decision, prior, answered)
        condensed, refreshed = await self._facts(turn_id, draft.personal)
        async with viewer_lock.hold(self.db, {m.event.user_id for m in messages}) as conn:
            gone = await self._tombstones(conn, turn_id, messages, prior, condensed)
            if ("turn", turn_id) in gone:
                return Result(turn_id=turn_id, stream=stream, skipped="forgotten")
            draft = self._draft(turn_id, turn, messages, gone, decision, prior, answered)
            condensed = facts.live(condensed, draft.personal, gone.memories())
            await self._write(turn_id, draft, condensed, refreshed)
        personal, episode = draft.personal, draft.episode
        viewers = tuple(sorted({r.user_id for r in [*personal, *condensed] if r.user_id}))
        for user_id in viewers:
            try:
                await self.invalidator.invalidate_viewer(user_id)
            except errors.StoreUnavailable as exc:
                # the memory is written: losing the job to a cache outage would lose it for good;
                # a cache that was down serves nothing meanwhile, and its entries expire (TTL);
                # the outage itself is told once by the cache's condition (``memory.outage``)
                logger.debug(
                    "turn %s: caches of viewer %s not invalidated (%s); new memories show once "
                    "they expire",
                    turn_id,
                    user_id,
                    exc,
                    extra={"action": "invalidate_failed"},
                )
        result = Result(
            turn_id=turn_id,
            stream=stream,
            personal=len(personal),
            facts=len(condensed),
            episodic=1 if episode else 0,
            viewers=viewers,
            dropped=draft.dropped,
        )
        logger.info(
            "turn %s consolidated: %d personal, %d facts, %d episodic, %d dropped",
            turn_id,
            result.personal,
            result.facts,
            result.episodic,
            len(draft.dropped),
            extra={"action": "consolidated"},
        )
        return result

    def _draft(
        self,
        turn_id: str,
        turn: postgres.Record,
        messages: Sequence[_Message],
        gone: tombstones.Tombstones,
        decision: barrier.BarrierDecision,
        prior: Sequence[_Prior] = (),
        answered: Mapping[str, _BotWords] | None = None,
    ) -> _Draft:
        """What the turn gives, minus everything forgotten (redacted, tombstoned). ``prior``:
        the stream's messages before the turn; ``answered``: the bot's replies its messages answer
        (``_bot_words``)."""
        context = _context(prior)
        nearest = prior[0] if prior else None
        if nearest and (nearest.redacted or gone.said_before_forget(nearest.user_id, nearest.ts)):
            context = None  # the words of a forgotten viewer, or redacted ones, index nothing
        public = [
            m.event
            for m in messages
            if not m.redacted and not gone.said_before_forget(m.event.user_id, m.event.ts)
        ]
        withheld = _withheld(turn_id, messages, prior, gone)
        personal, dropped = self._personal(
            turn_id, public, decision, context, answered or {}, withheld
        )
        personal = [r for r in personal if ("memory", r.id) not in gone]
        episode = None
        if self.settings.memory.use_episodic:
            episode = self._episode(
                turn_id, turn["stream"], public, turn["reply"], turn["reply_ts"]
            )
        if episode is not None and ("memory", episode.id) in gone:
            episode = None
        return _Draft(personal=personal, dropped=dropped, episode=episode)

    async def _write(
        self,
        turn_id: str,
        draft: _Draft,
        condensed: Sequence[memory_records.MemoryRecord],
        refreshed: Sequence[str],
    ) -> None:
        """Upsert the turn's memories and profile facts (called under the viewer locks)."""
        await self._drop_stale_facts(turn_id, draft.personal, condensed, refreshed)
        records = [*draft.personal, *condensed, *([draft.episode] if draft.episode else [])]
        if records:
            await self.spaces.upsert(records)
        profiles = self.profiles if self.settings.memory.use_profile else None
        if profiles is not None:
            await profiles.apply_memories(draft.personal)
        if self.settings.memory.supersede:  # after the profile: a superseded memory's facts go
            own = [*draft.personal, *condensed]
            for space in sorted({r.space for r in own}):
                await marks.apply(
                    self.spaces, self.db, space, {r.id for r in own}, profiles=profiles
                )

    async def _drop_stale_facts(
        self,
        turn_id: str,
        personal: Sequence[memory_records.MemoryRecord],
        condensed: Sequence[memory_records.MemoryRecord],
        refreshed: Sequence[str],
    ) -> None:
        """On a re-run, delete the turn's facts of ``refreshed`` viewers this run did not state."""
        keep = {r.id for r in condensed}
        for user_id in refreshed:
            space = self._space(user_id)
            own = [r.id for r in personal if r.user_id == user_id]
            if not own or not await self.spaces.get(space, own):
                continue  # first run for this viewer: no earlier facts
            stale = [
                r.id
                for r in await self.spaces.list(space, limit=LIST_LIMIT)
                if r.kind is memory_records.MemoryKind.FACT
                and r.turn_id == turn_id
                and r.user_id == user_id
                and r.id not in keep
            ]
            if stale:
                await self.spaces.delete(space, stale)

    async def _bot_words(
        self, turn_id: str, stream: str, rows: Sequence[postgres.Record]
    ) -> dict[str, _BotWords]:
        """The bot's delivered replies the turn's messages answer, by message id: the one a
        message replies to in its reply thread; else, for a message outside any thread, the
        newest reply of the stream's last three turns that @named its author, when it is their
        first message since (received after the reply was delivered), or that @named nobody, when
        it is the first message of the stream since. A replay delivers nothing: none there (the
        console records what it shows, ``bot.console.console_deliveries``)."""
        parents = sorted({row["reply_to"] for row in rows if row["reply_to"]})
        found = (
            await self.db.pool.fetch(sql.queries["memory_bot_replies"], parents) if parents else []
        )
        threads = {row["id"]: row["reply"] for row in found}
        out = {
            row["id"]: _BotWords(_Before("", row["reply_to"], threads[row["reply_to"]]), True)
            for row in rows
            if row["reply_to"] in threads
        }
        plain = [row for row in rows if not row["reply_to"]]
        if not plain:
            return out
        authors = sorted({row["user_id"] for row in plain})
        replies = await self.db.pool.fetch(
            sql.queries["memory_bot_questions"], stream, turn_id, authors
        )
        for row in plain:
            login = identity.normalize_login(row["login"])
            for reply in replies:  # newest first
                named = documents.named(reply["reply"])
                if (login in named and row["id"] in reply["firsts"]) or (
                    not named and row["id"] == reply["next_id"]
                ):
                    out[row["id"]] = _BotWords(_Before("", reply["id"], reply["reply"]), False)
                    break
        return out

    @staticmethod
    async def _tombstones(
        conn: postgres.Pool | postgres.Connection,
        turn_id: str,
        messages: Sequence[_Message],
        prior: Sequence[_Prior],
        condensed: Sequence[memory_records.MemoryRecord] = (),
    ) -> tombstones.Tombstones:
        """The tombstones of the turn, its messages' memories, episode and facts, and its
        authors; of the messages before it (``prior``): their turns, memories and authors."""
        events = [m.event for m in messages]
        ids = [m for e in events for m in tombstones.personal_ids([turn_id], e.user_id, e.id)]
        ids += [
            documents.point_id(turn_id, "stream", memory_records.MemoryKind.EPISODIC),
            *(r.id for r in condensed),
        ]
        ids += [
            m for p in prior for m in tombstones.personal_ids(p.turn_ids, p.user_id, p.message_id)
        ]
        return await tombstones.read(
            conn,
            [turn_id, *(t for p in prior for t in p.turn_ids)],
            ids,
            [*(e.user_id for e in events), *(p.user_id for p in prior)],
        )

    def _personal(
        self,
        turn_id: str,
        events: Sequence[models.ChatEvent],
        decision: barrier.BarrierDecision,
        context: _Before | None = None,
        answered: Mapping[str, _BotWords] | None = None,
        withheld: frozenset[str] = frozenset(),
    ) -> tuple[list[memory_records.MemoryRecord], dict[str, str]]:
        records: list[memory_records.MemoryRecord] = []
        dropped: dict[str, str] = {}
        for event in events:
            before = context if context is not None and context.user_id != event.user_id else None
            asked = before.text if before is not None else None
            text = event.text
            bot = (answered or {}).get(event.id)
            if bot is not None:
                # an answer to the bot's reply: its question is the context, and a leading
                # "@bot" (a thread's prefix, or the viewer's own) addresses nobody
                before, asked = bot.before, _asked_of(bot.before.text, event.login)
                text = self._unprefixed(text, thread=bot.thread)
            thread = _thread(before, event.user_id, withheld) if bot is None else None
            context = _after(context, event.user_id, event.id, event.text)
            reason = self._ineligible(event, decision)
            if reason is None:
                verdict = noise.classify(text, bot_names=self.bot_names, previous=asked)
                reason = None if verdict.keep else verdict.reason
            if reason is not None:
                dropped[event.id] = reason
                continue
            answers = (before.message_id, before.text) if before is not None else None
            record = documents.personal_record(
                turn_id, event, answers, self.spaces.sparse, thread=thread
            )
            records.append(dataclasses.replace(record, space=self._space(event.user_id)))
        return records, dropped

    def _unprefixed(self, text: str, *, thread: bool) -> str:
        """``text`` without the "@name " it opens with, when that is a reply thread's (any
        name: the client puts the parent's author) or the bot's own."""
        lead = _LEADING_MENTION.match(text)
        if lead is None:
            return text
        names = {identity.normalize_login(name) for name in self.bot_names}
        if thread or identity.normalize_login(lead.group(1)) in names:
            return text[lead.end() :]
        return text

    def _space(self, user_id: str) -> str:
        split = self.settings.memory.attribution_split
        return identity.personal_space_key(user_id, attribution_split=split)

    def _ineligible(self, event: models.ChatEvent, decision: barrier.BarrierDecision) -> str | None:
        if event.kind is models.EventKind.EVENT:
            return "platform_event"
        if event.is_command or event.text.lstrip().startswith("!"):
            return noise.COMMAND
        if self.is_bot(event):
            return "bot"
        if decision.excludes(event.user_id):
            return "barrier"
        return None

    def _episode(
        self,
        turn_id: str,
        stream: str,
        events: Sequence[models.ChatEvent],
        reply: str | None,
        reply_ts: datetime | None,
    ) -> memory_records.MemoryRecord | None:
        shown = [
            e
            for e in events
            if not e.is_command and not e.text.lstrip().startswith("!") and not self.is_bot(e)
        ]
        if not shown or (reply is None and all(_reaction(e) for e in shown)):
            return None
        return documents.episode_record(turn_id, stream, shown, reply=reply, reply_ts=reply_ts)

    async def _facts(
        self, turn_id: str, personal: Sequence[memory_records.MemoryRecord]
    ) -> tuple[list[memory_records.MemoryRecord], list[str]]:
        """The condensed facts, and the viewers whose extraction answered (their facts of this
        turn are replaced by this answer; a failed extraction keeps the earlier ones)."""
        if self.model is None or not personal:
            return [], []
        condensed: list[memory_records.MemoryRecord] = []
        refreshed: list[str] = []
        for user_id in sorted({r.user_id for r in personal if r.user_id}):
            own = [r for r in personal if r.user_id == user_id]
            found = await facts.condense(self.model, turn_id, own)
            if found is not None:
                condensed.extend(found)
                refreshed.append(user_id)
        return condensed, refreshed


def make_handler(consolidator: Consolidator) -> Callable[[jobs.Job], Awaitable[None]]:
    """The ``consolidate_turn`` job handler: ``payload == {"turn_id": ..., "stream": ...}``."""

    async def handle(job: jobs.Job) -> None:
        payload = job.payload
        turn_id = payload.get("turn_id") if isinstance(payload, dict) else None
        if not isinstance(turn_id, str) or not turn_id:
            raise errors.JobValidationError(
                f"consolidate_turn payload without a turn id: {payload!r}"
            )
        await consolidator.consolidate(turn_id)

    return handle
