"""The in-process working history is itself the fake of ``ports.WorkingHistory``."""

from __future__ import annotations

from memory import working

InProcess = working.InProcessHistory
