"""The regulars corpus keeps its promises (questions in other words than their answers, gold and
distractors of the viewer asked about, two halves), and its source scores what it says."""

from __future__ import annotations

import collections
import dataclasses
from typing import TYPE_CHECKING

import pytest

from memory.eval import harness, metrics, regulars
from memory.spaces import embedders

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def corpus() -> regulars.Corpus:
    return regulars.load()


def test_no_question_shares_a_content_word_with_its_answer(corpus: regulars.Corpus) -> None:
    texts = {e.id: e.text for e in corpus.events}
    for question in corpus.questions:
        asked = set(embedders.terms(question.text))
        for gold in question.gold:
            shared = asked & set(embedders.terms(texts[gold]))
            assert not shared, (question.id, question.text, texts[gold], shared)


def test_every_distractor_shares_a_word_of_its_question(corpus: regulars.Corpus) -> None:
    texts = {e.id: e.text for e in corpus.events}
    with_distractors = [q for q in corpus.questions if q.distractors]
    assert len(with_distractors) >= len(corpus.questions) // 2
    for question in with_distractors:
        asked = set(embedders.terms(question.text))
        for distractor in question.distractors:
            assert asked & set(embedders.terms(texts[distractor])), (question.id, distractor)
            assert distractor not in question.gold


def test_gold_and_distractors_are_the_asked_about_viewer_s(corpus: regulars.Corpus) -> None:
    authors = {e.id: e.user_id for e in corpus.events}
    for question in corpus.questions:
        subject = corpus.viewers[question.about][0]
        assert question.gold
        for message_id in (*question.gold, *question.distractors):
            assert authors[message_id] == subject, (question.id, message_id)
        assert question.asker != question.about
        assert question.asker in corpus.viewers


def test_parts_are_recorded_by_the_id_and_all_are_used(corpus: regulars.Corpus) -> None:
    parts = collections.Counter(q.half for q in corpus.questions)
    assert set(parts) == set(regulars.PARTS)
    assert min(parts[half] for half in regulars.HALVES) >= 15
    for question in corpus.questions:
        assert question.half == regulars.half_of(question.id)
    assert regulars.half_of("rf01") == regulars.FRESH
    assert {regulars.half_of(f"rq{n:02}") for n in range(1, 49)} == set(regulars.HALVES)


def test_categories_languages_and_a_channel_of_regulars(corpus: regulars.Corpus) -> None:
    assert len(corpus.questions) >= 40
    categories = collections.Counter(q.category for q in corpus.questions)
    assert set(categories) == set(regulars.CATEGORIES)
    assert min(categories.values()) >= 12
    for question in corpus.questions:
        crossed = question.language != question.memory_language
        assert crossed == (question.category == "cross_language"), question.id
    assert {q.language for q in corpus.questions if q.category == "cross_language"} == {"en", "it"}
    said = collections.Counter(e.user_id for e in corpus.events)
    assert len(said) >= 8 and all(30 <= n <= 40 for n in said.values())
    assert len({e.stream for e in corpus.events}) >= 7  # about a week and more of streams


def test_the_channel_is_a_transcript_and_the_questions_come_days_later(
    corpus: regulars.Corpus,
) -> None:
    ids = [e.id for e in corpus.events]
    assert len(ids) == len(set(ids))
    assert all(a.ts < b.ts for a, b in zip(corpus.events, corpus.events[1:], strict=False))
    first_question = min(q.ts for q in corpus.questions)
    assert (first_question - corpus.events[-1].ts).days >= 3
    case = regulars.case(corpus)
    assert len(case.probes) == len(corpus.questions)
    assert {case.corpus_of(e.stream) for e in case.events} == {regulars.CASE}


def _question(**changes: object) -> regulars.Question:
    base = regulars.load().questions[0]
    return dataclasses.replace(base, gold=("g",), distractors=("d",), **changes)  # type: ignore[arg-type]


