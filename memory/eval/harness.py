"""Replay a stream through the system, probe it, and score the turn reports.

A ``Case`` is a replayable data set (events in time order, probes with gold evidence, the author of
every message). ``run_full`` replays it through the real system in-process — ``memory.runtime.lifespan``
with ``no_llm=True`` and ``memory.session.Replay`` with synchronous consolidation, exactly what
``python -m bot replay FILE --json --no-llm --sync-consolidation`` does — on embedded defaults in a
temporary data folder and the offline embedder. ``run_naive`` replays it through the naive reference
design. ``score`` turns the reports into metrics (``memory.eval.metrics``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import identity, models
from memory.adapters import pg_embedded
from memory.eval import embed_cache as embed_cache_module
from memory.eval import locomo, metrics, naive

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from config.settings import Settings
    from memory.eval import synthetic

logger = logging.getLogger(__name__)

KS = (1, 3, 5, 10)
#: sources whose items are a viewer's personal memory (attribution is checked on them)
PERSONAL_SOURCES = frozenset({"profile", "recall"})
BOT_NAME = "Mnemo"
#: where nothing listens: the evaluation never calls a model
DEAD_OLLAMA = "http://127.0.0.1:9"
#: the embedder of an evaluation run unless ``--embedder`` says otherwise
DEFAULT_EMBEDDER = "offline"


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    message_id: str
    asker_id: str
    target_id: str | None
    evidence_ids: tuple[str, ...]
    kind: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    name: str
    events: tuple[models.ChatEvent, ...]
    probes: tuple[Probe, ...] = ()
    #: message id → author user id
    authors: Mapping[str, str] = field(default_factory=dict)
    #: login → user id
    logins: Mapping[str, str] = field(default_factory=dict)
    #: (lore id, text, key phrase)
    lore: tuple[tuple[str, str, str], ...] = ()
    #: messages that must never become a personal memory of their author: chat noise, and claims
    #: about another viewer (synthetic gold)
    noise_ids: frozenset[str] = frozenset()
    #: stream → the corpus the peers rank for a probe of it (``memory.eval.peers``): a channel
    #: whose questions come streams after the statements is one corpus; default: each stream
    corpora: Mapping[str, str] = field(default_factory=dict)
    #: probe message id → the half of the data it belongs to (LoCoMo: ``dev``, ``held-out``);
    #: empty: the case is not split
    halves: Mapping[str, str] = field(default_factory=dict)

    def corpus_of(self, stream: str) -> str:
        return self.corpora.get(stream, stream)


def from_synthetic(stream: synthetic.SyntheticStream) -> Case:
    return Case(
        name="synthetic",
        events=stream.events,
        probes=tuple(
            Probe(message_id=p.message_id, asker_id=p.asker_id, target_id=p.target_id,
                  evidence_ids=p.evidence_ids, kind=p.kind.value)
            for p in stream.probes
        ),
        authors=stream.authors,
        logins=stream.logins,
        lore=tuple((entry.id, entry.text, entry.key) for entry in stream.lore),
        noise_ids=frozenset(stream.noise_ids) | {c.message_id for c in stream.claims},
    )  # fmt: skip


def from_locomo(conversations: Sequence[locomo.Conversation], bot_name: str = BOT_NAME) -> Case:
    events: list[models.ChatEvent] = []
    probes: list[Probe] = []
    authors: dict[str, str] = {}
    logins: dict[str, str] = {locomo.QUIZ_LOGIN: locomo.QUIZ_USER_ID}
    for conv in conversations:
        asked = conv.question_events(bot_name)
        events.extend(conv.events)
        events.extend(event for _, event in asked)
        authors.update(conv.authors)
        authors.update({event.id: event.user_id for _, event in asked})
        logins.update(conv.logins)
        probes.extend(
            Probe(message_id=event.id, asker_id=event.user_id, target_id=q.subject_user_id,
                  evidence_ids=q.evidence_ids, kind=f"cat{q.category}")
            for q, event in asked
        )  # fmt: skip
    return Case(
        name="locomo", events=tuple(events), probes=tuple(probes), authors=authors, logins=logins
    )


def from_events(name: str, events: Sequence[models.ChatEvent]) -> Case:
    """A case without probes (IRC): attribution, latency and prompt size only."""
    return Case(
        name=name,
        events=tuple(events),
        authors={e.id: e.user_id for e in events},
        logins={e.login: e.user_id for e in events},
    )


def as_read(event: models.ChatEvent, prefix: str = "!") -> models.ChatEvent:
    """The event as the transcript reader would give it (``!…`` messages are commands)."""
    if event.kind is models.EventKind.MESSAGE and event.text.startswith(prefix):
        return dataclasses.replace(event, kind=models.EventKind.COMMAND)
    return event


# -- running ------------------------------------------------------------------------------------


@contextlib.contextmanager
def temporary_data_dir(prefix: str = "livememory-eval-") -> Iterator[Path]:
    """A data folder removed after the block, the embedded Postgres a run started in it stopped
    first (``pg_embedded.stop_embedded``: removed while it runs, the server would outlive the
    process)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        try:
            yield Path(tmp)
        finally:
            pg_embedded.stop_embedded(Path(tmp))


