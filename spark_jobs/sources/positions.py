"""Where a query without a checkpoint starts: the runtime's start positions for a source.

Two options of every runtime-aware source carry them: ``start_offset`` (JSON of one offset of
this source, fixed when the query is defined) and ``start_offsets_file`` (a JSON file whose
``positions`` maps source ids to offsets, read when the query starts: a warm standby defines its
queries before the savepoint they start from exists). ``start_offset`` wins when both are set.

``gate_file`` holds a source back until the file exists: a warm standby starts (arms) its
queries before the savepoint is restored into their checkpoints. Spark creates every source
of a query (a Python process each), then asks each for its default read limit, and only then
reads the query's checkpoint to find where to resume; a reader that waits for the gate when
asked for its read limit keeps the query there, its sources up, until the gate opens.

Another, ``rehearsal``, marks the throwaway queries a warm standby runs to warm itself up: a
source then starts just before its newest data (:data:`REHEARSAL_RECORDS` records, or its
last file) instead of at its recorded or initial position, so the rehearsal reads a little.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

REHEARSAL_RECORDS = 200


def gate_waiting_dir(gate_file: str | Path) -> Path:
    """Where a source held at ``gate_file`` leaves a mark (its pid): the driver counts them to
    know its armed queries are up."""
    return Path(f"{gate_file}.waiting")


def wait_for_gate(options: dict[str, str], poll: float = 0.02) -> None:
    """Block until the source's ``gate_file`` exists (at once without one). A reader whose
    driver died meanwhile (its parent process changed) exits instead of waiting forever."""
    gate = options.get("gate_file") or ""
    if not gate or os.path.exists(gate):
        return
    waiting = gate_waiting_dir(gate)
    waiting.mkdir(parents=True, exist_ok=True)
    (waiting / str(os.getpid())).touch()
    parent = os.getppid()
    while not os.path.exists(gate):
        if os.getppid() != parent:
            raise SystemExit(f"the driver of this source ended before {gate} was created")
        time.sleep(poll)


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
