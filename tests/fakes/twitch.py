"""A protocol-faithful fake Twitch (Helix + OAuth + EventSub WebSocket) on 127.0.0.1, driven through
the real TwitchIO 3 client (see ``shared/reference/twitchio-3-offline.md`` §2.3).

Routes: ``POST /id/oauth2/token`` (client_credentials and refresh_token, parameters in the query
string), ``GET /id/oauth2/validate`` (``OAuth`` and ``Bearer`` prefixes), ``GET /helix/users``,
``GET /helix/streams``, ``POST /helix/eventsub/subscriptions`` (202), ``POST /helix/chat/messages``
(bodies recorded; scriptable 429 with ``Ratelimit-Reset`` and scriptable ``drop_reason``),
``GET /ws`` (welcome at once, keepalive every few seconds, notifications pushed on demand,
``session_reconnect`` to a new URL with a fresh session id; the old socket keeps delivering until
the new one is welcomed, then the fake closes it, as Twitch does).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes import eventsub

CLIENT_ID = "fake-client-id"
CLIENT_SECRET = "fake-client-secret"
APP_TOKEN = "fake-app-token"
BOT_ID = "1001"
BOT_LOGIN = "memorybot"
OWNER_ID = eventsub.OWNER_ID
OWNER_LOGIN = eventsub.OWNER_LOGIN
USER_TOKEN = "fake-user-token"
REFRESH_TOKEN = "fake-refresh-token"
USER_SCOPES = ["user:read:chat", "user:write:chat", "user:bot"]


@dataclass
class Connection:
    """One EventSub WebSocket connection of the fake."""

    session_id: str
    ws: web.WebSocketResponse
    welcomed: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    #: frames sent to this connection (decoded)
    frames: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Users:
    """``id → (login, display name)`` of the users the fake knows."""

    by_id: dict[str, str] = field(
        default_factory=lambda: {BOT_ID: BOT_LOGIN, OWNER_ID: OWNER_LOGIN}
    )


class FakeTwitch:
    """Start with ``await start()``; ``api_base``, ``id_base`` and ``eventsub_ws`` go into settings."""

    def __init__(self, *, keepalive_seconds: float = 5.0) -> None:
        self.keepalive_seconds = keepalive_seconds
        self.users = Users()
        #: broadcaster id → stream id of the live stream (absent: offline)
        self.live: dict[str, str] = {}
        self.user_tokens: dict[str, dict[str, Any]] = {
            USER_TOKEN: {"user_id": BOT_ID, "login": BOT_LOGIN, "scopes": list(USER_SCOPES)}
        }
        self.refresh_tokens: dict[str, str] = {REFRESH_TOKEN: BOT_ID}
        self.client_secret = CLIENT_SECRET
        #: bodies of ``POST chat/messages`` (every attempt, 429s included) and their Authorization
        self.chat_requests: list[dict[str, Any]] = []
        self.chat_auth: list[str] = []
        #: bodies of the messages Twitch accepted
        self.sent: list[dict[str, Any]] = []
        #: the message id Twitch gave each message of ``sent``
        self.sent_ids: list[str] = []
        self.subscriptions: list[dict[str, Any]] = []
        #: scripted answers for the next chat messages: ("429", reset epoch) or ("drop", code)
        self.chat_script: deque[tuple[str, Any]] = deque()
        self.connections: list[Connection] = []
        self.connected = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.base = ""

    # -- URLs ----------------------------------------------------------------------------------
    @property
    def api_base(self) -> str:
        return f"{self.base}/helix/"

    @property
    def id_base(self) -> str:
        return f"{self.base}/id/"

    @property
    def eventsub_ws(self) -> str:
        return f"{self.base.replace('http://', 'ws://')}/ws"

    # -- scripting -----------------------------------------------------------------------------
    def rate_limit_next(self, reset_epoch: float, times: int = 1) -> None:
        """Answer the next chat message(s) with 429 and ``Ratelimit-Reset: reset_epoch``."""
        self.chat_script.extend([("429", reset_epoch)] * times)

    def drop_next(self, code: str = "msg_duplicate", message: str = "duplicate message") -> None:
        self.chat_script.append(("drop", (code, message)))

    @property
    def current(self) -> Connection:
        """The newest welcomed connection."""
        return [c for c in self.connections if c.welcomed.is_set()][-1]

    async def wait_connections(self, count: int) -> Connection:
        """Wait until ``count`` connections were welcomed; returns the newest."""
        async with self.connected:
            await self.connected.wait_for(
                lambda: sum(c.welcomed.is_set() for c in self.connections) >= count
            )
        return self.current

    async def wait_sent(self, count: int) -> list[dict[str, Any]]:
        """Wait until ``count`` chat messages were accepted; returns them."""
        async with self.connected:
            await self.connected.wait_for(lambda: len(self.sent) >= count)
        return list(self.sent)

    async def wait_subscriptions(self, count: int) -> None:
        async with self.connected:
            await self.connected.wait_for(lambda: len(self.subscriptions) >= count)

    async def push_chat(self, event: dict[str, Any], connection: Connection | None = None) -> None:
        """Send a ``channel.chat.message`` notification (to the newest connection by default)."""
        conn = connection or self.current
        sub = next(
            (
                s
                for s in reversed(self.subscriptions)
                if s["condition"]["broadcaster_user_id"] == event["broadcaster_user_id"]
            ),
            None,
        )
        if sub is None:
            raise AssertionError(f"no subscription for channel {event['broadcaster_user_id']}")
        frame = {
            "metadata": {
                "message_id": str(uuid.uuid4()),
                "message_type": "notification",
                "message_timestamp": eventsub.now_iso(),
                "subscription_type": "channel.chat.message",
                "subscription_version": "1",
            },
            "payload": {
                "subscription": {
                    **sub,
                    "transport": {"method": "websocket", "session_id": conn.session_id},
                },
                "event": event,
            },
        }
        await self._send(conn, frame)

    async def reconnect(self) -> Connection:
        """Send ``session_reconnect`` on the newest connection; returns that (old) connection."""
        old = self.current
        frame = {
            "metadata": self._meta("session_reconnect"),
            "payload": {
                "session": {
                    "id": old.session_id,
                    "status": "reconnecting",
                    "connected_at": eventsub.now_iso(),
                    "keepalive_timeout_seconds": None,
                    "reconnect_url": f"{self.eventsub_ws}?reconnect={uuid.uuid4().hex[:8]}",
                }
            },
        }
        await self._send(old, frame)
        return old

    async def drop_socket(self) -> None:
        """Close the newest connection abruptly (a network drop)."""
        await self.current.ws.close(code=1011, message=b"internal server error")

    # -- server --------------------------------------------------------------------------------
    async def start(self) -> None:
        app = web.Application()
        app.add_routes(
            [
                web.post("/id/oauth2/token", self._token),
                web.get("/id/oauth2/validate", self._validate),
                web.get("/helix/users", self._users),
                web.get("/helix/streams", self._streams),
                web.post("/helix/eventsub/subscriptions", self._create_subscription),
                web.post("/helix/chat/messages", self._chat_message),
                web.get("/ws", self._ws),
                *self.extra_routes(),
            ]
        )
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base = f"http://127.0.0.1:{port}"

    def extra_routes(self) -> list[web.RouteDef]:
        """More endpoints of a subclass (``tests/fakes/twitch_oauth.py``)."""
        return []

    async def stop(self) -> None:
        for conn in self.connections:
            with contextlib.suppress(Exception):
                await conn.ws.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()

    # -- OAuth ---------------------------------------------------------------------------------
    @staticmethod
    def _bearer(request: web.Request) -> str:
        header = request.headers.get("Authorization", "")
        return header.removeprefix("Bearer ").removeprefix("OAuth ").strip()

    async def _token(self, request: web.Request) -> web.Response:
        query = request.query
        if query.get("client_id") != CLIENT_ID or query.get("client_secret") != self.client_secret:
            return web.json_response(
                {"status": 403, "message": "invalid client secret"}, status=403
            )
        grant = query.get("grant_type")
        if grant == "client_credentials":
            return web.json_response(
                {"access_token": APP_TOKEN, "expires_in": 5000000, "token_type": "bearer"}
            )
        if grant == "refresh_token":
            user_id = self.refresh_tokens.get(query.get("refresh_token", ""))
            if user_id is None:
                return web.json_response(
                    {"status": 400, "message": "Invalid refresh token"}, status=400
                )
            token = f"refreshed-{uuid.uuid4().hex[:8]}"
            self.user_tokens[token] = {
                "user_id": user_id,
                "login": self.users.by_id[user_id],
                "scopes": list(USER_SCOPES),
            }
            return web.json_response(
                {
                    "access_token": token,
                    "refresh_token": query["refresh_token"],
                    "expires_in": 14000,
                    "scope": list(USER_SCOPES),
                    "token_type": "bearer",
                }
            )
        return web.json_response({"status": 400, "message": "unsupported grant type"}, status=400)

    async def _validate(self, request: web.Request) -> web.Response:
        token = self._bearer(request)
        if token == APP_TOKEN:
            return web.json_response({"client_id": CLIENT_ID, "scopes": [], "expires_in": 5000000})
        user = self.user_tokens.get(token)
        if user is None:
            # not the "invalid access token" message: TwitchIO would retry that without a limit
            return web.json_response({"status": 401, "message": "token is not valid"}, status=401)
        return web.json_response(
            {
                "client_id": CLIENT_ID,
                "login": user["login"],
                "user_id": user["user_id"],
                "scopes": user["scopes"],
                "expires_in": 14000,
            }
        )

    # -- Helix ---------------------------------------------------------------------------------
    def _user(self, user_id: str) -> dict[str, Any]:
        login = self.users.by_id[user_id]
        return {
            "id": user_id,
            "login": login,
            "display_name": login.capitalize(),
            "type": "",
            "broadcaster_type": "",
            "description": "",
            "profile_image_url": "https://example.invalid/p.png",
            "offline_image_url": "",
            "created_at": "2020-01-01T00:00:00Z",
        }

    async def _users(self, request: web.Request) -> web.Response:
        ids = request.query.getall("id", [])
        logins = request.query.getall("login", [])
        by_login = {login: uid for uid, login in self.users.by_id.items()}
        found = [uid for uid in ids if uid in self.users.by_id]
        found += [by_login[login.lower()] for login in logins if login.lower() in by_login]
        return web.json_response({"data": [self._user(uid) for uid in found]})

    async def _streams(self, request: web.Request) -> web.Response:
        ids = request.query.getall("user_id", [])
        data = [
            {
                "id": self.live[uid],
                "user_id": uid,
                "user_login": self.users.by_id[uid],
                "user_name": self.users.by_id[uid].capitalize(),
                "game_id": "509658",
                "game_name": "Just Chatting",
                "type": "live",
                "title": "live",
                "tags": [],
                "viewer_count": 42,
                "started_at": "2026-11-29T19:00:00Z",
                "language": "en",
                "thumbnail_url": "https://example.invalid/{width}x{height}.jpg",
                "tag_ids": [],
                "is_mature": False,
            }
            for uid in ids
            if uid in self.live
        ]
        return web.json_response({"data": data, "pagination": {}})

    async def _create_subscription(self, request: web.Request) -> web.Response:
        body = await request.json()
        session_ids = {c.session_id for c in self.connections if not c.closed.is_set()}
        if body["transport"].get("session_id") not in session_ids:
            return web.json_response({"status": 400, "message": "invalid session id"}, status=400)
        sub = {
            "id": str(uuid.uuid4()),
            "status": "enabled",
            "type": body["type"],
            "version": body["version"],
            "condition": body["condition"],
            "transport": body["transport"],
            "created_at": eventsub.now_iso(),
            "cost": 0,
        }
        async with self.connected:
            self.subscriptions.append(sub)
            self.connected.notify_all()
        return web.json_response(
            {
                "data": [sub],
                "total": len(self.subscriptions),
                "total_cost": 0,
                "max_total_cost": 10,
            },
            status=202,
        )

    async def _chat_message(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.chat_requests.append(body)
        self.chat_auth.append(request.headers.get("Authorization", ""))
        if self.chat_script:
            kind, value = self.chat_script.popleft()
            if kind == "429":
                return web.json_response(
                    {"error": "Too Many Requests", "status": 429, "message": "rate limited"},
                    status=429,
                    headers={
                        "Ratelimit-Limit": "800",
                        "Ratelimit-Remaining": "0",
                        "Ratelimit-Reset": str(int(value)),
                    },
                )
            code, message = value
            return web.json_response(
                {
                    "data": [
                        {
                            "message_id": "",
                            "is_sent": False,
                            "drop_reason": {"code": code, "message": message},
                        }
                    ]
                }
            )
        message_id = str(uuid.uuid4())
        async with self.connected:
            self.sent.append(body)
            self.sent_ids.append(message_id)
            self.connected.notify_all()
        return web.json_response(
            {"data": [{"message_id": message_id, "is_sent": True, "drop_reason": None}]}
        )

    # -- EventSub WebSocket ----------------------------------------------------------------------
    @staticmethod
    def _meta(kind: str) -> dict[str, Any]:
        return {
            "message_id": str(uuid.uuid4()),
            "message_type": kind,
            "message_timestamp": eventsub.now_iso(),
        }

    async def _send(self, conn: Connection, frame: dict[str, Any]) -> None:
        conn.frames.append(frame)
        await conn.ws.send_str(json.dumps(frame))

    async def _keepalive(self, conn: Connection) -> None:
        while not conn.ws.closed:
            await asyncio.sleep(self.keepalive_seconds)
            if conn.ws.closed:
                return
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self._send(conn, {"metadata": self._meta("session_keepalive"), "payload": {}})

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        previous = [c for c in self.connections if c.welcomed.is_set() and not c.closed.is_set()]
        conn = Connection(session_id=f"session-{uuid.uuid4().hex[:12]}", ws=ws)
        self.connections.append(conn)
        welcome = {
            "metadata": self._meta("session_welcome"),
            "payload": {
                "session": {
                    "id": conn.session_id,
                    "status": "connected",
                    "connected_at": eventsub.now_iso(),
                    "keepalive_timeout_seconds": 10,
                    "reconnect_url": None,
                }
            },
        }
        await self._send(conn, welcome)
        async with self.connected:
            conn.welcomed.set()
            self.connected.notify_all()
        if "reconnect" in request.query:
            # the new connection is welcomed: Twitch moves the subscriptions and closes the old one
            for old in previous:
                for sub in self.subscriptions:
                    if sub["transport"].get("session_id") == old.session_id:
                        sub["transport"] = {"method": "websocket", "session_id": conn.session_id}
                await old.ws.close(code=4004, message=b"reconnect grace time expired")
        task = asyncio.create_task(
            self._keepalive(conn), name=f"fake-twitch-keepalive:{conn.session_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            async for message in ws:
                if message.type is WSMsgType.TEXT:
                    # clients must never send; Twitch closes with 4001
                    await ws.close(code=4001, message=b"client sent inbound traffic")
        finally:
            conn.closed.set()
            task.cancel()
        return ws
