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
