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

It is also the planner's stream calendar (``timewords.StreamCalendar``): the chat-time span (first
and last message) of each stream it saw registered, and of the most recent streams of the
transcript at start, so "last stream" names the stream before this one. The streams of every
channel the process serves are one calendar (a bot serves one channel in practice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory import identity
from memory.recall import context

if TYPE_CHECKING:
    from datetime import datetime

    from memory.history import transcript as transcript_module

#: viewers loaded at start (the most recently seen)
DEFAULT_LIMIT = 100_000
#: streams whose spans are loaded at start (the most recently registered)
STREAM_LIMIT = 50


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
        #: stream → (first, last) chat time registered in it
        self._spans: dict[str, tuple[datetime, datetime]] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def register(
        self,
        user_id: str,
        login: str,
        display_name: str | None = None,
        *,
        stream: str | None = None,
        at: datetime | None = None,
    ) -> None:
        """Add or update a viewer; ``display_name=None`` keeps the one already known; ``stream``:
        they chatted in it (``at``: the chat time of that message, for the stream calendar)."""
        if stream and at is not None:
            self.note_stream(stream, at, at)
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

    def note_stream(self, stream: str, first: datetime, last: datetime) -> None:
        """Widen ``stream``'s chat-time span to cover ``first``..``last``."""
        known = self._spans.get(stream)
        if known is not None:
            first, last = min(first, known[0]), max(last, known[1])
        self._spans[stream] = (first, last)

    def span(self, stream: str) -> tuple[datetime, datetime] | None:
        """(first, last) chat time of ``stream``, or None when it was never seen."""
        return self._spans.get(stream)

    def previous(self, stream: str, *, before: datetime) -> tuple[str, datetime, datetime] | None:
        """The latest other stream that ended before ``before``, with its span (None: none known)."""
        earlier = [(k, *s) for k, s in self._spans.items() if k != stream and s[1] < before]
        return max(earlier, key=lambda found: found[2], default=None)

    def forget_streams(self) -> None:
        """Start the stream calendar afresh (an evaluation that replays several channels into one
        store: each channel's calendar holds its own streams only)."""
        self._spans.clear()

    def earlier(self, stream: str, *, before: datetime, limit: int) -> list[str]:
        """Up to ``limit`` other streams that started before ``before``, the latest-ended first
        (the streams whose episodes the ``earlier`` source searches)."""
        found = [(s[1], k) for k, s in self._spans.items() if k != stream and s[0] < before]
        return [k for _, k in sorted(found, reverse=True)[:limit]]


async def load(
    transcript: transcript_module.Transcript, *, limit: int = DEFAULT_LIMIT
) -> ViewerDirectory:
    """A directory of the ``limit`` most recently seen viewers of the transcript, and the chat-time
    spans of its ``STREAM_LIMIT`` most recently registered streams."""
    directory = ViewerDirectory()
    for user_id, login, display_name in reversed(await transcript.list_viewers(limit)):
        directory.register(user_id, login, display_name)
    for stream, first, last in await transcript.stream_spans(STREAM_LIMIT):
        directory.note_stream(stream, first, last)
    return directory
