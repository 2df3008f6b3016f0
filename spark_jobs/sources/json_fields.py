"""Typed fields of JSON records, parsed where the records are read (in the source's task).

A source given the option ``fields`` (for example ``"symbol string, time double, price
double"``) yields ``sequence`` and those fields as columns instead of the raw text: one
``pyarrow.json`` parse of a whole partition (C++, a few milliseconds for 10k records) in
place of Python tuples carried to the JVM and parsed there again by ``from_json`` in each
stage's query. Fields a record lacks, or holds with another type, are null; a record that is
not a JSON object gives a row of nulls but its sequence (the job decides what such a row
means: the trade analyser drops it). Field names are JSON keys; types are ``string``,
``double``, ``long``, ``boolean`` and ``array<string>``.

With ``keep_raw`` (the source's option ``keep_raw``), every row also carries its ``raw`` text
and ``typed``: true when the record is a JSON object whose declared fields are each absent,
null or of the declared type, so that its typed columns say all it holds. A job that judges
records (fleet-pings quarantines a malformed one with its raw text and reason) takes the
typed columns of such a row as they are and parses ``raw`` itself only for the others.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

_SPARK: dict[str, DataType] = {
    "string": StringType(),
    "double": DoubleType(),
    "long": LongType(),
    "boolean": BooleanType(),
    "array<string>": ArrayType(StringType()),
}
_PY: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "double": (float, int),
    "long": (int,),
    "boolean": (bool,),
    "array<string>": (list,),
}
RESERVED = ("sequence", "raw", "typed")


_LONG = (-(2**63), 2**63 - 1)


def _typed(value: Any, kind: str) -> Any:
    """``value`` (from ``json.loads``, not None) as a ``kind`` the way the Arrow parse takes
    it (an integer as a double rounds to the nearest), or None if it is not one."""
    if not isinstance(value, _PY[kind]) or (kind == "boolean") != isinstance(value, bool):
        return None
    if kind == "double" and isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # beyond a double's range
            return None
    if kind == "long" and not _LONG[0] <= value <= _LONG[1]:
        return None
    if kind == "string" and not _text(value):
        return None
    if kind == "array<string>" and not all(v is None or _text(v) for v in value):
        return None
    return value


def _text(value: Any) -> bool:
    """A ``str`` Arrow can hold: UTF-8 encodable (``"\\ud800"`` in JSON gives a lone
    surrogate, which is not)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class FieldsError(ValueError):
    """The ``fields`` option does not name fields of known types."""


@dataclass(frozen=True, slots=True)
class Fields:
    """The ``(name, type)`` pairs of a ``fields`` option, in order."""

    pairs: tuple[tuple[str, str], ...]
    keep_raw: bool = False

    @classmethod
    def parse(cls, text: str, keep_raw: bool = False) -> Fields:
        pairs = []
        for item in text.split(","):
            words = item.split()
            if len(words) != 2 or words[1].lower() not in _SPARK:
                raise FieldsError(
                    f"fields: {item.strip()!r} is not '<name> <type>' with a type among "
                    f"{', '.join(_SPARK)} (in {text!r})"
                )
            pairs.append((words[0], words[1].lower()))
        if len({name for name, _ in pairs}) != len(pairs) or any(n in RESERVED for n, _ in pairs):
            raise FieldsError(
                f"fields: names must be unique and not {', '.join(RESERVED)} (in {text!r})"
            )
        return cls(tuple(pairs), keep_raw)

    def schema(self) -> StructType:
        """``sequence`` (the source's position, never null), with ``keep_raw`` ``raw`` and
        ``typed`` (never null), then the fields."""
        kept = [StructField("raw", StringType(), False), StructField("typed", BooleanType(), False)]
        return StructType(
            [StructField("sequence", LongType(), False)]
            + (kept if self.keep_raw else [])
            + [StructField(name, _SPARK[kind]) for name, kind in self.pairs]
        )

    def batch(self, rows: Sequence[tuple[int, str]]) -> Any:
        """One ``pyarrow.RecordBatch`` of ``(sequence, raw JSON)`` rows, parsed."""
        import pyarrow as pa
        import pyarrow.json as pj

        arrow = _arrow_schema(self)
        seqs = pa.array([seq for seq, _ in rows], pa.int64())
        typed: list[bool] | None = None
        try:
            if not all(raw[:1] == "{" and raw[-1:] == "}" for _, raw in rows):
                # not objects alone: the Arrow parse takes a line `null` for a row of nulls
                # (and crashes on one alone, pyarrow 26), so they go one at a time
                raise ValueError("a record that is not one JSON object")
            table = pj.read_json(
                io.BytesIO("\n".join(raw for _, raw in rows).encode()),
                read_options=pj.ReadOptions(use_threads=False),
                parse_options=pj.ParseOptions(
                    explicit_schema=pa.schema(list(arrow)[-len(self.pairs) :]),
                    unexpected_field_behavior="ignore",
                ),
            )
            if table.num_rows != len(rows):
                raise ValueError("a record spans lines")
            columns = [table.column(name).combine_chunks() for name, _ in self.pairs]
        except (pa.ArrowInvalid, ValueError):  # a record not as declared: one at a time
            columns, typed = self._slow_columns(rows, arrow)
        kept = []
        if self.keep_raw:
            typed = [True] * len(rows) if typed is None else typed
            kept = [pa.array([raw for _, raw in rows], pa.string()), pa.array(typed, pa.bool_())]
        return pa.RecordBatch.from_arrays([seqs, *kept, *columns], schema=arrow)

    def _slow_columns(
        self, rows: Sequence[tuple[int, str]], arrow: Any
    ) -> tuple[list[Any], list[bool]]:
        """Each record parsed alone: its fields of the declared type (others null), and
        whether all its declared fields are (``typed``)."""
        import pyarrow as pa

        values: list[list[Any]] = [[] for _ in self.pairs]
        typed: list[bool] = []
        for _, raw in rows:
            try:
                obj = json.loads(raw)
            except ValueError:
                obj = None
            whole = isinstance(obj, dict)
            if not isinstance(obj, dict):
                obj = {}
            for column, (name, kind) in zip(values, self.pairs, strict=True):
                value = obj.get(name)
                typed_value = None if value is None else _typed(value, kind)
                whole = whole and (value is None or typed_value is not None)
                column.append(typed_value)
            typed.append(whole)
        first = len(arrow) - len(self.pairs)
        return [pa.array(v, arrow.field(first + i).type) for i, v in enumerate(values)], typed


def _arrow_schema(fields: Fields) -> Any:
    """The Arrow schema Spark derives from :meth:`Fields.schema` (it must equal it)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(fields.schema(), timezone="UTC")
