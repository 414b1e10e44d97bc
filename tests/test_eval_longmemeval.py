"""LongMemEval in the evaluation: the loader on a small fixture of the same layout
(``tests/data/longmemeval_fixture.json``), the 500-character split, every metric on hand-computed
cases, the scripted replies, the peers, and the CLI run on the fixture kept at another path."""

from __future__ import annotations

import dataclasses
import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory import models
from memory.eval import longmemeval, longmemeval_run, metrics
from memory.spaces import embedders
from tests import cli

FIXTURE = Path(__file__).resolve().parent / "data" / "longmemeval_fixture.json"


@pytest.fixture(scope="module")
def channels() -> dict[str, longmemeval.Channel]:
    return {c.question_id: c for c in longmemeval.load(Path("unused"), path=FIXTURE)}


def test_split_keeps_every_word_in_parts_of_at_most_500_characters() -> None:
    words = [f"word{i}" for i in range(300)]
    parts = longmemeval.split(" ".join(words))
    assert len(parts) > 1 and all(len(p) <= 500 for p in parts)
    assert " ".join(parts).split() == words  # cut on word boundaries only
    assert longmemeval.split("a" * 500) == ["a" * 500]
    assert longmemeval.split("a" * 1200) == ["a" * 500, "a" * 500, "a" * 200]  # a long word is cut
    assert longmemeval.split("line one\n\nline   two") == ["line one line two"]
    assert longmemeval.split("  ") == []


def test_loader_leaves_out_abstention_and_keeps_the_file_s_order(
    channels: dict[str, longmemeval.Channel],
) -> None:
    assert list(channels) == ["fx_ku", "fx_ssa", "fx_ssu"]
    path = Path("unused")
    assert [c.question_id for c in longmemeval.load(path, path=FIXTURE, first=1)] == ["fx_ku"]
    only = longmemeval.load(path, path=FIXTURE, types=["single-session-user"])
    assert [c.question_id for c in only] == ["fx_ssu"]
    assert longmemeval.parse_date("2023/05/21 (Sun) 19:50") == datetime(
        2023, 5, 21, 19, 50, tzinfo=UTC
    )


def test_a_haystack_is_one_channel_of_one_stream_per_session_in_time_order(
    channels: dict[str, longmemeval.Channel],
) -> None:
    ku = channels["fx_ku"]
    # the file lists ku_new first; the replay sorts the sessions by date
    assert ku.streams == ["lme0-s0", "lme0-s1", "lme0-s2"]
    assert [ku.session_of[f"{s}-t0"] for s in ku.streams] == ["ku_old", "filler_1", "ku_new"]
    assert [e.ts for e in ku.events] == sorted(e.ts for e in ku.events)
    assert ku.events[0].ts == datetime(2023, 5, 1, 10, 0, tzinfo=UTC)
    assert {e.user_id for e in ku.events} == {ku.user_id} != {channels["fx_ssu"].user_id}
    assert ku.asked.stream == "lme0-q" and ku.asked.user_id == ku.user_id
    assert ku.asked.text == "@Mnemo Which city do I live in now?"
    assert ku.asked.ts == datetime(2023, 6, 10, 20, 0, tzinfo=UTC)
    ssa = channels["fx_ssa"]  # two sessions at the same minute follow one another
    assert ssa.events[1].ts > ssa.events[0].ts + timedelta(minutes=1)


def test_assistant_turns_are_the_bot_s_replies_and_long_messages_are_split(
    channels: dict[str, longmemeval.Channel],
) -> None:
    ku = channels["fx_ku"]
    assert [e.id for e in ku.events] == [
        "lme0-s0-t0-p0", "lme0-s1-t0-p0", "lme0-s1-t2-p0", "lme0-s2-t0-p0", "lme0-s2-t0-p1",
    ]  # fmt: skip
    assert all(len(e.text) <= 500 for e in ku.events)
    assert "I moved to Turin" in ku.events[-1].text  # the evidence sits in the second part
    assert [m for m, _ in ku.replies] == [
        "lme0-s0-t0-p0", "lme0-s1-t0-p0", "lme0-s1-t2-p0", "lme0-s2-t0-p1",
    ]  # fmt: skip
    assert ku.replies[1][1].startswith("Here is a simple recipe")
    assert ku.turn_of["lme0-s1-t1-p1"] == "lme0-s1-t1"  # a long reply has parts too
    assert not ku.user_turns["lme0-s1-t1"]
    ssa = channels["fx_ssa"]
    # the session the bot opens has no turn to reply to; a user turn may go unanswered
    assert [m for m, _ in ssa.replies] == ["lme1-s0-t0-p0", "lme1-s1-t1-p0", "lme1-s1-t4-p0"]
    assert "Welcome back" not in " ".join(r for _, r in ssa.replies)
    assert "The Expanse" in ssa.replies[1][1]
    assert all("Expanse" not in e.text for e in ssa.events)  # the bot's words are no chat


