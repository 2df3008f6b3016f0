"""A source's spool: records its driver-side reader fetched, kept for the batch's partitions.

A batch's range is admitted only once its records are on hand: the reader fetches them when
Spark asks for the next offset (``latestOffset``) and writes them here, under the job's state
root; the partitions then read them from here, not from the upstream. An upstream that stops
answering therefore never stalls a batch already planned (the query's other sources flow on),
and it cannot be asked twice for the same records by the stages of one job: a stage whose
range another stage spooled reads that file.

Layout: ``<spool dir>/<history>/<first:012d>-<last:012d>.jsonl`` (the history is the stream,
and its generation after an accepted reset: :func:`history_key`), one ``<sequence>\\t<raw JSON>``
line per record, written aside and renamed (a file is whole or absent). Files may overlap;
a range is read from the files that cover it contiguously. The spool is a cache: a range it
does not cover (pruned, or written by no one) is read from the upstream, which replays it.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

_NAME = re.compile(r"^(\d{12})-(\d{12})\.jsonl$")
PRUNE_AGE_S = 120.0
"""A file is removed once a reader committed past it and it is this old (a stage behind by
more reads from the upstream)."""


def history_key(stream: str, generation: int = 0) -> str:
    """The spool's name for one history of a stream: the stream id, with ``.g<generation>``
    after the first accepted reset (records of two histories never share a directory)."""
    return stream if not generation else f"{stream}.g{generation}"


class Spool:
    """The spooled records of one stream of one source."""

    def __init__(self, root: str | os.PathLike[str], stream: str) -> None:
        self.dir = Path(root) / re.sub(r"[^A-Za-z0-9._-]+", "_", stream)

    def _files(self) -> list[tuple[int, int, Path]]:
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            found = _NAME.match(name)
            if found:
                out.append((int(found.group(1)), int(found.group(2)), self.dir / name))
        return sorted(out)

    def _chain(self, after: int) -> tuple[int, list[tuple[int, int, Path]]]:
        """The furthest sequence covered contiguously after ``after``, and the files used."""
        pos, used = after, []
        for first, last, path in self._files():
            if first <= pos + 1 and last > pos:
                used.append((first, last, path))
                pos = last
        return pos, used

    def covered_until(self, after: int) -> int:
        """The last sequence held contiguously after ``after`` (``after`` if none)."""
        return self._chain(after)[0]

    def write(self, first: int, raws: Sequence[str]) -> None:
        """Spool records ``first, first + 1, ...`` (raw JSON texts) as one file."""
        if not raws:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        last = first + len(raws) - 1
        final = self.dir / f"{first:012d}-{last:012d}.jsonl"
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.writelines(f"{first + i}\t{raw}\n" for i, raw in enumerate(raws))
            os.replace(tmp, final)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def read(self, since: int, until: int) -> list[tuple[int, str]] | None:
        """Records ``since < sequence <= until`` in order, or None when the spool does not
        hold them all (the caller reads the upstream instead)."""
        pos, used = self._chain(since)
        if pos < until:
            return None
        out: list[tuple[int, str]] = []
        expected = since + 1
        try:
            for _first, _last, path in used:
                with open(path, encoding="utf-8") as fh:
                    for line in fh:
                        seq_text, _, raw = line.rstrip("\n").partition("\t")
                        seq = int(seq_text)
                        if seq < expected:
                            continue
                        if seq != expected or seq > until:
                            break
                        out.append((seq, raw))
                        expected += 1
                if expected > until:
                    break
        except (OSError, ValueError):  # pruned meanwhile, or damaged: the upstream replays
            return None
        return out if expected > until else None

    def prune(self, committed: int, min_age: float = PRUNE_AGE_S) -> None:
        """Remove files wholly at or below ``committed`` written ``min_age`` seconds ago."""
        now = time.time()
        for _first, last, path in self._files():
            if last > committed:
                continue
            try:
                if now - path.stat().st_mtime >= min_age:
                    path.unlink()
            except FileNotFoundError:
                continue


def spooled_ranges(root: str | os.PathLike[str], stream: str) -> list[tuple[int, int]]:
    """``(first, last)`` of every spool file of ``stream`` (for tests and diagnostics)."""
    return [(first, last) for first, last, _ in Spool(root, stream)._files()]
