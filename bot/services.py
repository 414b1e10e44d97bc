"""The composition root: one lifespan opens every store and client and yields ``Services``.

Each ``*_URL`` setting switches its part from the embedded default to the real server: Postgres
(embedded in the data folder), Redis (in-process cache and working history), Qdrant (local mode in
the data folder). Whoever opens a resource closes it: the lifespan's ``AsyncExitStack`` does.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory import pipeline, ports, transcript, working
from memory.adapters import ollama as ollama_adapter
from memory.adapters import postgres

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

    from bot import session
    from config.settings import Settings
    from memory import jobs

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    """Everything a bot, worker or admin process needs, opened and ready."""

    settings: Settings
    db: postgres.Database
    transcript: transcript.Transcript
    history: ports.WorkingHistory
    #: None with ``--no-llm``
    model: ports.ChatModel | None
    pipeline: pipeline.TurnPipeline
    #: job kind → handler, for the consolidation workers
    job_handlers: Mapping[str, Callable[[jobs.Job], Awaitable[None]]]
    #: chat commands (``!forget …``); None where they are not wired
    commands: session.CommandHandler | None
    extras: Mapping[str, Any]


@contextlib.asynccontextmanager
async def lifespan(
    settings: Settings, *, role: str = "bot", no_llm: bool = False
) -> AsyncIterator[Services]:
    """Open every part for ``role`` (``bot``, ``worker``, ``admin``) and close them on exit."""
    async with contextlib.AsyncExitStack() as stack:
        db = await stack.enter_async_context(postgres.open_database(settings))
        store = transcript.Transcript(db)
        history: ports.WorkingHistory = working.InProcessHistory(settings.memory.history_cap)
        model: ports.ChatModel | None = None
        if not no_llm and role == "bot":
            model = ollama_adapter.OllamaChat(
                settings.ollama_host,
                settings.ollama.chat_model,
                timeout=settings.ollama.timeout_seconds,
                temperature=settings.ollama.temperature,
            )
        seams = pipeline.Seams(
            planner=pipeline.NoPlanner(),
            retriever=pipeline.NoRetrieval(),
            reducer=pipeline.KeepAll(),
        )
        turn_pipeline = pipeline.TurnPipeline(
            transcript=store,
            history=history,
            model=model,
            seams=seams,
            system_prompt=settings.system_prompt(),
            max_attempts=settings.worker.max_attempts,
        )
        yield Services(
            settings=settings,
            db=db,
            transcript=store,
            history=history,
            model=model,
            pipeline=turn_pipeline,
            job_handlers={},
            commands=None,
            extras={},
        )
