"""The model's part of a turn: the call, its tool rounds, and what a model may answer instead of a
reply — each told in one log line, and the turn goes on:

- no text: no reply (the turn ends ``degraded``, source ``model``, reason ``no_text``);
- text with tool calls: the tools run, then the model is asked again; the last text it wrote is
  the reply when the final answer has none;
- a tool the bot does not have: its call gets an error result (``memory.state.tools``), or, when
  the bot offers no tools at all, the calls are ignored;
- still calling tools after ``max_rounds``: the calls left are not run;
- malformed tool arguments: dropped by the adapter (``memory.adapters.openai_compat``).

The pipeline bounds the whole of it with the reply timeout.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from memory import models, prompt

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from memory import ports

logger = logging.getLogger(__name__)


class ToolRound(Protocol):
    """What one round of tool calls did (``memory.state.tools.ToolRunner.run``)."""

    results: list[models.HistoryItem]
    changed_domains: set[str]
    involved_user_ids: set[str]
    records: list[dict[str, Any]]


class ToolRunner(Protocol):
    def tool_schemas(self) -> list[dict[str, Any]]: ...

    async def run(
        self,
        turn_id: str,
        stream: str,
        calls: Sequence[models.ToolCall],
        speakers: Mapping[str, str],
        *,
        privileged: bool = False,
    ) -> ToolRound: ...

    async def record_barrier(
        self, turn_id: str, domains: set[str], user_ids: set[str], batch_user_ids: set[str]
    ) -> dict[str, Any] | None: ...


async def ask(
    model: ports.ChatModel,
    tools: ToolRunner | None,
    *,
    turn_id: str,
    batch: models.Batch,
    messages: list[models.PromptMessage],
    report: models.TurnReport,
    items: list[models.HistoryItem],
    max_rounds: int,
    max_tokens: int | None = None,
    deadline: float | None = None,
) -> str:
    """The reply ("" when the model wrote none); the tool calls and results of the rounds are
    appended to ``items`` as they happen (kept when a later call fails or is cut).

    ``deadline`` (the loop's clock): a model call still running then is cancelled and
    ``TimeoutError`` raised; a tool round, once started, is never cut (its state change and the
    barrier are written together)."""

    async def chat(messages: list[models.PromptMessage]) -> models.ModelReply:
        async with asyncio.timeout_at(deadline):
            return await model.chat(messages, tools=schemas, max_tokens=max_tokens)

    schemas = tools.tool_schemas() if tools else None
    speakers = {e.login.lower(): e.user_id for e in batch.events}
    privileged = any(e.is_moderator for e in batch.chat)
    reply = await chat(messages)
    said = reply.content.strip()
    rounds = 0
    while reply.tool_calls:
        if tools is None:
            logger.warning(
                "turn %s: the model called %s, but the bot offers no tools: ignored",
                turn_id,
                _names(reply),
                extra={"action": "model_unknown_tools"},
            )
            break
        if rounds == max_rounds:
            logger.warning(
                "turn %s: the model still called %s after %d tool rounds: not run",
                turn_id,
                _names(reply),
                rounds,
                extra={"action": "model_tool_rounds"},
            )
            break
        rounds += 1
        if reply.content.strip():
            logger.info(
                "turn %s: the model wrote text and called %s: the tools run first",
                turn_id,
                _names(reply),
                extra={"action": "model_text_and_tools"},
            )
        call_item = models.HistoryItem(
            role=models.Role.ASSISTANT,
            text=reply.content,
            ts=batch.closed_at,
            turn_id=turn_id,
            tool_calls=reply.tool_calls,
        )
        outcome = await tools.run(
            turn_id, batch.stream, reply.tool_calls, speakers, privileged=privileged
        )
        items += [call_item, *outcome.results]
        report.tools.extend(outcome.records)
        messages = [*messages, *prompt.to_prompt([call_item, *outcome.results], "")]
        if outcome.changed_domains:
            # recorded at once: the state changed even if the next model call fails
            report.barrier = await tools.record_barrier(
                turn_id,
                outcome.changed_domains,
                outcome.involved_user_ids,
                {e.user_id for e in batch.chat},
            )
        reply = await chat(messages)
        said = reply.content.strip() or said
    if not said:
        logger.warning(
            "turn %s: the model answered no text: no reply",
            turn_id,
            extra={"action": "model_no_text"},
        )
    return said


def _names(reply: models.ModelReply) -> str:
    return ", ".join(sorted({call.name for call in reply.tool_calls}))
