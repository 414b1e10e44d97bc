"""``python -m memory.admin``: the admin command (``memory.ops.admin``).

Kept at this path because it is the documented command; the operations live in ``memory.ops``.
"""

from __future__ import annotations

import sys

from memory.ops import admin

if __name__ == "__main__":
    sys.exit(admin.main())
