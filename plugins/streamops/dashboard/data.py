"""What the dashboard shows, read from the job stores and the state root (never written).

The figures are the ones ``streamops jobs``, ``streamops health`` and ``list-snapshots`` read
(one snapshot of the world, :mod:`streamops.world.snapshot`: the jobs and the savepoint
manifests; ``status.json``, the source probes of :mod:`streamops.world.source_probes`, the
health history), gathered once per request so that the jobs panel and ``/metrics`` cannot
disagree. The master may be down: the snapshot then shows the jobs as the state root alone
does, as the health check judges them.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, func, inspect, select
from sqlalchemy.exc import SQLAlchemyError

from streamops.health.report import read_history
from streamops.job_reads import spec_args
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.state.job_status import StageStatus
from streamops.state.savepoints.catalogue import list_savepoints
from streamops.world.snapshot import Snapshot, take
from streamops.world.source_probes import Prober, stage_offsets
from streamops_contract.sinks.store import trade_series, vehicles

PROBE_TIMEOUT_S = 1.0
"""How long a backlog probe of fleetsim-beta may take: a page refresh must not hang on it."""

VEHICLE_COLUMNS = ("vin", "latitude", "longitude", "speed", "heading", "time")
"""What the map needs of each vehicle; the full row is read only for the one clicked."""


@dataclass(frozen=True)
class SourceFigures:
    """One source of one stage: how far behind its upstream, and what its reader reports."""

    source: str
    kind: str
    backlog: int | None  # None: the upstream could not be asked
    unit: str
    state: str
    reason: str | None


@dataclass(frozen=True)
class StageFigures:
    name: str
    batch_id: int | None
    batch_age: float | None
    idle: bool
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    late_rows: int
    state_rows: int
    failed_batches: int
    savepoint_age: float | None
    sources: tuple[SourceFigures, ...]


@dataclass(frozen=True)
class JobFigures:
    name: str
    version: str | None
    state: str
    driver_id: str | None
    is_live: bool
    healthy: bool
    failed: bool
    error: str | None
    last_batch_age: float | None
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    health: str | None  # the level of the job's checks in the last recorded health run
    stages: tuple[StageFigures, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _absent(engine: Engine) -> bool:
    """Whether the store is a SQLite file not written yet (a connection would create it)."""
    url = engine.url
    return url.get_backend_name() == "sqlite" and not Path(url.database or "").is_file()


class FleetStore:
    """Read-only access to the ``vehicles`` table of the fleet store (SQLite or PostgreSQL).

    The table is the job's (:data:`streamops_contract.sinks.store.vehicles`, so JSON columns
    decode), but it is not created nor migrated here: a store the job has not written yet shows no
    vehicles, and ``obd_codes`` is shown only once a v2 job has added the column."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: Engine = create_engine(url)

    def _columns(self) -> set[str]:
        """The columns of ``vehicles``; none while the table (or the SQLite file, which a
        connection would create) does not exist yet."""
        if _absent(self.engine) or not inspect(self.engine).has_table("vehicles"):
            return set()
        return {c["name"] for c in inspect(self.engine).get_columns("vehicles")}

    def positions(self) -> dict[str, Any]:
        """Every vehicle's latest position as rows of :data:`VEHICLE_COLUMNS`: arrays, not
        objects, and positions to 5 decimals (about a metre), so that 10k vehicles every two
        seconds stay about 0.6 MB of JSON."""
        columns = self._columns()
        rows: list[list[Any]] = []
        if columns:
            query = select(*(vehicles.c[name] for name in VEHICLE_COLUMNS))
            with self.engine.connect() as conn:
                rows = [[vin, round(lat, 5), round(lon, 5), round(speed, 1), round(heading),
                         round(at, 1)] for vin, lat, lon, speed, heading, at in conn.execute(query)]
        return {"columns": list(VEHICLE_COLUMNS), "rows": rows, "count": len(rows),
                "has_obd": "obd_codes" in columns, "at": time.time()}  # fmt: skip

    def vehicle(self, vin: str) -> dict[str, Any] | None:
        """The latest ping of one VIN, every column the table has (``obd_codes`` from v2)."""
        columns = self._columns()
        if not columns:
            return None
        query = select(*(c for c in vehicles.columns if c.name in columns))
        with self.engine.connect() as conn:
            found = conn.execute(query.where(vehicles.c.vin == vin)).mappings().first()
        return dict(found) if found else None

    def close(self) -> None:
        self.engine.dispose()


