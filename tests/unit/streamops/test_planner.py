"""The upgrade planner's rules on hand-written stage descriptors, plus one real description.

Descriptors are written the way :mod:`spark_jobs.runtime.describe` produces them; their
fingerprints are computed here over the same canonical JSON, so a test reads as "same state"
or "another state" without a Spark session. The last test describes the real fleet-pings
spec through ``spark_jobs.describe_cli`` in a subprocess.
"""

from __future__ import annotations

import hashlib
import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from streamops.describe_stages import describe_spec_stages
from streamops.exceptions import JobError
from streamops.plan_text import describe_state
from streamops.planner import StageAction, UpgradePlan
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import load_spec, spec_from_dict

TUMBLING_60 = {"type": "tumbling", "column": "event_time", "position": 0,
               "size_s": 60, "slide_s": 60, "start_s": 0}  # fmt: skip
STATS = ("count(1)", "avg(double)", "max(double)")
TYPES = {"count": "bigint", "avg": "double", "max": "double", "count_distinct": "bigint"}


def fingerprint(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def agg(signature: str, output: str = "") -> dict[str, Any]:
    """``"avg(double)"`` → an aggregate entry as describe_stage writes it."""
    function, _, rest = signature.partition("(")
    distinct = rest.startswith("distinct ")
    inputs = [i for i in rest.rstrip(")").removeprefix("distinct ").split(", ") if i]
    return {
        "function": function, "class": function.title(), "inputs": inputs,
        "distinct": distinct, "result": TYPES.get(function, "double"),
        "buffer": "struct<...>", "output": output or signature, "signature": signature,
    }  # fmt: skip


def op(
    kind: str = "window-aggregate",
    keys: tuple[str, ...] | tuple[tuple[str, str], ...] = ("vin",),
    window: dict[str, Any] | None = None,
    aggs: tuple[str, ...] = STATS,
    **state: Any,
) -> dict[str, Any]:
    columns = [{"name": k, "type": "string"} if isinstance(k, str) else
               {"name": k[0], "type": k[1]} for k in keys]  # fmt: skip
    if kind == "window-aggregate" and window is None:
        window = TUMBLING_60
    operator = {
        "kind": kind, "keys": columns, "window": window,
        "aggregates": [agg(a) for a in aggs] if "aggregate" in kind else [], "state": state,
    }  # fmt: skip
    canonical = {
        "kind": kind, "keys": columns, "window": window, "state": state,
        "aggregates": [{k: a[k] for k in ("class", "inputs", "distinct", "result")}
                       for a in operator["aggregates"]],
    }  # fmt: skip
    operator["state_fingerprint"] = fingerprint(canonical)
    return operator


def stage(*operators: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "stateful": bool(operators),
        "operators": list(operators),
        "state_fingerprint": (
            fingerprint([o["state_fingerprint"] for o in operators]) if operators else None
        ),
        "watermark": None,
        "unsupported": None,
        **extra,
    }


STATELESS = stage()
STATS_1M = stage(op())


def plan(old: dict[str, Any], new: dict[str, Any], **kw: Any) -> UpgradePlan:
    return UpgradePlan.build("fleet-pings", old, new, from_version="1", to_version="2", **kw)


def only(old: dict[str, Any], new: dict[str, Any]) -> tuple[StageAction, str, UpgradePlan]:
    p = plan({"s": old}, {"s": new})
    return p.stages[0].action, p.stages[0].reason, p


# --- same name ------------------------------------------------------------------------


def test_same_state_is_restored() -> None:
    p = plan({"vehicles": STATELESS, "vehicle-stats-1m": STATS_1M},
             {"vehicles": STATELESS, "vehicle-stats-1m": stage(op())})  # fmt: skip
    assert p.allowed and p.refusal is None
    assert [(s.stage, s.action) for s in p.stages] == [
        ("vehicles", StageAction.RESTORE), ("vehicle-stats-1m", StageAction.RESTORE),
    ]  # fmt: skip
    stats = p.stage("vehicle-stats-1m")
    assert stats.reason == "state kept (window-aggregate tumbling 60s by vin)"
    assert stats.old_fingerprint == stats.new_fingerprint == STATS_1M["state_fingerprint"]
    assert p.stage("vehicles").reason == "stateless, source positions restored"


def test_stateless_changes_are_allowed() -> None:
    """Output names, watermark and stateless stages differ: no state involved."""
    renamed = stage(op(), watermark={"column": "event_time", "delay_s": 300})
    renamed["operators"][0]["aggregates"][1]["output"] = "mean_speed"
    action, _, p = only(STATS_1M, renamed)
    assert action is StageAction.RESTORE and p.allowed


def test_grouping_key_changed() -> None:
    action, reason, p = only(STATS_1M, stage(op(keys=("vin", "source"))))
    assert action is StageAction.INCOMPATIBLE
    assert reason == "grouping key changed: [vin] → [vin, source]"
    assert not p.allowed and "grouping key changed" in p.refusal
    assert p.stages[0].blocking


def test_key_type_changed_shows_the_types() -> None:
    _, reason, _ = only(STATS_1M, stage(op(keys=(("vin", "bigint"),))))
    assert reason == "grouping key changed: [vin: string] → [vin: bigint]"


def test_window_to_session_window_is_incompatible() -> None:
    session = {"type": "session", "column": "event_time", "position": 0, "gap_s": 300}
    action, reason, _ = only(STATS_1M, stage(op(window=session)))
    assert action is StageAction.INCOMPATIBLE
    assert reason == "window changed: tumbling 60s → session gap 300s"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"size_s": 120, "slide_s": 120}, "window size changed: 60s → 120s"),
        ({"start_s": 30}, "window start offset changed: 0s → 30s"),
        ({"column": "received_at"}, "window time column changed: event_time → received_at"),
    ],
)
def test_window_parameters_changed(change: dict[str, Any], expected: str) -> None:
    action, reason, _ = only(STATS_1M, stage(op(window={**TUMBLING_60, **change})))
    assert action is StageAction.INCOMPATIBLE
    assert expected in reason


