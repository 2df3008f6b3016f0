"""Pings: parsing the raw records of both sources and validating them, in Spark expressions.

Both sources are parsed into the same typed columns, then validated in one place. A row
that fails gets a ``reason`` (the first rule it breaks) and goes to quarantine with its raw
input; a valid row has ``reason`` null. Casts are ``try_cast`` so a bad field never fails
a batch (Spark 4 runs with ANSI mode on).

Beta's records are parsed in the source's tasks (:data:`BETA_FIELDS`, the source's options
``fields`` and ``keep_raw``): a record whose fields all have their JSON types comes typed
(``typed`` true) and is taken as it is; only the others are parsed here from ``raw``, each
field as text then ``try_cast``, so that ``"speed": "12.5"`` counts as it always has. The
source-side parse took beta's parse and validation from 26 to 3.6 microseconds of executor
CPU per record and stage (one core, local mode; ``docs/performance.md``).

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
_NUMBERS = ("time", "latitude", "longitude", "speed", "heading")

BETA_FIELDS = (
    "vin string, time double, latitude double, longitude double, speed double, "
    "heading double, obd_codes array<string>"
)
"""The fields fleet_beta's tasks parse (option ``fields``, with ``keep_raw``)."""
BETA_OPTIONS = {"fields": BETA_FIELDS, "keep_raw": "true"}
"""The options of fleet_beta that :func:`from_beta` reads the rows of."""


def from_beta(df: DataFrame) -> DataFrame:
    """``(sequence, raw, typed, <BETA_FIELDS>)`` rows of fleet_beta → parsed, validated
    pings; a row not ``typed`` is parsed from ``raw``."""
    obj = df.selectExpr(
        "*",
        "CASE WHEN typed THEN NULL ELSE "
        f"from_json(raw, {_text(_BETA_DDL)}, map('mode', 'PERMISSIVE')) END AS _obj",
    )
    obd = "from_json(_obj.obd_codes, 'ARRAY<STRING>')"
    parsed = obj.selectExpr(
        "'beta' AS source",
        "CAST(sequence AS STRING) AS position",
        "sequence AS _sequence",
        "raw",
        # from_json is PERMISSIVE: bad input gives a struct of nulls, never null itself.
        "NOT typed AND json_object_keys(raw) IS NULL AS _unparsed",
        "false AS _bad_utf8",
        "8 AS _columns",
        "CASE WHEN typed THEN vin ELSE _obj.vin END AS _vin",
        *(
            f"CASE WHEN typed THEN {_q(f)} ELSE try_cast(_obj.{_q(f)} AS DOUBLE) END"
            f" AS {_q('_' + f)}"
            for f in _NUMBERS
        ),
        f"coalesce(CASE WHEN typed THEN obd_codes ELSE {obd} END, {_EMPTY_CODES}) AS obd_codes",
        f"(NOT typed AND _obj.obd_codes IS NOT NULL AND {obd} IS NULL) AS _obd_bad",
    )
    return _validate(parsed)


def from_alpha(df: DataFrame) -> DataFrame:
    """``(file, line, raw, invalid_utf8)`` rows of fleet_alpha (CSV) → parsed, validated
    pings; a line that was not UTF-8 is quarantined (:data:`INVALID_UTF8`) with its text as
    read (U+FFFD for the bytes). Rows without ``invalid_utf8`` count as UTF-8."""
    utf8 = "invalid_utf8" if "invalid_utf8" in df.columns else "false"
    split = df.selectExpr("*", "split(raw, ',', -1) AS _parts")
    obd_text = "coalesce(trim(get(_parts, 7)), '')"
    parsed = split.selectExpr(
        "'alpha' AS source",
        "concat_ws(':', file, CAST(line AS STRING)) AS position",
        "raw",
        "false AS _unparsed",
        f"{utf8} AS _bad_utf8",
        "size(_parts) AS _columns",
        "try_cast(trim(get(_parts, 0)) AS BIGINT) AS _sequence",
        "trim(get(_parts, 1)) AS _vin",
        *(
            f"try_cast(trim(get(_parts, {i})) AS DOUBLE) AS {_q('_' + f)}"
            for i, f in enumerate(FIELDS[:7])
            if f in _NUMBERS
        ),
        f"CASE WHEN {obd_text} = '' THEN {_EMPTY_CODES} ELSE split({obd_text}, ';') END"
        " AS obd_codes",
        "false AS _obd_bad",
    )
    return _validate(parsed)


def _in_range(c: str, lo: float, hi: float, hi_inclusive: bool = True) -> str:
    upper = "<=" if hi_inclusive else "<"
    return f"({c} IS NOT NULL AND {c} >= {lo!r}D AND {c} {upper} {hi!r}D)"


INVALID_UTF8 = "invalid UTF-8 (the bytes are U+FFFD in raw)"

_RULES: tuple[tuple[str, str], ...] = (
    ("_bad_utf8", INVALID_UTF8),
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
    """The first rule each row of typed columns breaks, then its event time."""
    typed = parsed.selectExpr(
        "source",
        "position",
        "_sequence AS sequence",
        "_vin AS vin",
        *(f"{_q('_' + f)} AS {_q(f)}" for f in _NUMBERS),
        "obd_codes",
        "raw",
        "_bad_utf8",
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
