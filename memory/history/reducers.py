"""Reducers: a stream's working history → what the prompt shows (a read-side view: the transcript
keeps everything).

Every reducer implements ``ports.Reducer``. Shared rules:

- a leading SYSTEM item is always kept and never counted against the budget;
- a tool call (an assistant item with ``tool_calls``) and its TOOL results form one *unit* that is
  kept or dropped whole, so a result never appears without its call and a call never loses its
  results; cut points move forward (toward newer items) to respect that;
- a TOOL result whose call is not in the input (e.g. the history cap cut it off) is dropped;
- output order is input order, and nothing is invented (except the summarizing reducer's one
  summary item).

``tokens`` uses ``models.estimate_tokens``: a tokenizer-free estimate (about four characters a token),
not the model's tokenizer.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory import errors, models, sql
from memory.adapters import postgres

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from config.settings import Settings
    from memory import ports

    #: the budget cost of one history item
    Cost = Callable[[models.HistoryItem], int]

logger = logging.getLogger(__name__)

Unit = list[models.HistoryItem]

SUMMARY_PROMPT = (
    "You condense the older part of a Twitch chat for a chat bot. Write a short neutral summary "
    "(at most 8 lines): who said what that still matters, open questions, promises the bot made. "
    "Keep viewer logins exactly. Do not invent anything. If an earlier summary is given, merge it."
)


def split_system(
    items: Sequence[models.HistoryItem],
) -> tuple[list[models.HistoryItem], list[models.HistoryItem]]:
    """The leading system item (as a 0- or 1-item list) and the rest."""
    if items and items[0].role is models.Role.SYSTEM:
        return [items[0]], list(items[1:])
    return [], list(items)


def _answers(call: models.HistoryItem, result: models.HistoryItem) -> bool:
    """Whether a TOOL item is a result of the calls of an assistant item."""
    ids = {c.id for c in call.tool_calls if c.id}
    if result.tool_call_id:
        return result.tool_call_id in ids
    return result.tool_name in {c.name for c in call.tool_calls}


def units(items: Sequence[models.HistoryItem]) -> list[Unit]:
    """Items grouped into atomic units: a tool call with the results that follow it; every other
    item alone. Orphan TOOL results are dropped."""
    groups: list[Unit] = []
    open_call: models.HistoryItem | None = None
    for item in items:
        if item.role is models.Role.TOOL:
            if open_call is not None and _answers(open_call, item):
                groups[-1].append(item)
            else:
                logger.debug("dropping a tool result without its call (%s)", item.tool_name)
            continue
        groups.append([item])
        is_call = item.role is models.Role.ASSISTANT and bool(item.tool_calls)
        open_call = item if is_call else None
    return groups


def item_tokens(item: models.HistoryItem) -> int:
    """Estimated tokens of one item in the prompt (content, login, tool calls, 4 of overhead)."""
    extra = sum(models.estimate_tokens(f"{c.name} {dict(c.arguments)}") for c in item.tool_calls)
    name = len(item.login.split()) + 1 if item.login else 0
    return models.estimate_tokens(item.text) + extra + name + 4


def newest_fitting(groups: Sequence[Unit], budget: int, cost: Cost) -> list[Unit]:
    """The longest suffix of ``groups`` whose total cost is within ``budget``."""
    kept: list[Unit] = []
    total = 0
    for group in reversed(groups):
        size = sum(cost(item) for item in group)
        if total + size > budget:
            break
        kept.append(group)
        total += size
    kept.reverse()
    return kept


def _count(item: models.HistoryItem) -> int:
    return 1


def flatten(groups: Sequence[Unit]) -> list[models.HistoryItem]:
    return [item for group in groups for item in group]


class KeepAll:
    """``none``: everything (the baseline), minus orphan tool results."""

    async def reduce(
        self, stream: str, items: Sequence[models.HistoryItem]
    ) -> list[models.HistoryItem]:
        system, body = split_system(items)
        return [*system, *flatten(units(body))]


class CountingReducer:
    """``counting``: the first system message plus the last ``max_messages`` messages."""

    def __init__(self, max_messages: int) -> None:
        self.max_messages = max_messages

    async def reduce(
        self, stream: str, items: Sequence[models.HistoryItem]
    ) -> list[models.HistoryItem]:
        system, body = split_system(items)
        return [*system, *flatten(newest_fitting(units(body), self.max_messages, _count))]


class TokenReducer:
    """``tokens``: the newest messages whose estimated tokens fit ``token_budget``."""

    def __init__(self, token_budget: int) -> None:
        self.token_budget = token_budget

    async def reduce(
        self, stream: str, items: Sequence[models.HistoryItem]
    ) -> list[models.HistoryItem]:
        system, body = split_system(items)
        return [*system, *flatten(newest_fitting(units(body), self.token_budget, item_tokens))]


def turns(items: Sequence[models.HistoryItem]) -> list[list[Unit]]:
    """Units grouped by turn. A turn starts at a viewer batch: a new ``turn_id``, or a USER item
    without one that does not follow another such item. Other items without a turn id join the
    current turn."""
    grouped: list[list[Unit]] = []
    current: str | None = None
    previous: models.HistoryItem | None = None
    for unit in units(items):
        head = unit[0]
        if head.turn_id is not None:
            starts = not grouped or head.turn_id != current
        else:
            same_batch = (
                previous is not None
                and previous.role is models.Role.USER
                and previous.turn_id is None
            )
            starts = not grouped or (head.role is models.Role.USER and not same_batch)
        if starts:
            grouped.append([])
            current = head.turn_id
        grouped[-1].append(unit)
        previous = head
    return grouped


class TurnReducer:
    """``turns``: the newest whole turns within ``max_messages`` (system not counted).

    When the newest turn alone is over budget, its question(s) — the USER items it starts with — are
    kept, then its most recent units that fit what is left; the output can exceed ``max_messages``
    only when the questions alone do (documented single-turn case). Stateless.
    """

    def __init__(self, max_messages: int) -> None:
        self.max_messages = max_messages

    async def reduce(
        self, stream: str, items: Sequence[models.HistoryItem]
    ) -> list[models.HistoryItem]:
        system, body = split_system(items)
        grouped = turns(body)
        if not grouped:
            return system
        kept = newest_fitting([flatten(t) for t in grouped], self.max_messages, _count)
        if kept:
            return [*system, *flatten(kept)]
        newest = grouped[-1]
        questions: list[Unit] = []
        for unit in newest:
            if unit[0].role is not models.Role.USER:
                break
            questions.append(unit)
        rest = newest[len(questions) :]
        room = max(0, self.max_messages - len(flatten(questions)))
        return [*system, *flatten(questions), *flatten(newest_fitting(rest, room, _count))]


def item_key(item: models.HistoryItem) -> str:
    """A stable key of a history item (to find where a stored summary ends)."""
    if item.message_id:
        return f"m:{item.message_id}"
    digest = hashlib.sha1(item.text.encode(), usedforsecurity=False).hexdigest()[:12]
    call = item.tool_call_id or ",".join(c.id for c in item.tool_calls)
    return f"{item.role.value}:{item.turn_id or ''}:{call}:{item.ts.isoformat()}:{digest}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """The stored summary of a stream's older history."""

    #: the key and chat time of the last item it folds
    covers_key: str
    covers_ts: datetime
    #: how many history items it folds in all
    covers_count: int
    text: str
    model: str


