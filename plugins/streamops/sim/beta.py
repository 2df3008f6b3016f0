"""fleetsim-beta: serves fleet pings over HTTP from a bounded history.

Endpoints (FastAPI, see :func:`create_app`):

- ``GET /pings?since=N&limit=M`` → 200, a JSON array of the records with sequence > N in
  ascending order, at most M (default 200, at most 10000, 0 allowed). When records after N
  are no longer held (``N < oldest held - 1``) → 410 ``{"error": "since_too_old", "detail",
  "requested_since", "oldest_available", "stream"}``, never an empty list. Beyond the head
  → ``[]``. Both answers carry the header ``X-Stream-Id: <stream id>``.
- ``GET /head`` → ``{"stream": id, "first": oldest held or null, "last": newest (0 if none),
  "capacity": records held at most, "emitted": records this process added}``.
- ``GET /health`` → ``{"status": "ok"}``.

A stream id names one unbroken sequence: a reader may go on from a committed sequence only
under the same id. With a data directory (:mod:`streamops.sim.durable_log`) the id, history
and sequence survive a restart; without one, each simulator is a new stream from 1.

Each record's JSON text is produced once, logged (if durable), journaled, held, and served
byte for byte.

The server, its history and durable log do not know what a record is: a
:class:`RecordGenerator` makes them. fleetsim-beta's is :class:`FleetRecords` (pings); the
trades producer (:mod:`streamops.sim.trades`) plugs in its market and is otherwise this very
simulator, so both data sets share one log server and one Spark source.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import uvicorn
from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse, Response

from streamops.exceptions import SimulatorError
from streamops.settings import Settings
from streamops.sim.durable_log import DEFAULT_SEGMENT_RECORDS, DurableLog, new_stream_id
from streamops.sim.flags import add_beta_arguments
from streamops.sim.fleet import Fleet, Ping, check_emission_params, check_param, malformed_kind
from streamops.sim.journal import JournalRecord, JournalWriter
from streamops.sim.runner import SimulatorRun, run_foreground, standalone_main
from streamops_contract.hosts import LOOPBACK

log = logging.getLogger(__name__)

STREAM_HEADER = "X-Stream-Id"
DEFAULT_LIMIT = 200
MAX_LIMIT = 10_000
BETA_MALFORMED_KINDS = (
    "latitude_not_number",
    "missing_vin",
    "latitude_out_of_range",
    "obd_codes_not_list",
)
"""The ways beta breaks every ``malformed_every``-th record, in rotation."""


def malformed_json(ping: Ping, kind: str) -> str:
    """The JSON text of ``ping`` broken in the way ``kind`` names (it keeps its sequence)."""
    data = ping.to_dict()
    if kind == "latitude_not_number":
        data["latitude"] = "north"
    elif kind == "missing_vin":
        del data["vin"]
    elif kind == "latitude_out_of_range":
        data["latitude"] = 123.0
    elif kind == "obd_codes_not_list":
        data["obd_codes"] = "P0300"
    else:
        raise ValueError(f"unknown malformation {kind!r}")
    return json.dumps(data, separators=(",", ":"))


class RecordGenerator(Protocol):
    """Makes the records a log server serves: deterministic apart from the given times."""

    def records(
        self, first_sequence: int, times: Sequence[float]
    ) -> list[tuple[str, JournalRecord]]:
        """One record per time, sequences ``first_sequence, first_sequence + 1, ...``: its
        JSON text (served byte for byte) and its oracle journal line."""
        ...


class FleetRecords:
    """fleetsim-beta's records: the pings of ``fleet``, every ``malformed_every``-th broken."""

    def __init__(self, fleet: Fleet, malformed_every: int) -> None:
        self.fleet = fleet
        self.malformed_every = malformed_every

    def records(
        self, first_sequence: int, times: Sequence[float]
    ) -> list[tuple[str, JournalRecord]]:
        made = []
        for offset, at in enumerate(times):
            sequence = first_sequence + offset
            ping = self.fleet.next_ping(sequence, at)
            kind = malformed_kind(sequence, self.malformed_every, BETA_MALFORMED_KINDS)
            raw = ping.to_json() if kind is None else malformed_json(ping, kind)
            made.append(
                (raw, JournalRecord("beta", sequence, kind is not None, kind, raw,
                                    None if kind else ping))
            )  # fmt: skip
        return made


class SinceTooOld(Exception):
    """The records after ``since`` were evicted from the history."""

    def __init__(self, since: int, oldest: int) -> None:
        super().__init__(f"since={since} but the oldest held record is {oldest}")
        self.since = since
        self.oldest = oldest


