"""Naming an exception and where it was raised, in one line a person can act on.

``ValueError: not a run of fleet_alpha file names: x..y (at
streamops_contract/sources/alpha_memory.py:74 in from_offset)``: the file is relative to its
import root (so it reads as the module's path); when the exception was raised inside a library, the
innermost line of the project's own code that called it is named too.
"""

from __future__ import annotations

import sysconfig
import traceback
from pathlib import Path

MESSAGE_CHARS = 300
_LIBRARY_ROOTS = tuple(
    str(Path(p).resolve())
    for key in ("stdlib", "platstdlib", "purelib", "platlib")
    if (p := sysconfig.get_paths().get(key))
)


def _is_library(filename: str) -> bool:
    return str(Path(filename).resolve()).startswith(_LIBRARY_ROOTS)


def _short(filename: str) -> str:
    """``filename`` as its module's path: relative to the first folder above it that is not a
    package (no ``__init__.py``), so it reads the same whatever ``sys.path`` holds."""
    path = Path(filename).resolve()
    root = path.parent
    while (root / "__init__.py").exists() and root.parent != root:
        root = root.parent
    return path.relative_to(root).as_posix()


def raised_at(exc: BaseException) -> str:
    """Where ``exc`` was raised: ``file:line in function``, and the project's own innermost
    line when it was raised inside a library."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "an unknown place"
    inner = frames[-1]
    text = f"{_short(inner.filename)}:{inner.lineno} in {inner.name}"
    if _is_library(inner.filename):
        ours = next((f for f in reversed(frames) if not _is_library(f.filename)), None)
        if ours is not None:
            text += f", called from {_short(ours.filename)}:{ours.lineno} in {ours.name}"
    return text


def describe(exc: BaseException) -> str:
    """``ValueError: the message (at file:line in function)``, the message cut short."""
    message = str(exc)
    if len(message) > MESSAGE_CHARS:
        message = message[:MESSAGE_CHARS] + "…"
    return f"{type(exc).__name__}: {message} (at {raised_at(exc)})"
