"""fleetsim-alpha's drop directory as a replayable stream of lines.

Files named ``pings-<n>.csv`` appear atomically (written aside, then renamed), in name
order. The offset ``{"file": NAME}`` is the last file read (``""`` = none yet), so a
position is a file name that can be recorded in a savepoint and set again with the
``start_after`` option, which Spark's own file source cannot do.

Contract with the writer: files appear in name order (fleetsim-alpha only ever adds names
above the last one). A file that breaks it, appearing with a name at or below the committed
file, would be skipped by name order: it is not read, and it is never skipped silently
either. The source records it as a late file in its state (``late_files``, with the
committed file at the time), which the job's status and the health checks show; to read
it, drop it again under a name above the newest file. A committed file that changes or
disappears afterwards is recorded the same way (``changed_files``): what was read from it
may no longer match what it holds.

Options: ``path``, ``max_files_per_batch`` (default 200), ``files_per_partition``
(default 20), ``start_after`` (file name; default ``""``, the beginning), ``start_offset``
(JSON of an offset of this source, e.g. from a savepoint: where a new query starts) or
``start_offsets_file`` (see ``positions``), ``source_id`` (stored in every offset, default
``alpha:<path>``), ``pause_file`` (while it exists, no new files are admitted: the query
drains to a batch boundary and idles), ``state_dir`` (see ``source_state``), ``gate_file`` and
``rehearsal`` (see ``positions``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from spark_jobs.sources.arrow_batch import record_batch
from spark_jobs.sources.positions import recorded_start, rehearsal, wait_for_gate
from spark_jobs.sources.source_state import SourceState

ALPHA_SCHEMA = StructType(
    [
        StructField("file", StringType(), False),
        StructField("line", IntegerType(), False),
        StructField("raw", StringType(), False),
    ]
)
_FILE = re.compile(r"^pings-\d+\.csv$")


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


def _arrival(directory: str, name: str) -> float | None:
    """When ``name`` arrived in ``directory`` (its inode change time: the writer's rename)."""
    try:
        return os.stat(os.path.join(directory, name)).st_ctime
    except FileNotFoundError:
        return None


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
        self.options = dict(options)
        self._initial: str | None = None
        self.state = SourceState(self.source_id, options.get("state_dir") or None)
        self._arrived: dict[str, float] | None = None  # files at or below the committed one
        self._committed: tuple[str, tuple[int, float] | None] | None = None
        os.makedirs(self.path, exist_ok=True)

    def _offset(self, name: str) -> dict:
        return {"source": self.source_id, "file": name}

    def initialOffset(self) -> dict:
        """Where a query without a checkpoint starts; Spark asks again at its first batch, and
        the answer must not move with new files meanwhile."""
        if self._initial is None:
            self._initial = self._first_file()
        return self._offset(self._initial)

    def _first_file(self) -> str:
        if rehearsal(self.options):  # read just the newest file
            files = list_files(self.path, "")
            return files[-2] if len(files) > 1 else self.start_after
        recorded = recorded_start(self.options, self.source_id)
        if recorded and "file" in recorded:
            return str(recorded["file"])
        return self.start_after

    def getDefaultReadLimit(self) -> ReadLimit:
        wait_for_gate(self.options)  # Spark asks once all of the query's sources are up
        return ReadMaxFiles(self.max_files)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if self.pause_file and os.path.exists(self.pause_file):
            return start
        self._watch_behind(str(start["file"]))
        files = list_files(self.path, start["file"])
        if isinstance(limit, ReadMaxFiles):
            files = files[: limit.max_files]
        elif not isinstance(limit, ReadAllAvailable):
            files = files[: self.max_files]
        return self._offset(files[-1] if files else start["file"])

    def _watch_behind(self, committed: str) -> None:
        """Record files that appeared at or below ``committed`` (late: they arrived after it,
        by their inode change time, or after this reader first looked) and a committed file
        that changed or disappeared after it was read."""
        if not committed:
            return
        names = list_files(self.path, "", committed)
        if self._arrived is None:  # first look: only what arrived after the committed file
            committed_at = _arrival(self.path, committed)
            self._arrived = {}
            for name in names:
                at = _arrival(self.path, name) or 0.0
                if committed_at is not None and name != committed and at > committed_at + 1.0:
                    self._late(name, committed)
                self._arrived[name] = at
        else:
            looked_upto = self._committed[0] if self._committed else ""
            for name in names:
                if name not in self._arrived:
                    if name <= looked_upto:  # not read by this query: it came too late
                        self._late(name, committed)
                    self._arrived[name] = _arrival(self.path, name) or 0.0
        mark = _signature(self.path, committed)
        if self._committed and self._committed[0] == committed and self._committed[1] != mark:
            change = "disappeared" if mark is None else "changed after it was read"
            self.state.note("changed_files", file=committed, change=change)
        self._committed = (committed, mark)

    def _late(self, name: str, committed: str) -> None:
        self.state.note("late_files", file=name, committed=committed, read=False)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        if start["file"] == end["file"]:
            return []
        files = list_files(self.path, start["file"], end["file"])
        if not files or files[-1] != end["file"]:
            raise AlphaSourceError(
                f"fleetsim-alpha file {end['file']} recorded as a batch end is missing from "
                f"{self.path}; files must not be removed before every job has read them"
            )
        n = self.files_per_partition
        return [AlphaFiles(files[i : i + n]) for i in range(0, len(files), n)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's ``(file, line, raw)`` rows (empty lines skipped), as one Arrow
        batch (:mod:`spark_jobs.sources.arrow_batch`)."""
        assert isinstance(partition, AlphaFiles)
        names: list[str] = []
        numbers: list[int] = []
        texts: list[str] = []
        for name in partition.files:
            with open(os.path.join(self.path, name), encoding="utf-8", errors="replace") as fh:
                for number, line in enumerate(fh, start=1):
                    text = line.rstrip("\r\n")
                    if text:
                        names.append(name)
                        numbers.append(number)
                        texts.append(text)
        if texts:
            yield record_batch(ALPHA_SCHEMA, [names, numbers, texts])

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
