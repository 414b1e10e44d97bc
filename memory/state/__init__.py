"""Canonical channel state in Postgres and the model tools that change it.

Owns the state tables' store (``channel``), their records (``records``), the tool runner
(``tools``), validated tool arguments (``tool_args``) and the handlers (``tool_handlers``). Imports
the shared top level only.
"""

from __future__ import annotations
