"""fleetsim-alpha's drop directory as a replayable stream of lines.

Files named ``pings-<n>.csv`` appear atomically (written aside, then renamed), in name
order. The offset ``{"file": NAME}`` is the last file read (``""`` = none yet), so a
position is a file name that can be recorded in a savepoint and set again with the
``start_after`` option, which Spark's own file source cannot do.

Contract with the writer: a file whose name sorts at or below the current offset when it
appears is never read; fleetsim-alpha only ever adds names above the last one.

Options: ``path``, ``max_files_per_batch`` (default 200), ``files_per_partition``
(default 20), ``start_after`` (file name; default ``""``, the beginning), ``start_offset``
(JSON of an offset of this source, e.g. from a savepoint: where a new query starts) or
``start_offsets_file`` (see ``positions``), ``source_id`` (stored in every offset, default
``alpha:<path>``), ``pause_file`` (while it exists, no new files are admitted: the query
drains to a batch boundary and idles), ``gate_file`` and ``rehearsal`` (see ``positions``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from spark_jobs.sources.positions import recorded_start, rehearsal, wait_for_gate

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
        files = list_files(self.path, start["file"])
        if isinstance(limit, ReadMaxFiles):
            files = files[: limit.max_files]
        elif not isinstance(limit, ReadAllAvailable):
            files = files[: self.max_files]
        return self._offset(files[-1] if files else start["file"])

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

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, AlphaFiles)
        for name in partition.files:
            with open(os.path.join(self.path, name), encoding="utf-8", errors="replace") as fh:
                for number, line in enumerate(fh, start=1):
                    text = line.rstrip("\r\n")
                    if text:
                        yield name, number, text

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
