"""Supersession rules (``memory.consolidate.supersede``): which older statement of a viewer a newer
one replaces, English and Italian, with the traps that must not supersede anything."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.consolidate import supersede
from memory.spaces import records

T0 = datetime(2026, 11, 1, 20, 0, tzinfo=UTC)
WEEK = timedelta(days=7)


def memory(
    text: str, at: datetime = T0, user_id: str = "1001", **fields: Any
) -> records.MemoryRecord:
    values: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "space": f"viewer:{user_id}",
        "kind": records.MemoryKind.PERSONAL,
        "text": text,
        "user_id": user_id,
        "last_ts": at,
        "created_at": at,
    }
    values.update(fields)
    return records.MemoryRecord(**values)


def why(older: str, newer: str) -> str | None:
    old, new = memory(older), memory(newer, T0 + WEEK)
    return supersede.reason(supersede.statement(new), supersede.statement(old))


SUPERSEDES = [
    # the same profile slot, another value
    ("I live in Rome", "I moved to Turin last week", "slot:location"),
    ("I live in Rome", "I live in Turin", "slot:location"),
    ("my name is Marco", "call me Bea", "slot:name"),
    ("I'm 24", "I'm 25 years old", "slot:age"),
    ("I work as a barista", "I work as a software tester", "slot:job"),
    ("I study physics", "I'm studying law", "slot:study"),
    ("abito a Roma", "mi sono trasferita a Torino", "slot:location"),
    ("vivo a Napoli", "abito a Milano", "slot:location"),
    ("ho 30 anni", "ho 31 anni", "slot:age"),
    ("lavoro come cameriere", "lavoro come programmatore", "slot:job"),
    ("studio ingegneria", "studio medicina", "slot:study"),
    ("lavoro per Ferrari", "lavoro presso Ducati", "slot:employer"),
    # the same subject, with a change cue
    (
        "I study architecture",
        "I don't study architecture anymore, I switched to design",
        "slot:study",  # the profile reads the switch as a new study value
    ),
    ("I work at the café downtown", "quit the café, I'm a tester now", "subject"),
    ("I live in Rome", "I don't live in Rome anymore", "subject"),
    ("I play bass in a band", "I'm no longer in the band", "subject"),
    ("I play guitar in a band", "now I play drums in the band", "subject"),
    ("I drive a Fiat Panda", "I sold the Panda, I switched to a bike", "subject"),
    ("I'm vegetarian", "I'm not vegetarian anymore", "subject"),
    ("studio architettura", "non studio più architettura, adesso faccio design", "subject"),
    ("lavoro in un bar", "ho cambiato lavoro, ora faccio il programmatore", "subject"),
    ("lavoro in un bar del centro", "ho lasciato il bar, sono tester adesso", "subject"),
    ("suono la chitarra in una band", "ho lasciato la band", "subject"),
    ("gioco a calcio ogni sabato", "non gioco più a calcio", "subject"),
]

KEEPS = [
    # a sister's city, a friend's job: about someone else
    ("I live in Rome", "my sister just moved to Rome"),
    ("I work at the café", "my brother quit the café"),
    ("abito a Roma", "mia sorella si è trasferita a Roma"),
    ("lavoro in un bar", "il mio ragazzo ha lasciato il bar"),
    # hypotheticals and plans
    ("I live in Rome", "if I moved to Berlin I'd learn German"),
    ("I study law", "I might switch from law to medicine"),
    ("I live in Rome", "I'm thinking about moving out of Rome next year"),
    ("abito a Roma", "se mi trasferissi a Milano cambierei lavoro"),
    ("abito a Roma", "vorrei trasferirmi da Roma a Milano"),
    ("lavoro in un bar", "magari lascio il bar l'anno prossimo"),
    # a different subject, with "now" / "adesso"
    ("I love pizza", "now I'm eating pizza"),
    ("I have a cat named Miso", "now I play guitar"),
    ("I live in Rome", "I'm watching the stream now"),
    ("lavoro in un bar", "adesso gioco a Elden Ring"),
    ("I study architecture", "I switched to the new headset"),
    # the same value again, a question, reported speech, no cue
    ("I live in Rome", "I live in Rome, it's sunny today"),
    ("I live in Rome", "did you move to Turin?"),
    ("I live in Rome", "alice said she moved to Turin"),
    ("I study architecture", "architecture is hard"),
    # conversation paragraphs that share a name and a cue word by chance (LoCoMo's turns)
    (
        "Thanks, Maria! Meal times are always fun.",
        "Thanks, Maria! I'm off to spend time with them now",
    ),
    ("Hey Gina! How's the store going?", "Hey Gina, congrats! The dance studio is tough right now"),
    ("Wow, Caroline, that's so cool!", "I'm so happy for you, Caroline. Now you're helping others"),
    ("@alice I live in Rome", "@alice I switched to decaf"),
    # an older memory with another slot the newer one does not set
    ("I'm 25, I live in Rome", "I moved to Turin"),
]


@pytest.mark.parametrize(("older", "newer", "expected"), SUPERSEDES)
def test_a_newer_statement_about_the_same_thing_supersedes(
    older: str, newer: str, expected: str
) -> None:
    assert why(older, newer) == expected


@pytest.mark.parametrize(("older", "newer"), KEEPS)
def test_traps_supersede_nothing(older: str, newer: str) -> None:
    assert why(older, newer) is None


def test_only_an_older_statement_of_the_same_viewer() -> None:
    rome, turin = memory("I live in Rome"), memory("I moved to Turin", T0 + WEEK)
    read = supersede.statement
    assert supersede.reason(read(rome), read(turin)) is None  # older never supersedes newer
    bobs = memory("I moved to Turin", T0 + WEEK, user_id="1002")
    assert supersede.reason(read(bobs), read(rome)) is None
    same_time = memory("I moved to Turin", T0)
    assert supersede.reason(read(same_time), read(rome)) is None


def test_plan_marks_the_older_memory_by_the_newer_one() -> None:
    rome, turin = memory("I live in Rome"), memory("I moved to Turin", T0 + WEEK)
    [mark] = supersede.plan([rome, turin], new={turin.id})
    assert (mark.id, mark.by, mark.at, mark.reason) == (
        rome.id,
        turin.id,
        turin.said_at,
        "slot:location",
    )


def test_plan_is_idempotent() -> None:
    rome, turin = memory("I live in Rome"), memory("I moved to Turin", T0 + WEEK)
    marked = supersede_applied([rome, turin], new={turin.id})
    assert supersede.plan(marked, new={turin.id}) == []


def test_an_old_statement_imported_late_is_superseded_by_the_newer_one() -> None:
    turin = memory("I moved to Turin", T0 + WEEK)
    vod = memory("I live in Rome", T0)  # an old VOD processed after the newer memory
    [mark] = supersede.plan([turin, vod], new={vod.id})
    assert (mark.id, mark.by) == (vod.id, turin.id)


def test_a_chain_links_each_memory_to_the_next_change() -> None:
    rome = memory("I live in Rome")
    turin = memory("I moved to Turin", T0 + WEEK)
    milan = memory("I moved to Milan", T0 + 2 * WEEK)
    state = supersede_applied([rome, turin], new={turin.id})
    state = supersede_applied([*state, milan], new={milan.id})
    assert {r.id: r.superseded_by for r in state} == {
        rome.id: turin.id,
        turin.id: milan.id,
        milan.id: None,
    }
    # a late import between them takes the link (the earliest newer statement)
    naples = memory("I live in Naples", T0 + timedelta(days=3))
    state = supersede_applied([*state, naples], new={naples.id})
    links = {r.id: r.superseded_by for r in state}
    assert links == {rome.id: naples.id, naples.id: turin.id, turin.id: milan.id, milan.id: None}


def test_when_the_superseding_memory_goes_the_older_one_is_replanned() -> None:
    rome = memory("I live in Rome")
    turin = memory("I moved to Turin", T0 + WEEK)
    milan = memory("I moved to Milan", T0 + 2 * WEEK)
    state = supersede_applied([rome, turin, milan], new={turin.id, milan.id})
    without_turin = [r for r in state if r.id != turin.id]
    [relinked] = supersede.plan(without_turin)
    assert (relinked.id, relinked.by) == (rome.id, milan.id)
    only_rome = [r for r in state if r.id == rome.id]
    [cleared] = supersede.plan(only_rome)
    assert (cleared.id, cleared.by, cleared.at) == (rome.id, None, None)


def test_other_kinds_are_never_planned() -> None:
    episode = memory("alice: I live in Rome", kind=records.MemoryKind.EPISODIC)
    turin = memory("I moved to Turin", T0 + WEEK)
    assert supersede.plan([episode, turin], new={turin.id}) == []


def supersede_applied(
    memories: list[records.MemoryRecord], *, new: set[str]
) -> list[records.MemoryRecord]:
    """The memories once the planned marks are set (what the store would hold)."""
    marks = {m.id: m for m in supersede.plan(memories, new=new)}
    return [
        records.MemoryRecord(
            **{
                **{f: getattr(r, f) for f in r.__dataclass_fields__},
                "superseded_by": marks[r.id].by,
                "superseded_at": marks[r.id].at,
            }
        )
        if r.id in marks
        else r
        for r in memories
    ]