class PingHistory:
    """The last ``capacity`` records (raw JSON texts) of ``stream``, by sequence. Thread-safe."""

    def __init__(self, capacity: int = 100_000, *, stream: str | None = None) -> None:
        check_param(
            isinstance(capacity, int) and capacity >= 1,
            "history",
            capacity,
            "must be an integer >= 1",
        )
        self.capacity = capacity
        self.stream = new_stream_id() if stream is None else stream
        self._lock = threading.Lock()
        self._raws: list[str] = []
        self._base = 0  # sequence of self._raws[0]
        self._emitted = 0

    def extend(self, first_sequence: int, raws: Sequence[str], *, count: bool = True) -> None:
        """Add records ``first_sequence, first_sequence + 1, ...`` (contiguous with the head);
        ``count=False`` for records loaded from disk, which ``emitted`` does not count."""
        with self._lock:
            if self._raws and first_sequence != self._base + len(self._raws):
                raise ValueError(
                    f"sequence {first_sequence} does not follow {self._base + len(self._raws) - 1}"
                )
            if not self._raws:
                self._base = first_sequence
            self._raws.extend(raws)
            if count:
                self._emitted += len(raws)
            if len(self._raws) > 2 * self.capacity:  # amortised trim, O(1) per record
                drop = len(self._raws) - self.capacity
                del self._raws[:drop]
                self._base += drop

    def _bounds(self) -> tuple[int | None, int]:
        """``(first held, last)``; call with the lock held."""
        if not self._raws:
            return None, 0
        last = self._base + len(self._raws) - 1
        return max(self._base, last - self.capacity + 1), last

    def head(self) -> dict[str, Any]:
        """``{"stream", "first", "last", "capacity", "emitted"}`` as served by ``GET /head``."""
        with self._lock:
            first, last = self._bounds()
            return {"stream": self.stream, "first": first, "last": last,
                    "capacity": self.capacity, "emitted": self._emitted}  # fmt: skip

    def read(self, since: int, limit: int) -> list[str]:
        """Up to ``limit`` records after ``since``; :class:`SinceTooOld` if some are gone."""
        with self._lock:
            first, last = self._bounds()
            if first is None:
                return []
            if since < first - 1:
                raise SinceTooOld(since, first)
            if since >= last or limit <= 0:
                return []
            start = since + 1 - self._base
            return self._raws[start : start + limit]


def create_app(
    state: PingHistory,
    title: str = "fleetsim-beta",
    description: str = "GPS pings of a simulated fleet",
) -> FastAPI:
    """The FastAPI app serving ``state`` (records of any kind, under ``/pings``)."""
    app = FastAPI(title=title, description=description)
    stream_header = {STREAM_HEADER: state.stream}

    @app.get("/pings")
    async def pings(
        since: int = Query(0, ge=0, description="return records with a greater sequence"),
        limit: int = Query(DEFAULT_LIMIT, ge=0, le=MAX_LIMIT, description="at most this many"),
    ) -> Response:
        try:
            raws = state.read(since, limit)
        except SinceTooOld as exc:
            return JSONResponse(
                status_code=410,
                content={
                    "error": "since_too_old",
                    "detail": f"records after sequence {since} are gone; the history holds "
                    f"{state.capacity} records and the oldest available is {exc.oldest}",
                    "requested_since": since,
                    "oldest_available": exc.oldest,
                    "stream": state.stream,
                },
                headers=stream_header,
            )
        body = "[" + ",".join(raws) + "]"
        return Response(body, media_type="application/json", headers=stream_header)

    @app.get("/head")
    async def head() -> dict[str, Any]:
        return state.head()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


class ServerThread:
    """A uvicorn server for one ASGI app in a background thread.

    The socket is bound in :meth:`start` (so a busy port fails there, and port 0 picks a
    free port, readable from :attr:`port` afterwards).
    """

    def __init__(self, app: Any, host: str = LOOPBACK, port: int = 0) -> None:
        check_param(
            isinstance(port, int) and 0 <= port <= 65535,
            "port",
            port,
            "must be an integer in 0..65535 (0 = any free port)",
        )
        check_param(isinstance(host, str) and bool(host), "host", host, "must be a host name")
        self.app, self.host, self.port = app, host, port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    def start(self, timeout: float = 10.0) -> None:
        """Bind, serve in a thread and return once the port accepts connections."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise SimulatorError(
                f"cannot listen on {self.host}:{self.port} ({exc}); choose another --port"
            ) from exc
        self._socket, self.port = sock, sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self.port,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise SimulatorError(f"HTTP server on {self.host}:{self.port} did not start")
            time.sleep(0.01)
        with socket.create_connection((self.host, self.port), timeout=timeout):
            pass

    def stop(self, timeout: float = 10.0) -> None:
        """Shut the server down and release the port."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("HTTP server on port %s did not stop within %ss", self.port, timeout)
        if self._socket is not None:
            self._socket.close()


