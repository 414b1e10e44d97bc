"""The write path: from a finished turn to durable memory, in the background.

Owns the Postgres job queue (``jobs``), the workers and their command line (``worker``,
``worker_cli``), consolidation (``consolidation``: split by author, the documents of ``documents``),
the noise filter (``noise``), optional fact condensation (``facts``), viewer profiles (``profile``),
the ingestion barrier (``barrier``) and per-viewer locks (``viewer_lock``). Imports the shared top
level, ``spaces`` and ``history``; exposes job handlers to the composition root.
"""

from __future__ import annotations
