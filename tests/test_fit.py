"""A prompt reduced to a context window (``memory.history.fit``): the oldest history first, then
memory lines from the block's end, never the system prompt or the lines being answered."""

from __future__ import annotations

from memory import models, prompt
from memory.history import fit
from tests import chatlog

SYSTEM = models.HistoryItem(role=models.Role.SYSTEM, text="You are Mnemo.", ts=chatlog.T0)
BLOCK = "\n".join(
    [
        "Lines are [viewer · when said].",
        "## Relevant viewer profile",
        "- [alice · March] my cat is called Miso " + "and she is grey " * 6,
        "## Lore",
        "- the castle has a secret room " + "behind the waterfall " * 6,
        "- the dragon sleeps in winter " + "under the mountain " * 6,
    ]
)


def item(n: int, text: str, turn: str) -> models.HistoryItem:
    return models.HistoryItem.from_event(chatlog.chat(n, "bob", text), turn)


def fitted(items: list[models.HistoryItem], limit: int) -> fit.Fitted:
    return fit.fit(
        items, BLOCK, answering=lambda i: i.turn_id == "now", limit=limit, render=prompt.to_prompt
    )


def tokens(items: list[models.HistoryItem], block: str) -> int:
    return models.estimate_messages_tokens(prompt.to_prompt(items, block))


def test_within_the_window_nothing_changes() -> None:
    items = [SYSTEM, item(1, "hello", "t1"), item(2, "and now?", "now")]
    result = fitted(items, 10_000)
    assert (result.items, result.block, result.dropped_history) == (items, BLOCK, 0)


def test_history_goes_first_then_memory_from_the_end() -> None:
    past = [item(n, f"old line {n} " * 10, f"t{n}") for n in range(1, 6)]
    current = item(9, "so where is the secret room?", "now")
    everything = [SYSTEM, *past, current]
    without_history = tokens([SYSTEM, current], BLOCK)
    result = fitted(everything, without_history + 1)
    assert result.items == [SYSTEM, current] and result.block == BLOCK
    assert result.dropped_history == 5 and result.fits
    # one lore line less than the whole block: the last line goes, its section stays
    lines = BLOCK.split("\n")
    result = fitted(everything, tokens([SYSTEM, current], "\n".join(lines[:-1])))
    assert result.block == "\n".join(lines[:-1]) and result.dropped_memory == 1
    # both lore lines: the empty section goes with its title
    result = fitted(everything, tokens([SYSTEM, current], "\n".join(lines[:3])))
    assert result.block == "\n".join(lines[:3]) and result.dropped_memory == 2


def test_the_lines_being_answered_are_never_dropped() -> None:
    current = [item(8, "a long question " * 40, "now"), item(9, "and another", "now")]
    result = fitted([SYSTEM, item(1, "hi", "t1"), *current], 20)
    assert result.items == [SYSTEM, *current] and result.block == ""
    assert not result.fits and result.tokens_after > 20


def test_the_budget_keeps_the_reply_and_the_tools_free() -> None:
    tools = [{"type": "function", "function": {"name": "add_note", "description": "x" * 400}}]
    assert fit.budget(2048, 256, None) == int(2048 * 0.9) - 256
    assert fit.budget(2048, 256, tools) < fit.budget(2048, 256, None) - 100
