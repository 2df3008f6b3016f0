"""A job as the ops side sees it at one moment (``JobView``), and the driver states that
matter to it: built on the read side (``streamops.job_reads``), judged by the health verdict
(``streamops.verdict``) and shown by the CLI, without either importing the other."""

from __future__ import annotations

from dataclasses import dataclass, field

from streamops.state.job_status import JobStatus, StageStatus

LIVE_DRIVER_STATES = frozenset({"SUBMITTED", "RUNNING", "RELAUNCHING", "UNKNOWN"})
ENDED_DRIVER_STATES = frozenset({"FAILED", "ERROR", "KILLED", "FINISHED"})


@dataclass(frozen=True)
class JobView:
    """One job as the ops side sees it right now."""

    name: str
    version: str | None
    state: str
    is_live: bool
    driver_id: str | None
    driver_state: str | None
    worker: str | None  # node name (worker-2); the address when it has none
    last_batch_age: float | None
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    status: JobStatus = field(default_factory=JobStatus, repr=False)  # its status.json
    standby: str | None = None  # a hot job's live standby driver ("driver-… armed")
    worker_address: str | None = None  # the worker's host:port as the master lists it

    @property
    def stages(self) -> dict[str, StageStatus]:
        return self.status.stages

    @property
    def healthy(self) -> bool:
        """Live, running, and every stage is ready: it committed a batch or is idle (no data)."""
        return (
            self.is_live
            and self.state == "RUNNING"
            and self.status.state == "RUNNING"
            and self.status.driver_id == self.driver_id
            and self.status.all_ready()
        )

    @property
    def ended(self) -> bool:
        """No driver or application of the job is live and the master says its driver ended."""
        return not self.is_live and self.driver_state in ENDED_DRIVER_STATES
