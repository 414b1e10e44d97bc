"""``qdrant_models`` (the adapters' vocabulary) and ``qdrant_server`` (it, on qdrant-client)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from qdrant_client.http import models as theirs_models

from memory import errors
from memory.adapters import qdrant_collections, qdrant_server
from memory.adapters import qdrant_models as qm
from memory.eval import REPO_ROOT
from tests import cli, servers

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

_NAMES = [
    name
    for name, value in vars(qm).items()
    if isinstance(value, type)
    and value.__module__ == qm.__name__
    and (dataclasses.is_dataclass(value) or issubclass(value, enum.Enum))
]


@pytest.mark.parametrize("name", _NAMES)
def test_each_model_is_named_and_shaped_as_qdrant_clients(name: str) -> None:
    """A qdrant-client release that renames a model, a field or an enum value fails here, not in
    a server's answer."""
    ours, theirs = getattr(qm, name), getattr(theirs_models, name)
    if issubclass(ours, enum.Enum):
        assert {m.value for m in ours} <= {m.value for m in theirs}
        return
    known = {f.alias or key for key, f in theirs.model_fields.items()} | set(theirs.model_fields)
    assert {f.name.rstrip("_") for f in dataclasses.fields(ours)} <= known


def test_models_go_to_qdrant_client_and_back_unchanged() -> None:
    where = qm.Filter(
        must=[
            qm.FieldCondition(key="space", match=qm.MatchValue(value="viewer:1")),
            qm.FieldCondition(key="kind", match=qm.MatchExcept(except_=["lore"])),
        ],
        must_not=[qm.IsEmptyCondition(is_empty=qm.PayloadField(key="text"))],
    )
    query = qm.Prefetch(
        query=qm.SparseVector(indices=[3, 9], values=[0.5, 1.0]), using="lexical", filter=where
    )
    sent = qdrant_server.theirs(
        {"prefetch": [query], "query": qm.FusionQuery(fusion=qm.Fusion.RRF)}
    )
    assert isinstance(sent["prefetch"][0], theirs_models.Prefetch)
    assert sent["prefetch"][0].filter == theirs_models.Filter(
        must=[
            theirs_models.FieldCondition(
                key="space", match=theirs_models.MatchValue(value="viewer:1")
            ),
            theirs_models.FieldCondition(
                key="kind", match=theirs_models.MatchExcept(**{"except": ["lore"]})
            ),
        ],
        must_not=[theirs_models.IsEmptyCondition(is_empty=theirs_models.PayloadField(key="text"))],
    )
    assert sent["query"].fusion is theirs_models.Fusion.RRF
    found = theirs_models.ScoredPoint(
        id="a", version=2, score=0.5, payload={"text": "hi"},
        vector={"lexical": theirs_models.SparseVector(indices=[1], values=[2.0])},
    )  # fmt: skip
    back = qdrant_server.ours(([found], None))
    assert back == (
        [
            qm.ScoredPoint(
                id="a", version=2, score=0.5, payload={"text": "hi"},
                vector={"lexical": qm.SparseVector(indices=[1], values=[2.0])},
            )
        ],
        None,
    )  # fmt: skip


_EMBEDDED = """
import asyncio, sys, uuid
from datetime import UTC, datetime
from config.settings import Settings
from memory import identity
from memory.adapters import qdrant
from memory.spaces import embedders, records

async def main():
    settings = Settings(data_dir=sys.argv[1])
    async with await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder()) as spaces:
        alice = identity.personal_key("1")
        said = records.MemoryRecord(
            id=str(uuid.uuid4()), space=alice, kind=records.MemoryKind.PERSONAL,
            text="I live in Rome", turn_id="t1", created_at=datetime.now(UTC),
        )
        await spaces.upsert([said])
        assert (await spaces.search(alice, "where do I live", limit=1))[0].record.text
    print(" ".join(m for m in ("qdrant_client", "numpy", "httpx", "grpc") if m in sys.modules))

asyncio.run(main())
"""


def test_the_embedded_store_never_imports_qdrant_client(tmp_path: object) -> None:
    """Its import (REST models, httpx, grpc, numpy) was 0.65-0.9 s of every start-up."""
    done = subprocess.run(
        [sys.executable, "-c", _EMBEDDED, str(tmp_path)],
        cwd=REPO_ROOT, env=cli.environment(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


@contextlib.asynccontextmanager
async def _answer_with(status: int) -> AsyncIterator[str]:
    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = b'{"status": {"error": "boom"}}'
        writer.write(
            b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (status, len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(reply, "127.0.0.1", servers.free_port())
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


@pytest.mark.parametrize(
    ("status", "raised", "said"),
    [
        (503, errors.StoreUnavailable, "Qdrant error"),
        (400, errors.MemoryServiceError, "Qdrant refused"),
        (404, qdrant_collections.CollectionGone, "count"),
    ],
)
async def test_a_servers_error_status_is_translated_at_the_boundary(
    status: int, raised: type[Exception], said: str
) -> None:
    async with _answer_with(status) as url:
        client = qdrant_server.make(url=url, check_compatibility=False)
        try:
            with pytest.raises(qm.UnexpectedResponse) as seen:
                await client.count("lm_manifest")
            assert seen.value.status_code == status
            with pytest.raises(raised, match=said), qdrant_collections.wrap_errors("count"):
                await client.count("lm_manifest")
        finally:
            await client.close()
