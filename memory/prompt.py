"""The prompt of a turn as chat messages: history items, the memory block after the system
prompt, and its text rendering (the report's preview, the stand-in reply of ``--no-llm``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory import models

if TYPE_CHECKING:
    from collections.abc import Sequence

MEMORY_HEADER = "Memory:"


def format_user(item: models.HistoryItem) -> str:
    return f"{item.login}: {item.text}" if item.login else item.text


def event_text(event: models.ChatEvent) -> str:
    if event.kind is models.EventKind.EVENT:
        return f"[{event.event or 'event'}] {event.text}".strip()
    return event.text


def to_prompt(items: Sequence[models.HistoryItem], memory_block: str) -> list[models.PromptMessage]:
    """History items → chat messages; the memory block follows the first system message."""
    messages: list[models.PromptMessage] = []
    for index, item in enumerate(items):
        if item.role is models.Role.USER:
            messages.append(models.PromptMessage(role=item.role, content=format_user(item)))
        else:
            messages.append(
                models.PromptMessage(
                    role=item.role,
                    content=item.text,
                    tool_calls=item.tool_calls,
                    tool_name=item.tool_name,
                )
            )
        if index == 0 and item.role is models.Role.SYSTEM and memory_block:
            messages.append(
                models.PromptMessage(
                    role=models.Role.SYSTEM, content=f"{MEMORY_HEADER}\n{memory_block}"
                )
            )
    return messages


def render(messages: Sequence[models.PromptMessage]) -> str:
    """The prompt as text (the preview, and the stand-in reply of ``--no-llm``)."""
    return "\n".join(f"[{m.role.value}] {m.content}" for m in messages)
