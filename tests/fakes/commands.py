"""A fake of the memory operations behind the chat commands (``commands.MemoryCommands``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory import errors


@dataclass
class RecordingMemory:
    """``commands.MemoryCommands`` that records every call (the operations of ``memory.ops``)."""

    viewers: dict[str, str] = field(default_factory=dict)
    summaries: dict[str, str] = field(default_factory=dict)
    #: memory id → owner user id; others raise UnknownMemory
    memories: dict[str, str] = field(default_factory=dict)
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    async def find_viewer(self, login: str) -> str | None:
        return self.viewers.get(login)

    def _owned(self, user_id: str, memory_id: str) -> None:
        if self.memories.get(memory_id) != user_id:
            raise errors.UnknownMemory()

    async def forget_last(self, actor: str, user_id: str, stream: str) -> int:
        self.calls.append(("forget_last", actor, user_id, stream))
        return 2

    async def forget_memory(self, actor: str, user_id: str, memory_id: str) -> int:
        self._owned(user_id, memory_id)
        self.calls.append(("forget_memory", actor, user_id, memory_id))
        return 1

    async def forget_viewer(self, actor: str, user_id: str) -> int:
        self.calls.append(("forget_viewer", actor, user_id))
        return 5

    async def correct(self, actor: str, user_id: str, memory_id: str, text: str) -> None:
        self._owned(user_id, memory_id)
        self.calls.append(("correct", actor, user_id, memory_id, text))

    async def summary(self, user_id: str, *, brief: bool = False) -> str:
        self.calls.append(("summary", user_id))
        return self.summaries.get(user_id, "")

    async def reload_lore(self, actor: str) -> int:
        self.calls.append(("reload_lore", actor))
        return 3

    async def pause(self, actor: str, stream: str) -> None:
        self.calls.append(("pause", actor, stream))

    async def resume(self, actor: str, stream: str) -> None:
        self.calls.append(("resume", actor, stream))

    async def quiet(self, actor: str, stream: str, quiet: bool) -> bool:
        self.calls.append(("quiet" if quiet else "unquiet", actor, stream))
        return True
