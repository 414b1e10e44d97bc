"""``python -m memory.worker``: the consolidation worker command (``memory.consolidate.worker_cli``).

Kept at this path because it is the documented command; the worker lives in ``memory.consolidate``.
"""

from __future__ import annotations

import sys

from memory.consolidate import worker_cli

if __name__ == "__main__":
    sys.exit(worker_cli.main())
