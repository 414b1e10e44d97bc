"""Secrets and personal data out of chat text, at ingestion, before anything is written anywhere.

Each kind is replaced by a placeholder (``[redacted:email]``); the original is never kept. What
finds what:

* ``token`` — Twitch ``oauth:`` tokens (our pattern) and the key shapes of ``detect-secrets``' regex
  plugins (JWTs, AWS, GitHub, GitLab, Slack, Stripe, OpenAI, Discord, Telegram, npm, PyPI, SendGrid,
  Twilio, private key headers, credentials in URLs, …).
* ``password`` — a password, PIN or passcode *stated* in chat, EN and IT phrasings ("my password is
  X", "pw: X", "la mia password è X", "il pin è 1234"): the word after the phrase goes.
* ``card`` — 13–19 digit runs (spaces or dashes allowed) that pass the Luhn check (``python-stdnum``).
* ``iban`` — IBANs with a valid checksum (``python-stdnum``).
* ``email`` — addresses of the usual shape (a regex).
* ``phone`` — numbers ``phonenumbers`` (Google's libphonenumber) finds *valid* for one of the
  configured regions, or in international ``+`` form.

Not caught: secrets without a known shape or phrasing ("it's hunter2, don't tell"), high-entropy
strings in general (too many false positives in chat), numbers spelled in words, obfuscated e-mails
("alice at example dot com"), postal addresses and names.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from config.settings import RedactionSettings


class Kind(enum.StrEnum):
    TOKEN = "token"
    PASSWORD = "password"
    IBAN = "iban"
    CARD = "card"
    EMAIL = "email"
    PHONE = "phone"


def placeholder(kind: Kind | str) -> str:
    return f"[redacted:{kind}]"


#: anything already redacted is left alone
_PLACEHOLDER = re.compile(r"\[redacted:[a-z]+\]")
_TWITCH_TOKEN = re.compile(r"\boauth:[A-Za-z0-9]{20,}\b", re.IGNORECASE)
#: detect-secrets plugins that are not about secrets in chat
_SKIPPED_PLUGINS = frozenset({"IPPublicDetector"})
#: words that name a secret; after them, a verb or ``:``/``=`` and then the secret
_SECRET_WORDS = (
    r"password|passwd|passcode|passphrase|pass ?word|pwd|pw|pin(?: ?code)?|"
    r"codice(?: pin| segreto| di accesso)|parola d'ordine"
)
_VERB = r"is|was|=|:|è|e'|é|era|sarebbe|it's|its|sono"
_PASSWORD = re.compile(
    rf"\b(?:{_SECRET_WORDS})\b(?:\s+(?:{_VERB})\s*|\s*[:=]\s*)(?P<secret>[^\s,;]+)",
    re.IGNORECASE,
)
#: the long words may be followed by the secret directly ("password hunter2", "pwd 1234")
_PASSWORD_BARE = re.compile(
    r"\b(?:password|passwd|passcode|pwd)\s+(?P<secret>[^\s,;]*\d[^\s,;]*)", re.IGNORECASE
)
#: "the secret value" must not be a filler word ("my password is too long")
_NOT_SECRETS = frozenset(
    {
        "is",
        "was",
        "the",
        "a",
        "an",
        "my",
        "too",
        "not",
        "non",
        "very",
        "so",
        "il",
        "la",
        "lo",
        "un",
        "una",
        "mia",
        "mio",
        "troppo",
        "molto",
        "è",
        "e",
        "ok",
        "reset",
        "changed",
        "cambiata",
        "scaduta",
        "expired",
        "wrong",
        "sbagliata",
        "forgotten",
        "dimenticata",
        "lunga",
        "long",
        "strong",
        "in",
        "on",
        "under",
        "here",
        "there",
        "sotto",
        "nel",
        "nella",
        "qui",
        "lì",
        "weak",
        "for",
        "per",
        "of",
        "di",
        "and",
        "manager",
        "?",
        "!",
    }
)
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b", re.IGNORECASE)
_DIGIT = re.compile(r"\d")
#: fewer digits than this in a line: no phone number, IBAN or card can be there
MIN_PHONE_DIGITS = 6
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")


@dataclass(frozen=True, slots=True)
class Redacted:
    """A text with its secrets replaced, and the kinds that were found (in order, once each)."""

    text: str
    kinds: tuple[str, ...] = ()


@functools.cache
def _secret_patterns() -> tuple[re.Pattern[str], ...]:
    # imported on first use: ~0.6 s that admin commands and workers never pay
    from detect_secrets.core.plugins import util as detect_secrets_plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    patterns: list[re.Pattern[str]] = [_TWITCH_TOKEN]
    plugins: Iterable[type[object]] = (
        detect_secrets_plugins.get_mapping_from_secret_type_to_class().values()
    )
    for plugin in plugins:
        if issubclass(plugin, RegexBasedDetector) and plugin.__name__ not in _SKIPPED_PLUGINS:
            # ``denylist`` is a class attribute (a tuple of compiled patterns) on every plugin
            denylist: Iterable[re.Pattern[str]] = getattr(plugin, "denylist", ())
            patterns.extend(denylist)
    return tuple(patterns)


#: every key shape is a long run of non-space characters, a URL with credentials or a key header;
#: a chat line with none of these skips the ~50 patterns (most lines: ~10 µs instead of ~900 µs)
_MAYBE_TOKEN = re.compile(r"\S{12,}|://|PRIVATE KEY")
_RUN_END = re.compile(r"[^\s,;'\"]*")


def _tokens(text: str) -> Iterator[tuple[int, int]]:
    if not _MAYBE_TOKEN.search(text):
        return
    for pattern in _secret_patterns():
        for match in pattern.finditer(text):
            # a pattern may stop inside the token (a JWT's signature): take the run to its end
            end = _RUN_END.match(text, match.end())
            yield match.start(), end.end() if end else match.end()


def _passwords(text: str) -> Iterator[tuple[int, int]]:
    matches = [*_PASSWORD.finditer(text), *_PASSWORD_BARE.finditer(text)]
    for match in matches:
        secret = match.group("secret").strip(".!?\"'")
        if secret and secret.lower() not in _NOT_SECRETS and not _PLACEHOLDER.fullmatch(secret):
            start = match.start("secret")
            yield start, start + len(secret)


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    if len(_DIGIT.findall(text)) < MIN_PHONE_DIGITS:
        return
    from stdnum import iban  # on first use (its country data loads with it)

    for match in _IBAN.finditer(text):
        # the pattern may run on into the next words ("IT60… per"): the longest valid prefix
        # that ends on a group boundary
        candidate = match.group()
        while candidate:
            if iban.is_valid(candidate):
                yield match.start(), match.start() + len(candidate)
                break
            candidate = candidate.rpartition(" ")[0]


def _cards(text: str) -> Iterator[tuple[int, int]]:
    from stdnum import luhn

    for match in _CARD.finditer(text):
        digits = re.sub(r"[ -]", "", match.group())
        if 13 <= len(digits) <= 19 and luhn.is_valid(digits):
            yield match.span()


def _emails(text: str) -> Iterator[tuple[int, int]]:
    if "@" not in text:
        return
    for match in _EMAIL.finditer(text):
        yield match.span()


class Redactor:
    """Replaces secrets and personal data in chat text; ``enabled`` False: text passes unchanged."""

    def __init__(self, settings: RedactionSettings) -> None:
        self.enabled = settings.enabled
        self.regions = tuple(settings.phone_regions)
        finders: dict[Kind, Callable[[str], Iterable[tuple[int, int]]]] = {
            Kind.TOKEN: _tokens,
            Kind.PASSWORD: _passwords,
            Kind.IBAN: _ibans,
            Kind.CARD: _cards,
            Kind.EMAIL: _emails,
            Kind.PHONE: self._phones,
        }
        self.finders = [(Kind(kind), finders[Kind(kind)]) for kind in settings.kinds]

    def _phones(self, text: str) -> Iterator[tuple[int, int]]:
        if len(_DIGIT.findall(text)) < MIN_PHONE_DIGITS:
            return
        import phonenumbers  # on first use, like detect-secrets

        seen: set[tuple[int, int]] = set()
        for region in self.regions or ("ZZ",):
            leniency = phonenumbers.Leniency.VALID
            for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=leniency):
                span = (match.start, match.end)
                if span not in seen:
                    seen.add(span)
                    yield span

    def redact(self, text: str) -> Redacted:
        """``text`` with every enabled kind replaced by its placeholder (kinds in order of search)."""
        if not self.enabled or not text:
            return Redacted(text)
        found: list[str] = []
        for kind, finder in self.finders:
            spans = sorted(_merge(finder(text)), reverse=True)
            if not spans:
                continue
            for start, end in spans:
                text = text[:start] + placeholder(kind) + text[end:]
            found.append(kind.value)
        return Redacted(text, tuple(found))

    def redact_text(self, text: str) -> str:
        return self.redact(text).text


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping spans joined (two patterns may find the same secret)."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
