#!/usr/bin/env python3
"""Print the import circles among the project's own modules (``plugins/`` and ``spark_jobs/``),
and the pairs of folders that import each other.

A circle means two modules each need the other: usually a helper lives beside the wrong noun.
A two-way folder pair is the same at the scale of folders: a module of ``streamops/state/``
imports one of ``streamops/procedures/`` and another the other way round, so neither folder
stands below the other. A folder is a subpackage of ``streamops`` (``streamops.state``) or of
``spark_jobs`` (``spark_jobs.runtime``), or the ``streamops_airflow`` package; a top-level
module (``streamops.settings``, ``spark_jobs.main``) is a folder of its own.
Imports inside functions count too (a lazy import hides a circle, it does not remove it), so
the graph is built from every ``import`` statement in each file's syntax tree, not from what
Python happens to execute; an import under ``if TYPE_CHECKING:`` counts too (a module that
needs another's type still depends on it) and is marked ``type only``. Each strongly connected
component of more than one module is one circle; its edges are listed with the line that
makes them, to show what to move.

Usage: ``python scripts/import_cycles.py [root ...]`` (default ``plugins spark_jobs``, relative
to the repository). Exit status 1 when there is a circle or a two-way pair, so it can guard a
check (``scripts/test.sh`` runs it).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
Graph = dict[str, dict[str, int]]  # module -> imported module -> first line importing it


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
    if parts[0] in ("streamops", "spark_jobs"):
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", default=["plugins", "spark_jobs"])
    args = parser.parse_args(argv)
    files = module_files(REPO / r for r in args.roots)
    graph, type_only = build_graph(files)
    circles = components(graph)
    for members in circles:
        print(f"circle of {len(members)}: {', '.join(members)}")
        inside = set(members)
        for module in members:
            for target, line in sorted(graph[module].items()):
                if target in inside:
                    where = files[module].relative_to(REPO)
                    kind = ", type only" if line in type_only[module] else ""
                    print(f"  {module} -> {target}  ({where}:{line}{kind})")
    print(f"{len(circles)} import circle(s) among {len(files)} modules")
    pairs = two_way_pairs(graph)
    for a, b, edges in pairs:
        print(f"two-way folders: {a} <-> {b}")
        for module, target in edges:
            where = files[module].relative_to(REPO)
            line = graph[module][target]
            kind = ", type only" if line in type_only[module] else ""
            print(f"  {module} -> {target}  ({where}:{line}{kind})")
    print(f"{len(pairs)} two-way folder pair(s)")
    return 1 if circles or pairs else 0


if __name__ == "__main__":
    sys.exit(main())
