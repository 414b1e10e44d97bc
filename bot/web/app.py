"""The dashboard's Starlette application: routes, the sign-in guard, templates, CSRF.

``create_app(services, http=...)`` builds it over opened ``memory.runtime.Services``; the server is
``bot.web.serve``. Pages are server-rendered Jinja2 with plain forms (no build step, no script).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from starlette import responses
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from bot.web import auth, lore_edit, pages, turns
from bot.web import site as site_module

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx
    from starlette.requests import Request

    from memory import runtime

TEMPLATES = Path(__file__).resolve().parent / "templates"


def signed_in(
    handler: Callable[[Request], Awaitable[responses.Response]],
) -> Callable[[Request], Awaitable[responses.Response]]:
    """Only for the broadcaster and moderators who signed in; others go to the sign-in page."""

    async def guarded(request: Request) -> responses.Response:
        if auth.current_user(request) is None:
            return responses.RedirectResponse("/login", status_code=303)
        return await handler(request)

    return guarded


async def home(request: Request) -> responses.Response:
    return responses.RedirectResponse("/viewers", status_code=303)


async def login(request: Request) -> responses.Response:
    site: site_module.Site = request.app.state.site
    return site.render(request, "login.html", local=site.local is not None)


async def local_sign_in(request: Request) -> responses.Response:
    """The one-time link the bot printed (``auth.LocalSignIn``)."""
    site: site_module.Site = request.app.state.site
    if site.local is None or not site.local.redeem(request.query_params.get("token")):
        return site.render(
            request,
            "error.html",
            message="this sign-in link is wrong or was used already: python -m memory.admin "
            "sign-in-link makes a new one (and the bot prints one each time it starts)",
            status_code=403,
        )
    auth.sign_in(request, auth.LOCAL_USER)
    return responses.RedirectResponse("/viewers", status_code=303)


async def start(request: Request) -> responses.Response:
    site: site_module.Site = request.app.state.site
    if site.local is not None:  # no Twitch application to send the browser to
        return responses.RedirectResponse("/login", status_code=303)
    return auth.start(request, site.services.settings)


async def callback(request: Request) -> responses.Response:
    site: site_module.Site = request.app.state.site
    params = request.query_params
    if not auth.check_state(request, params.get("state")) or "code" not in params:
        return site.render(
            request, "error.html", message="sign-in expired or forged: try again", status_code=400
        )
    try:
        user = await auth.exchange(site.services.settings, params["code"], site.http)
    except auth.SignInRefused as exc:
        return site.render(request, "error.html", message=str(exc), status_code=403)
    auth.sign_in(request, user)
    return responses.RedirectResponse("/viewers", status_code=303)


async def logout(request: Request) -> responses.Response:
    request.session.clear()
    return responses.RedirectResponse("/login", status_code=303)


def create_app(
    services: runtime.Services,
    *,
    http: httpx.AsyncClient,
    session_secret: str | None = None,
    local: auth.LocalSignIn | None = None,
) -> Starlette:
    """The dashboard over ``services``; ``local``: sign in with its one-time link, not Twitch."""
    settings = services.settings
    secret = session_secret or (
        settings.web.session_secret.get_secret_value()
        if settings.web.session_secret
        else secrets.token_urlsafe(32)
    )
    routes = [
        Route("/", home),
        Route("/login", login),
        Route("/auth/start", start),
        Route(auth.CALLBACK, callback),
        Route(auth.LOCAL, local_sign_in),
        Route("/logout", logout, methods=["POST"]),
        Route("/viewers", signed_in(pages.viewers)),
        Route("/viewers/{user_id}", signed_in(pages.viewer)),
        Route(
            "/memories/{memory_id}/{action:str}",
            signed_in(pages.memory_action),
            methods=["GET", "POST"],
        ),
        Route("/lore", signed_in(pages.lore_page), methods=["GET", "POST"]),
        Route("/lore/preview", signed_in(lore_edit.preview), methods=["POST"]),
        Route("/lore/replace", signed_in(lore_edit.replace), methods=["POST"]),
        Route("/turns", signed_in(turns.turn_list)),
        Route("/turns/{turn_id}", signed_in(turns.turn_page)),
        Route("/jobs", signed_in(pages.jobs)),
        Route("/jobs/{job_id:int}/retry", signed_in(pages.jobs), methods=["POST"]),
        Route("/streams", signed_in(pages.streams)),
        Route("/streams/{stream}/{action}", signed_in(pages.streams), methods=["POST"]),
    ]
    middleware = [
        Middleware(
            SessionMiddleware,
            secret_key=secret,
            session_cookie="livememory_session",
            max_age=settings.web.session_seconds,
            same_site="lax",
            https_only=settings.web.public_url.startswith("https://"),
        )
    ]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={exc: pages.not_found for exc in pages.NOT_FOUND},
    )
    app.state.site = site_module.Site(
        services=services, http=http, templates=Jinja2Templates(TEMPLATES), local=local
    )
    return app
