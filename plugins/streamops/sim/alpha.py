"""fleetsim-alpha: writes fleet pings as CSV files into a directory.

Each file ``pings-{number:012d}.csv`` holds up to ``pings_per_file`` lines (no header, see
:mod:`streamops.sim.fleet` for the columns) and is closed when full or ``max_file_age``
seconds after its first record, whichever comes first. A file is written under a hidden
temporary name ``.pings-{number:012d}.csv.tmp`` in the same directory, fsynced, then renamed
into place, so a reader never sees a partial file under a final name. A restarted simulator
continues the file numbering after the highest existing file and the sequence after that
file's last line.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from streamops.exceptions import SimulatorError
from streamops.settings import Settings
from streamops.sim.flags import add_alpha_arguments
from streamops.sim.fleet import Ping, check_emission_params, check_param, malformed_kind
from streamops.sim.journal import JournalRecord, JournalWriter
from streamops.sim.runner import SimulatorRun, run_foreground, standalone_main

log = logging.getLogger(__name__)

ALPHA_MALFORMED_KINDS = (
    "time_not_number",
    "wrong_column_count",
    "empty_vin",
    "latitude_out_of_range",
)
"""The ways alpha breaks every ``malformed_every``-th line, in rotation."""

FILE_PATTERN = re.compile(r"^pings-(\d{12})\.csv$")
TEMP_PATTERN = re.compile(r"^\.pings-\d{12}\.csv\.tmp$")


def file_name(number: int) -> str:
    """The final name of file ``number``."""
    return f"pings-{number:012d}.csv"


def malformed_csv(ping: Ping, kind: str) -> str:
    """The CSV line of ``ping`` broken in the way ``kind`` names (it keeps its sequence)."""
    cols = ping.to_csv().split(",")
    if kind == "time_not_number":
        cols[2] = "soon"
    elif kind == "wrong_column_count":
        cols = cols[:7]
    elif kind == "empty_vin":
        cols[1] = ""
    elif kind == "latitude_out_of_range":
        cols[3] = "123.000000"
    else:
        raise ValueError(f"unknown malformation {kind!r}")
    return ",".join(cols)


def _last_sequence_in(path: Path) -> int | None:
    """The sequence of the last line of ``path`` that starts with one, if any."""
    for line in reversed(path.read_text(encoding="utf-8").splitlines()):
        head = line.split(",", 1)[0].strip()
        if head.isdigit():
            return int(head)
    return None


def scan_directory(directory: Path) -> tuple[int, int]:
    """``(highest file number, last sequence)`` of the ping files already in ``directory``;
    ``(0, 0)`` for an empty directory."""
    numbers = sorted(
        (int(m.group(1)) for name in os.listdir(directory) if (m := FILE_PATTERN.match(name))),
        reverse=True,
    )
    for number in numbers:
        sequence = _last_sequence_in(directory / file_name(number))
        if sequence is not None:
            return numbers[0], sequence
    return (numbers[0] if numbers else 0), 0


class AlphaSimulator(SimulatorRun):
    """Writes deterministic fleet pings as atomically published CSV files.

    ``run()`` blocks until ``stop_event`` (or :meth:`stop`) or ``max_pings``; ``start()``
    runs it in a background thread. ``emitted`` counts records published (renamed into
    place and journaled) by this instance.
    """

    source = "alpha"

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        seed: int = 1,
        vehicles: int = 50,
        rate: float = 10.0,
        pings_per_file: int = 100,
        max_file_age: float = 1.0,
        malformed_every: int = 0,
        max_pings: int | None = None,
        journal: str | os.PathLike[str] | None = None,
        vin_prefix: str = "1A",
        clock: Callable[[], float] = time.time,
    ) -> None:
        check_emission_params(rate, malformed_every, max_pings)
        ppf_ok = isinstance(pings_per_file, int) and pings_per_file >= 1
        check_param(ppf_ok, "pings_per_file", pings_per_file, "must be an integer >= 1")
        age_ok = isinstance(max_file_age, int | float) and max_file_age > 0
        check_param(age_ok, "max_file_age", max_file_age, "must be > 0 seconds")
        self.directory = Path(directory)
        check_param(
            not self.directory.exists() or self.directory.is_dir(),
            "directory",
            str(directory),
            "exists and is not a directory",
        )
        self._init_run(seed, vehicles, vin_prefix, rate, malformed_every, max_pings, journal, clock)
        self.pings_per_file = pings_per_file
        self.max_file_age = float(max_file_age)
        self._started = False
        self._journal: JournalWriter | None = None
        self._pending: list[tuple[int, str, Ping | None, str | None]] = []
        self._pending_since = 0.0
        self._next_file = 1
        self._emitted = 0
        self._files_written = 0
        self._hold_next = 0
        self._hold_for = 0
        self._held_files: list[tuple[Path, Path, list[JournalRecord]]] = []

    # --- observation --------------------------------------------------------------------
    @property
    def emitted(self) -> int:
        """Records published (in final files and journaled) by this instance."""
        return self._emitted

    @property
    def files_written(self) -> int:
        """Files published by this instance."""
        return self._files_written

    @property
    def last_sequence(self) -> int:
        """Sequence of the newest published record (including earlier runs)."""
        return self._next_sequence - 1 - len(self._pending)

    # --- lifecycle ----------------------------------------------------------------------
    def run(self, stop_event: threading.Event | None = None) -> None:
        """Emit pings until ``stop_event`` is set, :meth:`stop` is called or ``max_pings``
        records are published; the partial file is published before returning."""
        if self._started:
            raise SimulatorError("an AlphaSimulator runs once; create a new one to restart")
        self._started = True
        stop = stop_event if stop_event is not None else self._stop
        try:
            self._prepare()
            tick = min(0.05, self.max_file_age / 4)
            self._pace(
                self._generate,
                stopped=lambda: stop.is_set() or self._stop.is_set(),
                wait=lambda: stop.wait(tick),
                after_emit=self._publish_if_old,
                on_pause=self._publish_all,
            )
            self._publish_all()
            log.info(
                "fleetsim-alpha stopped: %d records in %d files, last sequence %d",
                self._emitted,
                self._files_written,
                self.last_sequence,
            )
        except BaseException as exc:  # recorded before done is set; see stop()/wait_done()
            self._error = exc
            raise
        finally:
            if self._journal is not None:
                self._journal.close()
            self._done.set()

    def start(self) -> None:
        """Run in a background thread; returns at once."""
        if self._thread is not None:
            raise SimulatorError("AlphaSimulator already started")
        self.directory.mkdir(parents=True, exist_ok=True)  # visible when start() returns
        self._thread = threading.Thread(
            target=self._run_in_thread, name="fleetsim-alpha", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop emitting, publish the partial file and wait for the thread to end."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise SimulatorError(f"fleetsim-alpha did not stop within {timeout}s")
        self._raise_if_failed()

    def _run_in_thread(self) -> None:
        try:
            self.run()
        except BaseException:  # recorded by run(), raised again by stop()/wait_done()
            log.exception("fleetsim-alpha failed")

    # --- emitting -----------------------------------------------------------------------
    def _prepare(self) -> None:
        """Create the directory, drop stale temp files, resume numbering and sequence."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for name in os.listdir(self.directory):
            if TEMP_PATTERN.match(name):
                log.info("removing stale temp file %s", self.directory / name)
                (self.directory / name).unlink(missing_ok=True)
        last_file, last_sequence = scan_directory(self.directory)
        self._next_file, self._next_sequence = last_file + 1, last_sequence + 1
        if last_file:
            log.info(
                "fleetsim-alpha resumes in %s after file %d, sequence %d",
                self.directory,
                last_file,
                last_sequence,
            )
        if self.journal_path is not None:
            self._journal = JournalWriter(self.journal_path)

    def _generate(self, times: list[float]) -> None:
        """Add one record per time to the pending file, publishing each file when full."""
        every = self.malformed_every
        for at in times:
            sequence = self._next_sequence
            self._next_sequence += 1
            ping = self._fleet.next_ping(sequence, at)
            kind = malformed_kind(sequence, every, ALPHA_MALFORMED_KINDS) if every else None
            if not self._pending:
                self._pending_since = time.monotonic()
            if kind is None:
                self._pending.append((sequence, ping.to_csv(), ping, None))
            else:
                self._pending.append((sequence, malformed_csv(ping, kind), None, kind))
            if len(self._pending) >= self.pings_per_file:
                self._publish()

    def _publish_if_old(self) -> None:
        """Publish the pending file once ``max_file_age`` has passed since its first record."""
        if self._pending and time.monotonic() - self._pending_since >= self.max_file_age:
            self._publish()

    def _publish(self) -> None:
        """Write the pending records to a temp file, fsync, rename it into place, journal."""
        if not self._pending:
            return
        name = file_name(self._next_file)
        final = self.directory / name
        temp = self.directory / f".{name}.tmp"
        if final.exists():
            raise SimulatorError(
                f"{final} already exists: is another fleetsim-alpha writing to {self.directory}?"
            )
        data = "".join(raw + "\n" for _, raw, _, _ in self._pending).encode("utf-8")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        entries = [
            JournalRecord("alpha", seq, ping is None, reason, raw, ping, name)
            for seq, raw, ping, reason in self._pending
        ]
        self._emitted += len(self._pending)
        self._files_written += 1
        self._next_file += 1
        self._pending = []
        if self._hold_next:  # published late: after the next files (a drill's fault)
            self._hold_next, self._hold_for = 0, self._hold_next
            self._held_files.append((temp, final, entries))
            return
        os.rename(temp, final)
        if self._journal is not None:
            self._journal.append(entries)
        self._hold_for -= 1
        if self._hold_for <= 0:
            self._release_held()

    def hold_back_next_file(self, after: int = 1) -> None:
        """Publish the next file late, after the ``after`` files that follow it (or at a pause
        or the end): it then appears with a name below files a reader may have read."""
        self._hold_next = max(1, after)

    @property
    def holding(self) -> bool:
        """Whether a file is still to be published late (:meth:`hold_back_next_file`)."""
        return bool(self._hold_next or self._held_files)

    def _release_held(self) -> None:
        for temp, final, entries in self._held_files:
            os.rename(temp, final)
            if self._journal is not None:
                self._journal.append(entries)
        self._held_files = []

    def _publish_all(self) -> None:
        self._publish()
        self._release_held()


def run_from_args(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``sim alpha``."""
    directory = args.dir if args.dir is not None else settings.layout.alpha_dir
    sim = AlphaSimulator(
        directory,
        seed=args.seed,
        vehicles=args.vehicles,
        rate=args.rate,
        pings_per_file=args.pings_per_file,
        max_file_age=args.max_file_age,
        malformed_every=args.malformed_every,
        max_pings=args.max_pings,
        journal=args.journal,
        vin_prefix=args.vin_prefix,
    )
    log.info("fleetsim-alpha writing %s at %s pings/s", sim.directory, args.rate)
    return run_foreground(sim, progress_every=args.progress_every)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m streamops.sim.alpha [flags]``, the same as ``streamops sim alpha``."""
    return standalone_main(
        "alpha",
        "write fleet ping CSV files into a directory (fleetsim-alpha)",
        add_alpha_arguments,
        run_from_args,
        argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
