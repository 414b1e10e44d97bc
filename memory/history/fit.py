"""A prompt reduced to fit the model's context window before it is sent.

Tokens are counted with ``models.estimate_tokens`` (about four characters a token, at least one a
word; no tokenizer), so ``MARGIN`` of the window is kept free for what the estimate misses (the
chat template's own tokens, a tokenizer that counts more); the reply's tokens and the tool schemas
are kept free too.

What goes, first to last: the oldest history (whole units: a tool call with its results), then
memory lines from the end of the block (its last sections first; a section left empty goes with its
title). Never the system prompt or the chat lines being answered: a prompt that does not fit
without the rest is sent as it is, and the server's refusal fails the turn with its message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory import models
from memory.history import reducers

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    #: the prompt messages of (history items, memory block)
    Render = Callable[[Sequence[models.HistoryItem], str], Sequence[models.PromptMessage]]

#: the share of the context window the estimate leaves free
MARGIN = 0.1
_TITLE = "## "


def budget(
    context_tokens: int, reply_tokens: int, tools: Sequence[Mapping[str, Any]] | None
) -> int:
    """The estimated tokens a prompt may take in a ``context_tokens`` window."""
    schemas = models.estimate_tokens(json.dumps(list(tools))) if tools else 0
    return int(context_tokens * (1 - MARGIN)) - reply_tokens - schemas


@dataclass(frozen=True, slots=True, kw_only=True)
class Fitted:
    items: list[models.HistoryItem]
    block: str
    #: history items and memory lines left out
    dropped_history: int = 0
    dropped_memory: int = 0
    #: the estimate before and after
    tokens_before: int = 0
    tokens_after: int = 0
    #: False: even reduced, the prompt is over the budget (sent as it is)
    fits: bool = True


def fit(
    items: Sequence[models.HistoryItem],
    block: str,
    *,
    answering: Callable[[models.HistoryItem], bool],
    limit: int,
    render: Render,
) -> Fitted:
    """``items`` (the system prompt first) and ``block`` within ``limit`` estimated tokens;
    ``answering``: whether an item is a chat line of the batch being answered (always kept)."""

    def cost(kept: Sequence[models.HistoryItem], memory: str) -> int:
        return models.estimate_messages_tokens(render(kept, memory))

    before = cost(items, block)
    if before <= limit:
        return Fitted(items=list(items), block=block, tokens_before=before, tokens_after=before)
    system, body = reducers.split_system(items)
    past = [i for i in body if not answering(i)]
    current = [i for i in body if answering(i)]
    groups = reducers.units(past)
    dropped_history = len(past) - len(reducers.flatten(groups))  # orphan tool results
    lines = block.split("\n") if block else []
    dropped_memory = 0

    def now() -> tuple[list[models.HistoryItem], str]:
        memory = "\n".join(lines) if len(lines) > 1 else ""
        return [*system, *reducers.flatten(groups), *current], memory

    while cost(*now()) > limit:
        if groups:
            dropped_history += len(groups.pop(0))
        elif len(lines) > 1:
            lines.pop()
            dropped_memory += 1
            if lines[-1].startswith(_TITLE):
                lines.pop()
        else:
            break
    kept, memory = now()
    after = cost(kept, memory)
    return Fitted(
        items=kept,
        block=memory,
        dropped_history=dropped_history,
        dropped_memory=dropped_memory,
        tokens_before=before,
        tokens_after=after,
        fits=after <= limit,
    )