def _sources(
    info: StageStatus, args: dict[str, Any], states: dict[str, Any], prober: Prober
) -> tuple[SourceFigures, ...]:
    out = []
    for source, offset in sorted(stage_offsets(info).items()):
        probe = prober.probe(source, offset, args)
        backlog = None if probe is None or probe.backlog is None else max(0, probe.backlog)
        state = states.get(source) or {}
        out.append(SourceFigures(source, probe.kind if probe else "?", backlog,
                                 probe.unit if probe else "files",
                                 str(state.get("state") or "ok"), state.get("reason")))  # fmt: skip
    return tuple(out)


def _savepoint_ages(snapshot: Snapshot) -> dict[tuple[str, str], float]:
    """Per ``(job, stage)``: seconds since the newest complete savepoint holding the stage."""
    ages: dict[tuple[str, str], float] = {}
    now = snapshot.taken_at
    for info in snapshot.savepoints:  # newest first
        for stage in info.stages:
            ages.setdefault((info.job, stage), round(now - info.created_at, 1))
    return ages


def _health_levels(settings: Settings) -> dict[str, str]:
    """Per job, the worst level of its checks in the last recorded health run."""
    history = read_history(settings.layout, last=1)
    rank = {"ok": 0, "warn": 1, "fail": 2}
    levels: dict[str, str] = {}
    for result in history[-1]["results"] if history else []:
        job = str(result.get("name") or "").split("/")[0]
        level = str(result.get("level"))
        if rank.get(level, 0) >= rank.get(levels.get(job, "ok"), 0):
            levels[job] = level
    return levels


def _figures(
    settings: Settings, view: JobView, prober: Prober, ages: dict[tuple[str, str], float],
    health: dict[str, str], now: float,
) -> JobFigures:  # fmt: skip
    args = (spec_args(settings, view.name) or {}) if view.stages else {}
    states = view.status.sources_state
    stages = []
    for name, info in sorted(view.stages.items()):
        last = info.last_batch_at
        stages.append(StageFigures(
            name=name, batch_id=info.batch_id,
            batch_age=round(now - last, 1) if last else None,
            idle=bool(info.idle_since),
            input_rows_per_second=info.input_rows_per_second,
            processed_rows_per_second=info.processed_rows_per_second,
            late_rows=info.late_rows, state_rows=info.state_rows,
            failed_batches=info.failed_batches,
            savepoint_age=ages.get((view.name, name)),
            sources=_sources(info, args, states, prober),
        ))  # fmt: skip
    failed = view.status.state == "FAILED"
    return JobFigures(
        name=view.name, version=view.version, state=view.state, driver_id=view.driver_id,
        is_live=view.is_live, healthy=view.healthy, failed=failed,
        error=str(view.status.error)[:300] if failed else None,
        last_batch_age=view.last_batch_age, input_rows_per_second=view.input_rows_per_second,
        processed_rows_per_second=view.processed_rows_per_second,
        health=health.get(view.name), stages=tuple(stages),
    )  # fmt: skip


def gather_jobs(settings: Settings) -> list[JobFigures]:
    """The figures of every job, from one snapshot: for the jobs panel and for ``/metrics``."""
    snapshot, prober = take(settings), Prober(PROBE_TIMEOUT_S)
    ages, health, now = _savepoint_ages(snapshot), _health_levels(settings), snapshot.taken_at
    return [_figures(settings, v, prober, ages, health, now) for v in snapshot.views]


