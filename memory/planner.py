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
* ``explicit`` marks sources whose failure the prompt must admit: a viewer asking what the bot
  remembers about them, or a viewer asking what the bot remembers about a named other viewer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory import context, identity, models

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence

    from config import settings as settings_module

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


def _phrases(text: str) -> tuple[str, ...]:
    """``"a b|c"`` → normalized phrases (the lexicons below are ``|``-separated)."""
    return tuple(context.normalize(part) for part in text.split("|") if part.strip())


#: asking the bot to recall something (EN + IT)
RECALL_REQUEST = _phrases(
    "do you remember|you remember|remember me|remember when|what do you know about|"
    "what do you remember|what you know about|did i tell you|did i ever tell you|i told you|"
    "ti ricordi|ricordi di me|ricordi quando|ricordi cosa|cosa sai di|che sai di|cosa ricordi|"
    "che ricordi|ti ho detto|te l'avevo detto|ti avevo detto"
)
#: the speaker talks about themself (EN + IT; Italian drops the pronoun, so first-person verbs too)
SELF_WORDS = frozenset(
    _phrases(
        "me|my|i|mine|myself|mi|mio|mia|miei|mie|io|m|faccio|sono|ho|abito|vivo|lavoro|studio|"
        "chiamo|avevo|dicevo"
    )
)
#: a reference to earlier in the stream (EN + IT)
TIME_REFERENCE = _phrases(
    "earlier|at the start|at the beginning|in the beginning|last time|you said|we talked|"
    "we were talking|all'inizio|poco fa|l'altra volta|hai detto|abbiamo parlato|"
    "stavamo parlando|dicevi"
)
#: weaker time words ("I was a nurse before" is no reference): they count only in a question
WEAK_TIME_REFERENCE = _phrases(
    "before|previously|a while ago|what happened|prima|cosa è successo|che è successo|"
    "cos'è successo"
)
#: "do you remember …" without a time word: earlier in the stream unless it is about the speaker
REMEMBER_REFERENCE = _phrases(
    "do you remember|you remember|remember what|remember when|ti ricordi|ricordi cosa|"
    "ricordi quando"
)
#: questions about the bot's own story or personality (EN + IT)
SELF_STORY = _phrases(
    "who made you|who created you|who built you|who are you|what are you|your story|"
    "your backstory|your personality|about yourself|where are you from|where do you come from|"
    "how old are you|your name|chi ti ha creato|chi ti ha fatto|chi ti ha programmato|chi sei|"
    "cosa sei|la tua storia|raccontami di te|parlami di te|da dove vieni|quanti anni hai|"
    "come ti chiami|il tuo carattere"
)
#: structured-state domains and the words that refer to them (EN + IT)
STATE_DOMAINS: dict[str, tuple[str, ...]] = {
    "requests": _phrases(
        "request|requests|requested|queue|song request|richiesta|richieste|coda|in coda"
    ),
    "relationships": _phrases(
        "sibling|siblings|brother|brothers|sister|sisters|cousin|cousins|married|husband|wife|"
        "girlfriend|boyfriend|related|fratello|fratelli|sorella|sorelle|cugino|cugina|cugini|"
        "sposati|marito|moglie|fidanzato|fidanzata|parenti"
    ),
    "notes": _phrases("note|notes|nota|appunto|appunti"),
    "jokes": _phrases(
        "inside joke|inside jokes|running joke|our joke|the joke|battuta|battute|tormentone|"
        "scherzo|barzelletta"
    ),
}
INTERROGATIVES = frozenset(
    _phrases(
        "who|what|where|when|why|how|which|whose|do|does|did|is|are|can|could|would|will|should|"
        "chi|cosa|dove|quando|perché|perche|come|quale|quali|quanto|quanti|quanta|sai|hai"
    )
)
MEDIA_WORDS = frozenset(_phrases("clip|video|screenshot|pic|photo|image|foto|immagine|link"))
_URL = re.compile(r"(https?://|www\.)\S+|\b[\w-]+\.(com|tv|gg|it|net|org|io|be|ly)/\S*", re.I)
#: words that carry no search content (EN + IT)
STOPWORDS = frozenset(
    _phrases(
        "the|a|an|and|or|but|of|to|in|on|at|for|with|about|from|that|this|these|those|it|its|is|"
        "are|was|were|be|been|do|does|did|have|has|had|you|your|we|our|they|them|he|she|his|her|"
        "what|who|where|when|why|how|which|there|here|then|than|so|just|really|very|can|could|"
        "would|will|should|not|no|yes|know|remember|said|say|tell|told|happened|start|beginning|"
        "before|earlier|again|time|last|while|ago|lol|hey|hi|hello|thanks|il|lo|la|gli|le|un|uno|"
        "una|di|da|con|su|per|tra|fra|che|non|sono|sei|era|hai|ho|ha|abbiamo|avete|hanno|del|"
        "della|dei|delle|al|alla|nel|nella|ti|ci|vi|si|ne|tu|lui|lei|noi|voi|loro|cosa|chi|dove|"
        "quando|perche|come|prima|inizio|all|detto|dire|dicevi|ricordi|ricordo|successo|sai|poco|"
        "fa|volta|altra|ciao|quel|quella|quello|questo|questa|anche|ancora|piu|molto|ok|okay|"
        "grazie|tutti|stai|sto|bene|me|my|i|mine|myself|mi|mio|mia|miei|mie|io|m"
    )
)


