"""``memory.adapters.qdrant_import``: qdrant-client's models built on first use, not at import."""

from __future__ import annotations

import subprocess
import sys

from memory.eval import REPO_ROOT

_CHILD = """
import sys
from memory.adapters import qdrant_import, qdrant_hybrid
from qdrant_client import models as qm
from qdrant_client.http import models as rest

compat = sys.modules["qdrant_client._pydantic_compat"]
assert compat.update_forward_refs is qdrant_import._deferred
where = qm.Filter(must=[qm.FieldCondition(key="tenant", match=qm.MatchValue(value="viewer:1"))])
nested = qm.Prefetch(prefetch=[qm.Prefetch(query=[0.1, 0.2], using="dense", filter=where)])
assert nested.prefetch[0].filter.must[0].match.value == "viewer:1"
answer = rest.QueryResponse.model_validate({"points": [{"id": 1, "version": 0, "score": 0.5}]})
assert answer.points[0].score == 0.5
"""


def test_the_deferred_models_validate_as_the_eagerly_built_ones() -> None:
    # a fresh interpreter: this one imported qdrant_client long ago
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_an_already_imported_client_is_left_alone() -> None:
    import qdrant_client  # noqa: F401

    from memory.adapters import qdrant_import

    assert qdrant_import.install() is False
