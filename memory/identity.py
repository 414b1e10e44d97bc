"""Viewer identity: stable user ids, normalized logins, space names, stream session ids."""

from __future__ import annotations

import re
import secrets
import unicodedata
from datetime import UTC, datetime

#: characters that render as nothing and are used to dodge filters or impersonate
_INVISIBLE = re.compile("[\u200b-\u200f\u2028-\u202f\u2060-\u206f\ufeff\u00ad\u034f\u180e]")
#: Twitch logins are ASCII letters, digits and underscores
_NOT_LOGIN = re.compile(r"[^a-z0-9_]")


def normalize_login(login: str) -> str:
    """Normalize a Twitch login for use in a space name.

    NFKC, casefold, zero-width and control characters removed, then only the Twitch login charset
    (``a-z``, ``0-9``, ``_``) is kept. A leading ``@`` is dropped.

    >>> normalize_login("@Ａlice\u200b")
    'alice'
    """
    # every Twitch login is ASCII: there NFKC and casefold are lower(), the rest is the charset
    if login.isascii():
        return _NOT_LOGIN.sub("", login.lower())
    text = unicodedata.normalize("NFKC", login).casefold()
    text = _INVISIBLE.sub("", text)
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C")
    text = text.strip().removeprefix("@")
    return _NOT_LOGIN.sub("", text)


def viewer_space(login: str) -> str:
    """The name of a viewer's personal memory space: ``viewer-<normalized login>``."""
    return f"viewer-{normalize_login(login)}"


def stream_space(stream: str) -> str:
    """The name of a stream's episodic memory space: ``stream-<stream session id>``."""
    return f"stream-{stream}"


LORE_SPACE = "lore"


def temporary_stream_id(now: datetime | None = None) -> str:
    """A stream session id for a run where the real one is not known (``tmp-<utc time>-<random>``)."""
    moment = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S")
    return f"tmp-{moment}-{secrets.token_hex(3)}"


# Storage keys of memory spaces. A personal space is stored under the stable user id, so a renamed
# viewer keeps their memory; ``viewer-<login>`` (above) is its name as people see it (reports, CLI).
def personal_key(user_id: str) -> str:
    """Storage key of a viewer's personal space: ``viewer:<user id>``."""
    return f"viewer:{user_id}"


#: the one personal space of the naive design (``settings.memory.attribution_split=False``, an
#: ablation for evaluation only): every viewer's kept messages, each still with its author's user id
SHARED_PERSONAL_KEY = "viewer:*shared*"


def personal_space_key(user_id: str, *, attribution_split: bool = True) -> str:
    """Where a viewer's personal memories live: their own space, or the shared one (ablation)."""
    return personal_key(user_id) if attribution_split else SHARED_PERSONAL_KEY


def episodic_key(stream: str) -> str:
    """Storage key of a stream's episodic space: ``stream:<stream session id>``."""
    return f"stream:{stream}"


LORE_KEY = "lore"
