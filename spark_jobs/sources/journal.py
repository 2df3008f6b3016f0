"""The event journal of the ``transactions`` table as a replayable stream.

Offset ``{"source": ID, "sequence": N, "stream": S}``: every journal entry of the journal
``S`` (its identity, made with the journal: :mod:`streamops_contract.sinks.journal_store`) with
sequence <= N has been read. A batch ``(start, end]`` is split into partitions of at most
``partition_size`` entries, each reading exactly its range from the journal table, so a failed
batch reads the same entries again.

The journal is bounded (its newest ``capacity`` entries): a reader that fell behind further,
or that finds another journal (the store was created again) or a journal whose last sequence
is below the committed one, would skip entries. It never does so silently. At each trigger
(``latestOffset``) the reader compares the journal's head with the committed offset; with the
option ``on_source_reset: fail`` (the default) it raises
:class:`~spark_jobs.sources.source_state.SourceResetError` naming the committed sequence and
the oldest entry the journal still holds; with ``restart_from_earliest`` the next batch reads
from the oldest entry held (its end offset carries ``"from"``) and the loss is recorded with
its count in the source's state (:mod:`spark_jobs.sources.source_state`), where the job's
status and health show it. A partition that finds entries of its planned range trimmed
meanwhile (the journal moved on by more than its capacity between planning and reading)
fails its task the same way, naming the entries missing.

A store that cannot be reached is not a loss: the trigger admits nothing new, the source is
``degraded`` and asks again after a capped backoff.

Options: ``url`` (the store's SQLAlchemy URL), ``max_records_per_batch`` (default 10000),
``partition_size`` (default 5000), ``start_sequence`` (offset of a new query; default: just
before the oldest entry held), ``start_offset`` / ``start_offsets_file``, ``gate_file``,
``rehearsal`` (:mod:`spark_jobs.sources.positions`), ``pause_file`` (while it exists nothing
new is admitted), ``on_source_reset``, ``state_dir``, ``source_id`` (default
``journal:<url>``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
from sqlalchemy.exc import DBAPIError

from spark_jobs.sources.arrow_batch import record_batch
from spark_jobs.sources.holdback import Holdback
from spark_jobs.sources.positions import (
    REHEARSAL_RECORDS,
    recorded_start,
    rehearsal,
    wait_for_gate,
)
from spark_jobs.sources.source_state import (
    ON_RESET_FAIL,
    SourceResetError,
    SourceState,
    on_reset_policy,
)
from streamops_contract.sinks import journal_store, store

JOURNAL_SCHEMA = StructType(
    [
        StructField("sequence", LongType(), False),
        StructField("at", DoubleType(), False),
        StructField("op", StringType(), False),
        StructField("id", StringType(), False),
        StructField("payload", StringType(), False),
    ]
)


class JournalSourceError(RuntimeError):
    """The journal source was configured wrongly."""


class JournalRange(InputPartition):
    """Entries ``since < sequence <= until`` of journal ``stream``."""

    def __init__(self, since: int, until: int, stream: str | None) -> None:
        super().__init__((since, until, stream))
        self.since = since
        self.until = until
        self.stream = stream


class JournalStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        if not options.get("url"):
            raise JournalSourceError("the transactions_journal source needs the option 'url'")
        self.url = options["url"]
        self.max_records = int(options.get("max_records_per_batch", 10000))
        self.partition_size = int(options.get("partition_size", 5000))
        self.start_sequence = options.get("start_sequence")
        self.source_id = options.get("source_id") or f"journal:{self.url}"
        self.pause_file = options.get("pause_file") or ""
        self.on_reset = on_reset_policy(options)
        self.options = dict(options)
        self.state = SourceState(self.source_id, options.get("state_dir") or None)
        self.holdback = Holdback.from_options(options, "min_records_per_batch")
        self._initial: dict[str, Any] | None = None

    def _offset(self, sequence: int, stream: str | None, **extra: Any) -> dict[str, Any]:
        return {"source": self.source_id, "sequence": sequence, "stream": stream, **extra}

    def _head(self) -> journal_store.JournalHead:
        return journal_store.head(journal_store.engine_for(self.url))

    def initialOffset(self) -> dict:
        """Where a query without a checkpoint starts (fixed once asked: Spark asks again at
        its first batch)."""
        if self._initial is None:
            self._initial = self._first_offset()
        return self._initial

    def _first_offset(self) -> dict[str, Any]:
        recorded = recorded_start(self.options, self.source_id)
        if recorded and "sequence" in recorded and not rehearsal(self.options):
            return self._offset(int(recorded["sequence"]), recorded.get("stream"))
        held = self._head()
        if rehearsal(self.options):  # read just the newest entries
            oldest = (held.first or held.last + 1) - 1
            return self._offset(max(oldest, held.last - REHEARSAL_RECORDS), held.stream)
        if self.start_sequence not in (None, ""):
            return self._offset(int(self.start_sequence), held.stream)
        return self._offset(held.first - 1 if held.first else held.last, held.stream)

    def getDefaultReadLimit(self) -> ReadLimit:
        wait_for_gate(self.options)  # Spark asks once all of the query's sources are up
        return ReadMaxRows(self.max_records)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next batch: ``start`` while paused or while the store does not
        answer; a journal that dropped entries not yet read is never read past silently."""
        if self.pause_file and os.path.exists(self.pause_file):
            return start
        if not self.state.due():
            return start
        try:
            held = self._head()
        except DBAPIError as exc:
            if not store.unreachable(exc):
                raise
            self.state.degraded(f"the store {self.url} did not answer ({type(exc).__name__})")
            return start
        self.state.ok()
        begin = int(start["sequence"])
        stream = held.stream or start.get("stream")
        extra: dict[str, Any] = {}
        problem = self._problem(start, held)
        if problem:
            begin = self._reset(start, held, problem)
            extra["from"] = begin
        last = held.last
        if isinstance(limit, ReadMaxRows):
            last = min(last, begin + limit.max_rows)
        elif not isinstance(limit, ReadAllAvailable):
            last = min(last, begin + self.max_records)
        reset = bool(extra) or stream != start.get("stream")  # decided now, never held
        if self.holdback.holds(last - begin, limit, urgent=reset, room=held.capacity):
            return start  # a slow journal's entries wait in the store for a later trigger
        if not extra and last <= begin and stream == start.get("stream"):
            return start
        return self._offset(max(begin, last), stream, **extra)

    @staticmethod
    def _problem(start: dict, held: journal_store.JournalHead) -> str | None:
        """Why the journal cannot continue after ``start``, or None."""
        begin, committed = int(start["sequence"]), start.get("stream")
        if committed and held.stream and held.stream != committed:
            return (f"the store now holds another journal ({held.stream}, entries "
                    f"{held.first}..{held.last})")  # fmt: skip
        if held.last < begin:
            return f"the journal's last entry ({held.last}) is below the committed sequence"
        if held.first is not None and held.first - 1 > begin:
            return (f"the oldest entry it still holds is {held.first} (capacity "
                    f"{held.capacity}): entries {begin + 1}..{held.first - 1} were dropped "
                    "before they were read")  # fmt: skip
        return None

    def _reset(self, start: dict, held: journal_store.JournalHead, problem: str) -> int:
        """Fail (``on_source_reset: fail``) or skip to the oldest entry held, counting the
        loss (``restart_from_earliest``); the sequence the next batch reads after."""
        begin, committed = int(start["sequence"]), start.get("stream") or "?"
        resume = held.first - 1 if held.first is not None else held.last
        what = (
            f"source {self.source_id} lost journal entries it had not read: the committed "
            f"offset is sequence {begin} of journal {committed}, and {problem}"
        )
        if self.on_reset == ON_RESET_FAIL:
            raise SourceResetError(
                f"{what}. Nothing after sequence {begin} was read or skipped. To accept the "
                "loss and read the journal from its oldest entry, set on_source_reset: "
                "restart_from_earliest in the job spec"
            )
        same = held.stream in (None, start.get("stream"))
        self.state.lost(
            old_stream=committed,
            new_stream=held.stream,
            committed=begin,
            resumed_after=resume,
            lost_records=(resume - begin) if same and resume > begin else None,
            reason=problem,
        )
        return resume

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        lo, hi = int(end.get("from", start["sequence"])), int(end["sequence"])
        stream = end.get("stream")
        return [
            JournalRange(a, min(a + self.partition_size, hi), stream)
            for a in range(lo, hi, self.partition_size)
        ]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's entries as one Arrow batch; every entry of its range, or a
        :class:`SourceResetError` naming those the journal no longer holds."""
        assert isinstance(partition, JournalRange)
        engine = journal_store.engine_for(self.url)
        entries = store.retrying(
            "reading the journal",
            lambda: journal_store.read_entries(engine, partition.since, partition.until),
        )
        held = journal_store.head(engine)
        if partition.stream and held.stream and held.stream != partition.stream:
            raise SourceResetError(
                f"source {self.source_id}: the batch of entries {partition.since + 1}.."
                f"{partition.until} was planned on journal {partition.stream}, and the store "
                f"now holds journal {held.stream}"
            )
        expected = partition.until - partition.since
        if len(entries) != expected:
            got = {e.sequence for e in entries}
            missing = [s for s in range(partition.since + 1, partition.until + 1) if s not in got]
            raise SourceResetError(
                f"source {self.source_id}: entries {missing[0]}..{missing[-1]} of the batch "
                f"{partition.since + 1}..{partition.until} were dropped from the journal before "
                f"they were read (the oldest entry it holds is {held.first}, capacity "
                f"{held.capacity}); nothing was skipped"
            )
        if not entries:
            return
        columns = [[getattr(e, f.name) for e in entries] for f in JOURNAL_SCHEMA.fields]
        yield record_batch(JOURNAL_SCHEMA, columns)

    def commit(self, end: dict) -> None:
        """Nothing to release: the journal trims itself."""


class JournalDataSource(DataSource):
    """``spark.readStream.format("transactions_journal").option("url", STORE_URL)``."""

    @classmethod
    def name(cls) -> str:
        return "transactions_journal"

    def schema(self) -> StructType:
        return JOURNAL_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return JournalStreamReader(dict(self.options))


__all__ = [
    "JOURNAL_SCHEMA",
    "JournalDataSource",
    "JournalRange",
    "JournalSourceError",
    "JournalStreamReader",
]
