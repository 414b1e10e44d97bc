"""A clock for the rate limiter, the 429 waits and the command cooldowns that tests move by hand."""

from __future__ import annotations

import asyncio


class FakeClock:
    """``sending.Clock`` whose ``sleep`` only advances time (recorded in ``sleeps``)."""

    def __init__(self, start: float = 100.0, epoch: float = 1_800_000_000.0) -> None:
        self.now = start
        self.epoch_offset = epoch - start
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now + self.epoch_offset

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(seconds, 0.0)
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self.now += seconds