def test_question_scores_rank_answer_and_distractor() -> None:
    question = _question()
    found = regulars.question_scores(question, [frozenset({"x"}), frozenset({"g"})])
    assert found["answer_rank"] == 2 and found["top3"] and not found["distractor_above"]
    assert found["precision@5"] == 0.5 and found["items"] == 2
    trapped = regulars.question_scores(question, [frozenset({"d"}), frozenset({"g"})])
    assert trapped["distractor_above"] and trapped["top3"]
    missed = [frozenset({str(i)}) for i in range(3)] + [frozenset({"g"}), frozenset({"d"})]
    late = regulars.question_scores(question, missed)
    assert late["answer_rank"] == 4 and not late["top3"] and not late["distractor_above"]
    alone = regulars.question_scores(question, [frozenset({"d"})])
    assert alone["answer_rank"] is None and alone["distractor_above"]  # recalled, answer not


def test_group_scores_count_per_prompt() -> None:
    with_trap, without = _question(), dataclasses.replace(_question(), distractors=())
    groups = regulars.group_scores(
        [(with_trap, [frozenset({"d"}), frozenset({"g"})]), (without, [frozenset({"x"})] * 3)]
    )
    assert groups["answer_top3"] == {"value": 0.5, "hits": 1, "total": 2}
    assert groups["distractor_above"] == {"value": 1.0, "hits": 1, "total": 1}
    assert groups["items_per_prompt"] == 2.5
    assert groups["irrelevant_share"] == {"value": 0.8, "hits": 4, "total": 5}


def test_prompt_load_counts_items_tokens_and_irrelevant() -> None:
    load = metrics.prompt_load(
        [
            ([frozenset({"a"}), frozenset({"b"})], {"a"}, ["one two three", "four"]),
            ([], {"c"}, []),
        ]
    )
    assert load.prompts == 2 and load.items_per_prompt == 1.0
    assert load.tokens_per_prompt == 2.0  # 3 words + 1 word, over two prompts
    assert load.irrelevant == metrics.Ratio(hits=1, total=2)


@pytest.mark.timeout(240)  # a replay of ~80 messages with consolidation: ~10 s on 2 loaded cores
async def test_the_source_replays_the_channel_and_scores_each_question(
    corpus: regulars.Corpus, database_url: str, tmp_path: Path
) -> None:
    """Three questions about two regulars, replayed over those two regulars' week (and their
    askers'): every question answered, its gold kept as a memory, nothing misattributed, and the
    figures agree with the per-question scores."""
    chosen = [q for q in corpus.questions if q.about in ("nina_vale", "giuliab93")][:3]
    people = {corpus.viewers[login][0] for q in chosen for login in (q.about, q.asker)}
    case = regulars.case(corpus, questions=[q.id for q in chosen])
    case = dataclasses.replace(
        case,
        events=tuple(e for e in case.events if e.user_id in people),
    )
    reports = await harness.run_full(
        case, harness.eval_settings(tmp_path, database_url=database_url)
    )
    result = harness.score(case, reports, config="full")
    regulars.annotate(result, corpus)
    m = result.metrics
    assert m["probes_answered"] == 3
    assert m["misattribution"]["hits"] == 0 and m["misattribution"]["total"] > 0
    assert m["items_per_prompt"] is not None and m["items_per_prompt"] > 0
    assert m["tokens_per_prompt"] is not None and m["tokens_per_prompt"] > 0
    per_question = m["per_question"]
    assert set(per_question) == {q.id for q in chosen}
    recalled = {mid for scores in per_question.values() for ids in scores["ranking"] for mid in ids}
    assert recalled, "the questions recall memories"
    top3 = sum(1 for scores in per_question.values() if scores["top3"])
    assert m["answer_top3"] == {"value": top3 / 3, "hits": top3, "total": 3}
    for question in chosen:
        rank = per_question[question.id]["answer_rank"]
        ranking = result.rankings[question.id]
        before = ranking if rank is None else ranking[: rank - 1]
        assert not any(set(question.gold) & ids for ids in before)
        if rank is not None:
            assert set(question.gold) & ranking[rank - 1]
    assert m["regulars"]["dev"]["questions"] + m["regulars"]["held-out"]["questions"] == 3
