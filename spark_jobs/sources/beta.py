"""fleetsim-beta as a replayable stream: offsets are the server's sequence numbers.

Offset ``{"sequence": N, "stream": S, "generation": G}`` means every record of stream ``S``
(the identity the server's log was created with, from ``GET /head`` and the ``X-Stream-Id``
header) with sequence <= N has been read, in the reader's history ``G`` of that stream. A reset
the source accepts (``on_source_reset: restart_from_earliest``) starts the next generation, and
whatever is cached by position (the spool) is kept per stream and generation, so a record of an
old history is never served as the one now at its sequence. Generation 0 is left out of the
offset (offsets written before generations existed are generation 0).

A batch ``(start, end]`` is split into partitions of at most ``partition_size`` records;
each partition re-reads exactly its range from ``GET /pings?since=&limit=`` (or the spool),
so a failed batch is re-read identically.

The source does not judge a record: it yields ``(sequence, raw)`` and the job parses ``raw``,
or, given the option ``fields``, ``sequence`` and those typed fields, parsed in the
partition's task (the trades of the trades producer, which is this same server with another
record generator, in :mod:`spark_jobs.trade_analyser`); with ``keep_raw`` too, ``raw`` and
whether the record came typed (fleet pings, :mod:`spark_jobs.pings`, which quarantines what
is malformed with its raw text).

Nothing is ever skipped silently. A server that serves another stream (it was reset or
replaced), whose head is below the committed offset, or that no longer holds the records
after it (HTTP 410, a hole) fails the stage with :class:`SourceResetError` naming the
positions, unless the option ``on_source_reset`` is ``restart_from_earliest``: then the next
batch reads the server from its earliest record and the loss is recorded in the source's
state (:mod:`spark_jobs.sources.source_state`). A server that does not answer (timeout,
refused, HTTP 5xx, a body cut short at the transport level) or answers a ``/head`` that is no
head (a 4xx, not JSON, not an object) is not a loss: the source reports no new data, is
``degraded`` until it answers again (its state counts the failed tries), and asks after a
capped backoff; a partition being read retries (also an answer cut short or not JSON) for
``read_patience`` seconds before its task fails.

Options: ``url`` (…/pings), ``max_records_per_batch`` (default 50000), ``partition_size``
(default 10000), ``start_sequence`` (offset of a new query; default: just before the
oldest record the server holds), ``start_offset`` (JSON of an offset of this source, e.g.
from a savepoint: where a new query starts) or ``start_offsets_file`` (see ``positions``),
``timeout`` (seconds, default 10), ``head_timeout`` (seconds, default 2: how long a trigger
waits for the head), ``read_patience`` (seconds, default 120), ``on_source_reset``
(``fail``, the default, or ``restart_from_earliest``), ``state_dir`` (where the source's state
is written), ``spool_dir`` (with it, a batch is admitted only once its records were fetched
into the spool, from which its partitions read: :mod:`spark_jobs.sources.spool`),
``fetch_timeout`` (seconds, default 5), ``fields`` (typed JSON fields the partitions parse and
yield instead of ``raw``: :mod:`spark_jobs.sources.json_fields`), ``keep_raw`` (``true``:
with ``fields``, yield ``raw`` and ``typed`` too), ``source_id`` (stored in
every offset, default ``beta:<url>``), ``pause_file`` (while it exists, nothing new is
admitted: the query drains to a batch boundary and idles), ``gate_file`` and ``rehearsal``
(see ``positions``).
"""

from __future__ import annotations

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

from spark_jobs.sources.arrow_batch import record_batch
from spark_jobs.sources.beta_fetch import (
    TRANSIENT,
    BadAnswer,
    BetaSourceError,
    fetch_head,
    fetch_range,
)
from spark_jobs.sources.holdback import Holdback
from spark_jobs.sources.json_fields import Fields
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
from spark_jobs.sources.spool import Spool, history_key

BETA_SCHEMA = StructType(
    [StructField("sequence", LongType(), False), StructField("raw", StringType(), False)]
)


class BetaRange(InputPartition):
    def __init__(
        self, since: int, until: int, stream: str | None = None, generation: int = 0
    ) -> None:
        super().__init__((since, until, stream, generation))
        self.since = since
        self.until = until
        self.stream = stream
        self.generation = generation


def _room(head: dict[str, Any]) -> int | None:
    """How many records the server keeps: its ``capacity``, or for a server that does not
    say, what it holds now (``first..last``, a lower bound); None if it holds nothing."""
    if head.get("capacity"):
        return int(head["capacity"])
    first = head.get("first")
    return int(head.get("last") or 0) - int(first) + 1 if first is not None else None


def generation_of(offset: dict[str, Any]) -> int:
    """The history generation an offset belongs to (0 when it names none)."""
    return int(offset.get("generation") or 0)


class BetaStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        if "url" not in options:
            raise BetaSourceError("fleet_beta source needs the option 'url'")
        self.url = options["url"]
        self.max_records = int(options.get("max_records_per_batch", 50000))
        self.partition_size = int(options.get("partition_size", 10000))
        self.timeout = float(options.get("timeout", 10))
        self.head_timeout = float(options.get("head_timeout", min(self.timeout, 2.0)))
        self.read_patience = float(options.get("read_patience", 120))
        self.start_sequence = options.get("start_sequence")
        self.source_id = options.get("source_id") or f"beta:{self.url}"
        self.pause_file = options.get("pause_file") or ""
        self.on_reset = on_reset_policy(options)
        self.options = dict(options)
        self.state = SourceState(self.source_id, options.get("state_dir") or None)
        self.spool_dir = options.get("spool_dir") or None
        self.fetch_timeout = float(options.get("fetch_timeout", min(self.timeout, 5.0)))
        self.fields = fields_of(options)
        self.holdback = Holdback.from_options(options, "min_records_per_batch")
        self._initial: dict[str, Any] | None = None

    def _offset(
        self, sequence: int, stream: str | None, generation: int = 0, **extra: Any
    ) -> dict:
        offset = {"source": self.source_id, "sequence": sequence, "stream": stream}
        if generation:
            offset["generation"] = generation
        return {**offset, **extra}

    def _spool_of(self, stream: str, generation: int) -> Spool:
        return Spool(self.spool_dir or "", history_key(stream, generation))

    def initialOffset(self) -> dict:
        """Where a query without a checkpoint starts; Spark asks again at its first batch, and
        the answer must not move with the server's head meanwhile."""
        if self._initial is None:
            self._initial = self._first_offset()
        return self._initial

    def _first_offset(self) -> dict[str, Any]:
        recorded = recorded_start(self.options, self.source_id)
        if recorded and "sequence" in recorded and not rehearsal(self.options):
            return self._offset(
                int(recorded["sequence"]), recorded.get("stream"), generation_of(recorded)
            )
        head = fetch_head(self.url, self.timeout)
        stream = head.get("stream")
        last = int(head.get("last") or 0)
        first = head.get("first")
        if rehearsal(self.options):  # read just the newest records
            return self._offset(max(int(first or last + 1) - 1, last - REHEARSAL_RECORDS), stream)
        if self.start_sequence not in (None, ""):
            return self._offset(int(self.start_sequence), stream)
        return self._offset(int(first) - 1 if first else last, stream)

    def getDefaultReadLimit(self) -> ReadLimit:
        wait_for_gate(self.options)  # Spark asks once all of the query's sources are up
        return ReadMaxRows(self.max_records)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next batch: ``start`` (nothing new) while paused or while the server
        does not answer (the source is degraded, asks again after a backoff, and the query's
        other sources go on); a reset, replaced or truncated stream is never read past
        silently (:meth:`_reset`)."""
        if self.pause_file and os.path.exists(self.pause_file):
            return start
        if not self.state.due():
            return start
        try:
            head = fetch_head(self.url, self.head_timeout)
        except TRANSIENT as exc:
            self.state.degraded(f"{self.url} did not answer ({type(exc).__name__})")
            return start
        except BadAnswer as exc:
            self.state.degraded(str(exc)[:300])
            return start
        begin = int(start["sequence"])
        stream = head.get("stream") or start.get("stream")
        generation = generation_of(start)
        last = int(head.get("last") or 0)
        extra: dict[str, Any] = {}
        problem = self._problem(start, head)
        if problem:
            begin = self._reset(start, head, problem)
            generation += 1  # a new history: nothing cached of the old one is served for it
            extra["from"] = begin
        if isinstance(limit, ReadMaxRows):
            last = min(last, begin + limit.max_rows)
        elif not isinstance(limit, ReadAllAvailable):
            last = min(last, begin + self.max_records)
        reset = bool(extra) or stream != start.get("stream")  # decided now, never held
        if self.holdback.holds(last - begin, limit, urgent=reset, room=_room(head)):
            return start  # a slow stream's records wait at the server for a later trigger
        fetched = True
        if self.spool_dir and stream and last > begin:
            last, fetched = self._spool(begin, last, stream, generation)
        if fetched:  # the server answered everything asked of it
            self.state.ok()
        if not extra and last <= begin and stream == start.get("stream"):
            return start
        return self._offset(max(begin, last), stream, generation, **extra)

    def _spool(self, begin: int, target: int, stream: str, generation: int = 0) -> tuple[int, bool]:
        """Fetch the records after ``begin`` up to ``target`` that the spool lacks and spool
        them; the last sequence on hand (the batch admits no more) and whether the server
        gave all that was asked. A server that stops answering meanwhile degrades the source,
        keeping what was fetched."""
        spool = self._spool_of(stream, generation)
        have = spool.covered_until(begin)
        if have >= target:
            return target, True
        raws: list[str] = []
        try:
            for _, raw in fetch_range(
                self.url, have, target, self.fetch_timeout, stream=stream, patience=0
            ):
                raws.append(raw)
        except BetaSourceError as exc:
            self.state.degraded(f"{self.url} failed while records were fetched: {exc}"[:300])
            return have + len(raws), False
        finally:
            spool.write(have + 1, raws)
        return have + len(raws), True

    @staticmethod
    def _problem(start: dict, head: dict[str, Any]) -> str | None:
        """Why the server cannot continue after ``start``, or None."""
        begin, committed = int(start["sequence"]), start.get("stream")
        stream, last, first = head.get("stream"), int(head.get("last") or 0), head.get("first")
        if committed and stream and stream != committed:
            return f"it now serves another stream ({stream}, sequences {first}..{last})"
        if last < begin:
            return f"its head ({last}) is below the committed sequence"
        if first is not None and int(first) - 1 > begin:
            return f"it no longer holds sequences {begin + 1}..{int(first) - 1}"
        return None

    def _reset(self, start: dict, head: dict[str, Any], problem: str) -> int:
        """Fail (``on_source_reset: fail``) or skip to the earliest held record, counting the
        loss (``restart_from_earliest``); the sequence the next batch reads after."""
        begin, committed = int(start["sequence"]), start.get("stream") or "?"
        last, first = int(head.get("last") or 0), head.get("first")
        resume = int(first) - 1 if first is not None else last
        what = (
            f"source {self.source_id} ({self.url}) was reset or lost records: the committed "
            f"offset is sequence {begin} of stream {committed}, and {problem}"
        )
        if self.on_reset == ON_RESET_FAIL:
            raise SourceResetError(
                f"{what}. Nothing after sequence {begin} was read or skipped. To accept the "
                "loss and read the server from its earliest record, set on_source_reset: "
                "restart_from_earliest in the job spec"
            )
        same = head.get("stream") in (None, start.get("stream"))
        self.state.lost(
            old_stream=committed,
            new_stream=head.get("stream"),
            committed=begin,
            resumed_after=resume,
            lost_records=(resume - begin) if same and resume > begin else None,
            reason=problem,
            generation=generation_of(start) + 1,
        )
        return resume

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        lo, hi = int(end.get("from", start["sequence"])), int(end["sequence"])
        stream, generation = end.get("stream"), generation_of(end)
        return [
            BetaRange(a, min(a + self.partition_size, hi), stream, generation)
            for a in range(lo, hi, self.partition_size)
        ]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's ``(sequence, raw)`` rows, from the spool or else the server, as
        one Arrow batch (:mod:`spark_jobs.sources.arrow_batch`); with the option ``fields``,
        of the parsed fields."""
        assert isinstance(partition, BetaRange)
        rows: Iterator[tuple[int, str]] | list[tuple[int, str]] | None = None
        if self.spool_dir and partition.stream:
            spool = self._spool_of(partition.stream, partition.generation)
            rows = spool.read(partition.since, partition.until)
        if rows is None:
            rows = fetch_range(
                self.url,
                partition.since,
                partition.until,
                self.timeout,
                stream=partition.stream,
                patience=self.read_patience,
            )
        records = list(rows)
        if not records:
            return
        if self.fields is None:
            yield record_batch(BETA_SCHEMA, [[s for s, _ in records], [r for _, r in records]])
        else:
            yield self.fields.batch(records)

    def commit(self, end: dict) -> None:
        """Prune the spool up to ``end`` (the server keeps a bounded history on its own)."""
        if self.spool_dir and end.get("stream"):
            self._spool_of(str(end["stream"]), generation_of(end)).prune(int(end["sequence"]))


def fields_of(options: dict[str, str]) -> Fields | None:
    """The ``fields`` (and ``keep_raw``) options, or None: the source yields ``raw``."""
    if not options.get("fields"):
        return None
    return Fields.parse(options["fields"], options.get("keep_raw", "").lower() == "true")


class BetaDataSource(DataSource):
    """``spark.readStream.format("fleet_beta").option("url", ...)``."""

    @classmethod
    def name(cls) -> str:
        return "fleet_beta"

    def schema(self) -> StructType:
        fields = fields_of(self.options)
        return fields.schema() if fields else BETA_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return BetaStreamReader(dict(self.options))


__all__ = [
    "BETA_SCHEMA",
    "BetaDataSource",
    "BetaRange",
    "BetaSourceError",
    "BetaStreamReader",
    "fetch_range",
    "fields_of",
    "generation_of",
]
