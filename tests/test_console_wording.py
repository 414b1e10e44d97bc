"""What the console and the command answers say: with ``--no-llm`` the turn
report says what memory the prompt would carry (no prompt is shown for it to "stand in"), and counts
agree with their noun ("1 memory", "2 memories")."""

from __future__ import annotations

import io

import pytest

from bot import output
from memory import models
from memory.ops.wording import counted


@pytest.mark.parametrize(
    ("count", "word", "expected"),
    [
        (1, "memory", "1 memory"),
        (2, "memory", "2 memories"),
        (0, "entry", "0 entries"),
        (1, "entry", "1 entry"),
        (3, "message", "3 messages"),
        (1, "message", "1 message"),
        (2, "day", "2 days"),  # a vowel before the y
        (2, "recent memory", "2 recent memories"),
    ],
)
def test_counts_agree_with_their_noun(count: int, word: str, expected: str) -> None:
    assert counted(count, word) == expected


def _report(recall: list[models.RecallItem]) -> str:
    report = models.TurnReport(
        turn_id="0123456789ab",
        stream="s1",
        message_ids=["m1"],
        recall=recall,
        status=models.TurnStatus.COMPLETED,
    )
    out = io.StringIO()
    output.human(report, no_llm=True, out=out)
    return out.getvalue()


def test_a_no_llm_turn_says_what_its_prompt_would_carry() -> None:
    item = models.RecallItem(
        source="personal", space="viewer:1", viewer="alice", memory_id="x", text="I live in Turin"
    )
    shown = _report([item])
    assert "recall  personal" in shown and "I live in Turin" in shown
    assert "(--no-llm: no model call; its prompt would carry the memory recalled above)" in shown
    nothing = _report([])
    assert "(--no-llm: no model call; nothing was recalled for its prompt)" in nothing
    assert "stands in" not in shown + nothing
