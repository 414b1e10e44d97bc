"""The retrieval planner: a pure, deterministic function of (batch, working history, settings).

No model call. Each viewer of the batch is scored from observable signals with fixed weights; each
weight is larger than the sum of all weaker ones, so the viewer with the strongest signal always
comes first ("strongest first"). English and Italian phrasings are recognised.

Attribution decisions (DESIGN.md, problem 1):

* A viewer's ``recall`` query is built from that viewer's OWN current messages, and searches only
  their own personal space.
* A viewer named by another viewer ("where does Alice live?") is planned on ALICE'S OWN space (it
  holds only what Alice wrote); the asker's words are used only as the search query for it, never as
  Alice's statement. The asker's recall searches the asker's space, so Bob's claim about Alice can
  only ever appear attributed to Bob, and only when Bob's own space is searched.
* Of two viewers a question names, one only as its object ("what did Alice say to Bob?", "what
  does Alice think of Bob's job?"), only the subject's space is searched: what is asked is what
  she said, and Bob's space holds what he said.
* ``explicit`` marks sources whose failure the prompt must admit: a viewer asking what the bot
  remembers about them, or a viewer asking what the bot remembers about a named other viewer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory import identity, models
from memory.recall import asked, context, directory, earlier, timewords
from memory.recall import planner_words as lexicon

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence

    from config import settings as settings_module
    from memory import ports

#: fixed weights; each is larger than the sum of all weaker ones (strongest first)
WEIGHTS: dict[str, float] = {
    "explicit_recall": 32.0,
    "platform_event": 16.0,
    "bot_mention": 8.0,
    "question": 4.0,
    "media": 2.0,
    "mentioned_by_viewer": 1.0,
    "active": 0.5,
}
HARD_MAX_VIEWERS = 5
IMPORTANT_EVENTS = frozenset({"sub", "raid", "cheer"})
MAX_QUERY_CHARS = 300


def _has(norm: str, phrases: Iterable[str]) -> bool:
    padded = f" {norm} "
    return any(f" {phrase} " in padded for phrase in phrases)


def _is_question(text: str, norm: str, skip: Collection[str] = ()) -> bool:
    """A question mark, or an interrogative first word (after the bot's name)."""
    first = next((word for word in norm.split() if word not in skip), "")
    return "?" in text or first in lexicon.INTERROGATIVES


def state_domains(text: str) -> set[str]:
    """The structured-state domains a text refers to (``requests``, ``relationships``, ``notes``, ``jokes``)."""
    norm = context.normalize(text)
    return {domain for domain, words in lexicon.STATE_DOMAINS.items() if _has(norm, words)}


def content_terms(norm: str, *, exclude: Collection[str] = ()) -> list[str]:
    """Search-worthy words of a normalized text, in order, without duplicates."""
    terms: list[str] = []
    for word in norm.split():
        if (
            len(word) >= 3
            and word not in lexicon.STOPWORDS
            and word not in exclude
            and word not in terms
        ):
            terms.append(word)
    return terms


def _stem(word: str) -> str:
    """A light EN/IT stem for coverage checks: game/games, gioco/giochi, boss/bosses."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith("es") and word[-3] in "sxz":
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 3 and word[-1] in "aeiou":
        word = word[:-1]
    if len(word) > 3 and word.endswith(("ch", "gh")):
        word = word[:-1]
    return word


def _covered(terms: Sequence[str], history_stems: set[str]) -> bool:
    """Every key term appears in the working history (inflection tolerant)."""
    return bool(terms) and all(_stem(term) in history_stems for term in terms)


def _query(texts: Iterable[str]) -> str:
    return " ".join(" ".join(t.split()) for t in texts if t.strip())[:MAX_QUERY_CHARS].strip()


def _objects(norm: str, words_of: dict[str, set[str]]) -> set[str]:
    """The viewers a question names only as the object of what it asks ("what did alice say to
    bob?", "what does alice think of bob's job?", "cosa ha detto alice a bob?") when it names
    another as its subject: their spaces hold what they said, and what is asked is what the
    subject said. Nobody when no named viewer is a subject ("what about bob and carol?")."""
    tokens = norm.split()
    roles: dict[str, set[bool]] = {}  # viewer → is each of its names an object?
    previous: tuple[int, bool] | None = None  # the last name's end and role
    i = 0
    while i < len(tokens):
        owner = next((u for u, words in words_of.items() if tokens[i] in words), None)
        if owner is None:
            i += 1
            continue
        end = i
        while end + 1 < len(tokens) and tokens[end + 1] in words_of[owner]:
            end += 1
        before = tokens[i - 1] if i else ""
        if previous and previous[0] == i - 2 and before in lexicon.AND_WORDS:
            role = previous[1]  # "alice and bob": as alice
        elif any(f" {' '.join(tokens[:i])}".endswith(f" {s}") for s in lexicon.SOURCE_BEFORE):
            role = False  # "according to alice": the one who said it
        else:
            role = before in lexicon.OBJECT_BEFORE or tokens[end + 1 : end + 2] == ["s"]
        roles.setdefault(owner, set()).add(role)
        previous = (end, role)
        i = end + 1
    objects = {user_id for user_id, found in roles.items() if found == {True}}
    return objects if any(False in found for found in roles.values()) else set()


def _only(asks: Sequence[frozenset[str]]) -> frozenset[str]:
    """The slots a stream-wide source asks for: those every one of its messages asks (none when
    one of them asks for something else)."""
    return frozenset.intersection(*asks) if asks and all(asks) else frozenset()


@dataclass(frozen=True, slots=True)
class _Mention:
    """A viewer named in another viewer's message."""

    text: str
    recall_request: bool
    #: normalized words of the names used in the message (never part of the search query)
    names: frozenset[str]
    #: the profile slots the message asks for (``memory.recall.asked``; none for a statement)
    asks: frozenset[str] = frozenset()


@dataclass(slots=True)
class _Candidate:
    login: str
    user_id: str
    order: int
    texts: list[str] = field(default_factory=list)
    signals: set[str] = field(default_factory=set)
    explicit: bool = False
    mentions: list[_Mention] = field(default_factory=list)
    #: the viewer's messages that are questions about another viewer or about the bot, not about
    #: themself ("what is @giulia's hobby?", "Mnemo are you scared of anything?")
    questions_elsewhere: int = 0
    #: the profile slots the viewer's own questions ask for (``memory.recall.asked``)
    asks: set[str] = field(default_factory=set)

    @property
    def score(self) -> float:
        return sum(WEIGHTS[s] for s in self.signals)

    def ordered_signals(self) -> tuple[str, ...]:
        return tuple(sorted(self.signals, key=lambda s: -WEIGHTS[s]))


class Planner:
    """Decides which memory sources a batch needs; implements ``ports.Planner``.

    Parameters
    ----------
    settings:
        Reads ``bot_name`` and ``memory.max_viewers`` (hard maximum 5), and the ablation switches
        ``memory.use_profile`` (False: never plan ``profile``), ``memory.use_episodic`` (False:
        never plan ``episodic``) and ``memory.rank_viewers`` (False: every viewer of the batch, in
        batch order, uncapped, each with profile and recall).
    lore_entities:
        Names of canon entities (characters, places…) whose mention plans the ``lore`` source.
    bot_name:
        Overrides ``settings.bot_name``. The bot's own lines are told apart by its user id
        (``twitch.bot_id``), never by login: a viewer called like the persona is a viewer.
    directory:
        Viewers known to the channel (``ports.ViewerLookup``): a viewer named in a message
        (``@login``, or a bare login / display name) is recognised even when they are neither in
        the batch nor in the history. Read synchronously; the plan depends on its contents.
    streams:
        The channel's streams and their chat-time spans (``timewords.StreamCalendar``): what
        "last stream" means. Without it, "last stream" is everything before this stream.
    """

    def __init__(
        self,
        settings: settings_module.Settings,
        lore_entities: Collection[str] = (),
        bot_name: str | None = None,
        *,
        directory: ports.ViewerLookup | None = None,
        streams: timewords.StreamCalendar | None = None,
    ) -> None:
        memory = settings.memory
        self.streams = streams
        self.max_viewers = min(memory.max_viewers, HARD_MAX_VIEWERS)
        self.use_profile = memory.use_profile
        self.use_episodic = memory.use_episodic
        self.rank_viewers = memory.rank_viewers
        self.directory = directory
        self.bot_id = settings.twitch.bot_id
        name = bot_name or settings.bot_name
        self.bot_words = {
            identity.normalize_login(name),
            context.normalize(name),
            *([identity.normalize_login(settings.bot_login)] if settings.bot_login else []),
        } - {""}
        # the bot's own name is a mention of the bot, not a lore reference (its story is asked for)
        self.lore_entities = tuple(
            sorted({n for n in (context.normalize(e) for e in lore_entities) if n} - self.bot_words)
        )

    def add_bot_login(self, login: str) -> None:
        """The bot account's Twitch login, learnt from its token at start-up (``@mnemo_bot`` is
        what chat's autocomplete writes): a word for the bot, as its name and ``bot_login`` are."""
        normalized = identity.normalize_login(login)
        if normalized and normalized not in self.bot_words:
            self.bot_words = self.bot_words | {normalized}
            self.lore_entities = tuple(e for e in self.lore_entities if e != normalized)

    def plan(self, batch: models.Batch, history: Sequence[models.HistoryItem]) -> models.Plan:
        local = self._local_viewers(batch, history)
        candidates: dict[str, _Candidate] = {}
        for order, event in enumerate(batch.chat):
            if self._is_bot(event.user_id):
                continue
            self._score_event(event, order, candidates, local)
        selected = self._select(candidates)
        # time-scoped and past questions (timewords): windows and the past flag on the sources
        when = timewords.when_of(batch, history, self.streams)
        sources: list[models.PlannedSource] = []
        for candidate in selected:
            planned = self._viewer_sources(candidate)  # may drop the viewer's own texts
            texts = candidate.texts or [mention.text for mention in candidate.mentions]
            sources.extend(timewords.scoped(planned, when, texts))
        chat = [event.text for event in batch.chat]
        stream_sources = timewords.scoped(self._stream_sources(batch, history), when, chat)
        sources.extend(earlier.planned(stream_sources, when, chat))  # and earlier streams
        viewers = tuple(
            models.PlannedViewer(
                login=c.login, user_id=c.user_id, score=c.score, signals=c.ordered_signals()
            )
            for c in selected
        )
        return models.Plan(viewers=viewers, sources=tuple(sources))

    def viewers_of(self, event: models.ChatEvent) -> list[str]:
        """User ids whose personal space a batch holding ``event`` may be recalled from: its
        author and the viewers it names (as ``plan`` resolves them; selection comes later)."""
        if event.is_command or self._is_bot(event.user_id):
            return []
        local = directory.ViewerDirectory()
        local.register(event.user_id, event.login, event.name)
        named, _ = self._mentions(event.text, local, author_id=event.user_id, stream=event.stream)
        return [event.user_id, *(user_id for _, user_id in named)]

    def _select(self, candidates: dict[str, _Candidate]) -> list[_Candidate]:
        if not self.rank_viewers:  # ablation: every viewer, in batch order, uncapped
            return sorted(candidates.values(), key=lambda c: c.order)
        return sorted(
            (c for c in candidates.values() if c.signals),
            key=lambda c: (-c.score, -len(c.texts), c.order, c.login),
        )[: self.max_viewers]

    @staticmethod
    def _local_viewers(
        batch: models.Batch, history: Sequence[models.HistoryItem]
    ) -> directory.ViewerDirectory:
        """The viewers of the history then the batch (newest wins), logins and display names."""
        local = directory.ViewerDirectory()
        for item in history:
            if item.login and item.user_id:
                local.register(item.user_id, item.login)
        for event in batch.events:
            local.register(event.user_id, event.login, event.name)
        return local

    def _resolve(
        self, name: str, local: directory.ViewerDirectory, stream: str
    ) -> tuple[str, str] | None:
        """The viewer called ``name``: the batch and history first, then the channel's directory
        (where, of namesakes, only one who chatted in this stream is taken)."""
        found = local.lookup(name)
        if found is None and self.directory is not None:
            found = self.directory.lookup(name, stream=stream)
        if found is None or self._is_bot(found[1]):
            return None
        return found

    def _is_bot(self, user_id: str) -> bool:
        """The bot's own account (by user id: a viewer named like the persona is a viewer)."""
        return self.bot_id is not None and user_id == self.bot_id

    def _bare_name(self, token: str) -> bool:
        """A bare word may name a viewer: 3+ letters, not a stopword, common word or the bot."""
        norm = context.normalize(token)
        return (
            sum(ch.isalpha() for ch in token) >= 3
            and norm not in lexicon.STOPWORDS
            and norm not in lexicon.COMMON_WORDS
            and norm not in lexicon.INTERROGATIVES
            and norm not in lexicon.SELF_WORDS
            and norm not in self.bot_words
        )

    def _mentions(
        self,
        text: str,
        local: directory.ViewerDirectory,
        *,
        author_id: str,
        stream: str,
        question: bool = False,
    ) -> tuple[list[tuple[str, str]], frozenset[str]]:
        """Viewers named in a message (``@name`` always, a bare name when plausible), sorted by
        login, and the normalized words of the names used. ``@<bot>`` addresses the bot: no viewer.
        Of a question naming several, those only its object are left out (``_objects``); a
        statement keeps them ("I told bob about alice's puppy": her space may hold the puppy)."""
        names = [
            n
            for n in lexicon.AT_NAME.findall(text)
            if identity.normalize_login(n) not in self.bot_words
        ]
        names += [t for t in lexicon.NAME_TOKEN.findall(text.casefold()) if self._bare_name(t)]
        found: dict[str, tuple[str, str]] = {}
        words: dict[str, set[str]] = {}
        for name in names:
            viewer = self._resolve(name, local, stream)
            if viewer is None or viewer[1] == author_id:
                continue
            found.setdefault(viewer[1], viewer)
            words.setdefault(viewer[1], set()).update(context.normalize(name).split())
        objects = _objects(context.normalize(text), words) if question else set()
        ordered = sorted(
            (v for v in found.values() if v[1] not in objects),
            key=lambda v: (identity.normalize_login(v[0]), v[1]),
        )
        return ordered, frozenset().union(*words.values())

    def _score_event(
        self,
        event: models.ChatEvent,
        order: int,
        candidates: dict[str, _Candidate],
        local: directory.ViewerDirectory,
    ) -> None:
        author = candidates.get(event.user_id)
        if author is None:
            author = candidates[event.user_id] = _Candidate(event.login, event.user_id, order)
        author.login = event.login
        text = event.text
        norm = context.normalize(text)
        if event.kind is models.EventKind.EVENT and (event.event or "") in IMPORTANT_EVENTS:
            author.signals.add("platform_event")
        if text.strip():
            author.texts.append(text)
        words = set(norm.split())
        recall_request = _has(norm, lexicon.RECALL_REQUEST)
        if recall_request and words & lexicon.SELF_WORDS:
            author.signals.add("explicit_recall")
            author.explicit = True
        if words & self.bot_words:
            author.signals.add("bot_mention")
        question = _is_question(text, norm, self.bot_words)
        slots = self._slots(text, norm, question=question)
        author.asks |= slots
        if question:
            author.signals.add("question")
        if lexicon.URL.search(text) or words & lexicon.MEDIA_WORDS:
            author.signals.add("media")
        if len(content_terms(norm, exclude=self.bot_words)) >= 2:  # one word or emote spam: no
            author.signals.add("active")
        named, names = self._mentions(
            text, local, author_id=event.user_id, stream=event.stream, question=question
        )
        if (
            question
            and not words & (lexicon.SELF_PRONOUNS if named else lexicon.SELF_WORDS)
            and (named or (words & self.bot_words and self._about_stream(norm, words)))
        ):
            author.questions_elsewhere += 1
        for login, user_id in named:
            other = candidates.get(user_id)
            if other is None:
                other = candidates[user_id] = _Candidate(login, user_id, order)
            other.signals.add("mentioned_by_viewer")
            other.mentions.append(
                _Mention(text=text, recall_request=recall_request, names=names, asks=slots)
            )

    def _viewer_sources(self, candidate: _Candidate) -> list[models.PlannedSource]:
        def source(
            kind: str, query: str, explicit: bool, asks: frozenset[str]
        ) -> models.PlannedSource:
            return models.PlannedSource(
                kind=kind,
                viewer=candidate.login,
                user_id=candidate.user_id,
                query=query,
                explicit=explicit,
                broad=explicit
                and not content_terms(context.normalize(query), exclude=self.bot_words),
                asks=asks,
            )

        if candidate.texts and candidate.questions_elsewhere >= len(candidate.texts):
            if not candidate.mentions:
                # every message asks about someone else (or the bot): the asker's own memories
                # would only crowd the answer out (synthetic stream: "what is @giulia's hobby?"
                # showed the asker's hobby first)
                return []
            candidate.texts.clear()  # named by others too: searched with their words
        if candidate.texts:
            # the viewer's own messages: their words are the query of their own space
            query = _query(candidate.texts)
            explicit = candidate.explicit
            asks = frozenset(candidate.asks)
        else:
            # named by others: the others' words (minus the names) only search this viewer's space
            query = _query(
                " ".join(
                    w
                    for w in context.normalize(m.text).split()
                    if w not in m.names and w not in self.bot_words
                )
                for m in candidate.mentions
            )
            explicit = any(m.recall_request for m in candidate.mentions)
            asks = frozenset().union(*(m.asks for m in candidate.mentions))
        sources = [source("profile", query, explicit, asks)] if self.use_profile else []
        wants_recall = bool(query) if not self.rank_viewers else explicit
        if wants_recall or content_terms(context.normalize(query), exclude=self.bot_words):
            sources.append(source("recall", query, explicit, asks))
        return sources

    def _slots(self, text: str, norm: str, *, question: bool | None = None) -> frozenset[str]:
        """The profile slots ``text`` asks for (``memory.recall.asked``) when it is a question; a
        statement asks for none ("greetings from Dublin, where I live")."""
        if question is None:
            question = _is_question(text, norm, self.bot_words)
        return asked.slots(norm) if question else frozenset()

    def _stream_sources(
        self, batch: models.Batch, history: Sequence[models.HistoryItem]
    ) -> list[models.PlannedSource]:
        history_stems = {
            _stem(word) for item in history for word in context.normalize(item.text).split()
        }
        chat = [
            event for event in batch.chat if not self._is_bot(event.user_id) and event.text.strip()
        ]
        # the batch addresses the bot: its questions about the bot's feelings and tastes are lore
        addressed = any(set(context.normalize(e.text).split()) & self.bot_words for e in chat)
        episodic: list[str] = []
        lore: list[str] = []
        state: list[str] = []
        # the slots each message of a stream-wide source asks for (memory.recall.asked)
        asks: dict[str, list[frozenset[str]]] = {"episodic": [], "lore": []}
        for event in chat:
            norm = context.normalize(event.text)
            slots = self._slots(event.text, norm)
            terms = self._episodic_terms(event.text, norm) if self.use_episodic else None
            if terms is not None and not _covered(terms, history_stems):
                episodic.append(" ".join(terms) if terms else event.text)
                asks["episodic"].append(slots)
            if self._lore_reference(norm, addressed=addressed):
                lore.append(event.text)
                asks["lore"].append(slots)
            if state_domains(event.text):
                state.append(event.text)
        sources: list[models.PlannedSource] = []
        if episodic:
            sources.append(
                models.PlannedSource(
                    kind="episodic", query=_query(episodic), asks=_only(asks["episodic"])
                )
            )
        if lore:
            sources.append(
                models.PlannedSource(kind="lore", query=_query(lore), asks=_only(asks["lore"]))
            )
        if state:
            sources.append(models.PlannedSource(kind="state", query=_query(state)))
        return sources

    def _episodic_terms(self, text: str, norm: str) -> list[str] | None:
        """The key terms of a reference to earlier in the stream, or of a question put to the bot
        (what was said in the stream may answer it: LoCoMo's development half, R@5 0.513 → 0.582,
        a third of the evidence missed was said *to* the viewer asked about, not by them); None
        when it is neither."""
        words = set(norm.split())
        self_recall = _has(norm, lexicon.RECALL_REQUEST) and bool(words & lexicon.SELF_WORDS)
        question = _is_question(text, norm, self.bot_words)
        if question and words & self.bot_words and not self_recall:
            return content_terms(norm, exclude=self.bot_words) or None
        if (
            _has(norm, lexicon.TIME_REFERENCE)
            or (question and _has(norm, lexicon.WEAK_TIME_REFERENCE))
            or (_has(norm, lexicon.REMEMBER_REFERENCE) and not self_recall)
            or (words & self.bot_words and earlier.asks_bot_words(text))
        ):
            return content_terms(norm, exclude=self.bot_words)
        return None

    def _lore_reference(self, norm: str, *, addressed: bool) -> bool:
        """A canon name, a question about the bot's story, or (to the bot) about itself."""
        if _has(norm, self.lore_entities) or _has(norm, lexicon.SELF_STORY):
            return True
        if not addressed:
            return False
        words = set(norm.split())
        if _has(norm, lexicon.RECALL_REQUEST) and words & lexicon.SELF_WORDS:
            return False  # "what do you remember about me": explicit recall, not lore
        # "what do you run on?": the bot itself is what is asked about (lore is cheap to search)
        return self._bot_story(norm, words) or bool(
            words & lexicon.YOU_WORDS and not words & lexicon.SELF_WORDS
        )

    def _about_stream(self, norm: str, words: set[str]) -> bool:
        """A question to the bot about the bot ("are you scared of anything?", "da dove vieni?")
        or about earlier in the stream ("what did chat say at the start about the lava pit?"):
        its answer is in the lore and the episodes, not in the asker's own memories (synthetic
        stream: the asker's profile was most of such a question's prompt)."""
        return (
            self._bot_story(norm, words)
            or _has(norm, lexicon.SELF_STORY)
            or _has(norm, lexicon.TIME_REFERENCE)
            or _has(norm, lexicon.WEAK_TIME_REFERENCE)
        )

    @staticmethod
    def _bot_story(norm: str, words: set[str]) -> bool:
        """About the bot's feelings and tastes ("are you scared…", "your favourite…")."""
        return _has(norm, lexicon.BOT_PERSONAL) or bool(
            words & lexicon.YOUR_WORDS and words & lexicon.FAVOURITE_WORDS
        )
