"""The viewer directory: the viewers the bot has seen, by login and by display name.

The planner reads it (``lookup``) to recognise a viewer named in a message who is neither in the
batch nor in the loaded working history ("@Mnemo where does @bob live?", "what did Caroline
research?"). The composition root fills it from the ``viewers`` table at start and registers each
event's author when the event is stored. The planner only reads it, synchronously, so a plan stays
a deterministic function of the batch, the history and the directory's contents at that moment.

When two viewers share a name (logins that normalise alike, a login renamed and taken by someone
else, equal display names), the name resolves to nobody: the planner never guesses between two
people — unless the lookup names a stream and exactly one of them has chatted in it since the bot
started (three speakers called "John" in LoCoMo's conversations, replayed as one channel: a question
in John's stream means that John).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory import identity
from memory.recall import context

if TYPE_CHECKING:
    from memory.history import transcript as transcript_module

#: viewers loaded at start (the most recently seen)
DEFAULT_LIMIT = 100_000


class ViewerDirectory:
    """Normalized login or display name → (login, user id); implements ``ports.ViewerLookup``."""

    def __init__(self) -> None:
        #: name key → user id → login, for every viewer currently holding that name
        self._logins: dict[str, dict[str, str]] = {}
        self._names: dict[str, dict[str, str]] = {}
        #: user id → (login key, display-name key), to forget a viewer's old names on a rename
        self._keys: dict[str, tuple[str, str]] = {}
        #: stream → the user ids registered as chatting in it
        self._chatted: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def register(
        self,
        user_id: str,
        login: str,
        display_name: str | None = None,
        *,
        stream: str | None = None,
    ) -> None:
        """Add or update a viewer; ``display_name=None`` keeps the one already known; ``stream``:
        they chatted in it."""
        login_key = identity.normalize_login(login)
        if not user_id or not login_key:
            return
        if stream:
            self._chatted.setdefault(stream, set()).add(user_id)
        old_login, old_name = self._keys.get(user_id, ("", ""))
        name_key = context.normalize(display_name) if display_name else old_name
        for index, key in ((self._logins, old_login), (self._names, old_name)):
            holders = index.get(key)
            if holders is not None:
                holders.pop(user_id, None)
                if not holders:
                    del index[key]
        self._logins.setdefault(login_key, {})[user_id] = login
        if name_key:
            self._names.setdefault(name_key, {})[user_id] = login
        self._keys[user_id] = (login_key, name_key)

    def lookup(self, name: str, *, stream: str | None = None) -> tuple[str, str] | None:
        """The one viewer called ``name`` (``@`` optional, any case): a login first, then a display
        name; None when nobody or several viewers are called that — of several, the one who
        chatted in ``stream`` when exactly one of them did."""
        for holders in (
            self._logins.get(identity.normalize_login(name)),
            self._names.get(context.normalize(name)),
        ):
            if holders:
                if len(holders) > 1:
                    here = self._chatted.get(stream or "", set())
                    holders = {u: login for u, login in holders.items() if u in here}
                    if len(holders) != 1:
                        return None  # two people answer to it: no guess
                ((user_id, login),) = holders.items()
                return login, user_id
        return None


async def load(
    transcript: transcript_module.Transcript, *, limit: int = DEFAULT_LIMIT
) -> ViewerDirectory:
    """A directory of the ``limit`` most recently seen viewers of the transcript."""
    directory = ViewerDirectory()
    for user_id, login, display_name in reversed(await transcript.list_viewers(limit)):
        directory.register(user_id, login, display_name)
    return directory
