#!/usr/bin/env python3
"""Print the import circles among the project's own modules, the pairs of folders that import
each other, and the imports between top-level packages that their floors forbid.

A circle means two modules each need the other: usually a helper lives beside the wrong noun.
A two-way folder pair is the same at the scale of folders: a module of ``streamops/state/``
imports one of ``streamops/procedures/`` and another the other way round, so neither folder
stands below the other. A folder (a *room*) is a subpackage of ``streamops``,
``streamops_contract`` or ``spark_jobs`` (``streamops.state``), or the ``streamops_airflow``
package, or ``dags``; a top-level module (``streamops.settings``, ``spark_jobs.main``) is a
folder of its own.
At the scale of top-level packages (``streamops``, ``streamops_contract``, ``spark_jobs``,
``streamops_airflow``, ``dags``), two that import each other fail, and so does an import that
:data:`PACKAGE_FLOORS` does not allow: the job side and the operator meet only through the
contract. :data:`ALLOWED_CROSSINGS` lists, module by module, the crossings still allowed.
Imports inside functions count too (a lazy import hides a circle, it does not remove it), so
the graph is built from every ``import`` statement in each file's syntax tree, not from what
Python happens to execute; an import under ``if TYPE_CHECKING:`` counts too (a module that
needs another's type still depends on it) and is marked ``type only``. Each strongly connected
component of more than one module is one circle; its edges are listed with the line that
makes them, to show what to move.

The rooms' floors are the map in ``docs/architecture.md`` (:mod:`import_map`): ``--write-map``
writes it there; without it the check fails when the map there is not what it would write.

Usage: ``python scripts/import_cycles.py [--write-map] [--doc FILE] [root ...]`` (default
roots ``plugins spark_jobs dags``, relative to the repository, and then the map of
``docs/architecture.md`` is checked too). Exit status 1 when there is a circle, a two-way
pair, a forbidden crossing or a stale map, so it can guard a check (``scripts/test.sh`` runs
it).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from pathlib import Path

import import_map

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ROOTS = ("plugins", "spark_jobs", "dags")
DOC = REPO / "docs" / "architecture.md"
Graph = dict[str, dict[str, int]]  # module -> imported module -> first line importing it

PACKAGE_FLOORS: dict[str, tuple[str, ...]] = {
    # top-level package -> the project's top-level packages it may import
    "streamops_contract": (),
    "spark_jobs": ("streamops_contract",),
    "streamops": ("streamops_contract",),
    "streamops_airflow": ("streamops", "streamops_contract"),
    "dags": ("streamops_airflow", "streamops", "streamops_contract"),
}
ROOMED = ("streamops", "streamops_contract", "spark_jobs")  # their subpackages are rooms

ALLOWED_CROSSINGS: frozenset[tuple[str, str]] = frozenset({
    # A hot job's driver moves its own standby: it asks the master where the drivers run and
    # submits a standby in its place (docs/mechanisms/hot-standby.md). That is the operator's
    # submission (launcher jar, class archives, secrets), not a record of the contract; until
    # a request record lets the operator submit it, these four imports stay, and no other.
    ("spark_jobs.runtime.hot_standby", "streamops.cluster.client"),
    ("spark_jobs.runtime.hot_standby", "streamops.cluster.submission"),
    ("spark_jobs.runtime.hot_standby", "streamops.settings"),
    ("spark_jobs.runtime.placement", "streamops.cluster.client"),
})


def module_files(roots: Iterable[Path]) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under the roots; ``plugins/`` is a
    source folder (its packages import as top level), any other root is a package itself."""
    out: dict[str, Path] = {}
    for root in roots:
        base = root if root.name == "plugins" else root.parent
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """Candidate dotted names one import statement reaches (``from p import x`` may be a
    submodule ``p.x`` or a name in ``p``: both are offered, the caller keeps the real one)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([base] if base else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def type_only_lines(tree: ast.Module) -> set[int]:
    """Lines of the imports under ``if TYPE_CHECKING:`` (never executed)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING", "typing.TYPE_CHECKING"
        ):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        lines.add(sub.lineno)
    return lines


