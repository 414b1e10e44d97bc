"""``stopping.as_interrupt``: SIGTERM and SIGHUP interrupt ``asyncio.run`` as Ctrl-C does, and
never cancel the main task where the signal lands inside the event loop's own code.

The handlers are called as Python calls a signal handler: between two lines of whatever the main
thread runs. A handler that cancelled the main task there once did so between the two lines of
asyncio that hand a thread's result to the awaiting task, and asyncio then logged
"InvalidStateError" with a traceback at exit (``tests/test_eval_stopping.py`` saw it from outside,
once in many runs); these tests see the order from inside, every time.
"""

from __future__ import annotations

import asyncio
import signal

import pytest

from memory import stopping


def _deliver(signum: signal.Signals) -> None:
    """What Python does when ``signum`` arrives: calls its handler at once, in the main thread."""
    handler = signal.getsignal(signum)
    assert callable(handler)
    handler(signum, None)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
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

    with stopping.as_interrupt(), pytest.raises(KeyboardInterrupt):
        asyncio.run(main())
    assert seen == ["cancelling where it landed: 0", "cancelled at the next await"]


def test_a_second_signal_interrupts_at_once() -> None:
    """The loop may be busy (a long call in its thread): the second signal does not wait for it."""
    reached: list[str] = []

    async def main() -> None:
        _deliver(signal.SIGTERM)
        reached.append("after the first")
        with pytest.raises(KeyboardInterrupt):
            _deliver(signal.SIGHUP)
        reached.append("the second raised where it landed")

    with stopping.as_interrupt(), pytest.raises(KeyboardInterrupt):
        asyncio.run(main())
    assert reached == ["after the first", "the second raised where it landed"]


def test_outside_a_running_loop_a_signal_interrupts_at_once() -> None:
    with stopping.as_interrupt(), pytest.raises(KeyboardInterrupt):
        _deliver(signal.SIGTERM)
