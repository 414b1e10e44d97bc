"""The turn pipeline against real Postgres and the fake Ollama through the real ``ollama`` client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory import models, pipeline
from memory.adapters import ollama as ollama_adapter
from memory.adapters import postgres
from memory.history import transcript, working
from tests import chatlog

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from config.settings import Settings
    from memory import ports
    from tests.fakes import ollama as fake_ollama_module


def make_pipeline(
    db: postgres.Database, model: ports.ChatModel | None, reducer: ports.Reducer | None = None
) -> pipeline.TurnPipeline:
    return pipeline.TurnPipeline(
        transcript=transcript.Transcript(db),
        history=working.InProcessHistory(cap=100),
        model=model,
        seams=pipeline.Seams(
            planner=pipeline.NoPlanner(),
            retriever=pipeline.NoRetrieval(),
            reducer=reducer or pipeline.KeepAll(),
        ),
        system_prompt="You are Mnemo.",
    )


async def run(p: pipeline.TurnPipeline, *events: models.ChatEvent) -> models.TurnReport:
    await p.transcript.append_events(list(events))
    return await p.run(models.Batch(stream=events[0].stream, events=events))


async def test_a_turn_sends_history_and_batch_and_journals_the_reply(
    db: postgres.Database, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    model = ollama_adapter.OllamaChat(fake_ollama.url, "llama3.2:3b")
    p = make_pipeline(db, model)
    fake_ollama.reply("hi @alice!")
    first = await run(p, chatlog.chat(1, "alice", "hello"))
    fake_ollama.reply("nice dogs @bob")
    second = await run(
        p, chatlog.chat(2, "bob", "I have two dogs"), chatlog.chat(3, "alice", "cute")
    )

    assert first.reply == "hi @alice!" and second.reply == "nice dogs @bob"
    sent = fake_ollama.chat_requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user", "user"]
    assert sent[1]["content"] == "alice: hello" and sent[3]["content"] == "bob: I have two dogs"
    assert second.prompt.messages_in_history == 4 and second.prompt.messages_sent == 5
    assert second.prompt.tokens_estimate > 0 and "bob: I have two dogs" in second.prompt.preview
    row = await p.transcript.turn(second.turn_id)
    assert row is not None and row.status is models.TurnStatus.COMPLETED
    assert row.reply == "nice dogs @bob" and row.message_ids == ("s1-m2", "s1-m3")
    assert row.report is not None and row.report["reply"] == "nice dogs @bob"


async def test_a_failed_model_call_fails_the_turn_and_loses_no_message(
    db: postgres.Database, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    model = ollama_adapter.OllamaChat(fake_ollama.url, "llama3.2:3b")
    p = make_pipeline(db, model)
    fake_ollama.fail_next(500)
    report = await run(p, chatlog.chat(1, "alice", "I moved to Turin"))
    assert report.status is models.TurnStatus.FAILED and report.reply is None
    assert report.error and "500" in report.error
    row = await p.transcript.turn(report.turn_id)
    assert row is not None and row.status is models.TurnStatus.FAILED and row.error == report.error
    assert [e.text for e in await p.transcript.messages(["s1-m1"])] == ["I moved to Turin"]
    # the message stays in the history: the next turn still sees it
    fake_ollama.reply("welcome back")
    await run(p, chatlog.chat(2, "alice", "hello?"))
    contents = [m["content"] for m in fake_ollama.chat_requests[-1]["messages"]]
    assert "alice: I moved to Turin" in contents


async def test_unreachable_model_is_a_failed_turn_with_how_to_fix(db: postgres.Database) -> None:
    model = ollama_adapter.OllamaChat("http://127.0.0.1:9", "llama3.2:3b", timeout=2)
    report = await run(make_pipeline(db, model), chatlog.chat(1, "alice", "hi"))
    assert report.status is models.TurnStatus.FAILED
    assert report.error is not None and "--no-llm" in report.error


async def test_without_a_model_the_prompt_is_built_and_the_turn_completes(
    db: postgres.Database,
) -> None:
    p = make_pipeline(db, None)
    reports = [await run(p, chatlog.chat(n, "alice", f"message {n}")) for n in range(1, 4)]
    assert [r.prompt.messages_in_history for r in reports] == [1, 2, 3]
    assert all(r.status is models.TurnStatus.COMPLETED and r.reply is None for r in reports)


async def test_the_reducer_bounds_what_is_sent_while_history_grows(db: postgres.Database) -> None:
    class LastThree:
        async def reduce(
            self, stream: str, items: Sequence[models.HistoryItem]
        ) -> list[models.HistoryItem]:
            return [items[0], *items[1:][-3:]]

    p = make_pipeline(db, None, LastThree())
    reports = [await run(p, chatlog.chat(n, "alice", f"m{n}")) for n in range(1, 8)]
    assert [r.prompt.messages_in_history for r in reports] == list(range(1, 8))
    assert max(r.prompt.messages_sent for r in reports) == 4


async def test_streams_never_see_each_other(
    db: postgres.Database, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    p = make_pipeline(db, ollama_adapter.OllamaChat(fake_ollama.url, "llama3.2:3b"))
    await run(p, chatlog.chat(1, "alice", "secret of stream a", stream="a"))
    await run(p, chatlog.chat(1, "bob", "hello from b", stream="b"))
    contents = " ".join(m["content"] for m in fake_ollama.chat_requests[-1]["messages"])
    assert "secret of stream a" not in contents and "hello from b" in contents


async def test_tool_rounds_reach_the_tool_runner_and_the_barrier(
    db: postgres.Database, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    calls: list[tuple[str, dict[str, object]]] = []

    class Round:
        def __init__(self, call: models.ToolCall) -> None:
            self.results = [
                models.HistoryItem(
                    role=models.Role.TOOL,
                    text='{"ok": true}',
                    ts=chatlog.T0,
                    tool_call_id=call.id,
                    tool_name=call.name,
                )
            ]
            self.changed_domains = {"relationships"}
            self.involved_user_ids = {"id-alice", "id-bob"}
            self.records = [{"name": call.name}]

    class Tools:
        def tool_schemas(self) -> list[dict[str, object]]:
            return [{"type": "function", "function": {"name": "set_relationship"}}]

        async def run(
            self,
            turn_id: str,
            stream: str,
            batch_calls: Sequence[models.ToolCall],
            speakers: Mapping[str, str],
            *,
            privileged: bool = False,
        ) -> Round:
            calls.extend((c.name, dict(c.arguments)) for c in batch_calls)
            return Round(batch_calls[0])

        async def record_barrier(
            self, turn_id: str, domains: set[str], user_ids: set[str], batch: set[str]
        ) -> dict[str, object]:
            return {"domains": sorted(domains), "user_ids": sorted(user_ids), "whole_batch": False}

    p = make_pipeline(db, ollama_adapter.OllamaChat(fake_ollama.url, "llama3.2:3b"))
    p.seams = pipeline.Seams(
        planner=pipeline.NoPlanner(),
        retriever=pipeline.NoRetrieval(),
        reducer=pipeline.KeepAll(),
        tools=Tools(),
    )
    fake_ollama.call_tool("set_relationship", {"a": "alice", "b": "bob", "kind": "siblings"})
    fake_ollama.reply("noted!")
    report = await run(p, chatlog.chat(1, "alice", "record that alice and bob are siblings"))
    assert calls == [("set_relationship", {"a": "alice", "b": "bob", "kind": "siblings"})]
    assert report.reply == "noted!"
    assert report.barrier == {
        "domains": ["relationships"],
        "user_ids": ["id-alice", "id-bob"],
        "whole_batch": False,
    }
    second_request = fake_ollama.chat_requests[1]["messages"]
    assert second_request[-1]["role"] == "tool" and second_request[-2]["tool_calls"]
    history = await p.history.recent("s1")
    assert [i.role.value for i in history] == ["user", "assistant", "tool", "assistant"]


async def test_an_unexpected_model_error_still_ends_the_turn(db: postgres.Database) -> None:
    class Broken:
        context_tokens: int | None = None

        async def check(self) -> None:
            return None

        async def chat(self, messages: object, **kwargs: object) -> models.ModelReply:
            raise RuntimeError("socket closed mid-answer")

    p = make_pipeline(db, Broken())
    report = await run(p, chatlog.chat(1, "alice", "hello"))
    assert report.status is models.TurnStatus.FAILED and "socket closed" in (report.error or "")
    row = await p.transcript.turn(report.turn_id)
    assert row is not None and row.status is models.TurnStatus.FAILED


async def test_a_message_stored_before_a_restart_is_sent_once(db: postgres.Database) -> None:
    store = transcript.Transcript(db)
    waiting = chatlog.chat(1, "alice", "I was never answered")
    await store.append_events([waiting])  # stored, then the process died before its turn
    p = make_pipeline(db, None)
    await working.rebuild(p.history, store, "s1", cap=100)
    report = await p.run(models.Batch(stream="s1", events=(waiting,)))
    assert report.prompt.preview.count("I was never answered") == 1
    assert report.prompt.messages_in_history == 1


async def test_a_redacted_message_leaves_the_prompt_at_once(db: postgres.Database) -> None:
    p = make_pipeline(db, None)
    await run(p, chatlog.chat(1, "alice", "my secret address is 5 Elm Street"))
    await db.pool.execute(
        "INSERT INTO message_redactions (message_id, user_id, actor) VALUES ('s1-m1', 'id-alice', 't')"
    )
    report = await run(p, chatlog.chat(2, "bob", "hello"))
    assert "Elm Street" not in report.prompt.preview
    assert "alice: [redacted]" in report.prompt.preview


async def test_the_barrier_is_recorded_even_when_the_model_fails_after_the_tools(
    db: postgres.Database, fake_ollama: fake_ollama_module.FakeOllama
) -> None:
    from memory.state import tools

    await db.pool.execute("INSERT INTO streams (id) VALUES ('s1') ON CONFLICT DO NOTHING")
    p = make_pipeline(db, ollama_adapter.OllamaChat(fake_ollama.url, "llama3.2:3b"))
    p.seams = pipeline.Seams(
        planner=pipeline.NoPlanner(),
        retriever=pipeline.NoRetrieval(),
        reducer=pipeline.KeepAll(),
        tools=tools.ToolRunner(db, _settings()),
    )
    await p.transcript.append_events([chatlog.chat(1, "alice", "hi"), chatlog.chat(2, "bob", "hi")])
    fake_ollama.call_tool(
        "set_relationship", {"viewer_a": "alice", "viewer_b": "bob", "kind": "siblings"}
    )
    fake_ollama.fail_in_turn(500)  # the call after the tool round fails
    # both wrote in the batch: the tools may record state about them
    events = (
        chatlog.chat(3, "alice", "record that alice and bob are siblings"),
        chatlog.chat(4, "bob", "yes we are"),
    )
    await p.transcript.append_events(list(events))
    report = await p.run(models.Batch(stream="s1", events=events))
    assert report.status is models.TurnStatus.FAILED
    assert report.barrier is not None and "relationships" in report.barrier["domains"]
    from memory.consolidate import barrier

    decision = await barrier.barrier_for_turn(db, report.turn_id)
    assert decision.excludes("id-alice") and decision.excludes("id-bob")


def _settings() -> Settings:
    from tests import conftest

    return conftest.IsolatedSettings(database_url="postgresql://unused/x")
