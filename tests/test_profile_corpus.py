"""The profile corpus: everyday EN + IT phrasings of the slots, checked line by line.

``tests/data/profile_corpus.jsonl`` has one JSON object per line, of two shapes:

* ``{"lang": "en"|"it", "text": …, "expect": {slot: value | null}, "trap": …}``: what
  ``profile.slots_of(text)`` must return exactly (``{}``: no slot; ``null``: the slot is cleared).
  ``trap`` names what the line must not be taken for: ``not_a_job`` ("I'm a bit tired"),
  ``not_an_age``, ``not_a_location``, ``not_a_study`` ("I study in the library", "Studio
  Ghibli…"), ``family``, ``hypothetical``, ``sarcasm``, ``other_viewer``, ``negation``, ``past``.
* ``{"lang": …, "lines": [{"text": …, "day": N}, …], "profile": {slot: value}}``: one viewer's
  statements, applied in file order (not always chat order) to the real profile store, each stated
  on day ``N``; ``profile`` is the named slots the viewer then has (a cleared slot is absent).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memory.consolidate import noise
from memory.consolidate import profile as profile_module
from memory.spaces import records

if TYPE_CHECKING:
    from memory.adapters import postgres

CORPUS = Path(__file__).parent / "data" / "profile_corpus.jsonl"
T0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)


def _rows() -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in CORPUS.read_text(encoding="utf-8").splitlines() if raw]


LINES = [row for row in _rows() if "text" in row]
SEQUENCES = [row for row in _rows() if "lines" in row]


def test_the_corpus_is_large_enough_and_holds_every_kind_of_trap() -> None:
    langs = [row["lang"] for row in LINES]
    traps = {row.get("trap") for row in LINES}
    assert len(LINES) >= 80 and langs.count("en") >= 40 and langs.count("it") >= 40
    assert {"not_a_job", "family", "hypothetical", "sarcasm", "other_viewer"} <= traps
    assert all(row["expect"] == {} for row in LINES if row.get("trap") == "sarcasm")


@pytest.mark.parametrize("row", LINES, ids=[f"{row['lang']}:{row['text']}" for row in LINES])
def test_each_corpus_line_sets_or_clears_the_expected_slots(row: dict[str, Any]) -> None:
    assert profile_module.slots_of(row["text"]) == row["expect"]


#: phrasings the extractor once missed, each with the slot it must fill
MISSED = [
    ("I'm a nurse, night shifts are rough", {"job": "nurse"}),
    ("I'm a software tester now", {"job": "software tester"}),
    ("I just started a job as a data analyst", {"job": "data analyst"}),
    ("turned 25 yesterday", {"age": "25"}),
]


@pytest.mark.parametrize(("text", "expected"), MISSED)
def test_the_phrasings_once_missed_pass_the_filter_and_fill_their_slot(
    text: str, expected: dict[str, str]
) -> None:
    assert noise.classify(text).keep  # consolidation keeps it as a personal memory at all
    assert profile_module.slots_of(text) == expected


def _memory(n: int, text: str, day: int) -> records.MemoryRecord:
    at = T0 + timedelta(days=day)
    return records.MemoryRecord(
        id=f"00000000-0000-0000-0000-{n:012d}",
        space="viewer:1001",
        kind=records.MemoryKind.PERSONAL,
        text=text,
        user_id="1001",
        login="alice",
        stream=f"s{day}",
        turn_id=f"t{n}",
        origin_message_ids=(f"m{n}",),
        first_ts=at,
        last_ts=at,
    )


@pytest.mark.parametrize(
    "row", SEQUENCES, ids=[" / ".join(line["text"] for line in row["lines"]) for row in SEQUENCES]
)
async def test_each_corpus_sequence_leaves_the_newest_statement_in_the_profile(
    db: postgres.Database, row: dict[str, Any]
) -> None:
    store = profile_module.ProfileStore(db)
    for n, line in enumerate(row["lines"], start=1):
        await store.apply_memories([_memory(n, line["text"], line["day"])])

    profile = await store.get("1001")
    facts = [fact for fact in profile.facts if not fact.is_note] if profile else []
    assert {fact.slot: fact.value for fact in facts} == row["profile"]
    newest = {line["text"]: T0 + timedelta(days=line["day"]) for line in row["lines"]}
    assert all(fact.stated_at == newest[fact.text] for fact in facts)
