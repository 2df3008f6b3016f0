"""Pings: parsing the raw records of both sources and validating them, in Spark expressions.

Both sources are parsed into the same string columns, then validated in one place. A row
that fails gets a ``reason`` (the first rule it breaks) and goes to quarantine with its raw
input; a valid row has ``reason`` null. Casts are ``try_cast`` so a bad field never fails
a batch (Spark 4 runs with ANSI mode on).

The expressions are SQL text (``selectExpr``): each operation on a ``Column`` is a call into
the driver's JVM, and built from Columns, parsing and validating one stage's sources took
about 2,900 of them (0.8 s of a relaunched driver's start-up, more in a cold JVM); as text,
a stage's are a few dozen.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

FIELDS = ("sequence", "vin", "time", "latitude", "longitude", "speed", "heading", "obd_codes")
VIN_PATTERN = r"^[A-HJ-NPR-Z0-9]{17}$"

PING_COLUMNS = (
    "source", "position", "sequence", "vin", "time", "event_time", "latitude", "longitude",
    "speed", "heading", "obd_codes", "raw", "reason",
)  # fmt: skip


def _q(name: str) -> str:
    return f"`{name}`"


def _text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


_EMPTY_CODES = "CAST(array() AS ARRAY<STRING>)"
_BETA_DDL = ", ".join(f"{_q(f)} STRING" for f in FIELDS)


def from_beta(df: DataFrame) -> DataFrame:
    """``(sequence, raw)`` rows of fleet_beta → parsed, validated pings."""
    obj = df.selectExpr(
        "*", f"from_json(raw, {_text(_BETA_DDL)}, map('mode', 'PERMISSIVE')) AS _obj"
    )
    obd = "from_json(_obj.obd_codes, 'ARRAY<STRING>')"
    parsed = obj.selectExpr(
        "'beta' AS source",
        "CAST(sequence AS STRING) AS position",
        "sequence AS framed_sequence",
        "raw",
        # from_json is PERMISSIVE: bad input gives a struct of nulls, never null itself.
        "json_object_keys(raw) IS NULL AS _unparsed",
        "8 AS _columns",
        *(f"_obj.{_q(f)} AS {_q('_' + f)}" for f in FIELDS if f != "obd_codes"),
        f"coalesce({obd}, {_EMPTY_CODES}) AS obd_codes",
        f"(_obj.obd_codes IS NOT NULL AND {obd} IS NULL) AS _obd_bad",
    )
    return _validate(parsed)


def from_alpha(df: DataFrame) -> DataFrame:
    """``(file, line, raw)`` rows of fleet_alpha (CSV) → parsed, validated pings."""
    split = df.selectExpr("*", "split(raw, ',', -1) AS _parts")
    obd_text = "coalesce(trim(get(_parts, 7)), '')"
    parsed = split.selectExpr(
        "'alpha' AS source",
        "concat_ws(':', file, CAST(line AS STRING)) AS position",
        "CAST(NULL AS BIGINT) AS framed_sequence",
        "raw",
        "false AS _unparsed",
        "size(_parts) AS _columns",
        *(f"trim(get(_parts, {i})) AS {_q('_' + f)}" for i, f in enumerate(FIELDS[:7])),
        f"CASE WHEN {obd_text} = '' THEN {_EMPTY_CODES} ELSE split({obd_text}, ';') END"
        " AS obd_codes",
        "false AS _obd_bad",
    )
    return _validate(parsed)


def _in_range(c: str, lo: float, hi: float, hi_inclusive: bool = True) -> str:
    upper = "<=" if hi_inclusive else "<"
    return f"({c} IS NOT NULL AND {c} >= {lo!r}D AND {c} {upper} {hi!r}D)"


_RULES: tuple[tuple[str, str], ...] = (
    ("_unparsed", "not a JSON object"),
    ("_columns != 8", "expected 8 comma-separated fields"),
    ("sequence IS NULL", "sequence is not an integer"),
    ("vin IS NULL OR vin = ''", "vin is missing"),
    (f"NOT (vin RLIKE {_text(VIN_PATTERN)})", "vin is not 17 VIN characters"),
    (f"NOT {_in_range('`time`', 1.0, 1e11)}", "time is not epoch seconds in (0, 1e11]"),
    (f"NOT {_in_range('latitude', -90.0, 90.0)}", "latitude is not a number in [-90, 90]"),
    (f"NOT {_in_range('longitude', -180.0, 180.0)}", "longitude is not a number in [-180, 180]"),
    (f"NOT {_in_range('speed', 0.0, 500.0)}", "speed is not a number in [0, 500]"),
    (f"NOT {_in_range('heading', 0.0, 360.0, False)}", "heading is not a number in [0, 360)"),
    ("_obd_bad", "obd_codes is not a list of strings"),
)
"""Validation rules in order, as SQL over the typed columns: a row's ``reason`` is the first
it breaks (a rule that cannot be evaluated, null, counts as broken)."""

_REASON = (
    "CASE "
    + " ".join(f"WHEN coalesce({broken}, true) THEN {_text(why)}" for broken, why in _RULES)
    + " END"
)


def _validate(parsed: DataFrame) -> DataFrame:
    """Typed columns, then the first rule each row breaks, then its event time."""
    typed = parsed.selectExpr(
        "source",
        "position",
        "coalesce(framed_sequence, try_cast(_sequence AS BIGINT)) AS sequence",
        "_vin AS vin",
        "try_cast(_time AS DOUBLE) AS `time`",
        "try_cast(_latitude AS DOUBLE) AS latitude",
        "try_cast(_longitude AS DOUBLE) AS longitude",
        "try_cast(_speed AS DOUBLE) AS speed",
        "try_cast(_heading AS DOUBLE) AS heading",
        "obd_codes",
        "raw",
        "_unparsed",
        "_columns",
        "_obd_bad",
    )
    checked = typed.selectExpr("*", f"{_REASON} AS reason")
    return checked.selectExpr(
        "source",
        "position",
        "sequence",
        "vin",
        "`time`",
        "CASE WHEN reason IS NULL THEN timestamp_seconds(`time`) END AS event_time",
        "latitude",
        "longitude",
        "speed",
        "heading",
        "obd_codes",
        "raw",
        "reason",
    )


def valid(pings: DataFrame) -> DataFrame:
    return pings.where("reason IS NULL")


def invalid(pings: DataFrame) -> DataFrame:
    return pings.where("reason IS NOT NULL")
