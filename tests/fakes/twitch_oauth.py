"""The fake Twitch's sign-in: the OAuth authorization-code flow (``/oauth2/authorize`` with a small
consent page a browser can drive, the ``authorization_code`` grant of ``/oauth2/token``) and Helix
``moderation/channels`` and ``moderation/moderators``, as Twitch documents them.

``FakeTwitchOAuth`` is the fake of ``tests/fakes/twitch.py`` plus these endpoints; ``moderators``
says who moderates which channel.
"""

from __future__ import annotations

import html
import secrets
import urllib.parse
from typing import Any

from aiohttp import web

from tests.fakes import twitch as fake_twitch

MODERATION_SCOPE = "user:read:moderated_channels"


class FakeTwitchOAuth(fake_twitch.FakeTwitch):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: broadcaster id → user ids of its moderators
        self.moderators: dict[str, set[str]] = {}
        #: code → (user id, client id, redirect uri, scopes) of an authorization not yet exchanged
        self.codes: dict[str, tuple[str, str, str, list[str]]] = {}
        #: users who signed in on the consent page, in order
        self.authorized: list[str] = []

    def add_user(self, user_id: str, login: str) -> None:
        self.users.by_id[user_id] = login

    def extra_routes(self) -> list[web.RouteDef]:
        return [
            web.get("/id/oauth2/authorize", self._authorize_page),
            web.post("/id/oauth2/authorize", self._authorize),
            web.get("/helix/moderation/channels", self._moderated_channels),
            web.get("/helix/moderation/moderators", self._moderators),
        ]

    # -- authorization code --------------------------------------------------------------------
    async def _authorize_page(self, request: web.Request) -> web.Response:
        query = request.query
        if query.get("client_id") != fake_twitch.CLIENT_ID or query.get("response_type") != "code":
            return web.Response(status=400, text="invalid client_id or response_type")
        hidden = "".join(
            f'<input type="hidden" name="{name}" value="{html.escape(query.get(name, ""))}">'
            for name in ("client_id", "redirect_uri", "state", "scope")
        )
        page = (
            "<!doctype html><html><head><title>Twitch (fake): authorize</title></head><body>"
            "<h1>Sign in to Twitch</h1>"
            f"<p>livememory wants: {html.escape(query.get('scope', ''))}</p>"
            f'<form method="post">{hidden}'
            '<label>Username <input name="login" autofocus></label> '
            '<button type="submit">Authorize</button></form></body></html>'
        )
        return web.Response(text=page, content_type="text/html")

    async def _authorize(self, request: web.Request) -> web.Response:
        form = await request.post()
        login = str(form.get("login", "")).strip().lower()
        by_login = {name: uid for uid, name in self.users.by_id.items()}
        redirect = str(form.get("redirect_uri", ""))
        if login not in by_login:
            return web.Response(status=403, text=f"no Twitch user {login!r}")
        code = secrets.token_urlsafe(12)
        scopes = str(form.get("scope", "")).split()
        self.codes[code] = (by_login[login], str(form.get("client_id")), redirect, scopes)
        self.authorized.append(login)
        query = urllib.parse.urlencode({"code": code, "state": str(form.get("state", ""))})
        raise web.HTTPFound(f"{redirect}?{query}")

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        params = {**request.query, **{k: str(v) for k, v in form.items()}}
        if params.get("grant_type") != "authorization_code":
            return await super()._token(request)
        if (
            params.get("client_id") != fake_twitch.CLIENT_ID
            or params.get("client_secret") != self.client_secret
        ):
            return web.json_response(
                {"status": 403, "message": "invalid client secret"}, status=403
            )
        grant = self.codes.pop(params.get("code", ""), None)
        if grant is None or grant[2] != params.get("redirect_uri"):
            return web.json_response(
                {"status": 400, "message": "Invalid authorization code"}, status=400
            )
        user_id, _client, _redirect, scopes = grant
        token = f"user-{secrets.token_hex(6)}"
        self.user_tokens[token] = {
            "user_id": user_id,
            "login": self.users.by_id[user_id],
            "scopes": scopes,
        }
        return web.json_response(
            {
                "access_token": token,
                "refresh_token": f"refresh-{secrets.token_hex(6)}",
                "expires_in": 14000,
                "scope": scopes,
                "token_type": "bearer",
            }
        )

    # -- moderation ----------------------------------------------------------------------------
    def _caller(self, request: web.Request) -> dict[str, Any] | None:
        if request.headers.get("Client-Id") != fake_twitch.CLIENT_ID:
            return None
        return self.user_tokens.get(self._bearer(request))

    async def _moderated_channels(self, request: web.Request) -> web.Response:
        """``GET moderation/channels?user_id=`` — the channels the token's user moderates."""
        caller = self._caller(request)
        if caller is None:
            return web.json_response({"status": 401, "message": "invalid token"}, status=401)
        if MODERATION_SCOPE not in caller["scopes"]:
            return web.json_response(
                {"status": 401, "message": f"missing scope {MODERATION_SCOPE}"}, status=401
            )
        if request.query.get("user_id") != caller["user_id"]:
            return web.json_response(
                {"status": 400, "message": "user_id must match the token"}, status=400
            )
        data = [
            {
                "broadcaster_id": channel,
                "broadcaster_login": self.users.by_id[channel],
                "broadcaster_name": self.users.by_id[channel].capitalize(),
            }
            for channel, mods in sorted(self.moderators.items())
            if caller["user_id"] in mods
        ]
        return web.json_response({"data": data, "pagination": {}})

    async def _moderators(self, request: web.Request) -> web.Response:
        """``GET moderation/moderators?broadcaster_id=`` — with the broadcaster's own token."""
        caller = self._caller(request)
        channel = request.query.get("broadcaster_id", "")
        if caller is None or caller["user_id"] != channel:
            return web.json_response(
                {"status": 401, "message": "the token must be the broadcaster's"}, status=401
            )
        data = [
            {
                "user_id": uid,
                "user_login": self.users.by_id[uid],
                "user_name": self.users.by_id[uid],
            }
            for uid in sorted(self.moderators.get(channel, set()))
        ]
        return web.json_response({"data": data, "pagination": {}})
