"""A log-log plot of the embedded store's costs against audience size from measured rows, one series per store.

    .venv/bin/python scripts/plot_scale.py [--points docs/evaluation/scale_points.json] \
        [--out docs/evaluation/scale.png]

``--points``: ``{"audience": [row, …], "ingest": [row, …]}``. An audience row is what
``scripts/bench_store.py --json`` writes (start-up, ``inspect``, a new viewer's first memory, the
memory stage) plus ``series`` (the store it measured) and ``source`` (where the figures come from:
a command and its run, or the section of ``docs/evaluation.md`` they were copied from); an ingest
row is one of ``scale.ingest_cost``'s. Needs matplotlib (the ``report`` extra).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from memory.eval import scale

DOCS = Path(__file__).resolve().parent.parent / "docs" / "evaluation"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--points", type=Path, default=DOCS / "scale_points.json")
    parser.add_argument("--out", type=Path, default=DOCS / "scale.png")
    args = parser.parse_args()
    data = json.loads(args.points.read_text(encoding="utf-8"))
    print(f"plot: {scale.plot(data, args.out)}")


if __name__ == "__main__":
    main()
