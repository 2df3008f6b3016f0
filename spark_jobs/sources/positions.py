"""Where a query without a checkpoint starts: the runtime's start positions for a source.

Two options of every runtime-aware source carry them: ``start_offset`` (JSON of one offset of
this source, fixed when the query is defined) and ``start_offsets_file`` (a JSON file whose
``positions`` maps source ids to offsets, read when the query starts: a warm standby defines its
queries before the savepoint they start from exists). ``start_offset`` wins when both are set.

A third, ``rehearsal``, marks the throwaway queries a warm standby runs to warm itself up: a
source then starts just before its newest data (:data:`REHEARSAL_RECORDS` records, or its
last file) instead of at its recorded or initial position, so the rehearsal reads a little.
"""

from __future__ import annotations

import json
from typing import Any

REHEARSAL_RECORDS = 200


def rehearsal(options: dict[str, str]) -> bool:
    """Whether the source belongs to a warm standby's rehearsal query."""
    return (options.get("rehearsal") or "").lower() == "true"


def recorded_start(options: dict[str, str], source_id: str) -> dict[str, Any] | None:
    """The recorded start offset of ``source_id`` from the source's options, if any."""
    inline = options.get("start_offset") or ""
    if inline:
        return dict(json.loads(inline))
    path = options.get("start_offsets_file") or ""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None
    found = (doc.get("positions") or {}).get(source_id)
    return dict(found) if found else None
