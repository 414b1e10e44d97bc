"""Changing facts over a channel's life, as a user runs it: a channel of three weekly streams (``tests/data/
changes_channel.jsonl``: six viewers state facts in the first, change them in the second — moved,
switched studies, quit a job, a new job, a birthday, in English and Italian, next to traps: a
sister's city, a hypothetical move — and ask about them in the third, when none of it is in the
recent chat). Replayed with ``bot replay --no-llm --sync-consolidation --json``: for every changed
fact the newer statement is recalled above, or instead of, the older one, and every recall item from
a viewer's space is that viewer's own words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests import test_memory_end_to_end as end_to_end

if TYPE_CHECKING:
    from collections.abc import Mapping

TRANSCRIPT = Path(__file__).parent / "data" / "changes_channel.jsonl"
#: the question → (the older statement's id, the newer one's)
CHANGED = {
    "Mnemo, where do I live?": ("w4", "w21"),
    "Mnemo, what do I study?": ("w6", "w23"),
    "Mnemo, che lavoro faccio?": ("w8", "w25"),
    "Mnemo, dove abito?": ("w11", "w27"),
    "Mnemo, where do I work?": ("w10", "w26"),
    "Mnemo, quanti anni ho?": ("w12", "w28"),
}


def events() -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in TRANSCRIPT.read_text().splitlines()]
    return {row["id"]: row for row in rows}


def places(
    turns: list[dict[str, Any]], messages: Mapping[str, Mapping[str, Any]]
) -> dict[str, tuple[int | None, int | None]]:
    """Question → where the older and the newer statement come in its recall (None: absent)."""
    found: dict[str, tuple[int | None, int | None]] = {}
    for turn in turns:
        [question] = [messages[i]["text"] for i in turn["message_ids"]] or [None]
        if question not in CHANGED:
            continue
        order = [o for item in turn["recall"] for o in item["origin_message_ids"]]
        old, new = CHANGED[question]
        found[question] = (
            order.index(old) if old in order else None,
            order.index(new) if new in order else None,
        )
    return found


@pytest.mark.timeout(240)  # a replay of 49 messages: ~25 s on a loaded 2-core machine
def test_the_newest_statement_comes_first_for_every_changed_fact(
    env: dict[str, str], tmp_path: Path
) -> None:
    messages = events()
    turns = end_to_end.replay(TRANSCRIPT, env, tmp_path)

    found = places(turns, messages)
    assert set(found) == set(CHANGED)
    for question, (old, new) in found.items():
        assert new is not None, f"{question}: the newer statement is not recalled"
        assert old is None or old > new, f"{question}: the older statement comes first"
    logins = {row["login"]: row["user_id"] for row in messages.values()}
    items = [item for turn in turns for item in turn["recall"]]
    own = [item for item in items if item["space"].startswith("viewer-")]
    assert own, "nothing was recalled from a viewer's space"
    for item in own:  # misattribution 0: a viewer's space holds only that viewer's words
        author = logins[item["viewer"]]
        assert all(messages[o]["user_id"] == author for o in item["origin_message_ids"]), item


@pytest.mark.timeout(240)
def test_without_supersession_older_statements_come_first(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The ablation: the check above tells the difference (without supersession the older facts win).
    The slot answers are off too: they put the profile's current value of the slot asked for
    first, which would hide what supersession does to the recalled statements."""
    off = {
        **env,
        "LIVEMEMORY_MEMORY__SUPERSEDE": "false",
        "LIVEMEMORY_MEMORY__RELEVANCE_FLOOR": "false",
    }
    found = places(end_to_end.replay(TRANSCRIPT, off, tmp_path), events())
    stale = [q for q, (old, new) in found.items() if old is not None and (new is None or old < new)]
    assert len(stale) >= 3, found
