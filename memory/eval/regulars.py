"""The regulars channel (``tests/data/regulars_*``): everyday statements, then questions in other words.

Nine regulars of one channel each say about thirty everyday things about themselves over twelve
daily streams, in English or Italian (``regulars_channel.jsonl``, the chat transcript format).
Days later, in a stream of its own, other regulars ask the bot about them
(``regulars_questions.json``) with no content word (``memory.spaces.embedders.terms``) in common
with the statement that answers: a paraphrase ("does she eat meat?" for "I'm vegetarian"), a
hypernym ("any pets?" for "my dog Biscuit…"), or the other language ("che lavoro fa?" for "I'm a
nurse"). Most questions also name *distractors*: statements of the same viewer that share the
question's words, not its meaning ("my biggest pet peeve is…").

The channel is replayed through the real system as the synthetic stream is; each question is a
probe whose evidence is its gold statements. Beside the common metrics, per question (``scores``):
the answer among the first 3 items, a distractor ranked above the answer (or present without it),
the items of the prompt, P@5. Questions are split into a ``dev`` half (to tune on) and a
``held-out`` half (to report on) by a stable hash of their id (``half_of``), recorded in the file.
A third part, ``fresh`` (ids ``rf…``), was written after the retrieval rules had been chosen on the
halves, by a writer who had not read those rules: it is never tuned on, and it tells whether a rule
made for one question of the halves holds for questions nobody fitted it to.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory import models
from memory.eval import REPO_ROOT, harness, metrics

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

DATA_DIR = REPO_ROOT / "tests" / "data"
CHANNEL = "regulars_channel.jsonl"
QUESTIONS = "regulars_questions.json"
CASE = "regulars"
HALVES = ("dev", "held-out")
#: the part written after the rules were chosen (never tuned on), and all parts in report order
FRESH = "fresh"
PARTS = (*HALVES, FRESH)
CATEGORIES = ("paraphrase", "hypernym", "cross_language")
#: the answer counts as found among this many first items
TOP = 3
#: the items of a peer's prompt (its first five, as ``memory.eval.peers``)
PEER_PROMPT = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    id: str
    half: str
    category: str
    #: the question's language and the language of the memory that answers it
    language: str
    memory_language: str
    ts: datetime
    asker: str
    about: str
    text: str
    gold: tuple[str, ...]
    distractors: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Corpus:
    events: tuple[models.ChatEvent, ...]
    questions: tuple[Question, ...]
    #: login → (user id, display name)
    viewers: dict[str, tuple[str, str]]
    stream: str


def half_of(question_id: str) -> str:
    """``fresh`` for an ``rf…`` id, otherwise ``dev`` or ``held-out``: the parity of the question
    id's 8-byte blake2b digest."""
    if question_id.startswith("rf"):
        return FRESH
    digest = hashlib.blake2b(question_id.encode(), digest_size=8).digest()
    return HALVES[int.from_bytes(digest, "little") % 2]


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def load(directory: Path = DATA_DIR) -> Corpus:
    """The channel and its questions."""
    events = []
    for line in (directory / CHANNEL).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row: dict[str, Any] = json.loads(line)
            events.append(
                models.ChatEvent(
                    id=row["id"], stream=row["stream"], user_id=row["user_id"],
                    login=row["login"], name=row.get("name"), text=row["text"], ts=_time(row["ts"]),
                )
            )  # fmt: skip
    data: dict[str, Any] = json.loads((directory / QUESTIONS).read_text(encoding="utf-8"))
    questions = tuple(
        Question(
            id=q["id"], half=q["half"], category=q["category"], language=q["language"],
            memory_language=q["memory_language"], ts=_time(q["ts"]), asker=q["asker"],
            about=q["about"], text=q["text"], gold=tuple(q["gold"]),
            distractors=tuple(q["distractors"]),
        )
        for q in data["questions"]
    )  # fmt: skip
    viewers = {login: (v["user_id"], v["name"]) for login, v in data["viewers"].items()}
    return Corpus(events=tuple(events), questions=questions, viewers=viewers, stream=data["stream"])


def question_events(corpus: Corpus) -> list[models.ChatEvent]:
    """Each question as its asker's chat message in the questions' stream."""
    return [
        models.ChatEvent(
            id=q.id, stream=corpus.stream, user_id=corpus.viewers[q.asker][0], login=q.asker,
            name=corpus.viewers[q.asker][1], text=q.text, ts=q.ts,
        )
        for q in corpus.questions
    ]  # fmt: skip


