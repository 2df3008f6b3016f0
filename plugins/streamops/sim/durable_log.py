"""The durable log of fleetsim-beta: its records on disk, so sequences survive a restart.

Layout of a data directory::

    <data_dir>/log/stream.json        {"stream": "<uuid4 hex>", "created_at": "<ISO UTC>"}
    <data_dir>/log/<first:012d>.jsonl one segment: the raw JSON text of each record, one a line
    <data_dir>/lock                   held (flock) by the one process writing the log

The stream id names one unbroken sequence of records: a reader that kept a committed
sequence may go on from it only while the stream id is the same. The id lives inside the log
directory, so it goes with the records: a log that was deleted (or never written) is a new
stream, whatever else survived in the data directory. (An id left at ``<data_dir>/stream.json``
by older versions is moved into ``log/`` when that log still holds segments, and discarded,
with a warning naming it, when it does not.) A segment holds the
records ``first, first + 1, ...`` byte for byte as served. :meth:`DurableLog.append` writes
and flushes each batch before the simulator serves it (flushed, not fsync'd: a killed
process loses nothing, a machine crash may lose the newest records). Opening a directory
recovers it: a torn last line (a crash artefact) is cut off with a warning; any other gap or
disorder is a :class:`SimulatorError` naming the file and the positions.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from streamops.exceptions import SimulatorError
from streamops.sim.fleet import check_param
from streamops.state.layout import read_json, write_json_atomic

log = logging.getLogger(__name__)

DEFAULT_SEGMENT_RECORDS = 10_000
_SEGMENT_NAME = re.compile(r"^(\d{12})\.jsonl$")


def new_stream_id() -> str:
    """A fresh stream id (uuid4 hex)."""
    return uuid.uuid4().hex


def segment_name(first_sequence: int) -> str:
    """The file name of the segment starting at ``first_sequence``."""
    return f"{first_sequence:012d}.jsonl"


@dataclass(frozen=True, slots=True)
class _Segment:
    first: int
    path: Path


class DurableLog:
    """The records of one beta stream in ``directory``; recovered when opened.

    After opening, :attr:`stream` is the stream id, :attr:`next_sequence` the sequence the
    next record must have, and :attr:`tail` / :attr:`tail_first` the newest (at most
    ``history``) records on disk and the sequence of the first of them. A new segment starts
    every ``segment_records`` records; then whole segments older than the newest ``history``
    records are deleted. One process at a time: a second opener gets :class:`SimulatorError`.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        history: int,
        segment_records: int = DEFAULT_SEGMENT_RECORDS,
    ) -> None:
        check_param(
            isinstance(history, int) and history >= 1, "history", history, "must be an integer >= 1"
        )
        check_param(
            isinstance(segment_records, int) and segment_records >= 1,
            "segment_records",
            segment_records,
            "must be an integer >= 1",
        )
        self.directory = Path(directory)
        self.history = history
        self.segment_records = segment_records
        self.log_dir = self.directory / "log"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._lock_file: IO[bytes] | None = self._acquire_lock()
        self._file: IO[bytes] | None = None
        try:
            self._segments = self._list_segments()
            self.stream, self.created_at = self._read_or_create_identity()
            self.tail, self.tail_first, self.next_sequence, self._segment_count = self._recover()
        except BaseException:
            self.close()
            raise

    def append(self, first_sequence: int, raws: Sequence[str]) -> None:
        """Write records ``first_sequence, ...`` (one JSON text each, no newline inside) and
        flush; starts new segments as they fill up."""
        if first_sequence != self.next_sequence:
            raise ValueError(f"sequence {first_sequence} does not follow {self.next_sequence - 1}")
        done = 0
        while done < len(raws):
            if self._file is None or self._segment_count >= self.segment_records:
                self._roll()
            assert self._file is not None
            take = min(len(raws) - done, self.segment_records - self._segment_count)
            chunk = raws[done : done + take]
            self._file.write("".join(raw + "\n" for raw in chunk).encode("utf-8"))
            self._file.flush()
            done += take
            self._segment_count += take
            self.next_sequence += take

    def close(self) -> None:
        """Close the current segment and release the directory's lock (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._lock_file is not None:
            self._lock_file.close()  # closing the descriptor releases the flock
            self._lock_file = None

    # --- opening ----------------------------------------------------------------------
    def _acquire_lock(self) -> IO[bytes]:
        fh = open(self.directory / "lock", "ab")  # held until close()
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise SimulatorError(
                f"{self.directory} is in use by another fleetsim-beta; "
                "give each simulator its own --data-dir"
            ) from None
        return fh

    def _list_segments(self) -> list[_Segment]:
        found = []
        for path in self.log_dir.iterdir():
            match = _SEGMENT_NAME.match(path.name)
            if match:
                found.append(_Segment(int(match.group(1)), path))
        return sorted(found, key=lambda s: s.first)

    def _read_or_create_identity(self) -> tuple[str, str]:
        path = self.log_dir / "stream.json"
        legacy = self.directory / "stream.json"
        if legacy.exists() and not path.exists():
            if self._segments:  # the layout of older versions: the id moves with its log
                os.replace(legacy, path)
            else:
                log.warning(
                    "fleetsim-beta: %s names a stream whose log is gone (%s holds no segment): "
                    "starting a new stream; readers committed on the old one will see the reset",
                    legacy,
                    self.log_dir,
                )
                legacy.unlink()
        try:
            data = read_json(path)
        except (OSError, ValueError) as exc:
            raise SimulatorError(f"cannot read the stream id in {path}: {exc}") from exc
        if data is None:
            if self._segments:
                raise SimulatorError(
                    f"{self.log_dir} holds segments but {path} is missing; the stream id of "
                    "these records is lost (remove the directory to start a new stream)"
                )
            data = {"stream": new_stream_id(), "created_at": datetime.now(UTC).isoformat()}
            write_json_atomic(path, data)
            log.info("fleetsim-beta: new stream %s in %s", data["stream"], self.directory)
        stream = data.get("stream") if isinstance(data, dict) else None
        if not isinstance(stream, str) or not stream:
            raise SimulatorError(f"{path} has no stream id: {data!r}")
        return stream, str(data.get("created_at", ""))

    def _recover(self) -> tuple[list[str], int, int, int]:
        """Check every segment; cut a torn last line. Returns ``(tail, tail_first,
        next_sequence, records in the last segment)``."""
        tail: deque[str] = deque(maxlen=self.history)
        expected: int | None = None
        count = 0
        previous: Path | None = None
        for index, segment in enumerate(self._segments):
            if expected is not None and segment.first != expected:
                raise SimulatorError(
                    f"fleetsim-beta log is not contiguous: {segment.path} starts at sequence "
                    f"{segment.first} but {previous} ends at {expected - 1}"
                )
            last_segment = index == len(self._segments) - 1
            raws = self._read_segment(segment, last_segment)
            tail.extend(raws)
            count = len(raws)
            expected = segment.first + count
            previous = segment.path
        next_sequence = 1 if expected is None else expected
        if tail:
            log.info(
                "fleetsim-beta: stream %s recovered up to sequence %d from %s",
                self.stream,
                next_sequence - 1,
                self.log_dir,
            )
        return list(tail), next_sequence - len(tail), next_sequence, count

    def _read_segment(self, segment: _Segment, last_segment: bool) -> list[str]:
        """The records of one segment, each checked for its sequence."""
        data = segment.path.read_bytes()
        lines = data.split(b"\n")
        torn = lines.pop()  # b"" when the file ends with a newline
        raws: list[str] = []
        offset = 0
        for position, line in enumerate(lines):
            sequence = segment.first + position
            parsed = _parse(line)
            if parsed is None and last_segment and not torn and position == len(lines) - 1:
                torn = line + b"\n"  # an unparsable last line: a crash artefact as well
                break
            if parsed is None or parsed[1] != sequence:
                raise SimulatorError(
                    f"fleetsim-beta log {segment.path}: line {position + 1} holds "
                    f"{_describe(parsed)}, expected sequence {sequence}"
                )
            raws.append(parsed[0])
            offset += len(line) + 1
        if torn:
            sequence = segment.first + len(raws)
            if not last_segment:
                raise SimulatorError(
                    f"fleetsim-beta log {segment.path}: line {len(raws) + 1} (sequence "
                    f"{sequence}) is cut short, but only the newest segment may end that way"
                )
            log.warning(
                "fleetsim-beta log %s: dropped the torn last line (sequence %d, %d bytes), "
                "a crash artefact; generation continues at sequence %d",
                segment.path,
                sequence,
                len(torn),
                sequence,
            )
            os.truncate(segment.path, offset)
        return raws

    # --- appending --------------------------------------------------------------------
    def _roll(self) -> None:
        """Open the segment to append to: the newest while it has room, else a new one
        (deleting the segments that hold only records older than the newest ``history``)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if not self._segments or self._segment_count >= self.segment_records:
            self._drop_old_segments()
            segment = _Segment(self.next_sequence, self.log_dir / segment_name(self.next_sequence))
            self._segments.append(segment)
            self._segment_count = 0
        self._file = open(self._segments[-1].path, "ab")

    def _drop_old_segments(self) -> None:
        oldest_kept = self.next_sequence - self.history  # the oldest record still held
        while len(self._segments) >= 2 and self._segments[1].first <= oldest_kept:
            old = self._segments.pop(0)
            old.path.unlink(missing_ok=True)
            log.info("fleetsim-beta log: deleted %s (all records older than the history)", old.path)


def _parse(line: bytes) -> tuple[str, int | None] | None:
    """``(raw text, its "sequence" if an integer)`` of a record line; ``None`` if the line is
    not a JSON object."""
    try:
        raw = line.decode("utf-8")
        record = json.loads(raw)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    if not isinstance(record, dict):
        return None
    sequence = record.get("sequence")
    return raw, sequence if isinstance(sequence, int) and not isinstance(sequence, bool) else None


def _describe(parsed: tuple[str, int | None] | None) -> str:
    if parsed is None:
        return "an unparsable line"
    return "no integer sequence" if parsed[1] is None else f"sequence {parsed[1]}"


__all__ = ["DEFAULT_SEGMENT_RECORDS", "DurableLog", "new_stream_id", "segment_name"]