def test_sliding_window_slide_changed() -> None:
    sliding = {**TUMBLING_60, "type": "sliding", "size_s": 300}
    action, reason, _ = only(
        stage(op(window=sliding)), stage(op(window={**sliding, "slide_s": 30}))
    )
    assert action is StageAction.INCOMPATIBLE
    assert reason == "window slide changed: 60s → 30s"


def test_tumbling_to_sliding() -> None:
    sliding = {**TUMBLING_60, "type": "sliding", "size_s": 300}
    _, reason, _ = only(STATS_1M, stage(op(window=sliding)))
    assert reason == "window changed: tumbling 60s → sliding 300s every 60s"


def test_window_removed_from_aggregate() -> None:
    _, reason, _ = only(STATS_1M, stage(op(kind="aggregate")))
    assert reason == "window changed: tumbling 60s → no window"


def test_avg_replaced_by_count_distinct() -> None:
    new = stage(op(aggs=("count(1)", "count_distinct(distinct double)", "max(double)")))
    action, reason, _ = only(STATS_1M, new)
    assert action is StageAction.INCOMPATIBLE
    assert reason == (
        "aggregates changed: [count(1), avg(double), max(double)] → "
        "[count(1), count_distinct(distinct double), max(double)] (another accumulator)"
    )


def test_aggregate_order_and_set_matter() -> None:
    assert only(STATS_1M, stage(op(aggs=tuple(reversed(STATS)))))[0] is StageAction.INCOMPATIBLE
    assert only(STATS_1M, stage(op(aggs=STATS[:2])))[0] is StageAction.INCOMPATIBLE


def test_stateful_operator_added_within_a_stage() -> None:
    action, reason, _ = only(STATELESS, STATS_1M)
    assert action is StageAction.INCOMPATIBLE
    assert reason.startswith("stateful operator added: window-aggregate tumbling 60s by vin")


def test_stateful_operator_removed_within_a_stage() -> None:
    action, reason, _ = only(STATS_1M, STATELESS)
    assert action is StageAction.INCOMPATIBLE
    assert reason.startswith("stateful operator removed: window-aggregate tumbling 60s by vin")


def test_second_stateful_operator_added() -> None:
    action, reason, _ = only(STATS_1M, stage(op(), op(kind="dedupe", within_watermark=True)))
    assert action is StageAction.INCOMPATIBLE
    assert reason == (
        "stateful operator added: [window-aggregate tumbling 60s by vin] → "
        "[window-aggregate tumbling 60s by vin + dedupe within watermark by vin]"
    )


def test_join_side_columns_changed() -> None:
    def join(left: str) -> dict[str, Any]:
        return stage(op(kind="join", join_type="Inner", left_values=left,
                        right_keys=[{"name": "vin2", "type": "string"}],
                        right_values="struct<vin2:string>"))  # fmt: skip

    action, reason, _ = only(join("struct<vin:string>"), join("struct<vin:string,x:int>"))
    assert action is StageAction.INCOMPATIBLE
    assert reason == (
        "state columns of the join's left side changed: struct<vin:string> → "
        "struct<vin:string,x:int>"
    )


