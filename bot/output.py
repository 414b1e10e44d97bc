"""Printing turn reports: one JSON object a line (``--json``), or a short human-readable block."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, TextIO

from bot.twitch import sending

if TYPE_CHECKING:
    from memory import models


def json_line(report: models.TurnReport, out: TextIO = sys.stdout) -> None:
    out.write(json.dumps(report.to_json(), ensure_ascii=False) + "\n")
    out.flush()


def _memory_lines(report: models.TurnReport) -> list[str]:
    lines = []
    for item in report.recall:
        origin = ",".join(item.origin_message_ids)
        lines.append(f"  recall  {item.source:<8} {item.space:<18} {item.text[:90]}  ← {origin}")
    for degraded in report.degraded:
        lines.append(f"  degraded {degraded.source} ({degraded.reason})")
    return lines


def reply_lines(reply: str) -> list[str]:
    """The reply as the chat messages it is sent as (``sending.split_message``: at most 500
    characters each, line breaks as spaces): ``  reply   text``, or ``  reply 1/2 text`` … when
    it takes several."""
    parts = sending.split_message(reply) or [""]
    if len(parts) == 1:
        return [f"  reply   {parts[0]}"]
    return [f"  reply {n}/{len(parts)} {part}" for n, part in enumerate(parts, 1)]


def human(report: models.TurnReport, *, no_llm: bool, out: TextIO = sys.stdout) -> None:
    ids = " ".join(report.message_ids)
    head = f"── turn {report.turn_id[:8]} · {report.stream} · {ids} "
    lines = [head + "─" * max(0, 78 - len(head))]
    if report.command:
        lines.append(f"  command {report.command}")
    for viewer in report.plan.viewers:
        lines.append(
            f"  plan    @{viewer.login} score {viewer.score:g}: {', '.join(viewer.signals)}"
        )
    if report.plan.sources:
        sources = ", ".join(
            f"{s.kind}:{s.viewer}" if s.viewer else s.kind for s in report.plan.sources
        )
        lines.append(f"  sources {sources}")
    lines += _memory_lines(report)
    stats = report.prompt
    total = report.timings_ms.get("memory_total", 0.0)
    if not report.command:
        lines.append(
            f"  prompt  {stats.messages_in_history} in history → {stats.messages_sent} sent, "
            f"~{stats.tokens_estimate} tokens, memory stage {total:.1f} ms"
        )
    if report.barrier:
        lines.append(f"  barrier {json.dumps(report.barrier)}")
    if report.status.value == "silent":
        lines.append(f"  silent  ({report.reason}: stored and remembered, no reply)")
    elif report.error:
        lines.append(f"  FAILED  {report.error}")
    elif report.reply is not None:
        lines += reply_lines(report.reply)
    elif not no_llm and not report.command:
        why = {"timeout": "no answer within the reply timeout", "no_text": "no text"}
        reasons = [why.get(d.reason, d.reason) for d in report.degraded if d.source == "model"]
        lines.append(f"  no reply ({', '.join(reasons) or 'the model said nothing'})")
    elif no_llm:  # no prompt is shown: say what memory it would carry
        carried = (
            "its prompt would carry the memory recalled above"
            if report.recall
            else "nothing was recalled for its prompt"
        )
        lines.append(f"  reply   (--no-llm: no model call; {carried})")
    out.write("\n".join(lines) + "\n")
    out.flush()