class SummarizingReducer:
    """``summarizing``: the newest ``target`` messages verbatim, older ones folded into a summary
    in steps of more than ``threshold`` messages.

    The prompt shows the summary and the newest ``target`` messages (whole units). Messages older
    than those and newer than the summary wait, unseen by the model, until more than
    ``threshold`` of them have gathered; then one model call folds them all into the summary (the
    previous summary merged in). The gap between the two marks is the hysteresis: the model is
    called once every ``threshold`` messages at most, however busy the chat, while the prompt stays
    within ``target`` messages and one summary. ``target + threshold`` plus one turn's messages
    should stay under the working history's cap, or what scrolls out of it before a fold is lost to
    the summary (as the counting reducer loses it). ``calls`` counts the model calls. Summaries are
    stored in ``history_summaries`` (when a database is given), so a restart does not summarize
    again. When the model fails, the waiting messages stay unsummarized and the turn goes on.
    """

    def __init__(
        self,
        *,
        model: ports.ChatModel,
        model_name: str,
        target: int,
        threshold: int,
        db: postgres.Database | None = None,
    ) -> None:
        self.model = model
        self.model_name = model_name
        self.target = target
        self.threshold = threshold
        self.db = db
        self._summaries: dict[str, Summary | None] = {}
        #: model calls made so far (the hysteresis keeps them rare)
        self.calls = 0
        self._locks: dict[str, asyncio.Lock] = {}

    async def reduce(
        self, stream: str, items: Sequence[models.HistoryItem]
    ) -> list[models.HistoryItem]:
        system, body = split_system(items)
        groups = units(body)
        async with self._locks.setdefault(stream, asyncio.Lock()):
            summary = await self._current(stream)
            tail = self._after(summary, groups)
            window = newest_fitting(tail, self.target, _count)
            waiting = flatten(tail[: len(tail) - len(window)])
            if len(waiting) > self.threshold:
                summary = await self._fold(stream, summary, waiting)
        if summary is None:
            return [*system, *flatten(window)]
        item = models.HistoryItem(
            role=models.Role.SYSTEM,
            text=f"Summary of the earlier chat:\n{summary.text}",
            ts=summary.covers_ts,
            summary=True,
        )
        return [*system, item, *flatten(window)]

    def _after(self, summary: Summary | None, groups: list[Unit]) -> list[Unit]:
        """The units the summary does not cover."""
        if summary is None:
            return groups
        for index, group in enumerate(groups):
            if any(item_key(item) == summary.covers_key for item in group):
                return groups[index + 1 :]
        return [g for g in groups if g[0].ts > summary.covers_ts]

    async def _current(self, stream: str) -> Summary | None:
        # with a database the stored summary is the truth, read every turn (one indexed row):
        # another process may have dropped it (forget --everywhere) or written a newer one
        if self.db is not None or stream not in self._summaries:
            self._summaries[stream] = await self._load(stream)
        return self._summaries[stream]

    async def _load(self, stream: str) -> Summary | None:
        if self.db is None:
            return None
        with postgres.wrap_errors("read history summary"):
            row = await self.db.pool.fetchrow(sql.queries["state_latest_summary"], stream)
        if row is None:
            return None
        return Summary(
            covers_key=row["covers_key"],
            covers_ts=row["covers_ts"],
            covers_count=row["covers_count"],
            text=row["text"],
            model=row["model"],
        )

    async def _fold(
        self, stream: str, previous: Summary | None, folded: list[models.HistoryItem]
    ) -> Summary | None:
        """Summarize ``folded`` (merging ``previous``); None when the model failed."""
        lines = [f"Earlier summary:\n{previous.text}\n"] if previous else []
        lines += [_line(item) for item in folded]
        messages = [
            models.PromptMessage(role=models.Role.SYSTEM, content=SUMMARY_PROMPT),
            models.PromptMessage(role=models.Role.USER, content="\n".join(lines)),
        ]
        self.calls += 1
        try:
            reply = await self.model.chat(messages, model=self.model_name)
        except (errors.ModelUnavailable, errors.ModelError) as exc:
            logger.warning(
                "stream %s: summarizing failed, older history dropped: %s",
                stream,
                exc,
                extra={"action": "summarize_failed"},
            )
            return previous
        last = folded[-1]
        summary = Summary(
            covers_key=item_key(last),
            covers_ts=last.ts,
            covers_count=(previous.covers_count if previous else 0) + len(folded),
            text=reply.content.strip(),
            model=self.model_name,
        )
        if self.db is not None:
            with postgres.wrap_errors("store history summary"):
                await self.db.pool.execute(
                    sql.queries["state_insert_summary"],
                    stream,
                    summary.covers_key,
                    summary.covers_ts,
                    summary.covers_count,
                    summary.text,
                    summary.model,
                )
        self._summaries[stream] = summary
        logger.info(
            "stream %s: %d messages folded into the summary (model call %d)",
            stream,
            len(folded),
            self.calls,
            extra={"action": "summarize", "calls": self.calls},
        )
        return summary


