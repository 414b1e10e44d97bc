"""LongMemEval through the real system and its peers, scored per question type.

The replay (``replay``) runs the real system in-process as ``memory.eval.harness`` does — embedded
defaults in a temporary folder, the evaluated embedder, no chat model — with one stand-in: the
pipeline's model is ``ScriptedReplies``, which answers each haystack turn with the assistant's
recorded words, so they are the bot's own replies (journaled with the turn, kept in its episode),
never a viewer's message. Each channel's consolidation runs before its question, in queue order,
as ``python -m bot import`` runs it at the end of a backfill; the question is then the first turn of
a fresh stream. The channels of one data folder share its stores, never a stream calendar: it
starts afresh with each channel, so "last stream" and the earlier streams a question searches
are that channel's.

Scoring: the recall items of the question's turn in prompt order (``report.recall``, the order of
the memory block); an item covers the turns its origin messages are parts of, and the sessions of
those turns. Peers rank whole turns of the same haystack with the question as the query: BM25
(bm25s) over all turns, BM25 over the user's turns, the evaluated embedder over all turns.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import multiprocessing
import time
from concurrent import futures
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memory import models, stopping
from memory.eval import harness, longmemeval, metrics, peers, report

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path

    from config.settings import Settings
    from memory import ports

logger = logging.getLogger(__name__)

CASE = "longmemeval"
BM25_ALL, BM25_USER, DENSE = "bm25_all_turns", "bm25_user_turns", "dense_all_turns"
PEERS = (BM25_ALL, BM25_USER, DENSE)
KS = (5, 10)
#: a reply is looked for among this many next scripted replies (a turn that never asked skips one)
LOOKAHEAD = 4
#: (column title, metric key) of the per-type table
COLUMNS = (
    ("any@5", "turn_any@5"),
    ("any@10", "turn_any@10"),
    ("all@5", "turn_all@5"),
    ("all@10", "turn_all@10"),
    ("session all@5", "session_all@5"),
    ("session all@10", "session_all@10"),
    ("fresh@5", "freshness@5"),
)

#: channels replayed in one data folder
CHUNK = 25
#: questions of a ``--quick`` run (a smoke check, not a figure)
QUICK_FIRST = 2

Ranking = list[frozenset[str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """Which questions: the first ``first`` (of ``types`` when given), from ``path`` when given
    (a data file of the same layout anywhere), else from ``<data dir>/longmemeval/``."""

    first: int | None = None
    types: tuple[str, ...] = ()
    path: Path | None = None
    #: chunks of channels replayed at once, each in a process of its own
    jobs: int = 1
    #: only this half of the development part (``longmemeval.HALVES``; None: both)
    half: str | None = None

    def file(self, data_dir: Path) -> Path:
        return self.path or data_dir / longmemeval.RELATIVE_PATH


class ScriptedReplies:
    """A ``ports.ChatModel`` stand-in that answers with the assistant's recorded turns: each reply
    is given to the turn whose last user message (as the prompt shows it) holds its key."""

    def __init__(self, replies: Iterable[tuple[str, str]]) -> None:
        self._queue = collections.deque(replies)
        self.given = 0
        self.unmatched = 0

    @property
    def left(self) -> int:
        return len(self._queue)

    #: no window: prompts are not reduced to fit one
    context_tokens: int | None = None

    async def check(self) -> None:
        return None

    async def chat(
        self,
        messages: Sequence[models.PromptMessage],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
    ) -> models.ModelReply:
        last = next((m.content for m in reversed(messages) if m.role is models.Role.USER), "")
        for index, (key, reply) in enumerate(itertools.islice(self._queue, LOOKAHEAD)):
            if key in last:
                for _ in range(index + 1):
                    self._queue.popleft()
                self.given += 1
                return models.ModelReply(content=reply)
        self.unmatched += 1
        return models.ModelReply(content="")


async def replay(
    channels: Sequence[longmemeval.Channel], settings: Settings, *, embed_cache: Path | None = None
) -> tuple[dict[str, models.TurnReport], dict[str, Any]]:
    """Replay every channel, then its question; the question turns' reports by question id, and
    replay figures (replies given, seconds, embedding cache hits). ``embed_cache``: the folder
    of the embedder's cached vectors (``memory.eval.embed_cache``; None: no cache)."""
    from memory import runtime, session
    from memory.eval import embed_cache as embed_cache_module

    cache = None if embed_cache is None else embed_cache_module.EmbeddingCache(embed_cache)

    reports: dict[str, models.TurnReport] = {}
    asked = {c.asked.id: c.question_id for c in channels}

    async def deliver(turn: models.TurnReport) -> None:
        for message_id in turn.message_ids:
            if message_id in asked:
                reports[asked[message_id]] = turn

    #: replies: the assistant's turns to replay as the bot's replies; replies_given: those the
    #: turns received; turns_without_reply: turns the recording has no reply for (a user turn
    #: the assistant did not answer, the first batch of a message of more than 20 parts)
    figures: dict[str, Any] = {
        "messages": 0,
        "replies": 0,
        "replies_given": 0,
        "turns_without_reply": 0,
    }
    started = time.perf_counter()
    wrap = None if cache is None else cache.wrap
    async with runtime.lifespan(settings, no_llm=True, wrap_embedder=wrap) as services:
        runner = session.Replay(services, deliver, commands=None)
        for number, channel in enumerate(channels, start=1):
            if services.viewers is not None:  # each haystack is a channel: its streams only
                services.viewers.forget_streams()
            texts = {e.id: runner.redact(e).text for e in channel.events}
            model = ScriptedReplies((texts[m], reply) for m, reply in channel.replies)
            services.pipeline.model = model
            for stream, events in itertools.groupby(channel.events, key=lambda e: e.stream):
                for event in events:
                    await runner.feed(event)
                await runner.finish([stream])  # the session's last turn is answered now
            await runner.consolidate_now()
            figures["messages"] += len(channel.events)
            figures["replies"] += len(channel.replies)
            figures["replies_given"] += model.given
            figures["turns_without_reply"] += model.unmatched
            await runner.feed(channel.asked)  # the model has nothing to say to it
            await runner.finish([channel.asked.stream])
            logger.info("longmemeval %d/%d replayed (%.0f s)", number, len(channels),
                        time.perf_counter() - started)  # fmt: skip
        await runner.consolidate_now()
    if cache is not None:
        cache.flush()
        figures.update(cache.stats())
    figures["replay_seconds"] = round(time.perf_counter() - started, 1)
    return reports, figures


