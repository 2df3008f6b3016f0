"""``/metrics``: every figure the health check judges, for Prometheus, labelled ``job``/``stage``.

A custom collector on a registry of its own: each scrape gathers the figures afresh
(:func:`streamops.dashboard.data.gather_jobs`), so nothing is cached between scrapes and the
process's own default metrics (GC, CPU) do not mix with the jobs'. A figure that is unknown
(a stage that never committed, a source that did not answer) is left out rather than given
a made-up value, so an alert on its absence can tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from streamops.dashboard.data import JobFigures, StageFigures, gather_jobs
from streamops.settings import Settings

PREFIX = "streamops_"

StageValue = Callable[[StageFigures], float | int | None]

STAGE_GAUGES: dict[str, tuple[str, StageValue]] = {
    "batch_age_seconds": ("seconds since the stage last committed a batch", lambda s: s.batch_age),
    "input_rows_per_second": ("rows/s the stage's last batch received",
                              lambda s: s.input_rows_per_second),
    "processed_rows_per_second": ("rows/s the stage's last batch processed",
                                  lambda s: s.processed_rows_per_second),
    "late_rows": ("rows dropped as late by the watermark since the driver started",
                  lambda s: s.late_rows),
    "state_rows": ("rows in the stage's state store", lambda s: s.state_rows),
    "failed_batches": ("batches that failed and took the stage's query down since the driver "
                       "started", lambda s: s.failed_batches),
    "idle": ("1 while the stage is up with no new data", lambda s: int(s.idle)),
    "savepoint_age_seconds": ("seconds since the newest savepoint holding the stage",
                              lambda s: s.savepoint_age),
}  # fmt: skip
"""Per stage: metric name (after :data:`PREFIX`) → help text and how to read it."""


class JobsCollector(Collector):
    """Turns the jobs' figures into gauge families at every scrape."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def collect(self) -> Iterator[Metric]:
        return iter(families(gather_jobs(self.settings)))


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, labels=labels)


def families(jobs: list[JobFigures]) -> list[Metric]:
    """The gauge families of ``jobs`` (one sample per job, stage and source)."""
    job_level = {
        "job_live": ("1 while a driver of the job runs", lambda j: int(j.is_live)),
        "job_healthy": ("1 while the job runs and every stage is ready", lambda j: int(j.healthy)),
        "job_failed": ("1 when the job's driver recorded a failure (status FAILED)",
                       lambda j: int(j.failed)),
    }  # fmt: skip
    out: list[Metric] = []
    for name, (doc, read_job) in job_level.items():
        fam = _gauge(name, doc, ["job"])
        for j in jobs:
            fam.add_metric([j.name], read_job(j))
        out.append(fam)
    for name, (doc, read_stage) in STAGE_GAUGES.items():
        fam = _gauge(name, doc, ["job", "stage"])
        for j, s in _stages(jobs):
            value = read_stage(s)
            if value is not None:
                fam.add_metric([j.name, s.name], float(value))
        out.append(fam)
    backlog = _gauge("source_backlog", "what the source's upstream holds beyond the committed "
                     "offset (records, files, entries)",
                     ["job", "stage", "source", "unit"])  # fmt: skip
    degraded = _gauge("source_degraded", "1 while the job's reader reports the source degraded",
                      ["job", "stage", "source"])  # fmt: skip
    for j, s in _stages(jobs):
        for src in s.sources:
            if src.backlog is not None:
                backlog.add_metric([j.name, s.name, src.source, src.unit], src.backlog)
            degraded.add_metric([j.name, s.name, src.source], int(src.state == "degraded"))
    return [*out, backlog, degraded]


def _stages(jobs: list[JobFigures]) -> Iterator[tuple[JobFigures, StageFigures]]:
    return ((j, s) for j in jobs for s in j.stages)


def render(settings: Settings) -> bytes:
    """The Prometheus text exposition of the jobs' figures right now."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JobsCollector(settings))
    return bytes(generate_latest(registry))


__all__ = ["JobsCollector", "families", "render", "STAGE_GAUGES"]
