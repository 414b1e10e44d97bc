"""What was said: the append-only transcript and the working history built from it.

Owns the transcript (``transcript``), the JSON Lines transcript files (``transcript_file``), the
working history (``working``, in-process; Redis in ``adapters.redis``), the reducers that fit it to
the prompt (``reducers``) and the batcher (``batcher``). Imports the shared top level only; exposes
the ``WorkingHistory`` and ``Reducer`` ports.
"""

from __future__ import annotations
