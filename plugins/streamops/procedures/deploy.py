"""Deploying a job: :func:`start_job`, the one composition of a deploy that the CLI
(``streamops submit``) and the ``deploy_job`` DAG's operator both run.

The intent ``jobs/<job>/deploy.json`` (:class:`DeployIntent`: the spec by value, the owner,
the driver) is saved before the submission and after it, so a retried task of the same DAG
run resumes with the driver it submitted instead of failing on it (or replaces it when it
failed on start). The submission itself (:func:`streamops.world.submit.submit_job`)
refuses a second live instance, clears orphans and submits the hot standby of a
``standby: hot`` spec, whatever the transport (REST, or the operator's ``spark-submit``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from streamops.exceptions import JobError
from streamops.procedures.intent_store import IntentStore, StepRecord
from streamops.procedures.intents import already_started
from streamops.procedures.job_lease import job_operation
from streamops.spec import JobSpec
from streamops.world.operations import Operations, World
from streamops.world.port import operations
from streamops.world.submit import Transport

log = logging.getLogger("streamops.procedures.deploy")

CLI_OWNER = "cli"


@dataclass(kw_only=True)
class DeployIntent(StepRecord):
    FINISHED = ("submitted",)

    job: str
    owner: str
    version: str | None = None
    spec: dict[str, Any] | None = None  # by value: the version submitted
    driver: str | None = None


STORE = IntentStore(DeployIntent, "deploy", error=JobError,
                    describe=lambda i: f"deploy of {i.job} v{i.version}")  # fmt: skip


def start_job(
    world: World, spec: JobSpec, *, owner: str = CLI_OWNER, wait_healthy: float | None = None,
    transport: Transport | None = None,
) -> str:  # fmt: skip
    """Submit ``spec`` (and its hot standby) as ``owner``; the driver id. A retry by the same
    DAG run returns the driver it submitted, or replaces it when it failed on start."""
    ops = operations(world)
    with job_operation(ops, spec.name, f"submit v{spec.version}"):
        return _start(ops, spec, owner, wait_healthy, transport)


def _start(ops: Operations, spec: JobSpec, owner: str, wait_healthy: float | None,
           transport: Transport | None) -> str:  # fmt: skip
    driver = _resumed(ops, spec, owner)
    if driver is not None:
        if wait_healthy:
            ops.registry.wait_healthy(spec.name, timeout=wait_healthy, since_driver=driver)
        return driver
    intent = DeployIntent(job=spec.name, owner=owner, version=spec.version,
                          spec=spec.model_dump(mode="json"))  # fmt: skip
    STORE.save(ops, intent, "submit")
    driver = ops.submitter.submit(spec, transport=transport, wait_healthy=wait_healthy)
    intent.driver = driver
    STORE.done(ops, intent, "submit", "submitted", driver=driver)
    return driver


def _resumed(ops: Operations, spec: JobSpec, owner: str) -> str | None:
    """The driver a previous attempt of ``owner`` submitted and that still stands: a DAG
    run's retry, or a deploy interrupted between its submission and its record."""
    intent = STORE.load(ops, spec.name)
    if intent is None or intent.owner != owner or intent.version != spec.version:
        return None
    if intent.finished and owner == CLI_OWNER:
        return None  # a deploy run again by hand is a new one
    driver = intent.driver or already_started(ops, spec.name, since=intent.at)
    if driver is None:
        return None
    view = ops.registry.view(spec.name)
    if view.status.state == "FAILED" or view.driver_id != driver:
        log.warning("the driver %s this run submitted failed on start (now %s, %s): "
                    "replacing it", driver, view.driver_id, view.state)  # fmt: skip
        if view.is_live:
            ops.registry.cancel(spec.name)
        return None
    log.info("deploy of %s: driver %s submitted by a previous attempt; resuming", spec.name,
             driver)  # fmt: skip
    return driver
