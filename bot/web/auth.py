"""Sign-in with Twitch for the dashboard: the OAuth authorization-code flow against the configured
``id_base``, then who may see the channel — its broadcaster and its moderators.

A moderator is recognised with their own token through Helix ``GET moderation/channels`` (scope
``user:read:moderated_channels``): the channels a user moderates. (Helix ``moderation/moderators``
answers only to the broadcaster's own token, which the bot does not hold.) The session cookie is
signed (Starlette's ``SessionMiddleware``); every form carries the session's CSRF token.

A dashboard the bot serves itself on loopback with no Twitch application configured signs in with a
one-time link the bot prints at start (``LocalSignIn``): local only, for the streamer at that PC.
"""

from __future__ import annotations

import secrets
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette import responses

if TYPE_CHECKING:
    import httpx
    from starlette.requests import Request

    from config.settings import Settings

SCOPES = ("user:read:moderated_channels",)
CALLBACK = "/auth/callback"
LOCAL = "/auth/local"


class SignInRefused(Exception):
    """Twitch refused the sign-in, or the user may not see this channel."""


@dataclass(frozen=True, slots=True, kw_only=True)
class User:
    user_id: str
    login: str
    #: ``broadcaster`` or ``moderator``
    role: str

    @property
    def actor(self) -> str:
        """Who acts, in the audit."""
        return f"web:{self.login}"


#: who signs in with the local link (the audit says ``web:local``)
LOCAL_USER = User(user_id="local", login="local", role="broadcaster")


def twitch_app(settings: Settings) -> bool:
    """Whether the Twitch application the OAuth sign-in needs is configured."""
    twitch = settings.twitch
    return bool(
        twitch.client_id and twitch.client_secret and twitch.client_secret.get_secret_value()
    )


class LocalSignIn:
    """A one-time sign-in link: its token signs in once, then no more (``renew`` or a restart makes
    a new one)."""

    def __init__(self) -> None:
        self._token: str | None = secrets.token_urlsafe(32)

    def link(self, base: str) -> str:
        return f"{base.rstrip('/')}{LOCAL}?{urllib.parse.urlencode({'token': self._token})}"

    def renew(self, base: str) -> str:
        """A new one-time link (``memory.admin sign-in-link``); the one before no longer works."""
        self._token = secrets.token_urlsafe(32)
        return self.link(base)

    def redeem(self, given: str | None) -> bool:
        """Whether ``given`` is the token; it is used up when it is."""
        token = self._token
        if token is None or given is None:
            return False
        if not secrets.compare_digest(token.encode(), given.encode()):
            return False
        self._token = None
        return True


def redirect_uri(settings: Settings) -> str:
    return settings.web.public_url.rstrip("/") + CALLBACK


def authorize_url(settings: Settings, state: str) -> str:
    query = urllib.parse.urlencode(
        {
            "client_id": settings.twitch.client_id or "",
            "redirect_uri": redirect_uri(settings),
            "response_type": "code",
            "scope": " ".join(SCOPES),
            "state": state,
        }
    )
    return f"{settings.twitch.id_base.rstrip('/')}/oauth2/authorize?{query}"


def channel_keys(settings: Settings) -> set[str]:
    """The configured channels as logins and ids (lower case), the owner's id included."""
    keys = {c.strip().lower() for c in settings.twitch.channels if c.strip()}
    if settings.twitch.owner_id:
        keys.add(settings.twitch.owner_id)
    return keys


async def exchange(settings: Settings, code: str, http: httpx.AsyncClient) -> User:
    """Trade the authorization code for a token, learn who signed in and their role."""
    twitch = settings.twitch
    secret = twitch.client_secret.get_secret_value() if twitch.client_secret else ""
    answer = await http.post(
        f"{twitch.id_base.rstrip('/')}/oauth2/token",
        data={
            "client_id": twitch.client_id or "",
            "client_secret": secret,
            "code": code,
            "grant_type": "authorization_code",
            "redirect_uri": redirect_uri(settings),
        },
    )
    if answer.status_code != 200:
        raise SignInRefused(f"Twitch refused the sign-in ({_message(answer)})")
    token = answer.json()["access_token"]
    headers = {"Authorization": f"Bearer {token}", "Client-Id": twitch.client_id or ""}
    who = await http.get(f"{twitch.id_base.rstrip('/')}/oauth2/validate", headers=headers)
    if who.status_code != 200:
        raise SignInRefused(f"Twitch did not validate the token ({_message(who)})")
    user_id, login = str(who.json()["user_id"]), str(who.json()["login"]).lower()
    channels = channel_keys(settings)
    if user_id in channels or login in channels:
        return User(user_id=user_id, login=login, role="broadcaster")
    moderated = await http.get(
        f"{twitch.api_base.rstrip('/')}/moderation/channels",
        params={"user_id": user_id, "first": "100"},
        headers=headers,
    )
    if moderated.status_code != 200:
        raise SignInRefused(
            f"Twitch did not list the channels you moderate ({_message(moderated)})"
        )
    for channel in moderated.json().get("data", []):
        if {str(channel["broadcaster_id"]), str(channel["broadcaster_login"]).lower()} & channels:
            return User(user_id=user_id, login=login, role="moderator")
    raise SignInRefused(f"{login} is neither the broadcaster nor a moderator of this channel")


def _message(answer: httpx.Response) -> str:
    try:
        return str(answer.json().get("message", answer.status_code))
    except ValueError:
        return str(answer.status_code)


def current_user(request: Request) -> User | None:
    data: dict[str, Any] | None = request.session.get("user")
    return User(**data) if data else None


def sign_in(request: Request, user: User) -> None:
    request.session.clear()
    request.session["user"] = {"user_id": user.user_id, "login": user.login, "role": user.role}
    request.session["csrf"] = secrets.token_urlsafe(24)


def start(request: Request, settings: Settings) -> responses.RedirectResponse:
    """Send the browser to Twitch, remembering a one-time ``state``."""
    state = secrets.token_urlsafe(24)
    request.session["oauth_state"] = state
    return responses.RedirectResponse(authorize_url(settings, state), status_code=303)


def check_state(request: Request, state: str | None) -> bool:
    expected = request.session.pop("oauth_state", None)
    return bool(expected and state and secrets.compare_digest(expected, state))


def csrf_token(request: Request) -> str:
    token: str = request.session.setdefault("csrf", secrets.token_urlsafe(24))
    return token


def csrf_ok(request: Request, given: object) -> bool:
    expected = request.session.get("csrf")
    return bool(expected and isinstance(given, str) and secrets.compare_digest(expected, given))
