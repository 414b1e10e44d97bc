"""Running the project's commands as a user would: a subprocess with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "stream.jsonl"


@dataclass
class Result:
    code: int
    out: str
    err: str


def run(
    *args: str, env: dict[str, str], cwd: Path, stdin: str | None = None, timeout: float = 120
) -> Result:
    """``python -m <args>`` with only ``env`` (plus PATH/HOME) as its environment, running this
    checkout's code (``PYTHONPATH``: a shared virtualenv may have another checkout installed)."""
    base = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG", "TMPDIR"}}
    base["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", *args],
        env={**base, **env},
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)
