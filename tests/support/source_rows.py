"""The rows a data source reader's ``read`` gives Spark, as tuples (it yields Arrow batches)."""

from __future__ import annotations

from typing import Any


def read_rows(reader: Any, partition: Any) -> list[tuple[Any, ...]]:
    """Every row of ``reader.read(partition)``, in order, as a tuple of its columns."""
    return [
        tuple(row.values()) for batch in reader.read(partition) for row in batch.to_pylist()
    ]
