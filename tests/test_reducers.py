"""Reducers: hypothesis property tests for every strategy, and the summarizing reducer against the
fake Ollama through the real ``ollama`` client (model calls counted, summaries stored)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory import errors, models
from memory.adapters import ollama as ollama_adapter
from memory.history import reducers
from tests.fakes import ollama as fake_ollama_module

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory.adapters import postgres
    from tests.conftest import SettingsFactory

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
Role = models.Role
Item = models.HistoryItem
SYSTEM = Item(role=Role.SYSTEM, text="You are Mnemo.", ts=T0)
PROPERTY = settings(max_examples=100, deadline=None)

words = st.text(alphabet="abcdefgh ", min_size=1, max_size=80)


@st.composite
def histories(draw: st.DrawFn, *, tool_calls: bool = True) -> list[Item]:
    """A working history: turns of viewer messages, tool rounds (a call, then its results) and
    replies; sometimes cut at the front like the history cap does, sometimes without turn ids, with
    or without a leading system item."""
    items: list[Item] = []
    with_ids = draw(st.integers(0, 4)) > 0
    counter = 0

    def next_ts() -> datetime:
        nonlocal counter
        counter += 1
        return T0 + timedelta(seconds=counter)

    for turn in range(draw(st.integers(0, 8))):
        turn_id = f"t{turn}" if with_ids else None
        for _ in range(draw(st.integers(1, 3))):
            login = draw(st.sampled_from(["alice", "bob", "carol"]))
            ts = next_ts()
            items.append(
                Item(role=Role.USER, text=draw(words), ts=ts, turn_id=turn_id, login=login,
                     message_id=f"m{counter}", user_id=f"id-{login}")
            )  # fmt: skip
        for _ in range(draw(st.integers(0, 2)) if tool_calls else 0):
            names = draw(
                st.lists(st.sampled_from(["add_note", "list_state"]), min_size=1, max_size=2)
            )
            ts = next_ts()
            calls = tuple(
                models.ToolCall(id=f"c{counter}-{i}", name=n, arguments={"text": "x"})
                for i, n in enumerate(names)
            )
            items.append(
                Item(role=Role.ASSISTANT, text="", ts=ts, turn_id=turn_id, tool_calls=calls)
            )
            for c in calls:
                items.append(
                    Item(role=Role.TOOL, text=draw(words), ts=ts, turn_id=turn_id,
                         tool_call_id=c.id, tool_name=c.name)
                )  # fmt: skip
        if draw(st.booleans()):
            items.append(Item(role=Role.ASSISTANT, text=draw(words), ts=next_ts(), turn_id=turn_id))
    items = items[draw(st.integers(0, min(3, len(items)))) :]
    return [SYSTEM, *items] if draw(st.booleans()) else items


def call_of(items: Sequence[Item], index: int) -> int | None:
    """The index of the call a TOOL item answers (independent of the code under test)."""
    j = index
    while j > 0 and items[j - 1].role is Role.TOOL:
        j -= 1
    if j == 0:
        return None
    call = items[j - 1]
    ids = {c.id for c in call.tool_calls}
    return j - 1 if items[index].tool_call_id in ids else None


def sanitized(items: Sequence[Item]) -> list[Item]:
    """The body of the input without its system item and orphan tool results."""
    body = list(items[1:] if items and items[0].role is Role.SYSTEM else items)
    return [
        it for i, it in enumerate(body) if it.role is not Role.TOOL or call_of(body, i) is not None
    ]


def check_common(inp: Sequence[Item], out: Sequence[Item]) -> list[Item]:
    """Invariants of every reducer; returns the output body (no system, no summary item)."""
    if inp and inp[0].role is Role.SYSTEM:
        assert out and out[0] is inp[0]
    summaries = [o for o in out if o.summary]
    assert len(summaries) <= 1
    body = [o for o in out if not o.summary and o is not SYSTEM]
    if summaries:
        assert out.index(summaries[0]) == (1 if inp and inp[0] is SYSTEM else 0)
    # never invented, order kept
    positions = [next(i for i, it in enumerate(inp) if it is o) for o in body]
    assert positions == sorted(set(positions))
    # a result never without its call, a call never without its results
    kept = {id(o) for o in body}
    for i, item in enumerate(inp):
        if id(item) not in kept:
            continue
        if item.role is Role.TOOL:
            j = call_of(inp, i)
            assert j is not None and id(inp[j]) in kept
        if item.tool_calls:
            k = i + 1
            while k < len(inp) and inp[k].role is Role.TOOL:
                assert id(inp[k]) in kept
                k += 1
    return body


def check_suffix(inp: Sequence[Item], body: Sequence[Item]) -> None:
    clean = sanitized(inp)
    assert [id(o) for o in body] == [id(o) for o in clean[len(clean) - len(body) :]]


def reduce(reducer: Any, items: Sequence[Item]) -> list[Item]:
    result: list[Item] = asyncio.run(reducer.reduce("s1", items))
    return result


@PROPERTY
@given(histories())
def test_none_keeps_everything_but_orphan_results(items: list[Item]) -> None:
    body = check_common(items, reduce(reducers.KeepAll(), items))
    assert [id(o) for o in body] == [id(o) for o in sanitized(items)]


@PROPERTY
@given(histories(), st.integers(1, 12))
def test_counting_keeps_the_newest_messages_within_n(items: list[Item], n: int) -> None:
    body = check_common(items, reduce(reducers.CountingReducer(n), items))
    assert len(body) <= n
    check_suffix(items, body)
    clean = sanitized(items)
    if len(clean) <= n:
        assert len(body) == len(clean)


@PROPERTY
@given(histories(), st.integers(1, 200))
def test_tokens_keeps_the_newest_messages_within_the_estimate(
    items: list[Item], budget: int
) -> None:
    body = check_common(items, reduce(reducers.TokenReducer(budget), items))
    assert sum(reducers.item_tokens(o) for o in body) <= budget
    check_suffix(items, body)


@PROPERTY
@given(histories(), st.integers(1, 12))
def test_turns_keeps_whole_newest_turns(items: list[Item], n: int) -> None:
    body = check_common(items, reduce(reducers.TurnReducer(n), items))
    clean = sanitized(items)
    if len(body) > n:
        # the documented case: the newest turn's questions alone are over budget
        assert all(o.role is Role.USER for o in body)
        at = [next(i for i, c in enumerate(clean) if c is o) for o in body]
        assert at == list(range(at[0], at[0] + len(body)))  # one batch
        if clean[-1].turn_id is not None:
            assert body == [o for o in clean if o.turn_id == clean[-1].turn_id][: len(body)]
    turn_ids = {o.turn_id for o in body}
    if len(turn_ids) > 1 and None not in turn_ids:
        for turn_id in turn_ids:  # whole turns only
            assert [id(o) for o in clean if o.turn_id == turn_id] == [
                id(o) for o in body if o.turn_id == turn_id
            ]
    if clean and clean[0].turn_id is not None and len(clean) <= n:
        assert len(body) == len(clean)


def test_turns_keeps_the_question_and_the_latest_of_an_oversized_turn() -> None:
    def item(role: Role, text: str, **extra: Any) -> Item:
        return Item(role=role, text=text, ts=T0, turn_id="t2", **extra)

    old = Item(role=Role.USER, text="earlier", ts=T0, turn_id="t1", login="bob")
    call = models.ToolCall(id="c1", name="list_state", arguments={})
    items = [
        SYSTEM,
        old,
        item(Role.USER, "what do you know about bob and me?", login="alice"),
        item(Role.ASSISTANT, "", tool_calls=(call,)),
        item(Role.TOOL, "{}", tool_call_id="c1", tool_name="list_state"),
        item(Role.ASSISTANT, "thinking"),
        item(Role.ASSISTANT, "", tool_calls=(models.ToolCall(id="c2", name="add_note"),)),
        item(Role.TOOL, "{}", tool_call_id="c2", tool_name="add_note"),
    ]
    out = reduce(reducers.TurnReducer(3), items)
    assert out == [SYSTEM, items[2], items[6], items[7]]
    assert reduce(reducers.TurnReducer(5), items) == [SYSTEM, items[2], *items[5:]]
    assert reduce(reducers.TurnReducer(6), items) == [SYSTEM, *items[2:]]
    assert reduce(reducers.TurnReducer(7), items) == items


# -- summarizing -------------------------------------------------------------------------------


async def summarize_steps(
    steps: Sequence[int], target: int, threshold: int, history: list[Item]
) -> tuple[int, list[list[Item]]]:
    """Feed growing prefixes of ``history`` to a summarizing reducer on the fake Ollama."""
    server = fake_ollama_module.FakeOllama()
    await server.start()
    try:
        model = ollama_adapter.OllamaChat(server.url, "llama3.2:3b")
        reducer = reducers.SummarizingReducer(
            model=model, model_name="llama3.2:1b", target=target, threshold=threshold
        )
        outputs = []
        for n in steps:
            prefix = [SYSTEM, *history[:n]]
            outputs.append(await reducer.reduce("s1", prefix))
        assert reducer.calls == server.chat_calls("llama3.2:1b")  # the reducer reports its calls
        return reducer.calls, outputs
    finally:
        await server.stop()


@settings(max_examples=30, deadline=None)
@given(
    histories(tool_calls=False),
    st.lists(st.integers(0, 6), min_size=1, max_size=12),
    st.integers(1, 6),
    st.integers(1, 4),
)
def test_summarizing_calls_the_model_only_when_the_threshold_is_crossed(
    items: list[Item], growth: list[int], target: int, threshold: int
) -> None:
    history = sanitized(items)
    steps, n = [], 0
    for g in growth:
        n = min(len(history), n + g)
        steps.append(n)
    calls, outputs = asyncio.run(summarize_steps(steps, target, threshold, history))

    # the prompt: the newest ``target`` messages (and the summary); older ones wait until more than
    # ``threshold`` have gathered, then fold in one call
    expected, covered = 0, 0
    for n, out in zip(steps, outputs, strict=True):
        body = check_common([SYSTEM, *history[:n]], out)
        window_start = max(covered, n - target)
        if window_start - covered > threshold:
            expected, covered = expected + 1, window_start
        assert len(body) <= target
        assert [id(o) for o in body] == [id(o) for o in history[window_start:n]]
        assert any(o.summary for o in out) == (covered > 0)
    assert calls == expected
    assert calls <= steps[-1] // (threshold + 1)


@settings(max_examples=30, deadline=None)
@given(histories(), st.integers(1, 6), st.integers(1, 4))
def test_summarizing_never_splits_tool_calls_and_stays_within_budget(
    items: list[Item], target: int, threshold: int
) -> None:
    steps = list(range(1, len(items) + 1))
    _, outputs = asyncio.run(summarize_steps(steps, target, threshold, items))
    for n, out in zip(steps, outputs, strict=True):
        body = check_common([SYSTEM, *items[:n]], out)
        assert len(body) <= target


def chat_items(count: int, start: int = 0) -> list[Item]:
    return [
        Item(role=Role.USER, text=f"message {i}", ts=T0 + timedelta(seconds=i), turn_id=f"t{i}",
             message_id=f"m{i}", login="alice")
        for i in range(start, start + count)
    ]  # fmt: skip


async def test_summaries_are_stored_and_reused_after_a_restart(
    db: postgres.Database, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    model = ollama_adapter.OllamaChat(fake_ollama.url, "llama3.2:3b")

    def make() -> reducers.SummarizingReducer:
        return reducers.SummarizingReducer(
            model=model, model_name="llama3.2:1b", target=4, threshold=2, db=db
        )

    history = chat_items(7)
    fake_ollama.reply("alice counted messages 0 to 2")
    out = await make().reduce("s1", [SYSTEM, *history])
    assert fake_ollama.chat_calls() == 1
    assert [o.text for o in out[2:]] == [f"message {i}" for i in range(3, 7)]
    assert out[1].summary and "alice counted messages 0 to 2" in out[1].text
    prompt = fake_ollama.chat_requests[0]["messages"][-1]["content"]
    assert "alice: message 0" in prompt and "message 3" not in prompt

    # a restart (new reducer) reuses the stored summary, even when the cap dropped old items
    restarted = make()
    again = await restarted.reduce("s1", [SYSTEM, *history[2:], *chat_items(2, start=7)])
    assert fake_ollama.chat_calls() == 1
    assert again[1].text == out[1].text and [o.message_id for o in again[2:]] == [
        f"m{i}" for i in range(5, 9)
    ]  # m3 and m4 wait (2, not past the threshold) for the next fold
    # past the threshold again: one more call, merging the earlier summary
    fake_ollama.reply("alice counted to 4")
    third = await restarted.reduce("s1", [SYSTEM, *history, *chat_items(3, start=7)])
    assert fake_ollama.chat_calls() == 2
    assert (
        "alice counted messages 0 to 2" in fake_ollama.chat_requests[1]["messages"][-1]["content"]
    )
    assert third[1].text.endswith("alice counted to 4")
    assert [o.message_id for o in third[2:]] == [f"m{i}" for i in range(6, 10)]
    rows = await db.pool.fetch("SELECT covers_key, covers_count, model FROM history_summaries")
    assert [(r["covers_key"], r["covers_count"], r["model"]) for r in rows] == [
        ("m:m2", 3, "llama3.2:1b"),
        ("m:m5", 6, "llama3.2:1b"),
    ]
    # another stream has its own summary
    assert not any(o.summary for o in await make().reduce("s2", [SYSTEM, *chat_items(3)]))


async def test_a_failed_summary_drops_older_messages_and_the_turn_goes_on(
    fake_ollama: fake_ollama_module.FakeOllama,
) -> None:
    model = ollama_adapter.OllamaChat(fake_ollama.url, "llama3.2:3b")
    reducer = reducers.SummarizingReducer(
        model=model, model_name="llama3.2:3b", target=2, threshold=1
    )
    fake_ollama.fail_next(500)
    out = await reducer.reduce("s1", [SYSTEM, *chat_items(5)])
    assert out == [SYSTEM, *chat_items(5)[3:]]
    fake_ollama.reply("summary")
    out = await reducer.reduce("s1", [SYSTEM, *chat_items(5)])
    assert out[1].summary and len(out) == 4


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("none", reducers.KeepAll),
        ("counting", reducers.CountingReducer),
        ("tokens", reducers.TokenReducer),
        ("turns", reducers.TurnReducer),
        ("summarizing", reducers.SummarizingReducer),
    ],
)
def test_build_reducer_follows_the_settings(
    make_settings: SettingsFactory, name: str, cls: type[object]
) -> None:
    cfg = make_settings(history={"reducer": name}, ollama={"summary_model": "llama3.2:1b"})
    model = ollama_adapter.OllamaChat("http://127.0.0.1:9", "llama3.2:3b")
    reducer = reducers.build_reducer(cfg, model=model)
    assert isinstance(reducer, cls)
    if isinstance(reducer, reducers.SummarizingReducer):
        assert reducer.model_name == "llama3.2:1b"
        with pytest.raises(errors.ConfigurationError):
            reducers.build_reducer(cfg)
