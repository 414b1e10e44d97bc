"""Open the personal spaces of a batch while its window is still open.

On embedded Qdrant the first search in a viewer's space opens that viewer's folder, which loads every
memory (~13 ms for 100): at 10,000 viewers × 100 memories, a batch naming a handful of viewers whose
folders are closed spends most of its memory stage opening them. The batcher holds a batch open for
up to ``batch.window_seconds`` (2 s) after its first message; ``Prefetch.note`` is called as each
message is stored and starts opening the spaces the planner may recall from for it (its author and
the viewers it names, ``Planner.viewers_of``) in the background, so retrieval finds them open.
In the shared layout (one shard for every viewer, loaded at start) it reads those viewers' points
once instead (``QdrantSpaces.warm``): a viewer's first search otherwise waits for the disk when
the OS no longer holds their pages (~16 reads, 3-4 ms; see docs/evaluation.md, 'The embedded store').

Best effort: a failure is logged and left to retrieval, which reports an unavailable space as
degraded as before. With a Qdrant server (or the in-memory spaces of tests) there is nothing to open.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from memory import identity

if TYPE_CHECKING:
    from memory import models, ports
    from memory.recall import planner as planner_module

logger = logging.getLogger(__name__)


class Prefetch:
    """Starts opening the personal spaces a stored message will be recalled from."""

    def __init__(self, planner: planner_module.Planner, spaces: ports.MemorySpaces) -> None:
        self.planner = planner
        self.spaces = spaces
        self.opened = 0  #: spaces opened ahead of use so far (benchmarks, tests)
        self._tasks: set[asyncio.Task[None]] = set()

    def note(self, event: models.ChatEvent) -> None:
        """Start opening the spaces of ``event``'s viewers (returns at once)."""
        keys = [identity.personal_key(user_id) for user_id in self.planner.viewers_of(event)]
        if not keys:
            return
        task = asyncio.create_task(self._warm(keys), name="prefetch")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _warm(self, keys: list[str]) -> None:
        try:
            self.opened += await self.spaces.warm(keys)
        except Exception as exc:  # retrieval meets the same problem and reports it
            logger.debug("prefetch of %s failed: %s", keys, exc)

    async def settle(self) -> None:
        """Wait until every started prefetch is done (shutdown, benchmarks, tests)."""
        while self._tasks:
            await asyncio.gather(*self._tasks)
