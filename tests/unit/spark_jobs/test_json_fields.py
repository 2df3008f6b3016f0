"""The ``fields`` option of a source: typed columns parsed from raw JSON records."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from spark_jobs.sources.json_fields import Fields, FieldsError

FIELDS = Fields.parse("symbol string, time double, price double, quantity long, ok boolean")


def rows(*objs: object) -> list[tuple[int, str]]:
    return [(100 + i, o if isinstance(o, str) else json.dumps(o)) for i, o in enumerate(objs)]


def test_the_schema_puts_the_sequence_first_never_null() -> None:
    schema = FIELDS.schema()
    assert [f.name for f in schema.fields] == ["sequence", "symbol", "time", "price", "quantity",
                                               "ok"]  # fmt: skip
    assert not schema.fields[0].nullable and all(f.nullable for f in schema.fields[1:])


def test_records_as_declared_are_parsed_with_extra_keys_ignored() -> None:
    batch = FIELDS.batch(rows(
        {"sequence": 1, "symbol": "ABC", "time": 1.5, "price": 10, "quantity": 3, "ok": True,
         "venue": "X"},
        {"symbol": "DEF", "time": 2.25, "price": 11.5, "quantity": 4},
    ))  # fmt: skip
    assert isinstance(batch, pa.RecordBatch)
    assert batch.to_pydict() == {
        "sequence": [100, 101], "symbol": ["ABC", "DEF"], "time": [1.5, 2.25],
        "price": [10.0, 11.5], "quantity": [3, 4], "ok": [True, None],
    }  # fmt: skip


def test_a_record_not_as_declared_gives_nulls_and_keeps_its_sequence() -> None:
    batch = FIELDS.batch(rows(
        {"symbol": "ABC", "time": 1.0, "price": 10.0, "quantity": 3},
        {"symbol": 7, "time": "soon", "price": 10.0, "quantity": 2.5, "ok": 1},
        "not json {",
        "[1, 2]",
        "null",
        {"symbol": "XYZ", "time": 3.0, "price": 12.0, "quantity": 1, "ok": False},
    ))  # fmt: skip
    got = batch.to_pydict()
    assert got["sequence"] == [100, 101, 102, 103, 104, 105]
    assert got["symbol"] == ["ABC", None, None, None, None, "XYZ"]
    assert got["time"] == [1.0, None, None, None, None, 3.0]
    assert got["price"] == [10.0, 10.0, None, None, None, 12.0]
    assert got["quantity"] == [3, None, None, None, None, 1]
    assert got["ok"] == [None, None, None, None, None, False]


@pytest.mark.parametrize("text", ["symbol", "symbol text", "a long, a double", "sequence long"])
def test_a_bad_fields_option_is_named(text: str) -> None:
    with pytest.raises(FieldsError, match="fields"):
        Fields.parse(text)


KEPT = Fields.parse("vin string, speed double, codes array<string>", keep_raw=True)


def test_keep_raw_carries_the_text_and_whether_the_record_is_typed() -> None:
    assert [f.name for f in KEPT.schema().fields] == ["sequence", "raw", "typed", "vin", "speed",
                                                      "codes"]  # fmt: skip
    good = rows({"vin": "A", "speed": 5, "codes": ["P1", None]}, {"vin": None})
    batch = KEPT.batch(good)
    assert batch.to_pydict() == {
        "sequence": [100, 101], "raw": [raw for _, raw in good], "typed": [True, True],
        "vin": ["A", None], "speed": [5.0, None], "codes": [["P1", None], None],
    }  # fmt: skip


@pytest.mark.parametrize("alone", [True, False])
def test_keep_raw_marks_what_is_not_as_declared_untyped_alone_or_among_others(alone: bool) -> None:
    """``null`` alone crashed pyarrow 26's parse and among others it reads as a row of nulls:
    neither may happen; a record not as declared is untyped, its raw text kept."""
    records = rows(
        {"vin": "A", "speed": 1.5, "codes": []},
        {"vin": "B", "speed": "12.5"},
        {"vin": "C", "codes": [1]},
        {"vin": "D", "codes": "P1"},
        {"vin": "E", "speed": True},
        "null", "42", "[1]", "not json", '{"vin": "F"} {"vin": "G"}', ' {"vin": "H"}',
    )  # fmt: skip
    parts = [[r] for r in records] if alone else [records]
    got = [row for part in parts for row in KEPT.batch(part).to_pylist()]
    assert [r["raw"] for r in got] == [raw for _, raw in records]
    assert [r["typed"] for r in got] == [True] + [False] * 9 + [True]
    assert got[0]["speed"] == 1.5 and got[-1]["vin"] == "H"


@pytest.mark.parametrize("alone", [True, False])
def test_values_arrow_cannot_hold_as_declared_are_untyped_never_a_failed_task(alone: bool) -> None:
    """Parsed one at a time, an integer beyond a long, a lone surrogate or an integer no
    double holds exactly once raised in ``pa.array``: the whole partition's task failed,
    again on every retry."""
    fields = Fields.parse("vin string, time double, n long, codes array<string>", keep_raw=True)
    records = [
        (1, '{"vin": "\\ud800", "time": 1}'),
        (2, '{"time": 9007199254740993}'),
        (3, '{"n": 9223372036854775808}'),
        (4, '{"codes": ["a", "\\udc00"]}'),
        (5, '{"vin": "ok", "time": 2, "n": 3, "codes": ["x"]}'),
    ]
    parts = [[r] for r in records] if alone else [records]
    got = [row for part in parts for row in fields.batch(part).to_pylist()]
    assert [r["typed"] for r in got] == [False, True, False, False, True]
    assert got[1]["time"] == 9007199254740992.0  # the nearest double, as Spark casts the text
    assert (got[4]["vin"], got[4]["time"], got[4]["n"], got[4]["codes"]) == ("ok", 2.0, 3, ["x"])
