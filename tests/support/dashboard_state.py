"""A state root and fleet store with known contents for the dashboard tests (no Spark).

The store is written by the job's own code (:mod:`streamops_contract.sinks.store`), the job's
files by the same helpers the driver and the ops side use (status.json, submissions, the lease,
savepoint manifests, the health history), so the dashboard reads what a running stack would leave.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streamops.health.report import CheckResult, HealthReport, Level, record
from streamops.settings import Settings
from streamops.state.layout import append_jsonl, write_json_atomic
from streamops_contract.sinks import store
from streamops_contract.state import lease
from streamops_contract.state.savepoints.manifest import Manifest, StageEntry

JOB = "fleet-pings"
DRIVER = "driver-20261125120000-0001"


def vin(i: int) -> str:
    return f"1FTEST{i:011d}"


def vehicle_rows(count: int, *, shift: float = 0.0, at: float | None = None,
                 sequence: int = 1) -> list[dict[str, Any]]:  # fmt: skip
    """``count`` vehicles scattered over the simulators' region, ``shift`` degrees east (never
    past 90°W for a shift up to 1.5); every third one has OBD codes (a v2 column)."""
    at = time.time() if at is None else at
    rng = random.Random(20261125)  # the same places at every call: only ``shift`` moves them
    places = [(rng.uniform(35.3, 44.7), rng.uniform(-104.7, -91.6)) for _ in range(count)]
    return [
        {"vin": vin(i), "time": at, "sequence": sequence + i,
         "source": "beta" if i % 2 else "alpha",
         "latitude": places[i][0], "longitude": places[i][1] + shift,
         "speed": 30.0 + i % 40, "heading": float(i * 7 % 360),
         "obd_codes": ["P0301", "P0420"] if i % 3 == 0 else None}
        for i in range(count)
    ]  # fmt: skip


def fill_store(url: str, rows: Sequence[dict[str, Any]], job_version: str = "2") -> None:
    """Upsert ``rows`` into the store's ``vehicles`` table as the job's sink does."""
    store.upsert_vehicles(store.engine_for(url), rows, job_version)


def running_job(
    settings: Settings, *, stages: dict[str, dict[str, Any]], args: dict[str, Any],
    sources_state: dict[str, Any] | None = None, version: str = "2", job: str = JOB,
) -> dict[str, Any]:  # fmt: skip
    """A job whose driver runs (it holds the lease) with this status; returns status.json."""
    layout = settings.layout
    spec = {"name": job, "version": version, "entrypoint": "spark_jobs.fleet_pings",
            "args": args}  # fmt: skip
    append_jsonl(layout.submissions_file(job), {"event": "submitted", "driver_id": DRIVER,
                                                "at": time.time() - 600, "spec": spec})  # fmt: skip
    status = {"job": job, "state": "RUNNING", "version": version, "driver_id": DRIVER,
              "started_at": time.time() - 300, "stages": stages,
              "sources_state": sources_state or {}}  # fmt: skip
    write_json_atomic(layout.status_file(job), status)
    lease.acquire(layout, job, DRIVER, ttl=3600.0)
    return status


def stage_status(*, batch_id: int, age: float, rate_in: float, rate_out: float, late: int,
                 state_rows: int, offsets: Sequence[dict[str, Any]],
                 failed: int = 0) -> dict[str, Any]:  # fmt: skip
    """One stage as :func:`spark_jobs.runtime.status.summarize` writes it after a batch."""
    return {"batch_id": batch_id, "ready": True, "idle_since": None,
            "last_batch_at": time.time() - age, "input_rows_per_second": rate_in,
            "processed_rows_per_second": rate_out, "late_rows": late, "state_rows": state_rows,
            "failed_batches": failed,
            "sources": [{"description": o.get("source"), "end_offset": json.dumps(o)}
                        for o in offsets]}  # fmt: skip


def savepoint(settings: Settings, name: str, *, job: str = JOB, version: str = "2",
              age: float, stages: Sequence[str]) -> None:  # fmt: skip
    """A complete savepoint manifest ``age`` seconds old (no checkpoint files in it)."""
    manifest = Manifest(name=name, job=job, version=version, created_at=time.time() - age,
                        stages={s: StageEntry(batch_id=5) for s in stages}, checksums=[],
                        bytes=2048, files=0)  # fmt: skip
    path = settings.layout.savepoints_dir / name / "manifest.json"
    write_json_atomic(path, manifest.model_dump(mode="json"))


def health_run(settings: Settings, level: Level, message: str, job: str = JOB) -> None:
    """One recorded ``streamops health`` run judging ``job``."""
    report = HealthReport(time.time(), (CheckResult("jobs", job, level, message),))
    record(settings.layout, report)


def write_alpha(directory: Path, files: int) -> list[str]:
    """An alpha drop directory with ``files`` CSV files, oldest name first."""
    directory.mkdir(parents=True, exist_ok=True)
    names = [f"pings-{i:06d}.csv" for i in range(1, files + 1)]
    for n in names:
        (directory / n).write_text("sequence,vin\n", encoding="utf-8")
    return names