async def replay_isolated(
    channels: Sequence[longmemeval.Channel],
    *,
    embedder: str = harness.DEFAULT_EMBEDDER,
    jobs: int = 1,
    embed_cache: Path | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, models.TurnReport], dict[str, Any]]:
    """``replay`` in fresh temporary data folders (embedded Postgres and Qdrant), removed after:
    one per chunk of at most ``CHUNK`` channels, so no store holds more than their ~1,200 streams;
    ``jobs`` chunks at once, each in a process of its own (the channels share nothing), in a
    multiple of ``jobs`` chunks so that no process idles while another has two left.
    ``overrides``: settings changed from the evaluation's (``harness.eval_settings``)."""
    count = -(-len(channels) // CHUNK)
    if jobs > 1:  # as many chunks as keep every process busy to the end
        count = -(-count // jobs) * jobs
    size = max(1, -(-len(channels) // max(count, 1)))
    chunks = [channels[first : first + size] for first in range(0, len(channels), size)]
    if jobs > 1 and len(chunks) > 1:
        loop = asyncio.get_running_loop()
        context = multiprocessing.get_context("spawn")
        with futures.ProcessPoolExecutor(min(jobs, len(chunks)), mp_context=context) as pool:
            try:
                outcomes = await asyncio.gather(
                    *(
                        loop.run_in_executor(
                            pool, replay_chunk, chunk, embedder, embed_cache, overrides
                        )
                        for chunk in chunks
                    )
                )
            except (asyncio.CancelledError, KeyboardInterrupt):
                _interrupt_workers(pool)
                raise
    else:
        outcomes = [
            await _replay_folder(chunk, embedder, embed_cache, overrides) for chunk in chunks
        ]
    turns: dict[str, models.TurnReport] = {}
    figures: dict[str, Any] = {}
    for found, counted in outcomes:
        turns.update(found)
        for key, value in counted.items():
            figures[key] = round(figures.get(key, 0) + value, 1)
    return turns, figures


async def _replay_folder(
    channels: Sequence[longmemeval.Channel],
    embedder: str,
    embed_cache: Path | None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, models.TurnReport], dict[str, Any]]:
    with harness.temporary_data_dir("livememory-lme-") as tmp:
        settings = harness.eval_settings(tmp, embedder=embedder, overrides=overrides)
        return await replay(channels, settings, embed_cache=embed_cache)


def replay_chunk(
    channels: Sequence[longmemeval.Channel],
    embedder: str,
    embed_cache: Path | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, models.TurnReport], dict[str, Any]]:
    """One chunk replayed in a worker process (``replay_isolated`` with ``jobs`` > 1). SIGTERM
    interrupts it as Ctrl-C does: its temporary folder is removed, its embedded Postgres stopped."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logger.setLevel(logging.INFO)
    return stopping.run(_replay_folder(channels, embedder, embed_cache, overrides))


#: how long an interrupted run waits for a worker process to clean up before killing it
WORKER_STOP_SECONDS = 30.0


def _interrupt_workers(pool: futures.ProcessPoolExecutor) -> None:
    """The run was interrupted: no chunk starts any more, and the worker processes (a signal to
    this process alone never reaches them) are sent SIGTERM, which each takes as Ctrl-C
    (``replay_chunk``), then waited for: the run ends once they have cleaned up (their embedded
    Postgres stopped, their folders removed), and their last lines come before its own. The
    pool's ``shutdown(wait=False)`` forgets its processes, so leaving its block would not wait;
    one still running after ``WORKER_STOP_SECONDS`` is killed."""
    workers = multiprocessing.active_children()
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(WORKER_STOP_SECONDS)
        if worker.is_alive():
            worker.kill()
            worker.join()


async def evaluate(
    data_dir: Path,
    options: Options,
    *,
    embedder: str = harness.DEFAULT_EMBEDDER,
    peer_embedder: ports.Embedder | None = None,
    with_peers: bool = True,
    embed_cache: Path | None = None,
) -> tuple[list[harness.Result], dict[str, str]]:
    """The system's scores, then its peers' on the same questions; and the peers skipped.
    ``embed_cache``: the folder of the embedding cache (None: none)."""
    started = time.perf_counter()
    channels = longmemeval.load(
        data_dir, first=options.first, types=options.types or None, path=options.path,
        half=options.half,
    )  # fmt: skip
    loaded = time.perf_counter() - started
    replaying = asyncio.ensure_future(
        replay_isolated(channels, embedder=embedder, jobs=options.jobs, embed_cache=embed_cache)
    )
    if options.jobs > 1:
        await asyncio.sleep(0)  # the chunks go to their processes; the peers rank meanwhile
    found, skipped = await peer_rankings(channels, peer_embedder) if with_peers else ({}, {})
    turns, figures = await replaying
    rankings, texts = system_prompts(channels, turns)
    wrong = misattribution(channels, turns)
    extra = {**figures, "load_seconds": round(loaded, 1), "jobs": options.jobs,
             "wall_seconds": round(time.perf_counter() - started, 1),
             "misattribution": {"value": wrong.value, "hits": wrong.hits, "total": wrong.total},
             "recall_items_per_turn": metrics.mean(len(t.recall) for t in turns.values()),
             "evidence_kept": evidence_kept(channels)}  # fmt: skip
    details = {qid: {"sources": [i.source for i in turn.recall]} for qid, turn in turns.items()}
    results = [score(channels, rankings, config="full", extra=extra, details=details, texts=texts)]
    for name, ranked in found.items():
        top = {qid: r[: peers.PROMPT_ITEMS] for qid, r in ranked.items()}
        shown = {c.question_id: [c.texts[t] for ids in top.get(c.question_id, ()) for t in ids]
                 for c in channels}  # fmt: skip
        results.append(score(channels, ranked, config=name, prompts=top, texts=shown))
    return results, skipped


# -- rankings -----------------------------------------------------------------------------------


def system_prompts(
    channels: Sequence[longmemeval.Channel], turns: Mapping[str, models.TurnReport]
) -> tuple[dict[str, Ranking], dict[str, list[str]]]:
    """By question id, of the questions ``turns`` answered: the ranking of its turn's recall
    items (``system_ranking``) and their texts (what ``score`` reads of a prompt)."""
    answered = [(c, turns[c.question_id]) for c in channels if c.question_id in turns]
    rankings = {c.question_id: system_ranking(c, turn) for c, turn in answered}
    texts = {c.question_id: [i.text for i in turn.recall] for c, turn in answered}
    return rankings, texts


def system_ranking(channel: longmemeval.Channel, turn: models.TurnReport) -> Ranking:
    """The question turn's recall items in prompt order, each as the turns it covers: those of
    its origin messages and, for an episode that shows the bot's reply, the assistant turns of
    that reply."""
    return [_covered(channel, item) for item in turn.recall]


def _covered(channel: longmemeval.Channel, item: models.RecallItem) -> frozenset[str]:
    turns = {channel.turn_of[m] for m in item.origin_message_ids if m in channel.turn_of}
    if item.reply:
        turns.update(t for m in item.origin_message_ids for t in channel.reply_turns.get(m, ()))
    return frozenset(turns)


async def peer_rankings(
    channels: Sequence[longmemeval.Channel], embedder: ports.Embedder | None
) -> tuple[dict[str, dict[str, Ranking]], dict[str, str]]:
    """Peer → question id → ranked turns; and the peers skipped, with the reason."""
    out: dict[str, dict[str, Ranking]] = {}
    skipped: dict[str, str] = {}
    for name in PEERS:
        if name == DENSE and embedder is None:
            skipped[name] = "no embedder"
            continue
        try:
            out[name] = {c.question_id: await _peer(name, c, embedder) for c in channels}
        except peers.PeersUnavailable as exc:
            skipped[name] = str(exc)
    return out, skipped


async def _peer(
    name: str, channel: longmemeval.Channel, embedder: ports.Embedder | None
) -> Ranking:
    ids = [t for t in channel.texts if name != BM25_USER or channel.user_turns[t]]
    texts = [channel.texts[t] for t in ids]
    if name in (BM25_ALL, BM25_USER):
        order = peers._Bm25Index(texts).rank(channel.question, len(texts))
    else:
        assert embedder is not None
        vectors = await embedder.embed(texts) if texts else []
        index = peers._DenseIndex(np.asarray(vectors, dtype=np.float64).reshape(len(texts), -1))
        [query] = await embedder.embed([channel.question], kind="query")
        vector = np.asarray(query, dtype=np.float64)
        order = index.rank(vector / (np.linalg.norm(vector) or 1.0), len(texts))
    return [frozenset({ids[i]}) for i in order]


# -- scores -------------------------------------------------------------------------------------


def session_ranking(channel: longmemeval.Channel, ranking: Ranking) -> Ranking:
    """The sessions of the ranked items, each once, in the order they first appear (session-level
    recall@k looks at the first k sessions)."""
    seen: dict[str, None] = {}
    for ids in ranking:
        seen.update(dict.fromkeys(sorted(channel.session_of[t] for t in ids)))
    return [frozenset({session}) for session in seen]


def question_scores(channel: longmemeval.Channel, ranking: Ranking) -> dict[str, float | None]:
    """Turn-level recall_any/recall_all@k (of the first k items), session-level recall_all@k (of
    the first k sessions), fractional turn recall@k; freshness@5 for knowledge-update questions."""
    turns = [e.id for e in channel.evidence]
    sessions = session_ranking(channel, ranking)
    out: dict[str, float | None] = {}
    for k in KS:
        out[f"turn_any@{k}"] = metrics.recall_any_at_k(ranking, turns, k)
        out[f"turn_all@{k}"] = metrics.recall_all_at_k(ranking, turns, k)
        out[f"session_all@{k}"] = metrics.recall_all_at_k(sessions, channel.answer_session_ids, k)
        out[f"recall@{k}"] = metrics.recall_at_k(ranking, turns, k)
    out["precision@5"] = metrics.precision_at_k(ranking, turns, 5)
    if channel.question_type == "knowledge-update":
        dates = {e.id: e.date for e in channel.evidence}
        out["freshness@5"] = metrics.freshness_at_k(ranking, dates, 5)
    return out


def prompt_figures(
    channels: Sequence[longmemeval.Channel],
    prompts: Mapping[str, Ranking],
    texts: Mapping[str, Sequence[str]],
) -> dict[str, Any]:
    """Irrelevant share, items and tokens per prompt over ``channels``' questions: ``prompts``,
    question id → the items of its prompt (the system's: every recall item; a peer's: its first
    ``peers.PROMPT_ITEMS``); ``texts``, question id → those items' texts."""
    load = metrics.prompt_load(
        (prompts[c.question_id], [e.id for e in c.evidence], texts.get(c.question_id, ()))
        for c in channels
        if c.question_id in prompts
    )
    share = load.irrelevant
    return {
        "irrelevant_share": {"value": share.value, "hits": share.hits, "total": share.total},
        "items_per_prompt": load.items_per_prompt,
        "tokens_per_prompt": load.tokens_per_prompt,
    }


def aggregate(per_question: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    keys = dict.fromkeys(k for scores in per_question for k in scores)
    return {key: metrics.mean(s.get(key) for s in per_question) for key in keys}


def score(
    channels: Sequence[longmemeval.Channel],
    rankings: Mapping[str, Ranking],
    *,
    config: str,
    extra: Mapping[str, Any] | None = None,
    details: Mapping[str, Mapping[str, Any]] | None = None,
    prompts: Mapping[str, Ranking] | None = None,
    texts: Mapping[str, Sequence[str]] | None = None,
) -> harness.Result:
    """One system's (or peer's) scores: over all questions, per question type and per half of
    the development part. ``prompts``: the items of each question's prompt (default: its whole
    ranking), ``texts`` their texts."""
    prompts = rankings if prompts is None else prompts
    scored = [(c, question_scores(c, rankings[c.question_id]))
              for c in channels if c.question_id in rankings]  # fmt: skip
    by_type = {
        kind: {"questions": sum(1 for c, _ in scored if c.question_type == kind),
               **aggregate([s for c, s in scored if c.question_type == kind])}
        for kind in longmemeval.TYPES if any(c.question_type == kind for c, _ in scored)
    }  # fmt: skip
    overall = {
        **aggregate([s for _, s in scored]),
        **prompt_figures(channels, prompts, texts or {}),
    }
    by_half = {
        half: {"questions": sum(1 for c in channels if longmemeval.half_of(c.question_id) == half),
               **aggregate([s for c, s in scored if longmemeval.half_of(c.question_id) == half]),
               **prompt_figures([c for c in channels if longmemeval.half_of(c.question_id) == half],
                                prompts, texts or {})}
        for half in longmemeval.HALVES
    }  # fmt: skip
    per_question = {
        c.question_id: {"type": c.question_type, **s, **(details or {}).get(c.question_id, {}),
                        "evidence": [e.id for e in c.evidence],
                        "ranking": [sorted(ids) for ids in rankings[c.question_id]]}
        for c, s in scored
    }  # fmt: skip
    values: dict[str, Any] = {
        "questions": len(channels),
        "probes": len(channels),
        "probes_answered": len(scored),
        **overall,
        "by_type": by_type,
        "by_half": by_half,
        **(extra or {}),
        "per_question": per_question,
    }
    return harness.Result(
        case=CASE,
        config=config,
        metrics=values,
        latencies_ms=[],
        recall_curve={k: overall.get(f"recall@{k}") for k in KS},
        recall_by_kind={kind: {k: row.get(f"turn_all@{k}") for k in KS}
                        for kind, row in by_type.items()},
    )  # fmt: skip


def misattribution(
    channels: Sequence[longmemeval.Channel], turns: Mapping[str, models.TurnReport]
) -> metrics.Ratio:
    """Personal items (profile, recall) of the question turns not traced to the viewer's own
    messages: a bot reply is never a viewer's memory."""
    authors = {e.id: e.user_id for c in channels for e in c.events}
    recalled = [
        (c.user_id, item.origin_message_ids)
        for c in channels
        if c.question_id in turns
        for item in turns[c.question_id].recall
        if item.source in harness.PERSONAL_SOURCES
    ]
    return metrics.misattribution(recalled, authors)


def evidence_kept(channels: Sequence[longmemeval.Channel]) -> dict[str, Any]:
    """The user's evidence turns of which the consolidation filter keeps some part as a personal
    memory (``memory.eval.filtering``'s judgement: ``noise.classify``), and why the others went."""
    from memory.consolidate import noise

    kept = total = 0
    dropped: collections.Counter[str] = collections.Counter()
    for channel in channels:
        texts = {e.id: e.text for e in channel.events}
        for turn in channel.evidence:
            if turn.role != "user":
                continue
            verdicts = [noise.classify(texts[p], bot_names=(harness.BOT_NAME,), previous=None)
                        for p in turn.parts if p in texts]  # fmt: skip
            total += 1
            if any(v.keep for v in verdicts):
                kept += 1
            else:
                dropped.update(v.reason for v in verdicts[:1])
    return {"value": kept / total if total else None, "hits": kept, "total": total,
            "dropped_by": dict(dropped.most_common())}  # fmt: skip


def type_table(results: Sequence[harness.Result]) -> str:
    """Per question type and over all, one row per system: the LongMemEval retrieval metrics."""
    rows: list[list[Any]] = []
    for result in results:
        if result.case != CASE:
            continue
        groups = [("all", result.metrics), *result.metrics.get("by_type", {}).items()]
        for kind, values in groups:
            rows.append([result.config, kind, values.get("probes_answered", values.get("questions")),
                         *(values.get(key) for _, key in COLUMNS)])  # fmt: skip
    return report.table(["system", "question type", "questions", *(t for t, _ in COLUMNS)], rows)


#: (column title, metric key) of the per-half table
HALF_COLUMNS = (
    ("any@5", "turn_any@5"),
    ("all@5", "turn_all@5"),
    ("fresh@5", "freshness@5"),
    ("P@5", "precision@5"),
    ("irrelevant", "irrelevant_share"),
    ("items/prompt", "items_per_prompt"),
    ("tokens/prompt", "tokens_per_prompt"),
)


def half_table(results: Sequence[harness.Result]) -> str:
    """Per half of the development part and over the whole, one row per system, with the margin
    of the system's all@5 over the BM25-all-turns peer's."""
    found = [r for r in results if r.case == CASE]
    bm25 = next((r for r in found if r.config == BM25_ALL), None)
    rows: list[list[Any]] = []
    for result in found:
        groups = [("whole", result.metrics), *result.metrics.get("by_half", {}).items()]
        for half, values in groups:
            if not values.get("questions"):
                continue
            if bm25 is None:
                margin = None
            else:
                theirs = bm25.metrics if half == "whole" else bm25.metrics["by_half"][half]
                ours, base = values.get("turn_all@5"), theirs.get("turn_all@5")
                margin = None if ours is None or base is None else ours - base
            rows.append([result.config, half, values.get("probes_answered", values.get("questions")),
                         *(values.get(key) for _, key in HALF_COLUMNS), margin])  # fmt: skip
    return report.table(
        ["system", "half", "questions", *(t for t, _ in HALF_COLUMNS), "all@5 - bm25_all_turns"],
        rows,
    )
