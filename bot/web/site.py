"""What every dashboard page shares: the services, the HTTP client, templates, the signed-in user,
the CSRF check of a form."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.exceptions import HTTPException

from bot.web import auth

if TYPE_CHECKING:
    import httpx
    from starlette import responses
    from starlette.datastructures import FormData
    from starlette.requests import Request
    from starlette.templating import Jinja2Templates

    from memory import runtime

NAV = (
    ("viewers", "/viewers"),
    ("lore", "/lore"),
    ("turns", "/turns"),
    ("jobs", "/jobs"),
    ("streams", "/streams"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Site:
    services: runtime.Services
    http: httpx.AsyncClient
    templates: Jinja2Templates
    #: the one-time local sign-in (a dashboard in the bot on loopback, no Twitch application)
    local: auth.LocalSignIn | None = None

    def render(
        self, request: Request, name: str, *, status_code: int = 200, **context: Any
    ) -> responses.Response:
        user = auth.current_user(request)
        context |= {"user": user, "nav": NAV, "csrf": auth.csrf_token(request) if user else ""}
        return self.templates.TemplateResponse(request, name, context, status_code=status_code)

    def user(self, request: Request) -> auth.User:
        user = auth.current_user(request)
        if user is None:  # the guard lets no anonymous request through
            raise HTTPException(401)
        return user

    async def checked_form(self, request: Request) -> FormData:
        form = await request.form()
        if not auth.csrf_ok(request, form.get("csrf")):
            raise HTTPException(403, "the form is stale or forged (CSRF): reload the page")
        return form
