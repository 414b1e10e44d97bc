"""Riding out an outage: expected failures logged as conditions, and writes retried while their
store is unavailable, up to a deadline.

An expected, handled failure (Redis, Qdrant, Ollama or Postgres unavailable; a memory source over
its time budget) is a *condition*: :data:`conditions` logs one WARNING line when it starts and one
when it ends, never a traceback (each failure's traceback is kept at DEBUG), and counts both in
``livememory_outages_total{condition}`` / ``livememory_outage_failures_total{condition}``
(``memory.metrics.ReliabilityMetrics``). Unexpected errors keep their traceback where they are
caught. The adapters report their service at the boundary (``wrap_errors``): a failure that
becomes ``errors.StoreUnavailable`` starts the condition, the next call that succeeds ends it.

The tracker is one per process, on purpose: an outage is a fact of the process (two caches of one
Redis see the same outage, and it is to be told once). :func:`memory.runtime.lifespan` attaches
its metrics to it while the services are open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from memory import errors

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: the longest pause between two tries
MAX_DELAY_SECONDS = 2.0

#: condition names of the services (the metrics label)
REDIS = "redis"
POSTGRES = "postgres"
QDRANT = "qdrant"
OLLAMA = "ollama"


class Counters(Protocol):
    """Where conditions are counted (``metrics.ReliabilityMetrics``)."""

    def outage_started(self, condition: str) -> None: ...

    def outage_failure(self, condition: str) -> None: ...


@dataclass(slots=True)
class _Open:
    since: float
    failures: int = 1


class Conditions:
    """The open conditions of the process: ``failed`` starts (or adds to) one, ``ok`` ends it."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self.counters: Counters | None = None

    def is_open(self, condition: str) -> bool:
        return condition in self._open

    def failed(self, condition: str, exc: BaseException | str, *, what: str | None = None) -> None:
        """A handled failure of ``condition``: the first of an outage logs one WARNING line; each
        logs its traceback at DEBUG only. ``what`` names the condition in the line (default: it)."""
        if self.counters is not None:
            self.counters.outage_failure(condition)
        exc_info = exc if isinstance(exc, BaseException) else None
        logger.debug("%s failed: %s", condition, exc, exc_info=exc_info)
        if (state := self._open.get(condition)) is not None:
            state.failures += 1
            return
        self._open[condition] = _Open(since=time.monotonic())
        if self.counters is not None:
            self.counters.outage_started(condition)
        logger.warning(
            "%s unavailable: %s; carrying on without it, a line follows when it is back",
            what or condition,
            exc,
            extra={"action": "outage_start", "condition": condition},
        )

    def ok(self, condition: str, *, what: str | None = None) -> None:
        """``condition`` answered again: ends its outage with one WARNING line (when it had one)."""
        state = self._open.pop(condition, None)
        if state is None:
            return
        logger.warning(
            "%s is back after %.1f s (%d failure(s) handled meanwhile)",
            what or condition,
            time.monotonic() - state.since,
            state.failures,
            extra={"action": "outage_end", "condition": condition, "failures": state.failures},
        )

    def reset(self) -> None:
        """Forget every open condition without a line (a lifespan that closes)."""
        self._open.clear()


#: the process's conditions
conditions = Conditions()


@contextlib.contextmanager
def watched(
    condition: str, what: str, *, answered: tuple[type[Exception], ...] = ()
) -> Iterator[None]:
    """An adapter's boundary: ``errors.StoreUnavailable`` out of it is a failure of ``condition``
    (but ``errors.StoreClosed``: this process closed the client); a call that returns (or raises
    one of ``answered``: a refusal, the service is there) ends it."""
    try:
        yield
    except errors.StoreClosed:  # this process closed it: the service was not asked
        raise
    except errors.StoreUnavailable as exc:
        conditions.failed(condition, exc.__cause__ or exc, what=what)
        raise
    except answered:
        conditions.ok(condition, what=what)
        raise
    conditions.ok(condition, what=what)


@contextlib.contextmanager
def counted(counters: Counters) -> Iterator[None]:
    """Count the process's conditions in ``counters`` while open; on exit, forget what is still
    open (the services that were down close with the lifespan) and count where it counted before."""
    before, conditions.counters = conditions.counters, counters
    try:
        yield
    finally:
        conditions.counters = before
        conditions.reset()


async def patiently(call: Callable[[], Awaitable[_T]], *, wait_seconds: float, what: str) -> _T:
    """``await call()``, trying again (0.1 s, doubling, at most 2 s apart) while it raises
    ``errors.StoreUnavailable``; after ``wait_seconds`` the last error is raised. The outage itself
    is told by the store's condition; each retry is a DEBUG line."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    delay = 0.1
    while True:
        try:
            return await call()
        except errors.StoreUnavailable as exc:
            if loop.time() + delay > deadline:
                raise
            logger.debug(
                "%s: store unavailable (%s), trying again", what, exc, extra={"action": "retry"}
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, MAX_DELAY_SECONDS)


def log_failure(log: logging.Logger, what: str, exc: BaseException) -> None:
    """A caught failure: an outage (``errors.StoreUnavailable``, told once by its store's
    condition) at DEBUG with its traceback; anything else, unexpected, at WARNING with it."""
    if isinstance(exc, errors.StoreUnavailable):
        log.debug("%s: %s", what, exc, exc_info=exc)
    else:
        log.warning("%s", what, exc_info=exc)
