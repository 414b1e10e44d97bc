"""Optional fact condensation: a chat model turns one viewer's kept statements into short facts.

Used by consolidation when ``settings.ollama.extract_facts`` is on and a model is configured. The
model must answer a JSON object ``{"facts": [{"text": "...", "message_ids": ["m1"]}]}``, validated
with pydantic; each fact keeps the raw provenance (only message ids of that viewer's own statements
are accepted). Any failure (model down, bad JSON) is logged and yields no facts: the raw statements
are stored either way.

A fact's id comes from its turn, its author and its normalized text (``fact_id``), never from its
position, so a re-run that states fewer facts cannot leave another fact under a reused id. A fact
whose source statement is forgotten is forgotten with it (``live``, ``operations.forget_memory``).
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING

import pydantic

from memory import errors, models
from memory.consolidate import documents
from memory.recall import context
from memory.spaces import records as memory_records

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from memory import ports

logger = logging.getLogger(__name__)

#: at most this many facts per viewer and turn
MAX_FACTS = 5

SYSTEM = (
    "You extract durable facts a chat viewer states about themself (job, home, pets, age, "
    "hobbies). Ignore jokes, questions and anything about other people. Write each fact as a short "
    'third-person sentence about the viewer. Answer with JSON only: {"facts": [{"text": "...", '
    '"message_ids": ["<id of the message it comes from>"]}]}; {"facts": []} when there is none.'
)


class _Fact(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore")

    text: str = pydantic.Field(min_length=3, max_length=300)
    message_ids: list[str] = pydantic.Field(default_factory=list)


class _Facts(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore")

    facts: list[_Fact] = pydantic.Field(default_factory=list)


_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse(content: str) -> list[_Fact]:
    """The facts of a model answer (code fences and chatter around the JSON object tolerated)."""
    match = _JSON_OBJECT.search(content)
    if not match:
        raise ValueError("no JSON object in the model's answer")
    return _Facts.model_validate(json.loads(match.group(0))).facts[:MAX_FACTS]


def fact_id(turn_id: str, user_id: str, text: str) -> str:
    """A fact's point id: from its turn, its author and its normalized text (a re-run that states
    the same fact again replaces it; one that no longer states it leaves a stale id to delete)."""
    return documents.point_id(turn_id, user_id, "fact", context.normalize(text))


def live(
    condensed: Sequence[memory_records.MemoryRecord],
    personal: Sequence[memory_records.MemoryRecord],
    forgotten: Collection[str],
) -> list[memory_records.MemoryRecord]:
    """The facts not forgotten themselves (``forgotten``: tombstoned memory ids) whose every source
    statement is still among ``personal`` (a fact of a forgotten statement would repeat it)."""
    kept = {r.id for r in personal}
    return [
        r
        for r in condensed
        if r.id not in forgotten and set(r.extra.get("source_memory_ids", ())) <= kept
    ]


async def condense(
    model: ports.ChatModel, turn_id: str, own: Sequence[memory_records.MemoryRecord]
) -> list[memory_records.MemoryRecord] | None:
    """``FACT`` memories condensed from one viewer's personal memories of one turn (None when the
    extraction failed, ``[]`` when the model found none)."""

    first = own[0]
    by_message = {mid: record for record in own for mid in record.origin_message_ids}
    lines = "\n".join(f"[{r.origin_message_ids[0]}] {r.text}" for r in own)
    prompt = [
        models.PromptMessage(role=models.Role.SYSTEM, content=SYSTEM),
        models.PromptMessage(role=models.Role.USER, content=f"Messages of {first.login}:\n{lines}"),
    ]
    try:
        reply = await model.chat(prompt)
        found = parse(reply.content)
    except (errors.ModelUnavailable, errors.ModelError, ValueError) as exc:
        # pydantic.ValidationError and json.JSONDecodeError are ValueErrors
        logger.warning("fact extraction failed for turn %s (%s): raw memories only", turn_id, exc)
        return None
    records: dict[str, memory_records.MemoryRecord] = {}
    for fact in found:
        origin = tuple(m for m in fact.message_ids if m in by_message) or tuple(by_message)
        sources = [by_message[m] for m in origin]
        point = fact_id(turn_id, first.user_id or "", fact.text)
        records.setdefault(
            point,
            memory_records.MemoryRecord(
                id=point,
                space=first.space,
                kind=memory_records.MemoryKind.FACT,
                text=fact.text.strip(),
                user_id=first.user_id,
                login=first.login,
                stream=first.stream,
                turn_id=turn_id,
                origin_message_ids=origin,
                participants=(first.user_id,) if first.user_id else (),
                first_ts=min(r.first_ts for r in sources if r.first_ts),
                last_ts=max(r.last_ts for r in sources if r.last_ts),
                extra={"source_memory_ids": sorted({r.id for r in sources})},
            ),
        )
    return list(records.values())
