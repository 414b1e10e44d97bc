"""``stopping.run``: a command's ``asyncio.run``, which SIGINT, SIGTERM and SIGHUP interrupt as
Ctrl-C does, never cancelling the main task where the signal lands.

The handlers are called as Python calls a signal handler: at once, between two lines of whatever
the main thread runs. A handler that cancelled the main task there once did so between the two
lines of asyncio that hand a thread's result to the awaiting task, and asyncio then logged
"InvalidStateError" with a traceback (``tests/test_eval_stopping.py`` saw it from outside, once in
many runs); these tests see the order from inside, every time. SIGHUP is left to the tests that
run a command in a process of its own: its handler sends a terminal's output to ``/dev/null``.
"""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING

import pytest

from memory import stopping

if TYPE_CHECKING:
    from collections.abc import Iterator

SIGNALS = [signal.SIGINT, signal.SIGTERM]


def _deliver(signum: signal.Signals) -> None:
    """What Python does when ``signum`` arrives: calls its handler at once, in the main thread."""
    handler = signal.getsignal(signum)
    assert callable(handler)
    handler(signum, None)


@pytest.fixture
def handlers() -> Iterator[None]:
    """The handlers of the signals as a test found them, checked back after ``run``. A signal the
    test process inherited as ignored (SIGINT in a shell's background job, ``cmd &``), which
    ``run`` rightly leaves ignored, gets its default handler for the test, as in a terminal."""
    inherited = {s: signal.getsignal(s) for s in stopping.SIGNALS}
    for signum, handler in inherited.items():
        if handler == signal.SIG_IGN:
            default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
            signal.signal(signum, default)
    before = {s: signal.getsignal(s) for s in stopping.SIGNALS}
    yield
    after = {s: signal.getsignal(s) for s in stopping.SIGNALS}
    for signum, handler in inherited.items():
        signal.signal(signum, handler)
    assert after == before, "run left a handler of its own"


@pytest.mark.usefixtures("handlers")
@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_cancels_the_main_task_from_the_loop_not_where_it_lands(
    signum: signal.Signals,
) -> None:
    seen: list[str] = []

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None
        _deliver(signum)
        seen.append(f"cancelling where it landed: {task.cancelling()}")
        try:
            await asyncio.get_running_loop().run_in_executor(None, lambda: "a thread's result")
        except asyncio.CancelledError:
            seen.append("cancelled at the next await")
            raise

    with pytest.raises(KeyboardInterrupt):
        stopping.run(main())
    assert seen == ["cancelling where it landed: 0", "cancelled at the next await"]


@pytest.mark.usefixtures("handlers")
def test_what_main_opened_closes_before_the_interrupt() -> None:
    closed = asyncio.Event()

    async def main() -> None:
        try:
            _deliver(signal.SIGTERM)
            await asyncio.Event().wait()  # a command waiting on its work
        finally:
            closed.set()

    with pytest.raises(KeyboardInterrupt):
        stopping.run(main())
    assert closed.is_set()


@pytest.mark.usefixtures("handlers")
def test_a_second_signal_interrupts_at_once() -> None:
    """The loop may be busy (a long call in its thread): the second signal does not wait for it."""
    reached: list[str] = []

    async def main() -> None:
        _deliver(signal.SIGTERM)
        reached.append("after the first")
        with pytest.raises(KeyboardInterrupt):
            _deliver(signal.SIGINT)
        reached.append("the second raised where it landed")
        await asyncio.sleep(0)  # the first's cancel, made by the loop meanwhile
        reached.append("not cancelled")

    with pytest.raises(KeyboardInterrupt):
        stopping.run(main())
    assert reached == ["after the first", "the second raised where it landed"]


@pytest.mark.usefixtures("handlers")
def test_a_run_with_no_signal_returns_its_result_and_a_signal_ignored_stays_so() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a shell's background job

    async def main() -> object:
        return signal.getsignal(signal.SIGINT), callable(signal.getsignal(signal.SIGTERM))

    try:
        assert stopping.run(main()) == (signal.SIG_IGN, True)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
