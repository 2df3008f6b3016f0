"""fleetsim-alpha's drop directory as a replayable stream of lines.

Files named ``pings-<n>.csv`` appear atomically (written aside, then renamed), normally in
name order. The offset holds the greatest file name read (``file``; ``""`` = none yet), so a
position is a file name that can be recorded in a savepoint and set again with the
``start_after`` option, which Spark's own file source cannot do; and, like the seen-files map
of Spark's file source, the memory of the files read within ``max_file_age``
(:mod:`streamops_contract.sources.alpha_memory`), so that checkpoints and savepoints carry it.

A file that breaks the writer's name order, appearing with a name at or below the committed
file (or after a later one was committed), is late: the next batch reads it, once, and it is
recorded in the source's state (``late_files``, ``read: true``). A late file older than
``max_file_age`` before the newest file read is not read (as Spark's file source ignores it)
but recorded (``late_files``, ``read: false``, with the reason); so is a name that does not
match ``pings-<n>.csv`` (``ignored_files``; hidden names, the writer's temporary files, are
not). The job's status and the health checks show them. A committed file that changes or
disappears afterwards is recorded too (``changed_files``): what was read from it may no
longer match what it holds.

Lines are read as UTF-8; bytes that are not UTF-8 reach ``raw`` as U+FFFD and the row is
flagged ``invalid_utf8`` (the job quarantines it, :func:`spark_jobs.pings.from_alpha`).

Options: ``path``, ``max_files_per_batch`` (default 200), ``files_per_partition``
(default 20), ``max_file_age`` (default ``7d``; seconds, or with ``s``/``m``/``h``/``d``),
``start_after`` (file name; default ``""``, the beginning), ``start_offset``
(JSON of an offset of this source, e.g. from a savepoint: where a new query starts) or
``start_offsets_file`` (see ``positions``), ``source_id`` (stored in every offset, default
``alpha:<path>``), ``pause_file`` (while it exists, no new files are admitted: the query
drains to a batch boundary and idles), ``state_dir`` (see ``source_state``), ``gate_file`` and
``rehearsal`` (see ``positions``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles
from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from spark_jobs.sources.arrow_batch import record_batch
from spark_jobs.sources.holdback import Holdback
from spark_jobs.sources.positions import recorded_start, rehearsal, wait_for_gate
from spark_jobs.sources.source_state import SourceState
from streamops_contract.sources.alpha_memory import DEFAULT_MAX_FILE_AGE, Memory, parse_age

ALPHA_SCHEMA = StructType(
    [
        StructField("file", StringType(), False),
        StructField("line", IntegerType(), False),
        StructField("raw", StringType(), False),
        StructField("invalid_utf8", BooleanType(), False),
    ]
)
_FILE = re.compile(r"^pings-\d+\.csv$")
_IGNORED = "name does not match pings-<n>.csv"
_UNDECODED = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8 (surrogateescape)


class AlphaSourceError(RuntimeError):
    """The drop directory is missing or a recorded file disappeared."""


class AlphaFiles(InputPartition):
    def __init__(self, files: list[str]) -> None:
        super().__init__(files)
        self.files = files


def list_files(directory: str, after: str, upto: str | None = None) -> list[str]:
    """Completed ping files with ``after < name <= upto``, in name order."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError as exc:
        raise AlphaSourceError(f"fleetsim-alpha directory {directory} does not exist") from exc
    return sorted(n for n in names if _FILE.match(n) and n > after and (upto is None or n <= upto))


def _signature(directory: str, name: str) -> tuple[int, float] | None:
    """``(size, mtime)`` of a file, None if it is gone."""
    try:
        st = os.stat(os.path.join(directory, name))
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime


class AlphaStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        if "path" not in options:
            raise AlphaSourceError("fleet_alpha source needs the option 'path'")
        self.path = options["path"]
        self.max_files = int(options.get("max_files_per_batch", 200))
        self.files_per_partition = int(options.get("files_per_partition", 20))
        self.start_after = options.get("start_after", "") or ""
        self.source_id = options.get("source_id") or f"alpha:{self.path}"
        self.pause_file = options.get("pause_file") or ""
        self.max_age = parse_age(options.get("max_file_age") or DEFAULT_MAX_FILE_AGE)
        self.options = dict(options)
        self._initial: dict | None = None
        self.holdback = Holdback.from_options(options, "min_files_per_batch")
        self.state = SourceState(self.source_id, options.get("state_dir") or None)
        self._listed: set[str] | None = None  # the names of this reader's last listing
        self._legacy_floor_time: dict[str, float] = {}
        self._reported: set[tuple[str, str]] = set()
        self._committed: tuple[str, tuple[int, float] | None] | None = None
        os.makedirs(self.path, exist_ok=True)

    def _offset(self, name: str) -> dict:
        return {"source": self.source_id, "file": name}

    def initialOffset(self) -> dict:
        """Where a query without a checkpoint starts; Spark asks again at its first batch, and
        the answer must not move with new files meanwhile."""
        if self._initial is None:
            self._initial = self._first_offset()
        return dict(self._initial)

    def _first_offset(self) -> dict:
        if rehearsal(self.options):  # read just the newest file
            files = list_files(self.path, "")
            return self._offset(files[-2] if len(files) > 1 else self.start_after)
        recorded = recorded_start(self.options, self.source_id)
        if recorded and "file" in recorded:  # with its memory of the files read, if any
            return {**recorded, "source": self.source_id}
        return self._offset(self.start_after)

    def getDefaultReadLimit(self) -> ReadLimit:
        wait_for_gate(self.options)  # Spark asks once all of the query's sources are up
        return ReadMaxFiles(self.max_files)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if self.pause_file and os.path.exists(self.pause_file):
            return start
        committed = str(start["file"])
        self._watch_committed(committed)
        listing = self._list()
        memory = self._resolved(Memory.from_offset(start), listing)
        late, in_order = self._unread(memory, listing)
        files = late + in_order
        if isinstance(limit, ReadMaxFiles):
            files = files[: limit.max_files]
        elif not isinstance(limit, ReadAllAvailable):
            files = files[: self.max_files]
        if not files:
            return start
        if self.holdback.holds(len(files), limit, urgent=bool(late)):
            return start  # a slow stream's files wait in the directory for a later trigger
        for name in files[: len(late)]:
            self._report("late_files", name, committed=committed, read=True)
        mtimes = {name: times[0] for name, times in listing.items()}
        end = memory.with_read(files, mtimes)
        if len(files) >= len(late):  # no late file waits (one in a folded gap would be lost)
            end = end.pruned(committed, (end.latest or 0.0) - self.max_age, mtimes, files)
        return end.to_offset(self.source_id)

    def _list(self) -> dict[str, tuple[float, float]]:
        """``(mtime, ctime)`` of each ping file of the directory; other names (but hidden
        ones: the writer's temporary files) are reported as ignored, with their name."""
        out: dict[str, tuple[float, float]] = {}
        try:
            entries = list(os.scandir(self.path))
        except FileNotFoundError as exc:
            raise AlphaSourceError(
                f"fleetsim-alpha directory {self.path} does not exist") from exc  # fmt: skip
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if not (_FILE.match(entry.name) and entry.is_file()):
                    self._report("ignored_files", entry.name, reason=_IGNORED)
                    continue
                st = entry.stat()
            except FileNotFoundError:
                continue
            out[entry.name] = (st.st_mtime, st.st_ctime)
        return out

    def _resolved(self, memory: Memory, listing: dict[str, tuple[float, float]]) -> Memory:
        """``memory``, an offset without memory given its floor time: the modification time
        of its committed file (files written before it are no newer), fixed at first sight."""
        if memory.floor_time is not None:
            return memory
        if memory.floor not in self._legacy_floor_time:
            below = [t[0] for n, t in listing.items() if n <= memory.floor]
            at = listing.get(memory.floor, (max(below, default=0.0), 0.0))[0]
            self._legacy_floor_time[memory.floor] = at
        return replace(memory, floor_time=self._legacy_floor_time[memory.floor])

    def _unread(
        self, memory: Memory, listing: dict[str, tuple[float, float]]
    ) -> tuple[list[str], list[str]]:
        """The files ``memory`` did not read: late ones (at or below the position, within
        ``max_file_age``), then the ones above the position, each in name order. Late files
        older than the bound are reported, not read."""
        first_look, before = self._listed is None, self._listed or set()
        self._listed = set(listing)
        horizon = -math.inf if memory.latest is None else memory.latest - self.max_age
        late, in_order = [], []
        for name in sorted(listing):
            mtime, ctime = listing[name]
            if memory.has(name):
                continue
            if name > memory.file:
                in_order.append(name)
                continue
            if (first_look or name in before) and memory.below_floor(name, mtime):
                # counts as read, unless it arrived (renamed in) after the newest file read
                # while no reader looked: then it is too old to read, but not unseen
                if first_look and memory.latest is not None and ctime > memory.latest + 1.0:
                    self._too_old(name, memory.file)
                continue
            if mtime >= horizon:
                late.append(name)
            else:
                self._too_old(name, memory.file)
        return late, in_order

    def _too_old(self, name: str, committed: str) -> None:
        reason = f"older than max_file_age ({self.max_age:.0f} s) before the newest file read"
        self._report("late_files", name, committed=committed, read=False, reason=reason)

    def _report(self, kind: str, name: str, **what: Any) -> None:
        """Record ``name`` under ``kind`` in the source's state, once per reader."""
        if (kind, name) not in self._reported:
            self._reported.add((kind, name))
            self.state.note(kind, file=name, **what)

    def _watch_committed(self, committed: str) -> None:
        """Record a committed file that changed or disappeared after it was read."""
        if not committed:
            return
        mark = _signature(self.path, committed)
        if self._committed and self._committed[0] == committed and self._committed[1] != mark:
            change = "disappeared" if mark is None else "changed after it was read"
            self.state.note("changed_files", file=committed, change=change)
        self._committed = (committed, mark)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        if start == end or start["file"] == end["file"] and "read" not in end:
            return []
        if "read" in end:
            files = Memory.from_offset(end).names_not_in(Memory.from_offset(start))
            gone = [n for n in files if not os.path.exists(os.path.join(self.path, n))]
            if gone:
                raise AlphaSourceError(
                    f"fleetsim-alpha file(s) {', '.join(gone)} recorded in a batch are missing "
                    f"from {self.path}; files must not be removed before every job has read them"
                )
        else:  # both ends planned by a reader without memory: the names between them
            files = list_files(self.path, start["file"], end["file"])
            if not files or files[-1] != end["file"]:
                raise AlphaSourceError(
                    f"fleetsim-alpha file {end['file']} recorded as a batch end is missing "
                    f"from {self.path}; files must not be removed before every job has read them"
                )
        n = self.files_per_partition
        return [AlphaFiles(files[i : i + n]) for i in range(0, len(files), n)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's ``(file, line, raw, invalid_utf8)`` rows (empty lines skipped), as
        one Arrow batch (:mod:`spark_jobs.sources.arrow_batch`). Bytes that are not UTF-8
        reach ``raw`` as U+FFFD, and the line is flagged ``invalid_utf8``."""
        assert isinstance(partition, AlphaFiles)
        names: list[str] = []
        numbers: list[int] = []
        texts: list[str] = []
        invalid: list[bool] = []
        for name in partition.files:
            path = os.path.join(self.path, name)
            with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                for number, line in enumerate(fh, start=1):
                    text = line.rstrip("\r\n")
                    if text:
                        bad = _UNDECODED.search(text) is not None
                        if bad:
                            text = text.encode("utf-8", "surrogateescape").decode(
                                "utf-8", "replace")  # fmt: skip
                        names.append(name)
                        numbers.append(number)
                        texts.append(text)
                        invalid.append(bad)
        if texts:
            yield record_batch(ALPHA_SCHEMA, [names, numbers, texts, invalid])

    def commit(self, end: dict) -> None:
        """Files are kept: other jobs and savepoints may still need them."""


class AlphaDataSource(DataSource):
    """``spark.readStream.format("fleet_alpha").option("path", ...)``."""

    @classmethod
    def name(cls) -> str:
        return "fleet_alpha"

    def schema(self) -> StructType:
        return ALPHA_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return AlphaStreamReader(dict(self.options))