def test_new_version_spark_refuses() -> None:
    refused = stage(op(), unsupported="Distinct aggregations are not supported")
    action, reason, p = only(STATS_1M, refused)
    assert action is StageAction.INCOMPATIBLE
    assert reason == "Spark refuses the new query: Distinct aggregations are not supported"
    assert not p.allowed


def test_old_state_without_descriptor_is_restored_unverified() -> None:
    action, reason, p = only({"stateful": True, "operators": []}, STATS_1M)
    assert action is StageAction.RESTORE and p.allowed
    assert "NOT VERIFIED" in reason


def test_fingerprints_alone_decide_without_operator_details() -> None:
    bare = {"stateful": True, "state_fingerprint": STATS_1M["state_fingerprint"]}
    assert only(bare, STATS_1M)[0] is StageAction.RESTORE
    action, reason, _ = only({**bare, "state_fingerprint": "f" * 64}, STATS_1M)
    assert action is StageAction.INCOMPATIBLE
    assert reason.startswith("state shape changed (fingerprint ffffffffffff → ")


def test_a_descriptor_without_stateful_is_rejected() -> None:
    with pytest.raises(JobError, match="stage 's'.*boolean 'stateful'"):
        plan({"s": {"operators": []}}, {"s": STATELESS})


# --- new, dropped, renamed -----------------------------------------------------------


def test_new_stages_start_empty() -> None:
    sliding = {**TUMBLING_60, "type": "sliding", "size_s": 300}
    p = plan({"vehicles": STATELESS},
             {"vehicles": STATELESS, "avg-speed-5m": stage(op(window=sliding)),
              "alerts": STATELESS})  # fmt: skip
    assert p.allowed
    new = p.stage("avg-speed-5m")
    assert new.action is StageAction.NEW
    assert new.reason == (
        "empty state, sources from the savepoint position "
        "(window-aggregate sliding 300s every 60s by vin)"
    )
    assert p.stage("alerts").reason == "stateless, sources from the savepoint position"


def test_dropping_a_stateless_stage_is_allowed() -> None:
    p = plan({"vehicles": STATELESS, "debug": STATELESS}, {"vehicles": STATELESS})
    assert p.allowed
    assert p.stage("debug").action is StageAction.DROPPED


def test_dropping_a_stateful_stage_needs_allow_state_drop() -> None:
    old = {"vehicles": STATELESS, "vehicle-stats-1m": STATS_1M}
    refused = plan(old, {"vehicles": STATELESS})
    assert not refused.allowed
    dropped = refused.stage("vehicle-stats-1m")
    assert dropped.action is StageAction.DROPPED and dropped.blocking
    assert dropped.reason.startswith("state ignored (kept in the savepoint)")
    assert "allow_state_drop" in refused.refusal

    allowed = plan(old, {"vehicles": STATELESS}, allow_state_drop=True)
    assert allowed.allowed and allowed.refusal is None
    assert not allowed.stage("vehicle-stats-1m").blocking


def test_renaming_a_stateful_stage_is_dropped_plus_new() -> None:
    old = {"vehicle-stats-1m": STATS_1M}
    new = {"vehicle-stats-one-minute": stage(op())}
    refused = plan(old, new)
    assert not refused.allowed
    assert [(s.stage, s.action) for s in refused.stages] == [
        ("vehicle-stats-one-minute", StageAction.NEW),
        ("vehicle-stats-1m", StageAction.DROPPED),
    ]
    assert "renamed?" in refused.stage("vehicle-stats-1m").reason
    assert "a renamed stage loses its state" in refused.refusal
    assert "--allow-state-drop" in refused.refusal

    allowed = plan(old, new, allow_state_drop=True)
    assert allowed.allowed


def test_renaming_a_stateless_stage_is_free() -> None:
    assert plan({"vehicles": STATELESS}, {"latest": STATELESS}).allowed


# --- rendering ------------------------------------------------------------------------


