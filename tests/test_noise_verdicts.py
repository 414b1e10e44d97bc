"""``scripts/noise_verdicts.py``: what a change to the consolidation filter keeps and drops."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memory import models
from memory.consolidate import noise
from scripts import noise_verdicts

if TYPE_CHECKING:
    import pytest

T0 = datetime(2026, 12, 1, 20, 0, tzinfo=UTC)


def _event(number: int, user: str, text: str) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"m{number}", stream="s", user_id=user, login=user, name=user, text=text, ts=T0
    )


def test_a_line_is_classified_with_the_line_another_viewer_wrote_before_it_and_alone() -> None:
    answer = "Pepperoni of course!"
    rows = noise_verdicts.verdicts(
        [
            _event(1, "bob", "What's your favourite pizza?"),
            _event(2, "alice", answer),
            _event(3, "alice", answer),
        ]
    )
    assert rows[0] == ("m1", "What's your favourite pizza?", noise.QUESTION, noise.QUESTION)
    # an answer to a question put to its author is kept; alone, two words say too little
    assert rows[1] == ("m2", answer, noise.ANSWER, noise.NOT_SELF)
    # the line before is the author's own: no question was put to them
    assert rows[2] == ("m3", answer, noise.NOT_SELF, noise.NOT_SELF)


def test_compare_counts_changed_verdicts_and_shows_those_that_keep_or_drop(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = {
        "regulars": [
            ("m1", "in quel gioco sei solo carne da cannone", noise.KEEP, noise.KEEP),
            ("m2", "Still Life in Studio", noise.KEEP, noise.KEEP),
            ("m3", "lol", noise.SHORT_REACTION, noise.SHORT_REACTION),
        ]
    }
    after = {
        "regulars": [
            ("m1", "in quel gioco sei solo carne da cannone", noise.NOT_SELF, noise.NOT_SELF),
            ("m2", "Still Life in Studio", noise.DESCRIPTIVE, noise.DESCRIPTIVE),
            ("m3", "lol", noise.SHORT_REACTION, noise.SHORT_REACTION),
        ]
    }
    noise_verdicts.compare(before, after, shown=5)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "regulars: 3 lines, 2 verdicts changed, 1 kept/dropped"
    assert out[1:] == [
        "  m1 'in quel gioco sei solo carne da cannone': self_statement -> not_self_statement"
    ]