def test_evidence_turns_carry_their_session_date_and_parts(
    channels: dict[str, longmemeval.Channel],
) -> None:
    ku = channels["fx_ku"]
    assert [(e.id, e.role, e.session_id, e.date.month) for e in ku.evidence] == [
        ("lme0-s0-t0", "user", "ku_old", 5),
        ("lme0-s2-t0", "user", "ku_new", 6),
    ]
    assert ku.evidence[1].parts == ("lme0-s2-t0-p0", "lme0-s2-t0-p1")
    assert ku.answer_session_ids == {"ku_old", "ku_new"}
    (said,) = channels["fx_ssa"].evidence
    assert (said.id, said.role, said.parts) == ("lme1-s1-t2", "assistant", ("lme1-s1-t2-p0",))


def test_recall_any_and_all_at_k() -> None:
    ranking = [{"a"}, {"x"}, {"b", "c"}, {"d"}]
    assert metrics.recall_any_at_k(ranking, {"a", "b"}, 1) == 1.0
    assert metrics.recall_all_at_k(ranking, {"a", "b"}, 1) == 0.0
    assert metrics.recall_all_at_k(ranking, {"a", "b"}, 3) == 1.0
    assert metrics.recall_any_at_k(ranking, {"d"}, 3) == 0.0
    assert metrics.recall_any_at_k(ranking, {"d"}, 5) == 1.0
    assert metrics.recall_all_at_k(ranking, (), 5) is None
    assert metrics.recall_any_at_k([], {"a"}, 5) == 0.0


def test_freshness_at_5() -> None:
    old, new = datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC)
    dates = {"a": old, "b": new}
    assert metrics.freshness_at_k([{"b"}, {"a"}], dates, 5) == 1.0
    assert metrics.freshness_at_k([{"x"}, {"b"}], dates, 5) == 1.0  # the older one not shown
    assert metrics.freshness_at_k([{"a"}, {"b"}], dates, 5) == 0.0  # the older one first
    assert metrics.freshness_at_k([{"a", "b"}], dates, 5) == 0.0  # one item: not above it
    assert metrics.freshness_at_k([{"x"}] * 5 + [{"b"}], dates, 5) == 0.0  # not in the first 5
    assert metrics.freshness_at_k([{"x"}], dates, 5) == 0.0
    # two newest turns of one session: either one first is fresh
    assert metrics.freshness_at_k([{"c"}, {"a"}], {**dates, "c": new}, 5) == 1.0
    assert metrics.freshness_at_k([{"x"}, {"a"}], {"a": old}, 5) == 1.0  # one date only
    assert metrics.freshness_at_k([{"a"}], {}, 5) is None


def _report(*origins: tuple[str, ...]) -> models.TurnReport:
    items = [
        models.RecallItem(source="recall", space="viewer-x", viewer="x", memory_id=f"m{i}",
                          text="…", origin_message_ids=ids)
        for i, ids in enumerate(origins)
    ]  # fmt: skip
    return models.TurnReport(turn_id="t", stream="lme0-q", message_ids=["lme0-q"], recall=items)


def test_items_count_for_the_turns_of_their_parts_and_their_sessions(
    channels: dict[str, longmemeval.Channel],
) -> None:
    ku = channels["fx_ku"]
    # the second part of the newer statement, a filler turn, the older statement, the question
    turn = _report(("lme0-s2-t0-p1",), ("lme0-s1-t0-p0",), ("lme0-s0-t0-p0",), ("lme0-q",))
    ranking = longmemeval_run.system_ranking(ku, turn)
    assert ranking == [{"lme0-s2-t0"}, {"lme0-s1-t0"}, {"lme0-s0-t0"}, frozenset()]
    scores = longmemeval_run.question_scores(ku, ranking)
    assert scores["turn_any@5"] == scores["turn_all@5"] == scores["session_all@5"] == 1.0
    assert scores["freshness@5"] == 1.0
    stale = longmemeval_run.question_scores(ku, list(reversed(ranking)))
    assert stale["turn_all@5"] == 1.0 and stale["freshness@5"] == 0.0
    one = longmemeval_run.question_scores(ku, [frozenset({"lme0-s2-t0"})])
    assert (one["turn_any@5"], one["turn_all@5"], one["session_all@5"]) == (1.0, 0.0, 0.0)
    assert one["recall@5"] == 0.5
    # session-level: the first k sessions, each once, in the order their items come
    two = [frozenset({"lme0-s1-t0"}), frozenset({"lme0-s1-t2"}), frozenset({"lme0-s0-t0"})]
    assert longmemeval_run.session_ranking(ku, two) == [{"filler_1"}, {"ku_old"}]
    ssu = longmemeval_run.question_scores(channels["fx_ssu"], [frozenset({"lme3-s0-t0"})])
    assert "freshness@5" not in ssu and ssu["turn_all@5"] == 1.0


