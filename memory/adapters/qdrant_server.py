"""A Qdrant server through qdrant-client, spoken to in ``qdrant_models``: the only qdrant-client user
besides the migration from local mode.

``ServerClient`` wraps an ``AsyncQdrantClient`` (a server's, or local mode's: the tests' stand-in
for a server). Each call's arguments go to qdrant-client's models of the same names
(``qm.<Name>(**fields)``, ``None`` fields left to qdrant-client's defaults), its results come back
as ``qdrant_models``' (the fields those have; a result they do not name, such as a server's
collection configuration, is returned as qdrant-client's: read by attribute the same way), and its
errors as ``qdrant_models.UnexpectedResponse`` / ``Unreachable``. Imported only when a server or
the stand-in is used (``qdrant_collections.make_client``), so the embedded default's start-up does
not import qdrant-client.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Any

import httpx
import pydantic
from qdrant_client import AsyncQdrantClient
from qdrant_client.http import exceptions as qdrant_exceptions
from qdrant_client.http import models as qm  # the REST models (QueryResponse is not fastembed's)

from memory.adapters import qdrant_models

__all__ = ["AsyncQdrantClient", "ServerClient", "ours", "theirs"]


def theirs(value: Any) -> Any:
    """A ``qdrant_models`` value as qdrant-client's (recursively)."""
    if isinstance(value, list | tuple):
        return type(value)(theirs(v) for v in value)
    if isinstance(value, dict):
        return {k: theirs(v) for k, v in value.items()}
    if isinstance(value, enum.Enum) and type(value).__module__ == qdrant_models.__name__:
        return getattr(qm, type(value).__name__)(value.value)
    if dataclasses.is_dataclass(value) and type(value).__module__ == qdrant_models.__name__:
        fields = {
            f.name.rstrip("_"): theirs(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if getattr(value, f.name) is not None
        }
        return getattr(qm, type(value).__name__)(**fields)
    return value


@functools.cache
def _fields(name: str) -> tuple[str, ...] | None:
    model = getattr(qdrant_models, name, None)
    if model is None or not dataclasses.is_dataclass(model):
        return None
    return tuple(f.name for f in dataclasses.fields(model))


def ours(value: Any) -> Any:
    """qdrant-client's result as ``qdrant_models``' (recursively, where those name the model)."""
    if isinstance(value, list | tuple):
        return type(value)(ours(v) for v in value)
    if isinstance(value, pydantic.BaseModel):
        name = type(value).__name__
        fields = _fields(name)
        if fields is None:
            return value
        model = getattr(qdrant_models, name)
        return model(**{f: ours(getattr(value, f, None)) for f in fields})
    if isinstance(value, dict):
        return {k: ours(v) for k, v in value.items()}
    return value


class ServerClient:
    """The client API the adapters call (``collection_exists``, ``upsert``, ``query_points``, …),
    on an ``AsyncQdrantClient``."""

    def __init__(self, client: AsyncQdrantClient) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            try:
                found = await method(*theirs(args), **theirs(kwargs))
            except qdrant_exceptions.UnexpectedResponse as exc:
                raise qdrant_models.UnexpectedResponse(exc.status_code, str(exc)) from exc
            except (qdrant_exceptions.ResponseHandlingException, httpx.TransportError) as exc:
                raise qdrant_models.Unreachable(str(exc)) from exc
            return ours(found)

        return call


def make(**kwargs: Any) -> ServerClient:
    """A ``ServerClient`` on ``AsyncQdrantClient(**kwargs)``."""
    return ServerClient(AsyncQdrantClient(**kwargs))