def _line(item: models.HistoryItem) -> str:
    if item.role is models.Role.USER:
        return f"{item.login or 'viewer'}: {item.text}"
    if item.role is models.Role.TOOL:
        return f"[tool {item.tool_name}] {item.text}"
    calls = " ".join(f"[calls {c.name}]" for c in item.tool_calls)
    return f"[{item.role.value}] {item.text} {calls}".strip()


def build_reducer(
    settings: Settings,
    *,
    db: postgres.Database | None = None,
    model: ports.ChatModel | None = None,
) -> ports.Reducer:
    """The reducer ``settings.history.reducer`` names."""
    history = settings.history
    match history.reducer:
        case "none":
            return KeepAll()
        case "counting":
            return CountingReducer(history.max_messages)
        case "tokens":
            return TokenReducer(history.token_budget)
        case "turns":
            return TurnReducer(history.max_messages)
        case "summarizing":
            if model is None:
                raise errors.ConfigurationError("the summarizing reducer needs a chat model")
            return SummarizingReducer(
                model=model,
                model_name=settings.ollama.summary_model or settings.ollama.chat_model,
                target=history.summarize_target,
                threshold=history.summarize_threshold,
                db=db,
            )
    raise errors.ConfigurationError(f"unknown reducer {history.reducer!r}")
