"""fleetsim-beta as a replayable stream: offsets are the server's sequence numbers.

Offset ``{"sequence": N}`` means every record with sequence <= N has been read. A batch
``(start, end]`` is split into partitions of at most ``partition_size`` records; each
partition re-reads exactly its range from ``GET /pings?since=&limit=``, so a failed batch
is re-read identically. A range the server no longer holds (HTTP 410) or a hole in the
sequence fails the query with the missing range: records are never skipped silently.

Options: ``url`` (…/pings), ``max_records_per_batch`` (default 50000), ``partition_size``
(default 10000), ``start_sequence`` (offset of a new query; default: just before the
oldest record the server holds), ``start_offset`` (JSON of an offset of this source, e.g.
from a savepoint: where a new query starts) or ``start_offsets_file`` (see ``positions``),
``timeout`` (seconds, default 10), ``source_id`` (stored in every offset, default
``beta:<url>``), ``pause_file`` (while it exists, nothing new is admitted: the query drains
to a batch boundary and idles), ``gate_file`` and ``rehearsal`` (see ``positions``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import LongType, StringType, StructField, StructType

from spark_jobs.sources.positions import (
    REHEARSAL_RECORDS,
    recorded_start,
    rehearsal,
    wait_for_gate,
)

BETA_SCHEMA = StructType(
    [StructField("sequence", LongType(), False), StructField("raw", StringType(), False)]
)


class BetaSourceError(RuntimeError):
    """The beta server lost records we need, broke its sequence, or answered garbage."""


class BetaRange(InputPartition):
    def __init__(self, since: int, until: int) -> None:
        super().__init__((since, until))
        self.since = since
        self.until = until


def _base_url(url: str) -> str:
    return url.rstrip("/").removesuffix("/pings")


def fetch_head(url: str, timeout: float) -> dict[str, Any]:
    import requests

    resp = requests.get(f"{_base_url(url)}/head", timeout=timeout)
    resp.raise_for_status()
    return resp.json()


def fetch_range(url: str, since: int, until: int, timeout: float) -> Iterator[tuple[int, str]]:
    """Yield ``(sequence, raw_json)`` for since < sequence <= until, checking contiguity."""
    import requests

    pings_url = _base_url(url) + "/pings"
    expected = since + 1
    with requests.Session() as http:
        while expected <= until:
            limit = min(until - expected + 1, 10000)
            resp = http.get(
                pings_url, params={"since": expected - 1, "limit": limit}, timeout=timeout
            )
            if resp.status_code == 410:
                body = resp.json()
                oldest = body.get("oldest_available")
                raise BetaSourceError(
                    f"fleetsim-beta at {pings_url} no longer holds sequences {expected}.."
                    f"{(oldest - 1) if isinstance(oldest, int) else '?'} "
                    f"(oldest available: {oldest}); records in that range are lost upstream"
                )
            resp.raise_for_status()
            records = resp.json()
            if not isinstance(records, list) or not records:
                raise BetaSourceError(
                    f"fleetsim-beta at {pings_url} returned no records for since={expected - 1}"
                    f" although its head is at least {until}"
                )
            for record in records:
                seq = record.get("sequence") if isinstance(record, dict) else None
                if seq != expected:
                    raise BetaSourceError(
                        f"fleetsim-beta sequence gap: expected {expected}, got {seq!r}"
                    )
                yield seq, json.dumps(record, separators=(",", ":"))
                expected += 1
                if expected > until:
                    break


class BetaStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        if "url" not in options:
            raise BetaSourceError("fleet_beta source needs the option 'url'")
        self.url = options["url"]
        self.max_records = int(options.get("max_records_per_batch", 50000))
        self.partition_size = int(options.get("partition_size", 10000))
        self.timeout = float(options.get("timeout", 10))
        self.start_sequence = options.get("start_sequence")
        self.source_id = options.get("source_id") or f"beta:{self.url}"
        self.pause_file = options.get("pause_file") or ""
        self.options = dict(options)
        self._initial: int | None = None

    def _offset(self, sequence: int) -> dict:
        return {"source": self.source_id, "sequence": sequence}

    def initialOffset(self) -> dict:
        """Where a query without a checkpoint starts; Spark asks again at its first batch, and
        the answer must not move with the server's head meanwhile."""
        if self._initial is None:
            self._initial = self._first_sequence()
        return self._offset(self._initial)

    def _first_sequence(self) -> int:
        if rehearsal(self.options):  # read just the newest records
            head = fetch_head(self.url, self.timeout)
            last = int(head.get("last") or 0)
            first = int(head.get("first") or last + 1)
            return max(first - 1, last - REHEARSAL_RECORDS)
        recorded = recorded_start(self.options, self.source_id)
        if recorded and "sequence" in recorded:
            return int(recorded["sequence"])
        if self.start_sequence not in (None, ""):
            return int(self.start_sequence)
        head = fetch_head(self.url, self.timeout)
        first = head.get("first")
        return int(first) - 1 if first else int(head.get("last") or 0)

    def getDefaultReadLimit(self) -> ReadLimit:
        wait_for_gate(self.options)  # Spark asks once all of the query's sources are up
        return ReadMaxRows(self.max_records)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if self.pause_file and os.path.exists(self.pause_file):
            return start
        last = int(fetch_head(self.url, self.timeout).get("last") or 0)
        begin = int(start["sequence"])
        if isinstance(limit, ReadMaxRows):
            last = min(last, begin + limit.max_rows)
        elif not isinstance(limit, ReadAllAvailable):
            last = min(last, begin + self.max_records)
        return self._offset(max(begin, last))

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        lo, hi = int(start["sequence"]), int(end["sequence"])
        return [
            BetaRange(a, min(a + self.partition_size, hi))
            for a in range(lo, hi, self.partition_size)
        ]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, BetaRange)
        yield from fetch_range(self.url, partition.since, partition.until, self.timeout)

    def commit(self, end: dict) -> None:
        """Nothing to release: the server keeps a bounded history on its own."""


class BetaDataSource(DataSource):
    """``spark.readStream.format("fleet_beta").option("url", ...)``."""

    @classmethod
    def name(cls) -> str:
        return "fleet_beta"

    def schema(self) -> StructType:
        return BETA_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return BetaStreamReader(dict(self.options))