def savepoints(settings: Settings) -> list[dict[str, Any]]:
    """The savepoints as ``streamops list-snapshots --json`` lists them, newest first."""
    infos = list_savepoints(settings.layout, clean=False)
    return [{**asdict(i), "path": str(i.path)} for i in infos]


def health_history(settings: Settings, last: int = 30) -> list[dict[str, Any]]:
    """The last recorded health runs, newest first (``streamops health --history``)."""
    return list(reversed(read_history(settings.layout, last=last)))


SERIES = ("avg-1s", "avg-1m", "vol-1s")
"""The trade analyser's series, in the order the chart draws them (v2 adds the last two)."""
SERIES_SPAN_MS = 5 * 60 * 1000
"""How much of a symbol's series the chart shows: the newest five minutes of windows."""


class TradeSeries:
    """Read-only access to the ``trade_series`` tables of the state root's jobs: every
    job's store (its spec's ``store_url``) that has one, for the trade analyser's charts.

    Every query walks the table's key (series, symbol, window end): a symbol's newest window
    and its last five minutes are index ranges, and the symbols are found one ``min`` at a
    time, so a refresh costs the same after an hour of trades as after a minute."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._engines: dict[str, Engine] = {}

    def _stores(self, unreachable: dict[str, str]) -> list[tuple[str, Engine]]:
        """The jobs' stores holding ``trade_series``; a store that does not answer is named in
        ``unreachable`` (job: reason) and skipped, so the others still chart."""
        out = []
        for job in self.settings.layout.known_jobs():
            url = str((spec_args(self.settings, job) or {}).get("store_url") or "")
            if not url:
                continue
            engine = self._engines.get(url) or self._engines.setdefault(url, create_engine(url))
            try:
                if not _absent(engine) and inspect(engine).has_table(trade_series.name):
                    out.append((job, engine))
            except SQLAlchemyError as exc:
                unreachable[job] = str(exc.orig if hasattr(exc, "orig") else exc).strip()[:200]
        return out

    @staticmethod
    def _symbols(conn: Connection, series: str) -> list[str]:
        t, found, last = trade_series, [], ""
        while True:
            nxt = conn.execute(
                select(func.min(t.c.symbol)).where(t.c.series == series, t.c.symbol > last)
            ).scalar()
            if nxt is None:
                return found
            found.append(str(nxt))
            last = nxt

    def chart(self, symbol: str | None = None) -> dict[str, Any]:
        """The newest :data:`SERIES_SPAN_MS` of every series of ``symbol`` (default: the first
        symbol), as ``[window_end_ms, value]`` points, with the symbols there are."""
        t, unreachable = trade_series, {}
        for job, engine in self._stores(unreachable):
            with engine.connect() as conn:
                symbols = self._symbols(conn, SERIES[0])
                if not symbols:
                    continue
                chosen = symbol if symbol in symbols else symbols[0]
                lines: dict[str, list[list[float]]] = {}
                for series in SERIES:
                    key = (t.c.series == series, t.c.symbol == chosen)
                    newest = conn.execute(select(func.max(t.c.window_end_ms)).where(*key)).scalar()
                    if newest is None:
                        continue
                    rows = conn.execute(
                        select(t.c.window_end_ms, t.c.value)
                        .where(*key, t.c.window_end_ms > newest - SERIES_SPAN_MS)
                        .order_by(t.c.window_end_ms)
                    )
                    lines[series] = [[int(end), round(float(v), 4)] for end, v in rows]
                return {"job": job, "symbols": symbols, "symbol": chosen, "series": lines,
                        "unreachable": unreachable}  # fmt: skip
        return {"job": None, "symbols": [], "symbol": None, "series": {},
                "unreachable": unreachable}  # fmt: skip

    def close(self) -> None:
        for engine in self._engines.values():
            engine.dispose()
