"""What the consolidation filter (``memory.consolidate.noise``) keeps of a case, against its gold.

* ``evidence_kept`` — the share of the probes' evidence messages (about a viewer: not lore, not
  episodic moments) that the filter keeps as a personal memory. Evidence it drops can never be
  recalled from the viewer's space. Goal ≥ 0.95 on LoCoMo.
* ``noise_stored`` — the share of the gold noise (chat noise and claims about other viewers,
  synthetic stream) that the filter would store as its author's memory. Goal ≤ 0.05.

Each message is judged as the consolidation judges it (``noise.classify`` with the bot's name, and
the message before it in the same stream as context), not re-implemented here.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from memory import models
from memory.consolidate import noise
from memory.eval import harness, metrics

if TYPE_CHECKING:
    from collections.abc import Collection

#: probe kinds whose evidence is not a personal statement
NOT_PERSONAL = frozenset({"lore", "episodic"})


def verdicts(case: harness.Case, ids: Collection[str]) -> dict[str, noise.Verdict]:
    """The filter's verdict on each message of ``ids`` (chat messages of the case only)."""
    wanted = set(ids)
    out: dict[str, noise.Verdict] = {}
    previous: dict[str, models.ChatEvent] = {}
    for event in case.events:
        if event.id in wanted and event.kind is models.EventKind.MESSAGE:
            before = previous.get(event.stream)
            out[event.id] = noise.classify(
                event.text,
                bot_names=(harness.BOT_NAME,),
                previous=before.text if before and before.user_id != event.user_id else None,
            )
        if event.kind is models.EventKind.MESSAGE:
            previous[event.stream] = event
    return out


def _ratio(found: dict[str, noise.Verdict], keep: bool) -> dict[str, Any]:
    share = metrics.Ratio(hits=sum(1 for v in found.values() if v.keep is keep), total=len(found))
    return {"value": share.value, "hits": share.hits, "total": share.total}


def shares(case: harness.Case) -> dict[str, Any]:
    """``evidence_kept`` and ``noise_stored`` (ratios with counts), and the drop reasons of the
    evidence the filter lost."""
    evidence = {
        mid for probe in case.probes if probe.kind not in NOT_PERSONAL for mid in probe.evidence_ids
    }
    kept = verdicts(case, evidence)
    stored = verdicts(case, case.noise_ids)
    return {
        "evidence_kept": _ratio(kept, True),
        "noise_stored": _ratio(stored, True),
        "evidence_dropped_by": dict(
            Counter(v.reason for v in kept.values() if not v.keep).most_common()
        ),
    }
