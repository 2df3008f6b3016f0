"""The map of the floors: which room imports which, rendered into ``docs/architecture.md``.

A *room* is what :func:`import_cycles.folder` says a module counts in (a subpackage of
``streamops``, ``streamops_contract`` or ``spark_jobs``, one of their top-level modules, the
``streamops_airflow`` package, the ``dags`` folder). A room's floor is one above the highest
room it imports (floor 1 imports no room of the project), so every import goes down.
:func:`render` writes one line per room: its floor, what it owns (the first sentence of its
docstring) and the rooms it imports. ``scripts/import_cycles.py --write-map`` puts it between
:data:`BEGIN` and :data:`END` in the doc; without the flag the check fails when the section
there differs from what it would write, so the map cannot go stale.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

BEGIN = "<!-- import-map:begin (scripts/import_cycles.py --write-map writes it; do not edit) -->"
END = "<!-- import-map:end -->"
OWNS_MAX = 110
OWNS_FALLBACK = {"dags": "the Airflow DAGs, one per file (dag_id = file stem)"}

RoomGraph = dict[str, set[str]]


def room_graph(graph: Mapping[str, Mapping[str, int]], folder: Callable[[str], str]) -> RoomGraph:
    """Room -> the rooms it imports (a room's imports of its own package's ``__init__``, or of
    an enclosing room, left out: a package's body is not a floor of its own)."""
    rooms: RoomGraph = {}
    for module, targets in graph.items():
        a = folder(module)
        if "." not in module and not targets:
            continue  # a package's bare __init__ (``streamops``): no room of its own
        deps = rooms.setdefault(a, set())
        for target in targets:
            b = folder(target)
            if b != a and not a.startswith(b + "."):
                deps.add(b)
    return rooms


def floors(rooms: RoomGraph) -> tuple[dict[str, int], list[str]]:
    """Each room's floor, and the rooms caught in a circle of rooms (no floor: they fail)."""
    floor: dict[str, int] = {}
    stuck: list[str] = []
    visiting: set[str] = set()

    def visit(room: str) -> int:
        if room in floor:
            return floor[room]
        if room in visiting:
            stuck.append(room)
            return 0
        visiting.add(room)
        below = [visit(dep) for dep in sorted(rooms.get(room, ())) if dep in rooms]
        visiting.discard(room)
        floor[room] = 1 + max(below, default=0)
        return floor[room]

    for room in sorted(rooms):
        visit(room)
    return floor, sorted(set(stuck))


def owns(room: str, files: Mapping[str, Path]) -> str:
    """The first sentence of the room's docstring (its package's ``__init__``, or the module
    itself), shortened to :data:`OWNS_MAX` characters."""
    path = files.get(room)
    doc = ast.get_docstring(ast.parse(path.read_text())) if path else None
    if not doc:
        return OWNS_FALLBACK.get(room, "")
    text = " ".join(doc.split("\n\n")[0].split())
    text = re.split(r"(?<=[a-z)`])\. ", text)[0].rstrip(".")
    if len(text) > OWNS_MAX:
        cut = text[: OWNS_MAX - 1]
        text = cut[: cut.rfind(" ")].rstrip(",;:") + " …"
    return text.replace("|", "\\|")


def render(
    graph: Mapping[str, Mapping[str, int]], files: Mapping[str, Path],
    folder: Callable[[str], str], packages: Mapping[str, Sequence[str]],
) -> str:  # fmt: skip
    """The section between the markers: the top-level packages and what each may import,
    then one line per room, lowest floor first."""
    rooms = room_graph(graph, folder)
    floor, _ = floors(rooms)
    lines = [BEGIN, "", "| top-level package | may import |", "|---|---|"]
    for package, allowed in packages.items():
        lines.append(f"| `{package}` | {', '.join(f'`{p}`' for p in allowed) or 'nothing'} |")
    lines += ["", "| floor | room | owns | imports |", "|---|---|---|---|"]
    for room in sorted(rooms, key=lambda r: (floor.get(r, 0), r)):
        deps = ", ".join(f"`{d}`" for d in sorted(rooms[room])) or "nothing"
        lines.append(f"| {floor.get(room, '?')} | `{room}` | {owns(room, files)} | {deps} |")
    return "\n".join([*lines, "", END])


def current(doc: str) -> str | None:
    """The section now in ``doc`` (markers included), or ``None`` without the markers."""
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < start:
        return None
    return doc[start : end + len(END)]


def write(doc_path: Path, section: str) -> bool:
    """Put ``section`` between the markers of ``doc_path``; whether it changed. Raises
    ``ValueError`` when the doc has no markers."""
    doc = doc_path.read_text()
    old = current(doc)
    if old is None:
        raise ValueError(f"{doc_path}: no {BEGIN!r} ... {END!r} markers")
    if old == section:
        return False
    doc_path.write_text(doc.replace(old, section, 1))
    return True
