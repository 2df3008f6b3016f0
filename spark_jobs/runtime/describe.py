"""What state a stage keeps: the stateful operators of a streaming DataFrame, as JSON data.

The descriptor is read from the DataFrame's *analyzed* logical plan through py4j, without
starting a query (``optimizedPlan()`` refuses streaming plans outside ``writeStream``). The
stateful operators are the plan nodes whose ``isStateful`` is true, listed top-down (the
order in which Spark numbers the stateful operators of a query). A descriptor::

    {"stateful": true,
     "state_fingerprint": "<sha256>",           # of every operator's state shape, in order
     "operators": [
        {"kind": "window-aggregate",
         "keys": [{"name": "vin", "type": "string"}],
         "window": {"type": "tumbling", "column": "event_time", "position": 0,
                    "size_s": 60, "slide_s": 60, "start_s": 0},
         "aggregates": [{"function": "avg", "signature": "avg(double)", ...}, ...],
         "state": {}, "state_fingerprint": "<sha256>"}],
     "watermark": {"column": "event_time", "delay": "2 minutes", "delay_s": 120},
     "watermarks": [...], "unsupported": null}

``kind`` is ``aggregate``, ``window-aggregate``, ``dedupe``, ``join``, ``arbitrary``
(flatMapGroupsWithState, applyInPandasWithState, transformWithState), ``limit`` or
``other``. A fingerprint covers what the state's key and value are made of (grouping keys,
window, aggregate functions with their input and result types, join sides, declared state
schemas) and nothing else: output column names, filters and projections outside the
operators do not change it. Watermarks are informational.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from py4j.java_gateway import get_field
from py4j.protocol import Py4JError
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame

from spark_jobs.runtime.protocols import RunningJob

log = logging.getLogger("spark_jobs.describe")

TIME_WINDOW_MARKER = "spark.timeWindow"
SESSION_WINDOW_MARKER = "spark.sessionWindow"
_MICROS_PER_DAY = 86_400_000_000
_DAYS_PER_MONTH = 31  # as Spark's IntervalUtils.getDuration counts a month
_ARBITRARY = {
    "FlatMapGroupsWithState",
    "FlatMapGroupsInPandasWithState",
    "TransformWithState",
    "TransformWithStateInPySpark",
    "TransformWithStateInPandas",
}

JavaObject = Any  # a py4j proxy of a Catalyst tree node


def describe_stage(frame: DataFrame, *, output_mode: str | None = None) -> dict[str, Any]:
    """The stateful operators of ``frame`` (a streaming DataFrame), without starting it.

    With ``output_mode`` the plan also goes through Spark's streaming checks (the ones
    ``writeStream.start()`` runs); a refusal is reported in ``unsupported``.
    """
    jdf = getattr(frame, "_jdf", None)
    if jdf is None:
        raise TypeError("describe_stage needs a classic DataFrame (Spark Connect has no plan)")
    jvm = frame.sparkSession._jvm
    plan = jdf.queryExecution().analyzed()
    nodes = list(_preorder(plan))
    operators = [_describe_operator(n, jvm) for n in nodes if n.isStateful()]
    watermarks = [_watermark(n) for n in nodes if n.nodeName() == "EventTimeWatermark"]
    stateful = bool(operators)
    return {
        "stateful": stateful,
        "streaming": bool(plan.isStreaming()),
        "operators": operators,
        "state_fingerprint": (
            fingerprint([op["state_fingerprint"] for op in operators]) if stateful else None
        ),
        "watermark": watermarks[0] if watermarks else None,
        "watermarks": watermarks,
        "unsupported": _unsupported(jvm, plan, output_mode) if output_mode else None,
    }


def describe_job_stages(ctx: RunningJob) -> dict[str, dict[str, Any]]:
    """Descriptor of every stage of a built :class:`~spark_jobs.runtime.protocols.RunningJob`."""
    out: dict[str, dict[str, Any]] = {}
    for stage in ctx.stages:
        desc = describe_stage(stage.frame, output_mode=stage.output_mode)
        desc["declared_stateful"] = bool(stage.stateful)
        if desc["stateful"] != bool(stage.stateful):
            log.warning(
                "job %s: stage %s is declared stateful=%s but its plan says stateful=%s",
                ctx.job, stage.name, stage.stateful, desc["stateful"],
            )  # fmt: skip
        out[stage.name] = desc
    return out


def fingerprint(value: Any) -> str:
    """sha256 of the canonical JSON of ``value`` (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


# --- plan walking ---------------------------------------------------------------------


def _seq(seq: JavaObject) -> list[JavaObject]:
    return [seq.apply(i) for i in range(seq.size())]


def _preorder(node: JavaObject) -> Any:
    yield node
    for child in _seq(node.children()):
        yield from _preorder(child)


def _expr_preorder(expr: JavaObject) -> Any:
    yield expr
    for child in _seq(expr.children()):
        yield from _expr_preorder(child)


def _first(expr: JavaObject, class_name: str) -> JavaObject | None:
    return next(
        (e for e in _expr_preorder(expr) if e.getClass().getSimpleName() == class_name), None
    )


def _collect(expr: JavaObject, class_name: str) -> list[JavaObject]:
    """The outermost sub-expressions of class ``class_name`` (not looking inside them)."""
    if expr.getClass().getSimpleName() == class_name:
        return [expr]
    return [hit for child in _seq(expr.children()) for hit in _collect(child, class_name)]


def _name(expr: JavaObject) -> str:
    try:
        return str(expr.name())
    except Py4JError:  # not a NamedExpression: an expression used as a key
        return str(expr.sql())


def _column(expr: JavaObject) -> dict[str, str]:
    return {"name": _name(expr), "type": str(expr.dataType().catalogString())}


def _try(node: JavaObject, method: str) -> JavaObject | None:
    try:
        return getattr(node, method)()
    except Py4JError:
        return None


# --- values ---------------------------------------------------------------------------


def _interval_micros(value: Any) -> int | None:
    """Microseconds of an evaluated interval: CalendarInterval, or a day-time interval."""
    if isinstance(value, int):
        return value
    try:
        months = get_field(value, "months")
        days = get_field(value, "days")
        micros = get_field(value, "microseconds")
    except Py4JError:
        return None
    return (months * _DAYS_PER_MONTH + days) * _MICROS_PER_DAY + micros


def _seconds(micros: int | None) -> int | float | None:
    if micros is None:
        return None
    return micros // 1_000_000 if micros % 1_000_000 == 0 else micros / 1_000_000


def _fold(expr: JavaObject | None) -> Any:
    """The value of a constant expression (a literal, a cast of one), else None."""
    if expr is None or not expr.foldable():
        return None
    return expr.eval(None)


# --- operators ------------------------------------------------------------------------


def _describe_operator(node: JavaObject, jvm: JavaObject) -> dict[str, Any]:
    kind = node.nodeName()
    if kind == "Aggregate":
        op = _aggregate(node)
    elif kind in ("Deduplicate", "DeduplicateWithinWatermark"):
        op = _operator("dedupe", _seq(node.keys()), within_watermark=kind != "Deduplicate")
    elif kind == "Join":
        op = _join(node, jvm)
    elif kind in _ARBITRARY:
        op = _arbitrary(node)
    elif kind == "GlobalLimit":
        op = _operator("limit", [])
        op["limit"] = _fold(node.limitExpr())
    else:
        op = _operator("other", [], operator=kind, output=node.schema().catalogString())
    op["state_fingerprint"] = fingerprint(_canonical(op))
    return op


def _operator(kind: str, keys: list[JavaObject], **state: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "keys": [_column(k) for k in keys],
        "window": None,
        "aggregates": [],
        "state": state,
    }


def _canonical(op: dict[str, Any]) -> dict[str, Any]:
    """What the fingerprint covers: the shape of the operator's state, not its names."""
    return {
        "kind": op["kind"],
        "keys": op["keys"],
        "window": op["window"],
        "aggregates": [
            {k: a[k] for k in ("class", "inputs", "distinct", "result")} for a in op["aggregates"]
        ],
        "state": op["state"],
    }


def _aggregate(node: JavaObject) -> dict[str, Any]:
    keys: list[JavaObject] = []
    window: dict[str, Any] | None = None
    for position, expr in enumerate(_seq(node.groupingExpressions())):
        marker = _window_marker(expr)
        if marker is None:
            keys.append(expr)
        else:
            window = _window(node.child(), expr, marker)
            window["position"] = position
    op = _operator("window-aggregate" if window else "aggregate", keys)
    op["window"] = window
    op["aggregates"] = [
        _aggregate_function(ae, _name(named))
        for named in _seq(node.aggregateExpressions())
        for ae in _collect(named, "AggregateExpression")
    ]
    return op


def _aggregate_function(ae: JavaObject, output: str) -> dict[str, Any]:
    fn = ae.aggregateFunction()
    inputs = [
        str(c.sql()) if c.foldable() else str(c.dataType().catalogString())
        for c in _seq(fn.children())
    ]
    distinct = bool(ae.isDistinct())
    name = str(fn.prettyName())
    return {
        "function": name,
        "class": str(fn.getClass().getSimpleName()),
        "inputs": inputs,
        "distinct": distinct,
        "result": str(fn.dataType().catalogString()),
        "buffer": str(fn.aggBufferSchema().catalogString()),
        "output": output,
        "signature": f"{name}({'distinct ' if distinct else ''}{', '.join(inputs)})",
    }


def _join(node: JavaObject, jvm: JavaObject) -> dict[str, Any]:
    left_keys: list[JavaObject] = []
    right_keys: list[JavaObject] = []
    extracted = _equi_join_keys(node, jvm)
    if extracted is not None:
        left_keys, right_keys = extracted
    return _operator(
        "join",
        left_keys,
        join_type=str(node.joinType().toString()),
        right_keys=[_column(k) for k in right_keys],
        left_values=str(node.left().schema().catalogString()),
        right_values=str(node.right().schema().catalogString()),
    )


def _equi_join_keys(
    node: JavaObject, jvm: JavaObject
) -> tuple[list[JavaObject], list[JavaObject]] | None:
    extractor = jvm.org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
    found = extractor.unapply(node)
    if not found.isDefined():
        return None
    parts = found.get()
    return _seq(parts._2()), _seq(parts._3())


def _arbitrary(node: JavaObject) -> dict[str, Any]:
    keys = _try(node, "groupingAttributes") or _try(node, "leftAttributes")
    state_schema = None
    declared = _try(node, "stateType")
    if declared is None:
        encoder = _try(node, "stateEncoder")
        declared = _try(encoder, "schema") if encoder is not None else None
    if declared is not None:
        state_schema = str(declared.catalogString())
    function = _try(node, "functionExpr")
    return _operator(
        "arbitrary",
        _seq(keys) if keys is not None else [],
        operator=str(node.nodeName()),
        function=_name(function) if function is not None else None,
        state_schema=state_schema,  # None: state variables are declared at run time
        output=str(node.schema().catalogString()),
    )


# --- windows --------------------------------------------------------------------------


def _window_marker(expr: JavaObject) -> str | None:
    metadata = _try(expr, "metadata")
    if metadata is None:
        return None
    for marker in (TIME_WINDOW_MARKER, SESSION_WINDOW_MARKER):
        if metadata.contains(marker):
            return marker
    return None


def _window(child: JavaObject, attr: JavaObject, marker: str) -> dict[str, Any]:
    """The window of a grouping attribute, read from the expression that defines it.

    Spark's analyzer replaces ``window(...)`` by a Project (tumbling) or an Expand (sliding)
    computing a ``named_struct(start, end)``, and ``session_window(...)`` by a Project with
    ``end = time + gap``; the durations are constants inside those expressions.
    """
    struct = _defining_expression(child, int(attr.exprId().id()))
    if struct is None or struct.getClass().getSimpleName() != "CreateNamedStruct":
        kind = "session" if marker == SESSION_WINDOW_MARKER else "time"
        log.warning("cannot read the %s window of %s from the plan", kind, _name(attr))
        return {"type": f"unknown-{kind}", "column": None}
    parts = _seq(struct.children())  # "start", start expression, "end", end expression
    start, end = parts[1], parts[3]
    time_col = _first(start, "AttributeReference")
    column = _name(time_col) if time_col is not None else None
    if marker == SESSION_WINDOW_MARKER:
        return _session_window(end, column)
    remainder = _first(start, "Remainder")
    add = _first(end, "Add")
    slide = _fold(remainder.right()) if remainder is not None else None
    offset = _fold(_try(remainder.left(), "right")) if remainder is not None else None
    size = _fold(add.right()) if add is not None else None
    return {
        "type": "tumbling" if size == slide else "sliding",
        "column": column,
        "size_s": _seconds(size),
        "slide_s": _seconds(slide),
        "start_s": _seconds(offset),
    }


def _session_window(end: JavaObject, column: str | None) -> dict[str, Any]:
    gap = next(
        (e for e in _expr_preorder(end) if str(e.dataType().typeName()).startswith("interval")),
        None,
    )
    window: dict[str, Any] = {"type": "session", "column": column, "gap_s": None}
    if gap is None:
        return window
    if gap.foldable():
        window["gap_s"] = _seconds(_interval_micros(gap.eval(None)))
    else:
        window["gap"] = str(gap.sql())  # a gap computed per row
    return window


def _defining_expression(plan: JavaObject, expr_id: int) -> JavaObject | None:
    for node in _preorder(plan):
        name = node.nodeName()
        if name == "Project":
            for named in _seq(node.projectList()):
                if (
                    named.getClass().getSimpleName() == "Alias"
                    and int(named.exprId().id()) == expr_id
                ):
                    return named.child()
        elif name == "Expand":
            output = _seq(node.output())
            for i, attr in enumerate(output):
                if int(attr.exprId().id()) == expr_id:
                    return _seq(node.projections().apply(0))[i]
    return None


# --- watermarks and checks ------------------------------------------------------------


def _watermark(node: JavaObject) -> dict[str, Any]:
    delay = node.delay()
    return {
        "column": _name(node.eventTime()),
        "delay": str(delay.toString()),
        "delay_s": _seconds(_interval_micros(delay)),
    }


def _unsupported(jvm: JavaObject, plan: JavaObject, output_mode: str) -> str | None:
    """Spark's own refusal of this streaming query (what ``start()`` would raise), if any."""
    if not plan.isStreaming():
        return None
    mode = jvm.org.apache.spark.sql.catalyst.streaming.InternalOutputModes.apply(output_mode)
    checker = jvm.org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker
    try:
        checker.checkForStreaming(plan, mode)
    except AnalysisException as exc:
        return str(exc).split(";\n", 1)[0].strip()
    return None