def test_scores_by_question_type(channels: dict[str, longmemeval.Channel]) -> None:
    rankings = {
        "fx_ku": [frozenset({"lme0-s2-t0"}), frozenset({"lme0-s0-t0"})],
        "fx_ssa": [frozenset({"lme1-s0-t0"})],
        "fx_ssu": [frozenset({"lme3-s0-t0"})],
    }
    result = longmemeval_run.score(list(channels.values()), rankings, config="x")
    assert result.metrics["turn_any@5"] == pytest.approx(2 / 3)
    assert result.metrics["freshness@5"] == 1.0
    by_type = result.metrics["by_type"]
    assert by_type["single-session-assistant"]["turn_any@5"] == 0.0
    assert by_type["knowledge-update"]["questions"] == 1
    table = longmemeval_run.type_table([result])
    assert "| x " in table and "knowledge-update" in table and "fresh@5" in table


def test_the_halves_split_the_questions_by_a_stable_hash_of_their_id() -> None:
    path = Path("unused")
    # pinned: a change of the hash would move questions between the tuned and the reported half
    assert [longmemeval.half_of(q) for q in ("fx_ku", "fx_miso_abs", "gpt4_2655b836")] == [
        "report",
        "tune",
        "report",
    ]
    tune = longmemeval.load(path, path=FIXTURE, half="tune")
    report = longmemeval.load(path, path=FIXTURE, half="report")
    assert tune == [] and [c.question_id for c in report] == ["fx_ku", "fx_ssa", "fx_ssu"]


def test_scores_per_half_and_what_the_prompts_carry(
    channels: dict[str, longmemeval.Channel],
) -> None:
    rankings = {
        "fx_ku": [frozenset({"lme0-s2-t0"}), frozenset({"lme0-s0-t0"}), frozenset({"lme0-s1-t1"})],
        "fx_ssa": [frozenset({"lme1-s0-t0"})],
        "fx_ssu": [frozenset({"lme3-s0-t0"})],
    }
    texts = {qid: ["four words of text"] * len(r) for qid, r in rankings.items()}
    found = list(channels.values())
    full = longmemeval_run.score(found, rankings, config="full", texts=texts)
    m = full.metrics
    assert m["items_per_prompt"] == pytest.approx(5 / 3)
    assert m["tokens_per_prompt"] == pytest.approx(20 / 3)
    irrelevant = m["irrelevant_share"]
    assert irrelevant["total"] == 5 and 0 < irrelevant["hits"] < 5
    assert m["by_half"]["report"]["questions"] == 3 and m["by_half"]["tune"]["questions"] == 0
    assert m["by_half"]["report"]["turn_any@5"] == m["turn_any@5"]
    assert m["precision@5"] is not None
    bm25 = longmemeval_run.score(
        found, {q: r[:1] for q, r in rankings.items()}, config="bm25_all_turns"
    )
    table = longmemeval_run.half_table([full, bm25])
    assert "| whole " in table and "| report " in table and "all@5 - bm25_all_turns" in table
    assert "| tune " not in table  # a half without questions has no row


async def test_scripted_replies_answer_the_turn_whose_message_holds_their_key() -> None:
    model = longmemeval_run.ScriptedReplies([("first message", "reply 1"), ("second", "reply 2")])

    def asked(text: str) -> list[models.PromptMessage]:
        return [models.PromptMessage(role=models.Role.SYSTEM, content="system"),
                models.PromptMessage(role=models.Role.USER, content=f"viewer: {text}")]  # fmt: skip

    assert (await model.chat(asked("unrelated"))).content == ""  # nothing recorded: no words
    assert (await model.chat(asked("second"))).content == "reply 2"  # the first never asked
    assert (model.given, model.unmatched, model.left) == (1, 1, 0)


async def test_peers_rank_whole_turns_of_the_haystack(
    channels: dict[str, longmemeval.Channel],
) -> None:
    embedder = embedders.OfflineHashEmbedder()
    found, skipped = await longmemeval_run.peer_rankings(list(channels.values()), embedder)
    assert skipped == {}
    ku = channels["fx_ku"]
    for name in longmemeval_run.PEERS:
        assert found[name]["fx_ku"] and all(ids <= set(ku.texts) for ids in found[name]["fx_ku"])
    user_only = {t for ids in found[longmemeval_run.BM25_USER]["fx_ku"] for t in ids}
    assert all(ku.user_turns[t] for t in user_only)
    assert found[longmemeval_run.BM25_ALL]["fx_ssu"][0] == {"lme3-s0-t0"}  # "bake … living"


