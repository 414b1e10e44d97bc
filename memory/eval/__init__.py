"""Evaluation of livememory: data sources with gold annotations, metrics, harness, ablations,
benchmarks and the report (``python -m memory.eval``).

- ``synthetic``: a seeded multi-viewer stream generator with gold annotations;
- ``locomo`` / ``irc``: loaders of the public data in ``../shared/data`` (never copied into the repo);
- ``regulars``: a channel of regulars and questions in other words than their answers
  (``tests/data/regulars_*``);
- ``embed_cache``: the embedder's vectors kept across evaluation runs;
- ``metrics``: pure metric functions;
- ``harness``: replays a stream through the system and scores it;
- ``naive``: the naive reference design (one shared space, full history) used as a baseline;
- ``ablations``, ``bench``, ``report``: the tables, figures and ``docs/evaluation.md``.
"""

from __future__ import annotations

from pathlib import Path

#: the repository root (``memory/eval/__init__.py`` → ``<repo>``)
REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def default_data_dir() -> Path:
    """``<repo>/../shared/data`` (CI has the shared data folder beside the checkout)."""
    return REPO_ROOT.parent / "shared" / "data"
