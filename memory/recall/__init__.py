"""The read path: what a turn consults before the model answers.

Owns the deterministic planner (``planner``, its word lists ``planner_words``), the viewers known to
the channel (``directory``), the source fetchers (``sources``: profile, personal recall, episodic,
lore, state), parallel retrieval under a budget with caches and single-flight (``retrieval``,
``cache``) and the memory block of the prompt (``context``). Exposes the ``Planner`` and
``Retriever`` ports of ``memory.ports``. Imports the shared top level, ``spaces`` and
``consolidate.profile`` (read side); never the write path's worker or queue.
"""

from __future__ import annotations
