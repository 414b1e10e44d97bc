"""``python -m memory.admin``: the admin command (``memory.ops.admin``).

Kept at this path because it is the documented command; the operations live in ``memory.ops``.
"""

from __future__ import annotations

import gc
import sys

from memory.ops import admin

if __name__ == "__main__":
    # what the imports built lives as long as the process: out of the collector's walks,
    # during the run and in the collections of its exit (0.2 s of each start-up, measured)
    gc.freeze()
    sys.exit(admin.main())