def case(corpus: Corpus | None = None, *, questions: Sequence[str] | None = None) -> harness.Case:
    """The channel, then the questions (only those of ``questions`` when given), as a case."""
    corpus = corpus or load()
    wanted = None if questions is None else set(questions)
    asked = [e for e in question_events(corpus) if wanted is None or e.id in wanted]
    events = (*corpus.events, *asked)
    by_id = {q.id: q for q in corpus.questions}
    probes = tuple(
        harness.Probe(
            message_id=e.id, asker_id=e.user_id, target_id=corpus.viewers[by_id[e.id].about][0],
            evidence_ids=by_id[e.id].gold, kind=by_id[e.id].category,
        )
        for e in asked
    )  # fmt: skip
    return harness.Case(
        name=CASE,
        events=events,
        probes=probes,
        authors={e.id: e.user_id for e in events},
        logins={login: user_id for login, (user_id, _) in corpus.viewers.items()},
        corpora={e.stream: CASE for e in events},
    )


# -- scores -------------------------------------------------------------------------------------


def _first(ranking: Sequence[frozenset[str]], ids: Sequence[str]) -> int | None:
    wanted = set(ids)
    return next((i for i, covered in enumerate(ranking) if wanted & covered), None)


def question_scores(question: Question, ranking: Sequence[frozenset[str]]) -> dict[str, Any]:
    """The answer's rank (None: not recalled), whether it is among the first ``TOP`` items,
    whether a distractor ranks above it (a distractor recalled without the answer does), the
    prompt's items, P@5."""
    answer = _first(ranking, question.gold)
    distractor = _first(ranking, question.distractors) if question.distractors else None
    return {
        "answer_rank": None if answer is None else answer + 1,
        "top3": answer is not None and answer < TOP,
        "distractor_above": distractor is not None and (answer is None or distractor < answer),
        "items": len(ranking),
        "precision@5": metrics.precision_at_k(ranking, question.gold, 5),
    }


def group_scores(
    pairs: Sequence[tuple[Question, Sequence[frozenset[str]]]],
) -> dict[str, Any]:
    """Answer in the top 3 (ratio), distractors above the answer (count, of the questions that
    have distractors), items per prompt, P@5, irrelevant share, recall@5."""
    scored = [(q, r, question_scores(q, r)) for q, r in pairs]
    with_distractors = [s for q, _, s in scored if q.distractors]
    top3 = metrics.Ratio(hits=sum(1 for *_, s in scored if s["top3"]), total=len(scored))
    above = metrics.Ratio(
        hits=sum(1 for s in with_distractors if s["distractor_above"]), total=len(with_distractors)
    )
    share = metrics.Ratio(hits=0, total=0)
    for question, ranking, _ in scored:
        share += metrics.irrelevant_share(ranking, question.gold)
    return {
        "questions": len(scored),
        "answer_top3": _ratio(top3),
        "distractor_above": _ratio(above),
        "items_per_prompt": metrics.mean(float(s["items"]) for *_, s in scored),
        "precision@5": metrics.mean(s["precision@5"] for *_, s in scored),
        "irrelevant_share": _ratio(share),
        "recall@5": metrics.mean(metrics.recall_at_k(r, q.gold, 5) for q, r, _ in scored),
    }


def _ratio(value: metrics.Ratio) -> dict[str, Any]:
    return {"value": value.value, "hits": value.hits, "total": value.total}


def annotate(result: harness.Result, corpus: Corpus) -> None:
    """Add the regulars figures to ``result`` (the system's or a peer's, from its rankings):
    overall, per category, per part (those asked), and per question."""
    prompt = PEER_PROMPT if result.metrics.get("peer") else None
    pairs = [
        (q, result.rankings[q.id][:prompt]) for q in corpus.questions if q.id in result.rankings
    ]
    groups: dict[str, Any] = {"all": group_scores(pairs)}
    for category in CATEGORIES:
        groups[category] = group_scores([(q, r) for q, r in pairs if q.category == category])
    for part in PARTS:
        chosen = [(q, r) for q, r in pairs if q.half == part]
        if chosen or part in HALVES:
            groups[part] = group_scores(chosen)
    result.metrics["answer_top3"] = groups["all"]["answer_top3"]
    result.metrics["distractor_above"] = groups["all"]["distractor_above"]
    result.metrics["regulars"] = groups
    result.metrics["per_question"] = {
        q.id: {"half": q.half, "category": q.category, **question_scores(q, r),
               "ranking": [sorted(ids) for ids in r[:10]]}
        for q, r in pairs
    }  # fmt: skip


COLUMNS = (
    ("questions", "questions"),
    ("answer top 3", "answer_top3"),
    ("distractor above", "distractor_above"),
    ("items/prompt", "items_per_prompt"),
    ("P@5", "precision@5"),
    ("irrelevant", "irrelevant_share"),
    ("R@5", "recall@5"),
)


def table(results: Sequence[harness.Result]) -> str:
    """Per group (all, each category, each part), one row per system."""
    from memory.eval import report

    rows = [
        [result.config, group, *(values.get(key) for _, key in COLUMNS)]
        for result in results
        if result.case == CASE and "regulars" in result.metrics
        for group, values in result.metrics["regulars"].items()
    ]
    return report.table(["system", "questions of", *(t for t, _ in COLUMNS)], rows)
