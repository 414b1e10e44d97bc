"""Exceptions of the memory package: one root, the docstring is the default message."""

from __future__ import annotations

from typing import Any


class MemoryServiceError(Exception):
    """A livememory memory error."""

    def __init__(self, message: str | None = None, **fields: Any) -> None:
        super().__init__(message or (self.__doc__ or "").strip())
        for name, value in fields.items():
            setattr(self, name, value)


class ConfigurationError(MemoryServiceError):
    """The configuration is invalid."""


class StoreUnavailable(MemoryServiceError):
    """A backing service (Postgres, Redis, Qdrant, Ollama) cannot be reached."""


class StoreClosed(StoreUnavailable):
    """A store's client was closed by this process (it is stopping, a task still ran): the
    service is not down, so it is no outage (``memory.outage.watched``)."""


class ModelUnavailable(StoreUnavailable):
    """The language model server cannot be reached."""


class ModelError(MemoryServiceError):
    """The language model returned an error."""


class TranscriptError(MemoryServiceError):
    """A chat transcript line is malformed."""


class InvalidInput(MemoryServiceError):
    """Input from outside (chat, console, a transcript) is out of its limits."""


class UnknownViewer(MemoryServiceError):
    """No viewer with that login or user id is known."""


class AmbiguousViewer(MemoryServiceError):
    """That login names more than one viewer: name one by user id."""


class UnknownMemory(MemoryServiceError):
    """No memory with that id exists."""


class UnknownTurn(MemoryServiceError):
    """No turn with that id exists."""


class EmbedderMismatch(MemoryServiceError):
    """The collection was made with another embedder."""


class InvalidMemory(MemoryServiceError):
    """A memory space key or record is invalid."""


class JobValidationError(MemoryServiceError):
    """A job's payload is invalid: retrying cannot help."""


class MigrationError(MemoryServiceError):
    """A migration could not be applied."""


class ToolCallError(MemoryServiceError):
    """A model tool call cannot be run (its error goes back to the model)."""


class TranscriptLineError(MemoryServiceError):
    """A line of the chat transcript is malformed."""

    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path, self.line, self.problem = path, line, problem
