from __future__ import annotations

from typing import TYPE_CHECKING

from memory.eval import reducers
from memory.history import transcript_file

if TYPE_CHECKING:
    from pathlib import Path


async def test_summarizing_replay_folds_history_and_counts_model_calls(
    database_url: str, tmp_path: Path
) -> None:
    events = list(transcript_file.read(reducers.EXAMPLE))
    history = {"summarize_target": 10, "summarize_threshold": 5}
    row = await reducers.replay_with(
        "summarizing", events, tmp_path, history=history, database_url=database_url
    )
    assert row.model_calls >= 2  # the tail grew past target + threshold more than once
    assert row.sent_max < row.history_max  # the prompt stays bounded while the history grows
    assert row.turns > 10


def test_the_table_has_a_row_per_reducer() -> None:
    rows = [
        reducers.Row(
            reducer=name,
            turns=3,
            history_mean=2.0,
            history_max=3,
            sent_mean=2.0,
            sent_max=3,
            tokens_mean=10,
            tokens_max=12,
            model_calls=1,
            messages=6,
        )
        for name in reducers.REDUCERS
    ]
    text = reducers.table(rows)
    assert all(f"`{name}`" in text for name in reducers.REDUCERS)
    assert text.count("\n") == len(rows) + 1
