"""Every driver of a job the master knows, and which of them are orphans.

A job's drivers are not only the ones submitted: the master relaunches a supervised driver
whose node died under a new id, and a relaunch of a hot job's driver may itself be
relaunched. The drivers of ``job`` are the master's live drivers (``SUBMITTED``, ``RUNNING``,
``RELAUNCHING``, ``UNKNOWN``) that

- a record of the job names: its submissions, its status, its hot standby's file, or
  ``jobs/<job>/drivers.jsonl`` (every driver appends itself when it starts, relaunches
  included); or
- the master's recovery file names (``streamops_contract.recovery``): the only place a
  relaunch still waiting for cores shows whose it is.

An orphan is a driver of the job that is neither its live primary nor that primary's standby
(a hot standby, or a warm standby of an upgrade): `streamops submit` and `restart` kill them
first, so that they hold no cores and never take the job over later.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from streamops.cluster.client import DriverInfo
from streamops.job_view import LIVE_DRIVER_STATES
from streamops.state.job_status import read_status
from streamops.state.layout import StateLayout, read_json
from streamops_contract.records import read_jsonl
from streamops_contract.recovery import driver_app_names


def recorded_ids(layout: StateLayout, job: str, submitted: Iterable[dict[str, Any]]) -> set[str]:
    """Every driver id the job's own records name (its drivers, whatever their state)."""
    ids = {str(s["driver_id"]) for s in submitted if s.get("driver_id")}
    running = read_status(layout, job).driver_id
    if running:
        ids.add(running)
    hot = read_json(layout.hot_standby_file(job))
    if hot and hot.get("driver_id"):
        ids.add(str(hot["driver_id"]))
    ids |= {str(r["driver_id"]) for r in read_jsonl(layout.drivers_file(job))
            if r.get("driver_id")}  # fmt: skip
    return ids


def drivers_of(
    layout: StateLayout, job: str, active: Iterable[DriverInfo],
    submitted: Iterable[dict[str, Any]], recovery_dir: Path | None = None,
) -> list[DriverInfo]:  # fmt: skip
    """The live drivers of ``job`` among the master's ``active`` ones, by id."""
    recorded = recorded_ids(layout, job, submitted)
    names = driver_app_names(recovery_dir or layout.recovery_dir)
    return sorted(
        (d for d in active if d.state in LIVE_DRIVER_STATES
         and (d.id in recorded or names.get(d.id) == job)),
        key=lambda d: d.id,
    )  # fmt: skip


def warm_standbys(submitted: Iterable[dict[str, Any]]) -> set[str]:
    """Drivers submitted as an upgrade's warm standby: the next version, never an orphan."""
    return {str(s["driver_id"]) for s in submitted if s.get("standby") and s.get("driver_id")}
