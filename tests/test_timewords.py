"""Time-scoped and past questions: EN + IT time expressions → a window relative to a fixed
chat time; past questions; how the planner puts both on the sources."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory import models
from memory.recall import directory, planner, timewords
from memory.spaces import records
from tests import retrieval_support as support

NOW = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)  # Sunday; its week began on Monday 23 November
START = NOW - timedelta(hours=2)  # this stream's first message
PREVIOUS = records.TimeWindow(
    since=datetime(2026, 11, 26, 19, 0, tzinfo=UTC),
    until=datetime(2026, 11, 26, 22, 0, 1, tzinfo=UTC),
)
WHEN = timewords.When(now=NOW, stream_start=START, previous=PREVIOUS)


def day(d: int, month: int = 11, hour: int = 0) -> datetime:
    return datetime(2026, month, d, hour, tzinfo=UTC)


def span(since: datetime | None, until: datetime | None) -> records.TimeWindow:
    return records.TimeWindow(since=since, until=until)


LAST_WEEK = span(day(16), day(23))
YESTERDAY = span(day(28), day(29))
TWO_WEEKS = span(day(7), day(18))
THREE_DAYS = span(day(25), day(28))
START_OF_STREAM = span(START, START + timedelta(minutes=40))
MORNING = span(day(29), day(29, hour=12))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what did I say last week?", LAST_WEEK),
        ("cosa ti ho detto la settimana scorsa?", LAST_WEEK),
        ("la scorsa settimana di cosa parlavo?", LAST_WEEK),
        ("what did I tell you yesterday?", YESTERDAY),
        ("ieri cosa ho mangiato?", YESTERDAY),
        ("the day before yesterday, what did I do?", span(day(27), day(28))),
        ("cosa ho fatto l'altro ieri?", span(day(27), day(28))),
        ("what did I say last stream?", PREVIOUS),
        ("what did I say in the previous stream?", PREVIOUS),
        ("cosa ho detto l'ultima live?", PREVIOUS),
        ("nell'ultima live cosa ti ho detto?", PREVIOUS),
        ("nella live scorsa di cosa parlavamo?", PREVIOUS),
        ("what did I say at the start of the stream?", START_OF_STREAM),
        ("cosa ho detto all'inizio della live?", START_OF_STREAM),
        ("all'inizio cosa ho detto?", START_OF_STREAM),
        ("what did I bake two weeks ago?", TWO_WEEKS),
        ("cosa ho cucinato due settimane fa?", TWO_WEEKS),
        ("what did I buy 3 days ago?", THREE_DAYS),
        ("cosa ho comprato tre giorni fa?", THREE_DAYS),
        ("what did I eat this morning?", MORNING),
        ("cosa ho mangiato stamattina?", MORNING),
        ("what did I say a week ago?", span(day(14), day(25))),
        ("what did I say a couple of weeks ago?", TWO_WEEKS),
        ("cosa ti ho detto un paio di settimane fa?", TWO_WEEKS),
        ("what did I say 2 hours ago?", span(NOW - timedelta(hours=3), NOW - timedelta(hours=1))),
        ("cosa ho detto un'ora fa?", span(NOW - timedelta(hours=2), NOW)),
        ("what did I say last month?", span(day(1, 10), day(1, 11))),
        ("il mese scorso cosa ho detto?", span(day(1, 10), day(1, 11))),
        ("un mese fa cosa ti ho detto?", span(NOW - timedelta(days=45), NOW - timedelta(days=15))),
        ("what did I do last monday?", span(day(23), day(24))),
        ("cosa ho fatto lunedì scorso?", span(day(23), day(24))),
        ("last friday?", span(day(27), day(28))),
        ("what did I say earlier this stream?", span(START, None)),
        ("what did I say earlier today?", span(day(29), None)),
        ("what should I play today?", None),  # present tense: no window
        ("cosa giochiamo stasera?", None),
        ("cosa fai il weekend?", None),
        ("what did I do last weekend?", span(day(21), day(23))),
        ("cosa ho fatto lo scorso weekend?", span(day(21), day(23))),
        ("which bike did I service the past weekend?", span(day(21), day(23))),
        # a named day: the latest one up to today, a day each side
        ("what airline did I fly with on Valentine's day?", span(day(13, 2), day(16, 2))),
        ("cosa ho fatto a San Valentino?", span(day(13, 2), day(16, 2))),
        (
            "what did I get for Christmas?",
            span(datetime(2025, 12, 24, tzinfo=UTC), datetime(2025, 12, 27, tzinfo=UTC)),
        ),
        ("what did I dress up as for halloween?", span(day(30, 10), day(2))),
        ("how many days ago did I watch the match?", None),  # asks how long ago: no span
        ("what do I play in this stream?", None),
        ("what did I say last year?", span(datetime(2025, 1, 1, tzinfo=UTC), day(1, 1))),
        ("what have I been up to recently?", None),  # vague: no window
        ("where do I live?", None),
        ("cosa ho fatto all'inizio dell'anno?", None),  # a year's start, not the stream's
        ("what did I do at the beginning of my transition?", None),
        ("what did I say at the beginning?", START_OF_STREAM),
    ],
)
def test_time_expression_windows(text: str, expected: records.TimeWindow | None) -> None:
    assert timewords.window(text, WHEN) == expected


def test_last_stream_without_a_calendar_is_everything_before_this_stream() -> None:
    when = timewords.When(now=NOW, stream_start=START)
    assert timewords.window("what did I say last stream?", when) == span(None, START)


@pytest.mark.parametrize(
    ("text", "past"),
    [
        ("where did I live before?", True),
        ("what was my old job?", True),
        ("what did I use to do for work?", True),
        ("prima dove abitavo?", True),
        ("dove abitavo una volta?", True),
        ("che lavoro facevo?", True),
        ("where do I live?", False),
        ("I used to live in Rome", False),  # a statement, not a question
        ("what did I originally want to study?", True),
        # where someone is from: the hometown, asked in the present
        ("where is @bob from originally?", False),
        ("where are you originally from?", False),
        ("where did you live originally?", True),
    ],
)
def test_past_questions(text: str, past: bool) -> None:
    assert timewords.asks_past(text) is past


def ask(login: str, text: str, n: int = 1) -> models.Batch:
    return support.one_batch(support.event(login, text, n))


def recall_of(plan: models.Plan, login: str) -> models.PlannedSource:
    [source] = [s for s in plan.sources if s.kind == "recall" and s.viewer == login]
    return source


def test_planner_scopes_the_askers_recall_and_reports_it() -> None:
    plans = planner.Planner(support.plain_settings())
    batch = ask("alice", "what did I bake two weeks ago?")
    source = recall_of(plans.plan(batch, []), "alice")
    now = batch.closed_at
    assert source.window == timewords.window(
        "two weeks ago?", timewords.When(now=now, stream_start=now)
    )
    assert source.window is not None and source.window.until is not None
    assert source.window.until < now - timedelta(days=10) and not source.past
    reported = plans.plan(batch, []).to_json()["sources"]
    [entry] = [s for s in reported if s["kind"] == "recall"]
    assert entry["window"]["since"].endswith("Z") and entry["past"] is False
    # a statement with a time word scopes nothing: only questions do
    told = recall_of(
        plans.plan(ask("alice", "yesterday I baked a huge chocolate cake"), []), "alice"
    )
    assert (told.window, told.past) == (None, False)


def test_planner_marks_past_questions_on_the_named_viewers_recall() -> None:
    plans = planner.Planner(support.plain_settings())
    mine = recall_of(plans.plan(ask("alice", "where did I live before?"), []), "alice")
    assert mine.past and mine.window is None
    history = [models.HistoryItem.from_event(support.event("alice", "hello all", 0), "t0")]
    batch = ask("bob", "where did @alice live before?", 2)
    theirs = recall_of(plans.plan(batch, history), "alice")
    assert theirs.past
    now = recall_of(plans.plan(ask("alice", "where do I live now?"), []), "alice")
    assert not now.past


@pytest.mark.parametrize(
    "text", ["when did I tell you about my cat?", "when did I say that?", "quando ti ho detto che?"]
)
def test_when_did_i_tell_you_plans_the_askers_own_recall(text: str) -> None:
    plan = planner.Planner(support.plain_settings()).plan(ask("alice", text), [])
    source = recall_of(plan, "alice")
    assert source.user_id == support.IDS["alice"] and source.explicit


def test_last_stream_is_the_previous_stream_the_directory_saw() -> None:
    viewers = directory.ViewerDirectory()
    week_ago = support.T0 - timedelta(days=7)
    for minutes in (0, 90, 180):  # last week's stream: three hours of chat
        viewers.register("1001", "alice", stream="s0", at=week_ago + timedelta(minutes=minutes))
    viewers.register("1002", "bob", stream="s1", at=support.T0)  # this stream
    plans = planner.Planner(support.plain_settings(), directory=viewers, streams=viewers)
    source = recall_of(plans.plan(ask("alice", "what did I say last stream?", 5), []), "alice")
    end = week_ago + timedelta(minutes=180, seconds=1)
    assert source.window == records.TimeWindow(since=week_ago, until=end)
    assert viewers.previous("s0", before=support.T0) is None  # s1 is not before itself


def test_episodic_gets_the_window_only_when_it_reaches_into_this_stream() -> None:
    plans = planner.Planner(support.plain_settings())
    early = plans.plan(ask("alice", "what happened at the start of the stream?"), [])
    [episodic] = [s for s in early.sources if s.kind == "episodic"]
    assert episodic.window is not None
    old = plans.plan(ask("alice", "what did we talk about last week?"), [])
    assert all(s.window is None for s in old.sources if s.kind == "episodic")
