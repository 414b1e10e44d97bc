"""Add the ``meta`` that ``python -m memory.eval report --from`` shows to a results file written
without one (by ``--json`` of an older checkout): the command, the embedder, the commit, when.

    .venv/bin/python scripts/stamp_results.py FILE --embedder e5-small-q4-v1:384 \
        --command "python -m memory.eval quality --sources locomo --embedder e5" \
        [--commit SHA] [--seconds N] [--finished-at ISO]

A file that has ``meta`` already keeps it, but for the fields given.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from memory.eval import report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("file", type=Path)
    parser.add_argument(
        "--embedder", required=True, help="the embedder's name, e.g. offline-hash-v1:384"
    )
    parser.add_argument("--command", required=True, help="the command that wrote the file")
    parser.add_argument("--commit", default=None)
    parser.add_argument("--seconds", type=float, default=None, help="how long the command ran")
    parser.add_argument("--finished-at", default=None, help="ISO time (default: the file's mtime)")
    args = parser.parse_args()
    try:
        data = json.loads(args.file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"error: {args.file}: {exc}", file=sys.stderr)
        return 2
    finished = args.finished_at or datetime.fromtimestamp(args.file.stat().st_mtime, UTC).isoformat(
        timespec="seconds"
    )
    meta = dict(data.get("meta") or {})
    meta.update({"command": args.command, "embedder": args.embedder, "finished_at": finished})
    meta.setdefault("hardware", report.hardware())
    if args.commit:
        meta["commit"] = args.commit
    if args.seconds is not None:
        meta["wall_seconds"] = args.seconds
    data = {"meta": meta, **{k: v for k, v in data.items() if k != "meta"}}
    args.file.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{args.file}: meta {json.dumps({k: v for k, v in meta.items() if k != 'hardware'})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