def test_render_lists_every_stage_with_its_reason() -> None:
    p = plan(
        {"vehicles": STATELESS, "vehicle-stats-1m": STATS_1M, "x": STATS_1M},
        {"vehicles": STATELESS, "vehicle-stats-1m": stage(op()),
         "y-stats": stage(op(keys=("vin", "source")))},
        savepoint="sp-1", allow_state_drop=True,
    )  # fmt: skip
    text = p.render()
    lines = text.splitlines()
    assert lines[0] == "upgrade fleet-pings v1 → v2 from savepoint sp-1"
    assert any(
        line.split() == ["RESTORED", "vehicle-stats-1m", "state", "kept", "(window-aggregate",
                         "tumbling", "60s", "by", "vin)"]
        for line in lines
    )  # fmt: skip
    for s in p.stages:
        assert any(s.action.label in line and s.stage in line and s.reason in line
                   for line in lines)  # fmt: skip
    assert lines[-1] == "verdict: ALLOWED (2 restored, 1 new, 1 dropped)"


def test_render_of_a_refused_plan() -> None:
    p = plan({"y": STATS_1M}, {"y": stage(op(keys=("vin", "source")))})
    text = p.render()
    assert " !INCOMPATIBLE  y  grouping key changed: [vin] → [vin, source]" in text
    assert text.splitlines()[-1] == (
        "verdict: REFUSED, nothing will be stopped: y: grouping key changed: [vin] → [vin, source]"
    )


def test_plan_as_dict_is_json() -> None:
    p = plan({"x": STATS_1M}, {"y": STATS_1M})
    doc = json.loads(json.dumps(p.as_dict()))
    assert doc["allowed"] is False
    assert {s["action"] for s in doc["stages"]} == {"NEW", "DROPPED"}


def test_describe_state_phrases() -> None:
    assert describe_state(STATELESS) == "stateless"
    assert describe_state(stage(op(kind="aggregate", keys=()))) == "global aggregate"
    assert describe_state(stage(op(kind="limit", keys=()))) == "limit None"


# --- describing a spec (subprocess) -----------------------------------------------------


def test_describe_failure_raises_job_error_with_stderr(tmp_path: Path) -> None:
    spec = spec_from_dict({"name": "ghost", "version": "1", "entrypoint": "spark_jobs.no_such"})
    settings = Settings.from_env({}, state_root=str(tmp_path), python=sys.executable)
    with pytest.raises(JobError, match=r"(?s)failed \(exit 1\).*No module named"):
        describe_spec_stages(spec, settings, timeout=60)


def test_describe_timeout_raises_job_error(tmp_path: Path) -> None:
    slow = tmp_path / "slow-python"
    slow.write_text("#!/bin/sh\necho starting >&2\nexec sleep 30\n")
    slow.chmod(slow.stat().st_mode | stat.S_IXUSR)
    spec = spec_from_dict({"name": "slow", "version": "1", "entrypoint": "spark_jobs.x"})
    settings = Settings.from_env({}, state_root=str(tmp_path), python=str(slow))
    with pytest.raises(JobError, match=r"(?s)longer than 1s.*starting"):
        describe_spec_stages(spec, settings, timeout=1)


@pytest.mark.integration
def test_describe_the_fleet_pings_spec(tmp_path: Path) -> None:
    spec = load_spec(PROJECT_ROOT / "config" / "jobs" / "fleet-pings.yaml")
    settings = Settings.from_env({}, state_root=str(tmp_path), python=sys.executable)
    stages = describe_spec_stages(spec, settings)

    assert list(stages) == ["vehicles", "vehicle-stats-1m"]
    # vehicles: the groupBy + max_by runs inside foreachBatch on a static batch
    assert stages["vehicles"]["stateful"] is False
    stats = stages["vehicle-stats-1m"]
    assert stats["stateful"] is True and stats["unsupported"] is None
    [operator] = stats["operators"]
    assert operator["kind"] == "window-aggregate"
    assert (operator["window"]["type"], operator["window"]["size_s"]) == ("tumbling", 60)
    assert [k["name"] for k in operator["keys"]] == ["vin"]
    assert not (tmp_path / "jobs").exists()  # no status written, no query started

    # described again (same spec, same code): from the cache, no Spark started; a changed
    # spec is described anew
    no_python = settings.model_copy(update={"python": "/bin/false"})
    assert describe_spec_stages(spec, no_python) == stages
    changed = spec.model_copy(update={"args": {**spec.args, "watermark": "5 minutes"}})
    with pytest.raises(JobError, match="failed"):
        describe_spec_stages(changed, no_python)

    same = UpgradePlan.build(spec.name, stages, stages, from_version="1", to_version="1")
    assert same.allowed
    assert "RESTORED" in same.render() and "tumbling 60s by vin" in same.render()