def _has(norm: str, phrases: Iterable[str]) -> bool:
    padded = f" {norm} "
    return any(f" {phrase} " in padded for phrase in phrases)


def _is_question(text: str, norm: str, skip: Collection[str] = ()) -> bool:
    """A question mark, or an interrogative first word (after the bot's name)."""
    first = next((word for word in norm.split() if word not in skip), "")
    return "?" in text or first in INTERROGATIVES


def state_domains(text: str) -> set[str]:
    """The structured-state domains a text refers to (``requests``, ``relationships``, ``notes``, ``jokes``)."""
    norm = context.normalize(text)
    return {domain for domain, words in STATE_DOMAINS.items() if _has(norm, words)}


def content_terms(norm: str, *, exclude: Collection[str] = ()) -> list[str]:
    """Search-worthy words of a normalized text, in order, without duplicates."""
    terms: list[str] = []
    for word in norm.split():
        if len(word) >= 3 and word not in STOPWORDS and word not in exclude and word not in terms:
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


@dataclass(slots=True)
class _Candidate:
    login: str
    user_id: str
    order: int
    texts: list[str] = field(default_factory=list)
    signals: set[str] = field(default_factory=set)
    explicit: bool = False
    #: (mentioning text, recall request) for a viewer named by another viewer
    mentions: list[tuple[str, bool]] = field(default_factory=list)

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
        Reads ``memory.max_viewers`` (hard maximum 5) and ``bot_name``.
    lore_entities:
        Names of canon entities (characters, places…) whose mention plans the ``lore`` source.
    bot_name:
        Overrides ``settings.bot_name``.
    """

    def __init__(
        self,
        settings: settings_module.Settings,
        lore_entities: Collection[str] = (),
        bot_name: str | None = None,
    ) -> None:
        self.max_viewers = min(settings.memory.max_viewers, HARD_MAX_VIEWERS)
        self.bot_login = identity.normalize_login(bot_name or settings.bot_name)
        self.bot_words = {self.bot_login, context.normalize(bot_name or settings.bot_name)} - {""}
        # the bot's own name is a mention of the bot, not a lore reference (its story is asked for)
        self.lore_entities = tuple(
            sorted({n for n in (context.normalize(e) for e in lore_entities) if n} - self.bot_words)
        )

    def plan(self, batch: models.Batch, history: Sequence[models.HistoryItem]) -> models.Plan:
        known = self._known_viewers(batch, history)
        candidates: dict[str, _Candidate] = {}
        for order, event in enumerate(batch.chat):
            if identity.normalize_login(event.login) == self.bot_login:
                continue
            self._score_event(event, order, candidates, known)
        selected = sorted(
            (c for c in candidates.values() if c.signals),
            key=lambda c: (-c.score, -len(c.texts), c.order, c.login),
        )[: self.max_viewers]
        sources: list[models.PlannedSource] = []
        for candidate in selected:
            sources.extend(self._viewer_sources(candidate))
        sources.extend(self._stream_sources(batch, history))
        viewers = tuple(
            models.PlannedViewer(
                login=c.login, user_id=c.user_id, score=c.score, signals=c.ordered_signals()
            )
            for c in selected
        )
        return models.Plan(viewers=viewers, sources=tuple(sources))

    def _known_viewers(
        self, batch: models.Batch, history: Sequence[models.HistoryItem]
    ) -> dict[str, tuple[str, str]]:
        """Normalized login → (login, user id), from the history then the batch (newest wins)."""
        known: dict[str, tuple[str, str]] = {}
        for item in history:
            if item.login and item.user_id:
                known[identity.normalize_login(item.login)] = (item.login, item.user_id)
        for event in batch.events:
            known[identity.normalize_login(event.login)] = (event.login, event.user_id)
        known.pop(self.bot_login, None)
        return known

    def _score_event(
        self,
        event: models.ChatEvent,
        order: int,
        candidates: dict[str, _Candidate],
        known: dict[str, tuple[str, str]],
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
        recall_request = _has(norm, RECALL_REQUEST)
        mentioned = self._mentions(
            text, norm, known, author_key=identity.normalize_login(event.login)
        )
        if recall_request and words & SELF_WORDS:
            author.signals.add("explicit_recall")
            author.explicit = True
        if words & self.bot_words:
            author.signals.add("bot_mention")
        if _is_question(text, norm, self.bot_words):
            author.signals.add("question")
        if _URL.search(text) or words & MEDIA_WORDS:
            author.signals.add("media")
        if len(content_terms(norm, exclude=self.bot_words)) >= 2:  # one word or emote spam: no
            author.signals.add("active")
        for login_key in mentioned:
            login, user_id = known[login_key]
            if user_id == event.user_id:
                continue
            other = candidates.get(user_id)
            if other is None:
                other = candidates[user_id] = _Candidate(login, user_id, order)
            other.signals.add("mentioned_by_viewer")
            other.mentions.append((text, recall_request))

    def _mentions(
        self, text: str, norm: str, known: dict[str, tuple[str, str]], *, author_key: str
    ) -> list[str]:
        """Known viewers named in a message: ``@login`` always, a bare login of 4+ characters."""
        at_names = {identity.normalize_login(m) for m in re.findall(r"@(\w+)", text)}
        words = set(norm.split())
        found = [
            key
            for key in known
            if key != author_key and (key in at_names or (len(key) >= 4 and key in words))
        ]
        return sorted(found)

    def _viewer_sources(self, candidate: _Candidate) -> list[models.PlannedSource]:
        def source(kind: str, query: str, explicit: bool) -> models.PlannedSource:
            return models.PlannedSource(
                kind=kind,
                viewer=candidate.login,
                user_id=candidate.user_id,
                query=query,
                explicit=explicit,
            )

        if candidate.texts:
            # the viewer's own messages: their words are the query of their own space
            query = _query(candidate.texts)
            explicit = candidate.explicit
        else:
            # named by others: the others' words (minus the name) only search this viewer's space
            drop = {identity.normalize_login(candidate.login), *self.bot_words}
            query = _query(
                " ".join(w for w in context.normalize(t).split() if w not in drop)
                for t, _ in candidate.mentions
            )
            explicit = any(request for _, request in candidate.mentions)
        sources = [source("profile", query, explicit)]
        if content_terms(context.normalize(query), exclude=self.bot_words) or explicit:
            sources.append(source("recall", query, explicit))
        return sources

    def _stream_sources(
        self, batch: models.Batch, history: Sequence[models.HistoryItem]
    ) -> list[models.PlannedSource]:
        history_stems = {
            _stem(word) for item in history for word in context.normalize(item.text).split()
        }
        episodic: list[str] = []
        lore: list[str] = []
        state: list[str] = []
        for event in batch.chat:
            if identity.normalize_login(event.login) == self.bot_login or not event.text.strip():
                continue
            norm = context.normalize(event.text)
            words = set(norm.split())
            self_recall = _has(norm, RECALL_REQUEST) and bool(words & SELF_WORDS)
            question = _is_question(event.text, norm, self.bot_words)
            if (
                _has(norm, TIME_REFERENCE)
                or (question and _has(norm, WEAK_TIME_REFERENCE))
                or (_has(norm, REMEMBER_REFERENCE) and not self_recall)
            ):
                terms = content_terms(norm, exclude=self.bot_words)
                if not _covered(terms, history_stems):
                    episodic.append(" ".join(terms) if terms else event.text)
            if _has(norm, self.lore_entities) or _has(norm, SELF_STORY):
                lore.append(event.text)
            if state_domains(event.text):
                state.append(event.text)
        sources: list[models.PlannedSource] = []
        if episodic:
            sources.append(models.PlannedSource(kind="episodic", query=_query(episodic)))
        if lore:
            sources.append(models.PlannedSource(kind="lore", query=_query(lore)))
        if state:
            sources.append(models.PlannedSource(kind="state", query=_query(state)))
        return sources
