"""Operations on memory for people: inspect, export, forget, correct, pause, lore.

Owns the operations shared by the admin command and the chat commands (``operations``) and the admin
command line (``admin``; ``python -m memory.admin``). Imports every wing it operates on; nothing
imports it but the composition root and the entry points.
"""

from __future__ import annotations
