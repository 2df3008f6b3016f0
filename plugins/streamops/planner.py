"""The upgrade planner: which stage keeps its state, which starts empty, which is refused.

Jet's rules for updating a job from a snapshot (``docs/architecture.md``), applied per stage
name to the stage descriptors of :mod:`spark_jobs.runtime.describe`:

- a stage only in the new version is ``NEW``: empty state, sources from the savepoint;
- a stage only in the savepoint is ``DROPPED``: its state is ignored (kept in the
  savepoint). Dropping a *stateful* stage, which is also what renaming one looks like,
  refuses the plan unless ``allow_state_drop`` is given;
- a stage in both is ``RESTORE``, unless its state no longer fits: a different grouping
  key, window (type, size, slide, gap), aggregate functions, join sides, declared state
  schema, or a stateful operator added or removed. Then it is ``INCOMPATIBLE`` and the plan
  is refused before anything stops;
- a stage the new version's Spark would refuse to start (``unsupported`` in its
  descriptor) is ``INCOMPATIBLE`` too;
- stateless changes (filters, projections, sink parameters) never show up in a descriptor
  and are always allowed.

The plan is a frozen value built by :meth:`UpgradePlan.build`; :meth:`UpgradePlan.render`
is what the CLI prints and the Airflow task logs before any destructive step. The plan is
pure: the descriptors it compares come from :mod:`streamops.describe_stages`, which runs
``spark_jobs.describe_cli`` in a subprocess (this module never imports pyspark).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from streamops.exceptions import JobError
from streamops.plan_text import (
    aggs_text,
    describe_operator,
    describe_state,
    keys_text,
    operators,
    ops_text,
    value_text,
    window_text,
)

Descriptor = Mapping[str, Any]
_KEY_LABEL = {"dedupe": "dedupe key", "join": "join key"}
_STATE_LABEL = {
    "join_type": "join type",
    "right_keys": "join key (right side)",
    "left_values": "state columns of the join's left side",
    "right_values": "state columns of the join's right side",
    "within_watermark": "dedupe mode (within watermark)",
    "state_schema": "declared state schema",
    "function": "state function",
    "operator": "operator",
    "output": "output schema of the stateful operator",
}


class StageAction(StrEnum):
    RESTORE = "RESTORE"
    NEW = "NEW"
    DROPPED = "DROPPED"
    INCOMPATIBLE = "INCOMPATIBLE"

    @property
    def label(self) -> str:
        return "RESTORED" if self is StageAction.RESTORE else self.value


@dataclass(frozen=True)
class StagePlan:
    """What the upgrade does with one stage, and why, in one sentence."""

    stage: str
    action: StageAction
    reason: str
    old_fingerprint: str | None = None
    new_fingerprint: str | None = None
    stateful: bool = False
    blocking: bool = False  # this stage alone refuses the plan


@dataclass(frozen=True)
class UpgradePlan:
    """The decision for every stage of an upgrade, computed before anything stops."""

    job: str
    from_version: str
    to_version: str
    savepoint: str | None
    stages: tuple[StagePlan, ...]
    allowed: bool
    refusal: str | None
    allow_state_drop: bool = False

    @classmethod
    def build(
        cls,
        job: str,
        old_stages: Mapping[str, Descriptor],
        new_stages: Mapping[str, Descriptor],
        *,
        from_version: str,
        to_version: str,
        savepoint: str | None = None,
        allow_state_drop: bool = False,
    ) -> UpgradePlan:
        """Compare the savepoint's (or running version's) stages with the new version's."""
        for side, stages in (("old", old_stages), ("new", new_stages)):
            for name, desc in stages.items():
                _check_descriptor(side, name, desc)
        plans = [
            _compare(name, old_stages[name], desc) if name in old_stages else _new_stage(name, desc)
            for name, desc in new_stages.items()
        ]
        new_stateful = {
            n: d for n, d in new_stages.items() if n not in old_stages and d["stateful"]
        }
        plans += [
            _dropped_stage(name, desc, new_stateful, allow_state_drop)
            for name, desc in old_stages.items()
            if name not in new_stages
        ]
        refusal = _refusal(plans)
        return cls(
            job=job,
            from_version=str(from_version),
            to_version=str(to_version),
            savepoint=savepoint,
            stages=tuple(plans),
            allowed=refusal is None,
            refusal=refusal,
            allow_state_drop=allow_state_drop,
        )

    def stage(self, name: str) -> StagePlan:
        for plan in self.stages:
            if plan.stage == name:
                return plan
        raise KeyError(f"stage {name!r} is not in the upgrade plan of {self.job}")

    def render(self) -> str:
        """The plan as a table, one line per stage, then the verdict."""
        source = f"savepoint {self.savepoint}" if self.savepoint else "a savepoint taken first"
        lines = [f"upgrade {self.job} v{self.from_version} → v{self.to_version} from {source}"]
        action_w = max((len(p.action.label) for p in self.stages), default=0)
        name_w = max((len(p.stage) for p in self.stages), default=0)
        for p in self.stages:
            mark = "!" if p.blocking else " "
            lines.append(f" {mark}{p.action.label:<{action_w}}  {p.stage:<{name_w}}  {p.reason}")
        counts = {a: sum(p.action is a for p in self.stages) for a in StageAction}
        tally = (
            f"{counts[StageAction.RESTORE]} restored, {counts[StageAction.NEW]} new, "
            f"{counts[StageAction.DROPPED]} dropped"
        )
        if self.allowed:
            lines.append(f"verdict: ALLOWED ({tally})")
        else:
            lines.append(f"verdict: REFUSED, nothing will be stopped: {self.refusal}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (XCom, ``upgrade.json``); actions are their string values."""
        return asdict(self)


# --- the rules ------------------------------------------------------------------------


def _check_descriptor(side: str, name: str, desc: Any) -> None:
    if not isinstance(desc, Mapping) or not isinstance(desc.get("stateful"), bool):
        raise JobError(
            f"the {side} descriptor of stage {name!r} is not a stage descriptor "
            f"(a mapping with a boolean 'stateful'): {desc!r:.200}"
        )


def _new_stage(name: str, new: Descriptor) -> StagePlan:
    if new.get("unsupported"):
        return _incompatible(name, None, new, f"Spark refuses the new query: {new['unsupported']}")
    if not new["stateful"]:
        return StagePlan(name, StageAction.NEW, "stateless, sources from the savepoint position")
    return StagePlan(
        name,
        StageAction.NEW,
        f"empty state, sources from the savepoint position ({describe_state(new)})",
        new_fingerprint=new.get("state_fingerprint"),
        stateful=True,
    )


def _dropped_stage(
    name: str, old: Descriptor, new_stateful: Mapping[str, Descriptor], allow_state_drop: bool
) -> StagePlan:
    if not old["stateful"]:
        return StagePlan(name, StageAction.DROPPED, "stateless, nothing to keep")
    reason = "state ignored (kept in the savepoint)"
    fp = old.get("state_fingerprint")
    twins = sorted(n for n, d in new_stateful.items() if fp and d.get("state_fingerprint") == fp)
    if twins:
        reason += f"; new stage {', '.join(twins)} has the same state shape: renamed? "
        reason += "state does not follow a new name"
    if allow_state_drop:
        reason += "; allowed by allow_state_drop"
    else:
        reason += "; dropping a stateful stage needs allow_state_drop"
    return StagePlan(
        name,
        StageAction.DROPPED,
        reason,
        old_fingerprint=fp,
        stateful=True,
        blocking=not allow_state_drop,
    )


def _compare(name: str, old: Descriptor, new: Descriptor) -> StagePlan:
    if new.get("unsupported"):
        return _incompatible(name, old, new, f"Spark refuses the new query: {new['unsupported']}")
    old_ops, new_ops = operators(old), operators(new)
    if not old["stateful"] and not new["stateful"]:
        return StagePlan(name, StageAction.RESTORE, "stateless, source positions restored")
    if not old["stateful"]:
        return _incompatible(
            name, old, new,
            f"stateful operator added: {describe_state(new)} (the savepoint has no state for it)",
        )  # fmt: skip
    if not new["stateful"]:
        return _incompatible(
            name, old, new, f"stateful operator removed: {describe_state(old)} (now stateless)"
        )
    old_fp, new_fp = old.get("state_fingerprint"), new.get("state_fingerprint")
    kept = f"state kept ({describe_state(new)})"
    if old_fp and new_fp and old_fp == new_fp:
        return StagePlan(name, StageAction.RESTORE, kept, old_fp, new_fp, stateful=True)
    if old_ops and new_ops:
        changes = state_differences(old_ops, new_ops)
        if not changes and not (old_fp and new_fp):  # compared field by field: same state
            return StagePlan(name, StageAction.RESTORE, kept, old_fp, new_fp, stateful=True)
    elif not (old_fp and new_fp):
        return _unverified(name, old, new)
    else:
        changes = []
    if not changes:
        changes = [f"state shape changed (fingerprint {old_fp:.12} → {new_fp:.12})"]
    return _incompatible(name, old, new, "; ".join(changes))


def _unverified(name: str, old: Descriptor, new: Descriptor) -> StagePlan:
    side = "old" if not operators(old) and not old.get("state_fingerprint") else "new"
    return StagePlan(
        name,
        StageAction.RESTORE,
        f"state kept, NOT VERIFIED: the {side} version has no state descriptor for this stage "
        "(Spark checks the state schema when the stage starts)",
        old.get("state_fingerprint"),
        new.get("state_fingerprint"),
        stateful=True,
    )


def _incompatible(name: str, old: Descriptor | None, new: Descriptor, reason: str) -> StagePlan:
    return StagePlan(
        name,
        StageAction.INCOMPATIBLE,
        reason,
        old.get("state_fingerprint") if old else None,
        new.get("state_fingerprint"),
        stateful=bool(new["stateful"] or (old and old["stateful"])),
        blocking=True,
    )


def _refusal(plans: list[StagePlan]) -> str | None:
    parts = [f"{p.stage}: {p.reason}" for p in plans if p.action is StageAction.INCOMPATIBLE]
    dropped = [p.stage for p in plans if p.action is StageAction.DROPPED and p.blocking]
    if dropped:
        renamed = [p.stage for p in plans if p.action is StageAction.NEW and p.stateful]
        what = f"stateful stage(s) {', '.join(dropped)} would be dropped"
        if renamed:
            what += f" while stateful {', '.join(renamed)} is new (a renamed stage loses its state)"
        parts.append(f"{what}; their state stays in the savepoint, pass allow_state_drop "
                     "(--allow-state-drop) to accept")  # fmt: skip
    return "; ".join(parts) if parts else None


# --- differences ----------------------------------------------------------------------


def state_differences(
    old_ops: list[Mapping[str, Any]], new_ops: list[Mapping[str, Any]]
) -> list[str]:
    """Each change between two stages' stateful operators, as a sentence."""
    if len(old_ops) != len(new_ops):
        verb = "added" if len(new_ops) > len(old_ops) else "removed"
        return [f"stateful operator {verb}: [{ops_text(old_ops)}] → [{ops_text(new_ops)}]"]
    out: list[str] = []
    for i, (old, new) in enumerate(zip(old_ops, new_ops, strict=True)):
        prefix = f"operator {i + 1}: " if len(old_ops) > 1 else ""
        out += [prefix + change for change in _operator_differences(old, new)]
    return out


def _operator_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    if old.get("kind") != new.get("kind"):
        if {old.get("kind"), new.get("kind")} == {"aggregate", "window-aggregate"}:
            return [f"window changed: {window_text(old.get('window'))} → "
                    f"{window_text(new.get('window'))}"]  # fmt: skip
        return [f"operator changed: {describe_operator(old)} → {describe_operator(new)}"]
    out = _window_differences(old.get("window"), new.get("window"))
    if old.get("keys") != new.get("keys"):
        label = _KEY_LABEL.get(str(new.get("kind")), "grouping key")
        out.append(f"{label} changed: {keys_text(old, new)}")
    old_aggs = [_agg_canonical(a) for a in old.get("aggregates") or []]
    new_aggs = [_agg_canonical(a) for a in new.get("aggregates") or []]
    if old_aggs != new_aggs:
        out.append(
            f"aggregates changed: [{aggs_text(old)}] → [{aggs_text(new)}] (another accumulator)"
        )
    old_state, new_state = old.get("state") or {}, new.get("state") or {}
    for key in sorted(set(old_state) | set(new_state)):
        if old_state.get(key) != new_state.get(key):
            label = _STATE_LABEL.get(key, key)
            out.append(f"{label} changed: {old_state.get(key)} → {new_state.get(key)}")
    return out


def _window_differences(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    if old == new:
        return []
    if old is None or new is None or old.get("type") != new.get("type"):
        return [f"window changed: {window_text(old)} → {window_text(new)}"]
    fields = (
        ("size_s", "window size"), ("slide_s", "window slide"), ("gap_s", "session gap"),
        ("gap", "session gap"), ("start_s", "window start offset"),
        ("column", "window time column"), ("position", "window position in the key"),
    )  # fmt: skip
    out = [
        f"{label} changed: {value_text(old.get(k), k)} → {value_text(new.get(k), k)}"
        for k, label in fields
        if old.get(k) != new.get(k)
    ]
    return out or [f"window changed: {window_text(old)} → {window_text(new)}"]


def _agg_canonical(agg: Mapping[str, Any]) -> tuple[Any, ...]:
    return (agg.get("class") or agg.get("function"), tuple(agg.get("inputs") or ()),
            bool(agg.get("distinct")), agg.get("result"))  # fmt: skip
