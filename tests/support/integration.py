"""Helpers of the integration tests (importable: ``tests`` is on pytest's pythonpath)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from streamops.health.gather import dormant_reason
from streamops.job_reads import read_submissions
from streamops.job_view import JobView
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.stack.local_cluster import LocalCluster
from streamops.state.layout import StateLayout
from streamops_contract.records import Cancellation, append_record


@dataclass(frozen=True)
class ClusterHandle:
    settings: Settings
    cluster: LocalCluster
    training_error: str = ""  # why the session's class training failed, if it did

    @property
    def registry(self) -> JobRegistry:
        return JobRegistry(self.settings)

    def let_go(self, job: str) -> None:
        """The end of a test's job: cancelled if it runs; if it ended on its own (killed by
        the drill, failed for good) and still counts as declared, its end recorded as a
        cancellation, so that the session's later tests do not count it as a job that should
        run (health, and the N+1 admission of the DAGs)."""
        registry = self.registry
        view = registry.view(job)
        if view.is_live:
            registry.cancel(job)
        elif (ended := ended_driver(self.settings.layout, job, view)) is not None:
            append_record(self.settings.layout.submissions_file(job), Cancellation(ended))


def ended_driver(layout: StateLayout, job: str, view: JobView) -> str | None:
    """The driver whose end to record as ``job``'s cancellation: its last driver (the
    status's, else the last submission's; a view of a job that runs no more names no driver)
    when ``job`` is not live and still counts as declared; else None."""
    if view.is_live or dormant_reason(layout, job) is not None:
        return None
    submitted = [s for s in read_submissions(layout.submissions_file(job))
                 if s.get("event") == "submitted" and s.get("driver_id")]  # fmt: skip
    last = view.status.driver_id or (submitted[-1]["driver_id"] if submitted else None)
    return str(last) if last else None


def _poll(check: Callable[[], object], timeout: float, interval: float) -> object:
    """The first truthy value of ``check``, polled every ``interval`` until ``timeout``; else
    the last falsy one."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def wait_until(
    check: Callable[[], object], timeout: float, what: str, interval: float = 1.0,
    describe: Callable[[], str] | None = None,
) -> object:  # fmt: skip
    """Poll ``check`` until it returns something truthy; fail naming ``what`` (and what
    ``describe`` says of the situation then)."""
    value = _poll(check, timeout, interval)
    if value:
        return value
    detail = f"; {describe()}" if describe is not None else ""
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")


def wait_quietly(check: Callable[[], object], timeout: float, interval: float = 0.5) -> bool:
    """Whether ``check`` came true within ``timeout`` (no failure when it did not)."""
    return bool(_poll(check, timeout, interval))


def describe_job(view: JobView) -> str:
    """One line on a job for a failure message: state, driver, error, per-stage progress."""
    stages = "; ".join(
        f"{name}: batch {info.batch_id} at {source_positions(view).get(name)}"
        for name, info in view.stages.items()
    )
    age = view.last_batch_age
    last = "no batch yet" if age is None else f"last batch {age:.1f}s ago"
    return (
        f"job {view.name} v{view.version} {view.state} (driver {view.driver_id} "
        f"{view.driver_state}, {last}, error "
        f"{str(view.status.error)[:500]}); {stages or 'no stages'}"
    )


LOG_SIGNS = (" WARN ", " ERROR ", "Error:", "Exception:")
LOG_NOISE = ("falling behind", "replaced a previously registered", "AQE", "adaptive.enabled")


def driver_log_tail(layout: StateLayout, driver_id: object, lines: int = 15) -> str:
    """The last ``lines`` lines of a driver's stderr (on whichever worker ran it) that warn or
    fail, Spark's usual warnings left out: for a failure message when a driver did not do what
    a test waited for (a CI run's directories are gone after it)."""
    logs = sorted((layout.cluster_dir / "work").glob(f"*/{driver_id}/stderr"))
    if not logs:
        return f"no log of driver {driver_id}"
    said = [line for line in logs[-1].read_text(errors="replace").splitlines()
            if any(sign in line for sign in LOG_SIGNS)
            and not any(noise in line for noise in LOG_NOISE)]  # fmt: skip
    return f"driver {driver_id}'s log: " + " | ".join(line[:300] for line in said[-lines:])


def source_positions(view: JobView) -> dict[str, dict[str, object]]:
    """Per stage, the end offsets of its sources merged into one dict."""
    out: dict[str, dict[str, object]] = {}
    for stage, info in view.stages.items():
        merged: dict[str, object] = {}
        for src in info.sources:
            if isinstance(src.end_offset, dict):
                merged.update(src.end_offset)
        out[stage] = merged
    return out


def pids_with_args(*args: str) -> list[int]:
    """Pids of the processes of this machine whose command line holds each of ``args``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if all(arg.encode() in cmdline for arg in args):
                found.append(int(proc.name))
    return found


def maps_file(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` mapped in memory."""
    try:
        return str(path) in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