def build_graph(files: dict[str, Path]) -> tuple[Graph, dict[str, set[int]]]:
    """The import graph, and per module the lines of its type-only imports."""
    graph: Graph = {name: {} for name in files}
    type_only: dict[str, set[int]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        type_only[name] = type_only_lines(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in imported(node, name, path.name == "__init__.py"):
                # ``from pkg import sub`` reaches the submodule, not the package body
                if target in files and target != name and not (
                    isinstance(node, ast.ImportFrom)
                    and target == (node.module or "")
                    and all(f"{target}.{a.name}" in files for a in node.names)
                ):
                    graph[name].setdefault(target, node.lineno)
    return graph, type_only


def components(graph: Graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(sorted(members))
    return sorted(found)


def folder(module: str) -> str:
    """The folder a module counts in: ``streamops.state.lease`` -> ``streamops.state``,
    ``streamops.settings`` -> itself, ``streamops_airflow.hooks`` -> ``streamops_airflow``."""
    parts = module.split(".")
    if parts[0] in ROOMED:
        return ".".join(parts[:2])
    return parts[0]


def two_way_pairs(graph: Graph) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Pairs of folders (a, b), a < b, that each import the other; with the module edges
    that make them (both directions)."""
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for module, targets in graph.items():
        for target in targets:
            a, b = folder(module), folder(target)
            # a package's own __init__ (``streamops``) is the parent of every folder: not a pair
            if a != b and "." in a + b and not b.startswith(a + ".") and not a.startswith(b + "."):
                edges.setdefault((a, b), []).append((module, target))
    pairs = []
    for (a, b), there in sorted(edges.items()):
        if a < b and (b, a) in edges:
            pairs.append((a, b, sorted(there) + sorted(edges[(b, a)])))
    return pairs


def package_pairs(graph: Graph) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Pairs of top-level packages (a, b), a < b, that each import the other; with the module
    edges that make them (both directions)."""
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for module, targets in graph.items():
        for target in targets:
            a, b = module.split(".")[0], target.split(".")[0]
            if a != b:
                edges.setdefault((a, b), []).append((module, target))
    return [
        (a, b, sorted(there) + sorted(edges[(b, a)]))
        for (a, b), there in sorted(edges.items())
        if a < b and (b, a) in edges
    ]


def forbidden_crossings(
    graph: Graph, floors: dict[str, tuple[str, ...]] = PACKAGE_FLOORS,
    allowed: frozenset[tuple[str, str]] = ALLOWED_CROSSINGS,
) -> list[tuple[str, str]]:  # fmt: skip
    """Module edges from one declared top-level package into another that its floor does not
    allow, less the allowed crossings (packages not in ``floors`` are not judged here)."""
    found = []
    for module, targets in sorted(graph.items()):
        a = module.split(".")[0]
        for target in sorted(targets):
            b = target.split(".")[0]
            if a != b and a in floors and b not in floors[a] and (module, target) not in allowed:
                found.append((module, target))
    return found


def stale_allowances(
    graph: Graph, allowed: frozenset[tuple[str, str]] = ALLOWED_CROSSINGS
) -> list[tuple[str, str]]:
    """Allowed crossings that no import makes any more (the list must shrink with the code)."""
    return sorted(edge for edge in allowed if edge[0] in graph and edge[1] not in graph[edge[0]])


def print_edges(graph: Graph, files: dict[str, Path], type_only: dict[str, set[int]],
                edges: Iterable[tuple[str, str]]) -> None:  # fmt: skip
    for module, target in edges:
        path = files[module]
        where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        line = graph[module][target]
        kind = ", type only" if line in type_only[module] else ""
        print(f"  {module} -> {target}  ({where}:{line}{kind})")


def check_map(graph: Graph, files: dict[str, Path], doc: Path, write: bool) -> bool:
    """Whether the doc's map of the floors is what :func:`import_map.render` makes of
    ``graph`` (written there first with ``write``); a circle of rooms has no floors."""
    _, stuck = import_map.floors(import_map.room_graph(graph, folder))
    if stuck:
        print(f"rooms in a circle (no floors): {', '.join(stuck)}")
        return False
    section = import_map.render(graph, files, folder, PACKAGE_FLOORS)
    if write:
        changed = import_map.write(doc, section)
        print(f"map of the floors {'written to' if changed else 'unchanged in'} {doc}")
        return True
    if import_map.current(doc.read_text()) != section:
        print(f"the map of the floors in {doc} is stale: run scripts/import_cycles.py --write-map")
        return False
    print(f"the map of the floors in {doc.name} is current")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", help=f"default: {' '.join(DEFAULT_ROOTS)}")
    parser.add_argument("--doc", type=Path, help=f"the doc holding the map (default, with the "
                        f"default roots: {DOC.relative_to(REPO)})")  # fmt: skip
    parser.add_argument("--write-map", action="store_true", help="write the map into the doc")
    args = parser.parse_args(argv)
    doc = args.doc or (None if args.roots else DOC)
    files = module_files(REPO / r for r in args.roots or DEFAULT_ROOTS)
    graph, type_only = build_graph(files)
    circles = components(graph)
    for members in circles:
        print(f"circle of {len(members)}: {', '.join(members)}")
        inside = set(members)
        print_edges(graph, files, type_only,
                    [(m, t) for m in members for t in sorted(graph[m]) if t in inside])
    print(f"{len(circles)} import circle(s) among {len(files)} modules")
    pairs = two_way_pairs(graph)
    for a, b, edges in pairs:
        print(f"two-way folders: {a} <-> {b}")
        print_edges(graph, files, type_only, edges)
    print(f"{len(pairs)} two-way folder pair(s)")
    packages = package_pairs(graph)
    for a, b, edges in packages:
        print(f"two-way top-level packages: {a} <-> {b}")
        print_edges(graph, files, type_only, edges)
    print(f"{len(packages)} two-way top-level package pair(s)")
    crossings = forbidden_crossings(graph)
    if crossings:
        print("imports between top-level packages that their floors forbid:")
        print_edges(graph, files, type_only, crossings)
    stale = stale_allowances(graph)
    for module, target in stale:
        print(f"allowed crossing no import makes any more (remove it): {module} -> {target}")
    print(f"{len(crossings)} forbidden crossing(s), {len(ALLOWED_CROSSINGS)} allowed")
    mapped = doc is None or check_map(graph, files, doc, args.write_map)
    return 1 if circles or pairs or packages or crossings or stale or not mapped else 0


if __name__ == "__main__":
    sys.exit(main())