class BetaSimulator(SimulatorRun):
    """Generates deterministic records into a :class:`PingHistory` served over HTTP.

    ``start()`` serves and generates in background threads; ``emitted`` counts records
    this process added. With ``data_dir`` they go to a :class:`DurableLog` first and survive
    a restart: same stream id, same records, next sequence (the fleet restarts from ``seed``).
    The records are fleet pings unless a ``generator`` is given (another data set served by
    the same mechanism: :class:`streamops.sim.trades.TradeSimulator`).
    """

    source = "beta"
    title = "fleetsim-beta"
    description = "GPS pings of a simulated fleet"

    def __init__(
        self,
        *,
        host: str = LOOPBACK,
        port: int = 8000,
        seed: int = 2,
        vehicles: int = 50,
        rate: float = 10.0,
        history: int = 100_000,
        malformed_every: int = 0,
        max_pings: int | None = None,
        journal: str | os.PathLike[str] | None = None,
        vin_prefix: str = "1B",
        clock: Callable[[], float] = time.time,
        data_dir: str | os.PathLike[str] | None = None,
        segment_records: int = DEFAULT_SEGMENT_RECORDS,
        generator: RecordGenerator | None = None,
    ) -> None:
        check_emission_params(rate, malformed_every, max_pings)
        self._init_run(seed, vehicles, vin_prefix, rate, malformed_every, max_pings, journal, clock)
        self.generator = generator or FleetRecords(self._fleet, malformed_every)
        disk = None if data_dir is None else DurableLog(data_dir, history, segment_records)
        try:
            self.state = PingHistory(history, stream=None if disk is None else disk.stream)
            app = create_app(self.state, self.title, self.description)
            self._server = ServerThread(app, host, port)
        except BaseException:
            if disk is not None:
                disk.close()
            raise
        self.durable_log = disk
        if disk is not None:
            self.state.extend(disk.tail_first, disk.tail, count=False)
            self._next_sequence = disk.next_sequence

    @property
    def stream(self) -> str:
        """The stream id, served by ``GET /head`` and in the ``X-Stream-Id`` header."""
        return self.state.stream

    @property
    def host(self) -> str:
        return self._server.host

    @property
    def port(self) -> int:
        """The listening port (the chosen one after ``start()`` when created with 0)."""
        return self._server.port

    @property
    def base_url(self) -> str:
        """``http://host:port``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The pings endpoint, ``http://host:port/pings``."""
        return f"{self.base_url}/pings"

    @property
    def emitted(self) -> int:
        """Records added to the history so far."""
        return self.state.head()["emitted"]

    def start(self, timeout: float = 10.0) -> None:
        """Start the HTTP server and the generator; returns once the port answers."""
        if self._thread is not None:
            raise SimulatorError("BetaSimulator already started")
        self._server.start(timeout)
        self._thread = threading.Thread(
            target=self._generate_in_thread, name=self.title, daemon=True
        )
        self._thread.start()
        log.info("%s serving %s", self.title, self.url)

    def finish(self, timeout: float = 10.0) -> None:
        """Stop generating; the server goes on answering, so readers can catch up."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._raise_if_failed()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop generating, shut the server down and release the port (and the data dir)."""
        try:
            self.finish(timeout)
        finally:
            self._server.stop(timeout)
            if self.durable_log is not None and self._thread is None:
                self.durable_log.close()  # never started: release the data directory

    def _generate_in_thread(self) -> None:
        journal = None if self.journal_path is None else JournalWriter(self.journal_path)
        try:
            self._pace(
                lambda times: self._emit(times, journal),
                stopped=self._stop.is_set,
                wait=lambda: self._stop.wait(0.02),
            )
            log.info("%s generator stopped after %d records", self.title, self.emitted)
        except BaseException as exc:  # reported to the caller by stop()/wait_done()
            log.exception("%s generator failed", self.title)
            self._error = exc
        finally:
            if journal is not None:
                journal.close()
            if self.durable_log is not None:
                self.durable_log.close()
            self._done.set()

    def _emit(self, times: list[float], journal: JournalWriter | None) -> None:
        """Make one record per time, write them to the durable log (if any) and the journal,
        then add them to the history."""
        first = self._next_sequence
        made = self.generator.records(first, times)
        raws = [raw for raw, _ in made]
        if self.durable_log is not None:
            self.durable_log.append(first, raws)
        if journal is not None:
            journal.append(record for _, record in made)
        self.state.extend(first, raws)
        self._next_sequence = first + len(raws)


def run_from_args(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``sim beta``."""
    sim = BetaSimulator(
        host=args.host,
        port=args.port,
        seed=args.seed,
        vehicles=args.vehicles,
        rate=args.rate,
        history=args.history,
        malformed_every=args.malformed_every,
        max_pings=args.max_pings,
        journal=args.journal,
        vin_prefix=args.vin_prefix,
        data_dir=args.data_dir,
    )
    if args.pause_file:
        sim.pause_file = Path(args.pause_file)
    log.info("fleetsim-beta stream %s, next sequence %d", sim.stream, sim.state.head()["last"] + 1)
    return run_foreground(sim, progress_every=args.progress_every, linger=args.linger)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m streamops.sim.beta [flags]``, the same as ``streamops sim beta``."""
    return standalone_main(
        "beta",
        "serve fleet pings over HTTP (fleetsim-beta)",
        add_beta_arguments,
        run_from_args,
        argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
