"""A cheaper first import of qdrant-client: its models' schemas are built when first used.

``import qdrant_client`` runs ``qdrant_client/http/__init__.py``, which calls ``model_rebuild`` on
every one of the ~340 pydantic models of the REST API whose forward references were left open
(``_pydantic_compat.update_forward_refs``): 0.25-0.6 s of every process's start-up
(``python -X importtime``), for a bot that uses a dozen of them. Pydantic 2 finishes such
a model by itself the first time it is validated or built, from the same module namespace, so the
eager pass is skipped: ``install`` loads qdrant-client's own ``_pydantic_compat`` module before
the package and replaces that one function with one that does nothing. Everything else of the
module is qdrant-client's. Pydantic 1, a qdrant-client without that module or function, or a
qdrant-client already imported: nothing is changed (the usual, slower import).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

_COMPAT = "qdrant_client._pydantic_compat"


def _deferred(model_class: Any, *args: Any, **kwargs: Any) -> None:
    """Pydantic 2 rebuilds an incomplete model on its first use."""


def install() -> bool:
    """Returns whether the eager rebuild is skipped in this process."""
    if "qdrant_client" in sys.modules or _COMPAT in sys.modules:
        return False
    import pydantic

    package = importlib.util.find_spec("qdrant_client")
    if not pydantic.VERSION.startswith("2.") or package is None or package.origin is None:
        return False
    spec = importlib.util.spec_from_file_location(
        _COMPAT, Path(package.origin).with_name("_pydantic_compat.py")
    )
    if spec is None or spec.loader is None:
        return False
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (OSError, ImportError):
        return False
    if not callable(getattr(module, "update_forward_refs", None)):
        return False
    setattr(module, "update_forward_refs", _deferred)
    sys.modules[_COMPAT] = module
    return True
