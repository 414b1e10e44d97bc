"""Ablations: the full system against versions each missing one piece, in one table.

Each ablation is a set of settings overrides. An ablation whose switch the settings do not have (yet)
is reported as skipped with the missing setting named, never silently run as the full system. The
naive design (one shared space, whole history) is also measured with the in-process reference
``memory.eval.naive``, which needs no switch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory.eval import harness

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Ablation:
    name: str
    description: str
    #: section → field → value
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: ``full`` (the real system with the overrides) or ``naive`` (the reference design)
    system: str = "full"


ABLATIONS: tuple[Ablation, ...] = (
    Ablation(name="full", description="the full system (defaults)"),
    Ablation(
        name="no_profile",
        description="no viewer profile source",
        overrides={"memory": {"use_profile": False}},
    ),
    Ablation(
        name="no_episodic",
        description="no episodic memory (no stream space written or read)",
        overrides={"memory": {"use_episodic": False}},
    ),
    Ablation(
        name="no_viewer_ranking",
        description="every viewer of the batch is recalled, unranked",
        overrides={"memory": {"rank_viewers": False}},
    ),
    Ablation(
        name="no_dedup",
        description="context assembly keeps duplicates and what the history already shows",
        overrides={"memory": {"dedupe": False}},
    ),
    Ablation(
        name="no_attribution_split",
        description="one shared space for every viewer's messages (the naive layout)",
        overrides={"memory": {"attribution_split": False}},
    ),
    Ablation(
        name="naive_reference",
        description="reference naive design: one shared store by word overlap, whole history",
        system="naive",
    ),
    *(
        Ablation(
            name=f"reducer_{reducer}",
            description=f"history reducer '{reducer}'",
            overrides={"history": {"reducer": reducer}},
        )
        for reducer in ("none", "counting", "tokens", "turns")
    ),
)
#: ``summarizing`` needs a chat model; evaluations run without one (``--no-llm``)
NOT_RUN = {
    "reducer_summarizing": "the summarizing reducer needs a chat model; evaluations run --no-llm"
}

QUICK = ("full", "no_attribution_split", "naive_reference")


def missing_settings(ablation: Ablation) -> list[str]:
    """The ``section.field`` switches the settings lack for ``ablation`` (empty: it can run)."""
    from config import settings as settings_module

    missing: list[str] = []
    sections = settings_module.Settings.model_fields
    for section, values in ablation.overrides.items():
        info = sections.get(section)
        model = info.annotation if info is not None else None
        fields = getattr(model, "model_fields", {})
        missing.extend(f"{section}.{name}" for name in values if name not in fields)
    return missing


@dataclass(slots=True, kw_only=True)
class Row:
    ablation: Ablation
    result: harness.Result | None = None
    skipped: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.ablation.name,
            "description": self.ablation.description,
            "overrides": {k: dict(v) for k, v in self.ablation.overrides.items()},
            "skipped": self.skipped,
            "result": self.result.to_json() if self.result else None,
        }


async def run(
    case: harness.Case,
    *,
    names: Sequence[str] | None = None,
    base: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Row]:
    """Run the chosen ablations (all by default) on ``case``; ``base``: overrides applied to every
    full-system run (e.g. a smaller history cap in quick mode)."""
    rows = []
    for ablation in ABLATIONS:
        if names is not None and ablation.name not in names:
            continue
        rows.append(await run_one(case, ablation, base=base))
    return rows


async def run_one(
    case: harness.Case, ablation: Ablation, *, base: Mapping[str, Mapping[str, Any]] | None = None
) -> Row:
    if ablation.system == "naive":
        reports = await harness.run_naive(case)
        return Row(ablation=ablation, result=harness.score(case, reports, config=ablation.name))
    missing = missing_settings(ablation)
    if missing:
        reason = f"needs setting(s) {', '.join(missing)}"
        logger.warning("ablation %s skipped: %s", ablation.name, reason)
        return Row(ablation=ablation, skipped=reason)
    overrides: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (base or {}).items()}
    for section, values in ablation.overrides.items():
        overrides.setdefault(section, {}).update(values)
    reports = await harness.run_full_isolated(case, overrides=overrides)
    budget = float(overrides.get("memory", {}).get("budget_ms", 1000))
    return Row(
        ablation=ablation,
        result=harness.score(case, reports, config=ablation.name, budget_ms=budget),
    )
