"""Submitting a job: one supervised cluster-mode driver per job name, and its hot standby.

What a submission is, and asking the master for it, is the cluster's submission client
(:mod:`streamops.cluster.submission`); this adds what the job registry knows: no second
live instance, no orphan holding cores, the hot standby of a ``standby: hot`` spec, and the
wait until the job is healthy. The deploy procedure (an intent, a retry that resumes) is
:mod:`streamops.procedures.deploy`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from streamops.cluster.client import MasterClient
from streamops.cluster.spark_home import check_spark_install
from streamops.cluster.submission import (
    Submission,
    build_submission,
    record_submission,
    submit_hot_standby,
)
from streamops.exceptions import JobAlreadyRunning
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.spec import JobSpec

log = logging.getLogger("streamops.world.submit")

Transport = Callable[[Submission], str]
"""How a submission reaches the master (the driver id): REST by default, ``spark-submit``
from the deploy DAG's operator."""


def submit_job(
    spec: JobSpec,
    settings: Settings,
    *,
    client: MasterClient | None = None,
    wait_healthy: float | None = None,
    extra_args: tuple[str, ...] = (),
    standby: str | None = None,
    replacing: str | None = None,
    transport: Transport | None = None,
) -> str:
    """Submit ``spec`` as a supervised driver; refuse if a live instance of its name exists.
    A ``standby: hot`` spec's hot standby is submitted beside it.

    ``standby`` (its token) submits a warm standby beside the live instance
    (``streamops.world.standby``).
    ``replacing``: the live driver this one succeeds, which has stopped its stages and given
    up the job's lease (a savepoint with cancel) and may still be shutting down.

    Returns the driver (submission) id. With ``wait_healthy`` (seconds) it returns only when
    every stage has committed a batch, and raises if the job fails or the time runs out.
    """
    client = client or MasterClient(settings)
    registry = JobRegistry(settings, client)
    if not standby:
        ensure_not_running(registry, spec.name, replacing=replacing)
        clear_orphans(registry, spec.name, keep={replacing} if replacing else set())
    submission = build_submission(spec, settings, extra_args=extra_args)
    log.info("submitting job %s v%s to %s", spec.name, spec.version, settings.master_url)
    if transport is None:
        install = check_spark_install()
        driver_id = client.create_submission(submission.rest_body(install.version))
    else:
        driver_id = transport(submission)
    record_submission(settings, spec, driver_id, standby=bool(standby), token=standby)
    if spec.standby == "hot" and not standby and "--hot-standby" not in extra_args:
        submit_hot_standby(spec, settings, client)
    if wait_healthy:
        registry.wait_healthy(spec.name, timeout=wait_healthy, since_driver=driver_id)
    return driver_id


def ensure_not_running(registry: JobRegistry, job: str, *, replacing: str | None = None) -> None:
    """Refuse a second live instance of ``job`` (one live driver per job name), but for
    ``replacing``, a driver that has stopped and given up the job's lease."""
    live = registry.view(job)
    if live.is_live and not (replacing and live.driver_id == replacing):
        raise JobAlreadyRunning(
            f"job {job} is already running (driver {live.driver_id or '?'}, state "
            f"{live.state}); cancel it first with `streamops cancel {job}` or upgrade it"
        )


def clear_orphans(registry: JobRegistry, job: str, *, keep: set[str] | None = None) -> list[str]:
    """Kill the drivers of ``job`` the master still lists that are not its running driver or
    that driver's standby (e.g. relaunches waiting for a primary that died), and say so:
    they would hold cores the new driver needs, and could take the job over later."""
    cleared = registry.clear_orphans(job, keep=keep or set())
    if cleared:
        log.warning("job %s: killed %d orphan driver(s) before submitting: %s", job,
                    len(cleared), ", ".join(cleared))  # fmt: skip
    return cleared
