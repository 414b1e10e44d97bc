"""The in-process working history is itself the fake of ``ports.WorkingHistory``."""

from __future__ import annotations

from memory.history import working

InProcess = working.InProcessHistory
