"""The upgrade plan's words: one phrase for a stage's state, an operator, a window, keys and
aggregates, as :mod:`streamops.planner` writes them in a plan and its refusals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Descriptor = Mapping[str, Any]


def operators(desc: Descriptor) -> list[Mapping[str, Any]]:
    """The stateful operators of a stage descriptor."""
    return list(desc.get("operators") or [])


def describe_state(desc: Descriptor) -> str:
    """One phrase for a stage's state: ``window-aggregate tumbling 60s by vin``."""
    ops = operators(desc)
    if not desc.get("stateful"):
        return "stateless"
    return ops_text(ops) if ops else "stateful, operators unknown"


def describe_operator(op: Mapping[str, Any]) -> str:
    kind = str(op.get("kind"))
    keys = ", ".join(str(k.get("name")) for k in op.get("keys") or [])
    by = f" by {keys}" if keys else ""
    state = op.get("state") or {}
    if kind == "window-aggregate":
        return f"window-aggregate {window_text(op.get('window'))}{by}"
    if kind == "aggregate":
        return f"aggregate{by}" if keys else "global aggregate"
    if kind == "dedupe":
        within = " within watermark" if state.get("within_watermark") else ""
        return f"dedupe{within}{by}"
    if kind == "join":
        right = ", ".join(str(k.get("name")) for k in state.get("right_keys") or [])
        return f"{state.get('join_type', '')} stream-stream join on [{keys}] = [{right}]".strip()
    if kind == "arbitrary":
        return f"{state.get('operator', 'arbitrary')} {state.get('function') or ''}{by}".strip()
    if kind == "limit":
        return f"limit {op.get('limit')}"
    return f"{state.get('operator', kind)}{by}"


def ops_text(ops: list[Mapping[str, Any]]) -> str:
    return " + ".join(describe_operator(op) for op in ops) or "none"


def window_text(window: Mapping[str, Any] | None) -> str:
    if not window:
        return "no window"
    kind = window.get("type")
    if kind == "tumbling":
        return f"tumbling {value_text(window.get('size_s'), 'size_s')}"
    if kind == "sliding":
        size = value_text(window.get("size_s"), "size_s")
        return f"sliding {size} every {value_text(window.get('slide_s'), 'slide_s')}"
    if kind == "session":
        gap = window.get("gap_s")
        return f"session gap {value_text(gap, 'gap_s') if gap is not None else window.get('gap')}"
    return str(kind)


def value_text(value: Any, key: str) -> str:
    if value is None:
        return "none"
    if key.endswith("_s") and isinstance(value, int | float):
        return f"{value:g}s"
    return str(value)


def keys_text(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    old_keys, new_keys = old.get("keys") or [], new.get("keys") or []
    names = [[k.get("name") for k in keys] for keys in (old_keys, new_keys)]
    typed = names[0] == names[1]  # same names: the types changed, show them
    parts = [
        "[" + ", ".join(f"{k.get('name')}: {k.get('type')}" if typed else str(k.get("name"))
                        for k in keys) + "]"
        for keys in (old_keys, new_keys)
    ]  # fmt: skip
    return f"{parts[0]} → {parts[1]}"


def aggs_text(op: Mapping[str, Any]) -> str:
    return ", ".join(
        str(a.get("signature") or a.get("function")) for a in op.get("aggregates") or []
    )