def eval_settings(
    data_dir: Path,
    *,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    database_url: str | None = None,
    embedder: str = DEFAULT_EMBEDDER,
    **top: Any,
) -> Settings:
    """Settings of an evaluation run: embedded stores in ``data_dir``, ``embedder`` (the offline one
    by default), no chat model.

    ``overrides``: section → field → value (``{"memory": {"max_viewers": 5}}``). Service URLs from
    the environment are ignored (a run never writes into a real database); only an Ollama embedder
    (``embedder`` ``ollama`` or ``auto``) reads ``OLLAMA_HOST``, since it needs the server.
    """
    import os

    from config import settings as settings_module

    if embedder in ("ollama", "auto"):
        top.setdefault("ollama_host", os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434"))
    values: dict[str, Any] = {
        "memory": {"embedder": embedder},
        # no background worker: consolidation runs when the replay asks (deterministic, measurable)
        "worker": {"in_process": False},
        "data_dir": data_dir,
        "database_url": database_url,
        "redis_url": None,
        "qdrant_url": None,
        "bot_name": BOT_NAME,
        # every batch is answered: the evaluation measures memory, not when the bot speaks
        "reply": {"policy": "always"},
        **{"ollama_host": DEAD_OLLAMA, **top},
    }
    for section, fields in (overrides or {}).items():
        values.setdefault(section, {}).update(fields)
    # model_validate: only these values and the defaults; no environment, no .env
    return settings_module.Settings.model_validate(values)


def write_lore(directory: Path, lore: Sequence[tuple[str, str, str]]) -> Path:
    """Write the case's lore as a lore folder (``memory.spaces.lore``'s markdown format); returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    sections = [
        f"## {lore_id.removeprefix('lore-').capitalize()}\n{text}\n" for lore_id, text, _ in lore
    ]
    (directory / "eval.md").write_text(
        "# Evaluation lore\n\n" + "\n".join(sections), encoding="utf-8"
    )
    return directory


async def _load_lore(services: Any, directory: Path) -> bool:
    """Load the lore folder into the lore space; False when the services expose no memory spaces."""
    from memory.spaces import lore

    spaces = getattr(services, "spaces", None) or (services.extras or {}).get("spaces")
    if spaces is None:
        return False
    await lore.load(spaces, directory)
    return True


async def run_full(
    case: Case, settings: Settings, *, cache: embed_cache_module.EmbeddingCache | None = None
) -> list[models.TurnReport]:
    """Replay ``case`` through the real system (``--no-llm``, synchronous consolidation); the
    embedder used through ``cache`` when given."""
    from memory import runtime as services_module
    from memory import session

    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        if report.command is None:
            reports.append(report)

    wrap = None if cache is None else cache.wrap
    async with services_module.lifespan(settings, no_llm=True, wrap_embedder=wrap) as services:
        if case.lore and not await _load_lore(services, settings.lore_dir):
            logger.warning("no memory spaces wired: lore probes cannot be answered")
        runner = session.Replay(
            services, deliver, commands=services.commands, sync_consolidation=True
        )
        prefix = settings.twitch.prefix
        last = {event.stream: index for index, event in enumerate(case.events)}
        for index, event in enumerate(case.events):
            await runner.feed(as_read(event, prefix))
            if last[event.stream] == index:  # the stream ends here: its last batch is answered now
                await runner.finish([event.stream])
        await runner.finish()
        await runner.consolidate_now()
    if cache is not None:
        cache.flush()
        logger.info("%s: embedding cache %s", case.name, cache.stats())
    return reports


async def run_full_isolated(
    case: Case,
    *,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    embed_cache: Path | None = None,
    **top: Any,
) -> list[models.TurnReport]:
    """``run_full`` in a fresh temporary data folder (embedded Postgres and Qdrant), removed after;
    ``embed_cache``: the folder of the embedding cache (``memory.eval.embed_cache``; None: none)."""
    with temporary_data_dir() as tmp:
        if case.lore:
            top.setdefault("lore_dir", write_lore(tmp / "lore", case.lore))
        settings = eval_settings(tmp, overrides=overrides, **top)
        cache = None if embed_cache is None else embed_cache_module.EmbeddingCache(embed_cache)
        return await run_full(case, settings, cache=cache)


async def run_naive(
    case: Case, *, limit: int = 5, system_prompt: str = ""
) -> list[models.TurnReport]:
    system = naive.NaiveSystem(
        limit=limit,
        system_prompt=system_prompt,
        lore=[(i, t) for i, t, _ in case.lore],
        bot_name=BOT_NAME,
    )
    return await system.replay([as_read(e) for e in case.events])


# -- scoring ------------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class Result:
    """The metrics of one case under one configuration, plus the raw series for plots."""

    case: str
    config: str
    metrics: dict[str, Any]
    #: memory stage milliseconds per turn
    latencies_ms: list[float]
    #: k → mean recall@k
    recall_curve: dict[int, float | None]
    #: probe kind → k → mean recall@k
    recall_by_kind: dict[str, dict[int, float | None]]
    #: probe message id → the items that could answer it, in prompt order (each as the ids it
    #: covers); for per-question scores of a source (not in the JSON: the per-question figures are)
    rankings: dict[str, list[frozenset[str]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "config": self.config,
            "metrics": self.metrics,
            "latencies_ms": [round(v, 3) for v in self.latencies_ms],
            "recall_curve": {str(k): v for k, v in self.recall_curve.items()},
            "recall_by_kind": {
                kind: {str(k): v for k, v in curve.items()}
                for kind, curve in self.recall_by_kind.items()
            },
        }


def item_ids(item: models.RecallItem, lore: Sequence[tuple[str, str, str]]) -> frozenset[str]:
    """The gold ids an item covers: its origin messages, and the lore entries its text holds."""
    text = item.text.casefold()
    matched = {lore_id for lore_id, _, key in lore if key.casefold() in text}
    return frozenset(item.origin_message_ids) | matched


def probe_ranking(
    probe: Probe, report: models.TurnReport, lore: Sequence[tuple[str, str, str]]
) -> list[frozenset[str]]:
    """The items that could answer ``probe``, in prompt order: lore items for lore probes, the
    other memory items for the rest."""
    wanted_lore = probe.kind == "lore"
    return [
        item_ids(item, lore) for item in report.recall if (item.source == "lore") == wanted_lore
    ]


def _planned_ids(report: models.TurnReport) -> dict[str, str]:
    """Normalized login → user id of the viewers the turn's plan selected, for logins that name
    exactly one of them (an item names its viewer by login only)."""
    ids: dict[str, set[str]] = {}
    for viewer in report.plan.viewers:
        ids.setdefault(identity.normalize_login(viewer.login), set()).add(viewer.user_id)
    return {login: next(iter(found)) for login, found in ids.items() if len(found) == 1}


def _personal(
    case: Case, reports: Sequence[models.TurnReport]
) -> list[tuple[str, tuple[str, ...]]]:
    """(user id recalled for, origin ids) of every personal item.

    The viewer an item was recalled for is the one the turn's plan selected under that login: a
    login is not a person (LoCoMo has a "John" in three conversations, replayed as streams of one
    channel, and a turn may name the John the channel saw last). Without a plan entry, the login is
    resolved within the turn's stream first, then across the case."""
    in_stream = {(e.stream, identity.normalize_login(e.login)): e.user_id for e in case.events}
    out = []
    for report in reports:
        planned = _planned_ids(report)
        for item in report.recall:
            if item.source in PERSONAL_SOURCES and item.viewer is not None:
                login = identity.normalize_login(item.viewer)
                user_id = (
                    planned.get(login)
                    or in_stream.get((report.stream, login))
                    or case.logins.get(login, f"login:{item.viewer}")
                )
                out.append((user_id, item.origin_message_ids))
    return out


def _naive_tokens(case: Case, reports: Sequence[models.TurnReport]) -> list[int]:
    position = {event.id: index for index, event in enumerate(case.events)}
    ends = [max((position.get(m, 0) for m in r.message_ids), default=0) + 1 for r in reports]
    return metrics.naive_history_tokens([e.text for e in case.events], ends)


def _probe_scores(case: Case, reports: Sequence[models.TurnReport]) -> dict[str, Any]:
    by_message = {mid: report for report in reports for mid in report.message_ids}
    position = {event.id: index for index, event in enumerate(case.events)}
    per_probe: list[tuple[Probe, models.TurnReport, list[frozenset[str]]]] = []
    for probe in case.probes:
        report = by_message.get(probe.message_id)
        if report is not None:
            per_probe.append((probe, report, probe_ranking(probe, report, case.lore)))
    curve = {
        k: metrics.mean(metrics.recall_at_k(r, p.evidence_ids, k) for p, _, r in per_probe)
        for k in KS
    }
    kinds = sorted({p.kind for p, _, _ in per_probe})
    by_kind = {
        kind: {
            k: metrics.mean(
                metrics.recall_at_k(r, p.evidence_ids, k) for p, _, r in per_probe if p.kind == kind
            )
            for k in KS
        }
        for kind in kinds
    }
    load = prompt_load(case, reports, per_probe)
    episodic = metrics.episodic_recall(
        (
            p.evidence_ids,
            frozenset().union(*ranking) if ranking else frozenset(),
            _out_of_history(p, report, position),
        )
        for p, report, ranking in per_probe
        if p.kind == "episodic"
    )
    planned = metrics.Ratio(
        hits=sum(
            1
            for p, r, _ in per_probe
            if p.target_id and p.target_id in {v.user_id for v in r.plan.viewers}
        ),
        total=sum(1 for p, _, _ in per_probe if p.target_id),
    )
    return {
        "probes": len(case.probes),
        "probes_answered": len(per_probe),
        "curve": curve,
        "by_kind": by_kind,
        "precision@5": metrics.mean(
            metrics.precision_at_k(r, p.evidence_ids, 5) for p, _, r in per_probe
        ),
        "load": load,
        "rankings": {p.message_id: r for p, _, r in per_probe},
        "episodic": episodic,
        "target_planned": planned,
    }


def prompt_load(
    case: Case,
    reports: Sequence[models.TurnReport],
    per_probe: Sequence[tuple[Probe, models.TurnReport, list[frozenset[str]]]],
) -> metrics.PromptLoad:
    """The memory items of each probe turn's prompt (every item of the memory block, lore
    included), against the evidence of the turn's probes; every turn's when the case has no
    probes (then nothing is relevant and the irrelevant share is not scored)."""
    relevant: dict[str, set[str]] = {}
    for probe, report, _ in per_probe:
        relevant.setdefault(report.turn_id, set()).update(probe.evidence_ids)
    turns = (
        {r.turn_id: r for _, r, _ in per_probe} if case.probes else {r.turn_id: r for r in reports}
    )
    load = metrics.prompt_load(
        ([item_ids(i, case.lore) for i in turn.recall], relevant.get(turn.turn_id, ()),
         [i.text for i in turn.recall])
        for turn in turns.values()
    )  # fmt: skip
    if case.probes:
        return load
    return dataclasses.replace(load, irrelevant=metrics.Ratio(hits=0, total=0))


def half_figures(
    case: Case, rankings: Mapping[str, Sequence[frozenset[str]]], prompt: int | None = None
) -> dict[str, dict[str, Any]]:
    """Per half of a split case (``Case.halves``): probes, recall@5, P@5, and the share of the
    prompt's items covering none of the probe's evidence with the items per prompt (a prompt:
    the probe's ranking, its first ``prompt`` items when given)."""
    out: dict[str, dict[str, Any]] = {}
    for half in sorted(set(case.halves.values())):
        scored = [(p, rankings[p.message_id][:prompt]) for p in case.probes
                  if case.halves.get(p.message_id) == half and p.message_id in rankings]  # fmt: skip
        share = metrics.Ratio(hits=0, total=0)
        for probe, ranking in scored:
            share += metrics.irrelevant_share(ranking, probe.evidence_ids)
        out[half] = {
            "probes": len(scored),
            "recall@5": metrics.mean(metrics.recall_at_k(r, p.evidence_ids, 5) for p, r in scored),
            "precision@5": metrics.mean(
                metrics.precision_at_k(r, p.evidence_ids, 5) for p, r in scored
            ),
            "irrelevant_share": {"value": share.value, "hits": share.hits, "total": share.total},
            "items_per_prompt": metrics.mean(float(len(r)) for _, r in scored),
        }
    return out


def _out_of_history(probe: Probe, report: models.TurnReport, position: Mapping[str, int]) -> bool:
    """The evidence is surely out of the loaded working history: more chat messages lie between it
    and the probe than the history held (the history also holds replies, so this is conservative)."""
    here = position.get(probe.message_id)
    where = [position[m] for m in probe.evidence_ids if m in position]
    if here is None or not where:
        return False
    return here - max(where) >= report.prompt.messages_in_history


def score(
    case: Case, reports: Sequence[models.TurnReport], *, config: str, budget_ms: float = 1000
) -> Result:
    latencies = [r.timings_ms["memory_total"] for r in reports if "memory_total" in r.timings_ms]
    probes = _probe_scores(case, reports)
    naive_tokens = _naive_tokens(case, reports)
    prompt_tokens = [r.prompt.tokens_estimate for r in reports]
    degradation = metrics.degradation(
        ((bool(r.degraded), r.timings_ms.get("memory_total")) for r in reports), budget_ms
    )
    misattributed = metrics.misattribution(_personal(case, reports), case.authors)
    latency = metrics.latency(latencies)

    def ratio(value: metrics.Ratio) -> dict[str, Any]:
        return {"value": value.value, "hits": value.hits, "total": value.total}

    values: dict[str, Any] = {
        "turns": len(reports),
        "probes": probes["probes"],
        "probes_answered": probes["probes_answered"],
        **{f"recall@{k}": v for k, v in probes["curve"].items()},
        "precision@5": probes["precision@5"],
        "misattribution": ratio(misattributed),
        "irrelevant_share": ratio(probes["load"].irrelevant),
        "items_per_prompt": probes["load"].items_per_prompt,
        "tokens_per_prompt": probes["load"].tokens_per_prompt,
        "episodic_recall": ratio(probes["episodic"]),
        "target_planned": ratio(probes["target_planned"]),
        "latency_ms": latency.to_json(),
        "degraded_turns": ratio(degradation.degraded),
        "within_budget": ratio(degradation.within_budget),
        "prompt_tokens": sum(prompt_tokens),
        "naive_tokens": sum(naive_tokens),
        "token_ratio": metrics.token_ratio(prompt_tokens, naive_tokens),
        "recall_items_per_turn": (sum(len(r.recall) for r in reports) / len(reports))
        if reports
        else None,
        "failed_turns": sum(1 for r in reports if r.status is models.TurnStatus.FAILED),
    }
    if case.halves:
        values["by_half"] = half_figures(case, probes["rankings"])
    return Result(
        case=case.name,
        config=config,
        metrics=values,
        latencies_ms=latencies,
        recall_curve=probes["curve"],
        recall_by_kind=probes["by_kind"],
        rankings=probes["rankings"],
    )
