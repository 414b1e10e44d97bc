"""The arguments of the model tools: pydantic models (an edge), their schemas and their parsing.

``tool_schema`` renders a tool in Ollama's ``tools=`` format (JSON schema without pydantic's
titles); ``parse_arguments`` validates a call's arguments, raising ``errors.ToolCallError`` with a
message for the model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Protocol

import pydantic

from memory import errors

Login = Annotated[
    str, pydantic.Field(min_length=1, max_length=40, description="a viewer's Twitch login")
]
Text = Annotated[str, pydantic.Field(min_length=1, max_length=500)]


class ToolArgs(pydantic.BaseModel):
    """The arguments of one tool (unknown keys rejected, text stripped, frozen)."""

    model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)


class AddRequest(ToolArgs):
    viewer: Login = pydantic.Field(description="login of the viewer who asks")
    text: Text = pydantic.Field(description="what the viewer asks for")


class RequestRef(ToolArgs):
    request_id: int = pydantic.Field(ge=1, description="the request number (see list_requests)")


class ListRequests(ToolArgs):
    viewer: Login | None = pydantic.Field(None, description="only this viewer's requests")
    status: Literal["open", "completed", "cancelled", "all"] = "open"


class SetRelationship(ToolArgs):
    viewer_a: Login
    viewer_b: Login
    kind: str = pydantic.Field(
        min_length=1, max_length=60, description="e.g. siblings, friends, partners, rivals"
    )
    since: str | None = pydantic.Field(None, max_length=60, description="since when, as said")


class ViewerPair(ToolArgs):
    viewer_a: Login
    viewer_b: Login


class OneViewer(ToolArgs):
    viewer: Login


class AddNote(ToolArgs):
    text: Text
    about: Login | None = pydantic.Field(None, description="the viewer the note is about")
    expires_in_minutes: int | None = pydantic.Field(
        None, ge=1, le=525_600, description="forget the note after this many minutes"
    )


class AddInsideJoke(ToolArgs):
    text: Text = pydantic.Field(description="the joke, in a few words")
    viewers: list[Login] = pydantic.Field(
        min_length=1, max_length=10, description="logins of the viewers who share it"
    )


class ListState(ToolArgs):
    viewer: Login | None = pydantic.Field(None, description="only what concerns this viewer")


_SCHEMA_KEYS = ("type", "description", "enum", "items", "minimum", "maximum", "default")


def _simplify(prop: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-schema property without pydantic's titles; ``X | None`` becomes ``X``."""
    merged = dict(prop)
    options = [o for o in prop.get("anyOf", ()) if o.get("type") != "null"]
    if len(options) == 1:
        merged = {**options[0], **{k: v for k, v in prop.items() if k != "anyOf"}}
    out = {k: merged[k] for k in _SCHEMA_KEYS if k in merged and merged[k] is not None}
    if "items" in out:
        out["items"] = _simplify(out["items"])
    return out


class ToolSpec(Protocol):
    """What the schema and the validation need of a tool (``tool_handlers.Tool``)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def arguments(self) -> type[ToolArgs]: ...


def tool_schema(tool: ToolSpec) -> dict[str, Any]:
    """One tool in Ollama's ``tools=`` format."""
    schema = tool.arguments.model_json_schema()
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": {
                "type": "object",
                "properties": {k: _simplify(v) for k, v in schema["properties"].items()},
                "required": list(schema.get("required", [])),
            },
        },
    }


def parse_arguments(tool: ToolSpec, raw: Any) -> ToolArgs:
    """Validate a call's arguments (a mapping, or a JSON object as text)."""
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw or "{}")
        except ValueError as exc:
            raise errors.ToolCallError(f"arguments are not valid JSON: {exc}") from exc
    if isinstance(raw, Mapping):
        raw = dict(raw)
    if not isinstance(raw, dict):
        raise errors.ToolCallError("arguments must be a JSON object")
    try:
        return tool.arguments.model_validate(raw)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        raise errors.ToolCallError(f"invalid arguments for {tool.name}: {problems}") from exc