def test_the_cli_evaluates_a_file_of_the_same_layout_at_another_path(tmp_path: Path) -> None:
    data_dir = tmp_path / "elsewhere"
    (data_dir / "longmemeval").mkdir(parents=True)
    (data_dir / longmemeval.RELATIVE_PATH).write_bytes(gzip.compress(FIXTURE.read_bytes()))
    out = tmp_path / "results.json"
    args = ("memory.eval", "quality", "--sources", "longmemeval", "--data-dir", str(data_dir))
    result = cli.run(*args, "--json", str(out), env={}, cwd=cli.ROOT, timeout=300)
    assert result.code == 0, result.err
    assert "LongMemEval per question type" in result.out
    assert "knowledge-update" in result.out and "bm25_all_turns" in result.out
    assert "LongMemEval per half" in result.out
    rows = {r["config"]: r["metrics"] for r in json.loads(out.read_text())["results"]}
    assert set(rows) == {"full", *longmemeval_run.PEERS}
    full = rows["full"]
    assert full["questions"] == 3 and full["replies_given"] == full["replies"] == 9
    assert full["misattribution"]["hits"] == 0  # a bot reply is never a viewer's memory
    assert full["evidence_kept"]["total"] == 3  # the user's evidence turns (not the bot's)
    assert full["per_question"]["fx_ku"]["turn_any@10"] == 1.0


def test_the_cli_refuses_an_unknown_question_type(tmp_path: Path) -> None:
    args = ("memory.eval", "quality", "--sources", "longmemeval", "--longmemeval-types", "nope")
    result = cli.run(*args, "--data-dir", str(tmp_path), env={}, cwd=cli.ROOT)
    assert result.code == 2 and "unknown LongMemEval type" in result.err


def test_locomo_s_temporal_category_is_reported_on_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memory.eval import __main__ as eval_cli
    from memory.eval import harness

    curves: dict[str, dict[int, float | None]] = {
        "cat2": {1: 0.25, 5: 0.5, 10: 0.75},
        "cat4": {1: 0.5, 5: 0.75, 10: 1.0},
    }
    result = harness.Result(case="locomo", config="full", metrics={}, latencies_ms=[],
                            recall_curve={}, recall_by_kind=curves)  # fmt: skip
    eval_cli.print_breakdowns([result])
    lines = capsys.readouterr().out.splitlines()
    assert any("cat2 (temporal)" in line and "0.500" in line for line in lines)
    assert any("cat4 (single-hop)" in line for line in lines)


def test_an_episode_covers_the_assistant_turns_of_the_reply_it_shows(
    channels: dict[str, longmemeval.Channel],
) -> None:
    ssa = channels["fx_ssa"]
    assert ssa.reply_turns["lme1-s1-t1-p0"] == ("lme1-s1-t2",)

    def episode(text: str, reply_at: int | None) -> models.RecallItem:
        return models.RecallItem(source="earlier", space="stream-lme1-s1", viewer=None,
                                 memory_id="e", text=text, reply_at=reply_at,
                                 origin_message_ids=("lme1-s1-t1-p0",))  # fmt: skip

    shown = episode("lmeviewer1: any series?\nTry The Expanse", 24)
    hidden = episode("lmeviewer1: any series?", None)  # an episode stored without the reply
    erased = dataclasses.replace(shown, text="[erased]")  # a report after erasure
    turn = models.TurnReport(turn_id="t", stream="lme1-q", message_ids=["lme1-q"],
                             recall=[shown, hidden, erased])  # fmt: skip
    ranking = longmemeval_run.system_ranking(ssa, turn)
    assert ranking == [{"lme1-s1-t1", "lme1-s1-t2"}, {"lme1-s1-t1"}, {"lme1-s1-t1"}]
    assert (shown.said, shown.reply, erased.reply) == (
        "lmeviewer1: any series?",
        "Try The Expanse",
        "",
    )


async def test_a_replay_runs_with_the_settings_it_is_given(
    channels: dict[str, longmemeval.Channel],
) -> None:
    # scripts/calibrate_floor.py replays with the floor off this way; a budget of no tokens is
    # seen in every question's report (the CLI test above recalls the same questions' evidence)
    turns, figures = await longmemeval_run.replay_isolated(
        list(channels.values()), overrides={"memory": {"token_budget": 0}}
    )
    assert set(turns) == set(channels)
    assert figures["replies_given"] == 9
    assert all(turn.recall == [] for turn in turns.values())
