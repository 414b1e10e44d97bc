"""The synthetic multi-viewer stream: reproducible, and its gold annotations are consistent."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from memory import models
from memory.eval import synthetic
from memory.history import transcript_file

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def stream() -> synthetic.SyntheticStream:
    return synthetic.generate(seed=11, viewers=12, filler=30)


def test_same_seed_same_stream() -> None:
    one = synthetic.generate(seed=5, viewers=8)
    two = synthetic.generate(seed=5, viewers=8)
    assert one.to_jsonl() == two.to_jsonl()
    assert one.gold_json() == two.gold_json()


def test_another_seed_another_stream() -> None:
    assert synthetic.generate(seed=1).to_jsonl() != synthetic.generate(seed=2).to_jsonl()


def test_events_are_time_ordered_with_unique_ids(stream: synthetic.SyntheticStream) -> None:
    ids = [e.id for e in stream.events]
    assert len(ids) == len(set(ids))
    assert all(a.ts < b.ts for a, b in zip(stream.events, stream.events[1:], strict=False))
    assert len({e.user_id for e in stream.events}) == 12


def test_every_self_statement_is_written_by_its_viewer(stream: synthetic.SyntheticStream) -> None:
    authors = stream.authors
    assert stream.self_statements
    for message_id, user_id in stream.self_statements.items():
        assert authors[message_id] == user_id


def test_claims_are_about_someone_else_and_not_self_statements(
    stream: synthetic.SyntheticStream,
) -> None:
    assert stream.claims
    for claim in stream.claims:
        assert claim.author_id != claim.subject_id
        assert stream.authors[claim.message_id] == claim.author_id
        assert claim.message_id not in stream.self_statements


def test_corrections_supersede_and_the_latest_wins(stream: synthetic.SyntheticStream) -> None:
    position = {e.id: i for i, e in enumerate(stream.events)}
    superseded = [s for s in stream.statements if s.superseded_by]
    assert superseded, "the generator makes corrections"
    by_id = {s.message_id: s for s in stream.statements}
    evidence = {mid for p in stream.probes for mid in p.evidence_ids}
    for old in superseded:
        assert old.superseded_by is not None
        new = by_id[old.superseded_by]
        assert (new.user_id, new.attribute) == (old.user_id, old.attribute)
        assert position[new.message_id] > position[old.message_id]
        assert old.message_id not in evidence


def test_probe_evidence_is_consistent(stream: synthetic.SyntheticStream) -> None:
    position = {e.id: i for i, e in enumerate(stream.events)}
    statements = {s.message_id: s for s in stream.statements}
    kinds = {p.kind for p in stream.probes}
    assert kinds == set(synthetic.ProbeKind)
    lore_ids = {entry.id for entry in stream.lore}
    for probe in stream.probes:
        assert probe.evidence_ids
        assert stream.authors[probe.message_id] == probe.asker_id
        if probe.kind is synthetic.ProbeKind.LORE:
            assert set(probe.evidence_ids) <= lore_ids
            continue
        for mid in probe.evidence_ids:
            assert position[mid] < position[probe.message_id]
            assert stream.authors[mid] == probe.target_id
        if probe.kind in (synthetic.ProbeKind.SELF_RECALL, synthetic.ProbeKind.OTHER_VIEWER):
            assert all(statements[m].superseded_by is None for m in probe.evidence_ids)
            assert (probe.asker_id == probe.target_id) == (
                probe.kind is synthetic.ProbeKind.SELF_RECALL
            )


def test_mixes_languages_noise_and_events(stream: synthetic.SyntheticStream) -> None:
    texts = [e.text for e in stream.events]
    assert any("abito a" in t or "lavoro come" in t for t in texts)  # Italian
    assert any("KEKW" in t or "LUL" in t for t in texts)  # emote spam
    assert any(t.startswith("!") for t in texts)  # chat commands
    assert any(e.kind is models.EventKind.EVENT for e in stream.events)


def test_transcript_lines_read_back(stream: synthetic.SyntheticStream, tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    path.write_text(stream.to_jsonl(), encoding="utf-8")
    read = list(transcript_file.read(path))
    assert [e.id for e in read] == [e.id for e in stream.events]
    assert [e.text for e in read] == [e.text for e in stream.events]
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert set(first) >= {"ts", "stream", "id", "user_id", "login", "text"}


def test_filler_pushes_the_moments_back() -> None:
    near = synthetic.generate(seed=3, filler=0)
    far = synthetic.generate(seed=3, filler=200)
    assert len(far.events) >= len(near.events) + 200

    def gap(s: synthetic.SyntheticStream) -> int:
        position = {e.id: i for i, e in enumerate(s.events)}
        probes = [p for p in s.probes if p.kind is synthetic.ProbeKind.EPISODIC]
        return min(position[p.message_id] - position[p.evidence_ids[0]] for p in probes)

    assert gap(far) > 200
