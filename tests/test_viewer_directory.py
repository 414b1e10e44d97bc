"""The viewer directory on the real composition root: a viewer the transcript knows but the
working history no longer shows is planned when another viewer names them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory import runtime as services_module
from memory import session

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from tests.conftest import SettingsFactory

from memory import models

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
HISTORY_CAP = 10


def chat(n: int, user_id: str, login: str, text: str, name: str | None = None) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"m{n}",
        stream="s1",
        user_id=user_id,
        login=login,
        name=name,
        text=text,
        ts=T0 + timedelta(seconds=30 * n),  # one batch each
    )


def filler(start: int) -> list[models.ChatEvent]:
    """More chat than the working history holds, none of it by Bob or Caroline."""
    return [
        chat(start + i, "1003", "carol", f"the boss fight number {i} was hard") for i in range(12)
    ]


def viewers_of(report: models.TurnReport) -> dict[str, str]:
    assert report.plan is not None
    return {v.login: v.user_id for v in report.plan.viewers}


async def test_a_viewer_scrolled_out_of_history_is_planned_when_named(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings(bot_name="Mnemo", memory={"history_cap": HISTORY_CAP})
    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        reports.append(report)

    async with services_module.lifespan(settings, no_llm=True, background_worker=False) as svc:
        replay = session.Replay(svc, deliver, commands=svc.commands, sync_consolidation=True)
        await replay.feed(chat(1, "1002", "bob", "I live in Turin"))
        await replay.feed(chat(2, "1004", "caroline_k", "I research pottery", name="Caroline"))
        for event in filler(3):
            await replay.feed(event)
        await replay.feed(chat(20, "1001", "alice", "@Mnemo where does @bob live?"))
        await replay.feed(chat(21, "1001", "alice", "@Mnemo what did Caroline research?"))
        await replay.finish()
        shown = await svc.history.recent("s1", HISTORY_CAP)
    assert not any(item.login in {"bob", "caroline_k"} for item in shown)  # scrolled out
    by_text = {r.message_ids[0]: r for r in reports if r.message_ids}
    assert viewers_of(by_text["m20"]) == {"alice": "1001", "bob": "1002"}
    assert viewers_of(by_text["m21"]) == {"alice": "1001", "caroline_k": "1004"}
    assert by_text["m20"].plan is not None
    bob_recall = [s for s in by_text["m20"].plan.sources if s.key == "recall:bob"]
    assert [s.user_id for s in bob_recall] == ["1002"]
    # Bob's own statement, from Bob's own space, attributed to Bob
    bobs = [item for item in by_text["m20"].recall if item.viewer == "bob"]
    assert bobs and all(item.origin_message_ids == ("m1",) for item in bobs)


async def test_viewers_seen_in_an_earlier_run_are_known_at_start(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings(bot_name="Mnemo", memory={"history_cap": HISTORY_CAP})
    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        reports.append(report)

    async with services_module.lifespan(settings, no_llm=True, background_worker=False) as svc:
        replay = session.Replay(svc, deliver, commands=svc.commands, sync_consolidation=True)
        await replay.feed(chat(1, "1004", "caroline_k", "I research pottery", name="Caroline"))
        for event in filler(2):
            await replay.feed(event)
        await replay.finish()
    reports.clear()
    async with services_module.lifespan(settings, no_llm=True, background_worker=False) as svc:
        assert svc.viewers is not None
        assert svc.viewers.lookup("caroline") == ("caroline_k", "1004")
        replay = session.Replay(svc, deliver, commands=svc.commands, sync_consolidation=True)
        await replay.feed(chat(30, "1001", "alice", "@Mnemo what did Caroline research?"))
        await replay.finish()
    [report] = reports
    assert viewers_of(report) == {"alice": "1001", "caroline_k": "1004"}


def said_in(stream: str, n: int, at: datetime, text: str) -> models.ChatEvent:
    return models.ChatEvent(
        id=f"{stream}-m{n}", stream=stream, user_id="1001", login="alice", text=text, ts=at
    )


async def replayed(
    settings: Any, events: Sequence[models.ChatEvent], check: Callable[[Any], None] | None = None
) -> list[models.TurnReport]:
    """The reports of one run of the bot over ``events`` (``check``: called on its services first)."""
    reports: list[models.TurnReport] = []

    async def deliver(report: models.TurnReport) -> None:
        reports.append(report)

    async with services_module.lifespan(settings, no_llm=True, background_worker=False) as svc:
        if check is not None:
            check(svc)
        replay = session.Replay(svc, deliver, commands=svc.commands, sync_consolidation=True)
        for event in events:
            await replay.feed(event)
        await replay.finish()
    return reports


async def test_last_stream_is_the_stream_before_this_one_after_a_restart(
    make_settings: SettingsFactory,
) -> None:
    """The stream calendar: loaded from the transcript at start, it tells "last stream" apart."""
    settings = make_settings(bot_name="Mnemo", memory={"history_cap": HISTORY_CAP})
    week_ago, days_ago = T0 - timedelta(days=7), T0 - timedelta(days=3)
    bye = days_ago + timedelta(hours=2)
    await replayed(
        settings,
        [
            said_in("w1", 1, week_ago, "I adopted a kitten called Biscotto"),
            said_in("w2", 1, days_ago, "I adopted a tortoise called Speedy"),
            said_in("w2", 2, bye, "gg everyone, bye"),
        ],
    )

    def knows_the_streams(svc: Any) -> None:
        assert svc.viewers.span("w2") == (days_ago, bye)

    [report] = await replayed(
        settings,
        [said_in("w3", 1, T0, "@Mnemo what did I adopt last stream?")],
        knows_the_streams,
    )
    [recall] = [s for s in report.plan.sources if s.key == "recall:alice"]
    assert recall.window is not None
    assert (recall.window.since, recall.window.until) == (days_ago, bye + timedelta(seconds=1))
    # the windowed recall hit ranks its statement (a profile note, which the hit repeats) first
    assert report.recall[0].text == "I adopted a tortoise called Speedy"
    assert "- [alice · 3 days ago] I adopted a tortoise called Speedy" in report.prompt.preview
