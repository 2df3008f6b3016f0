"""A fault of the orchestrator: Airflow's embedded PostgreSQL killed in the middle of an
upgrade DAG run (:func:`kill_db_mid_upgrade`).

``savepoint_and_upgrade`` (v1 → v2) is triggered in a real Airflow; its metadata database is
killed -9 either while the savepoint-with-cancel task runs or once the old version has
stopped, and stays down 10-20 s. A ``streamops restart`` typed meanwhile must be refused at
once, naming the DAG run that holds the job. Meanwhile health's ``jobs`` checks must fail
whenever the job has no live driver (the unfinished upgrade intent says so, and what resumes
it). Then the operator's way back: ``streamops airflow start`` (the database and the four
processes started again, each a new process), the run's failed tasks cleared if it failed
(what health's message says to do), and the run finishes the upgrade from its intent; with a
warm standby, the standby it started is the driver that took over.

The test command runs it in the multi-host module, on the warm upgrade through the Airflow of
the master's host (``tests/multihost/test_multihost.py``). The chaos campaign's
``airflow-db`` step (:func:`airflow_db_killed`: the long campaign's, or
``STREAMOPS_CHAOS_ONLY=airflow-db``) runs it in the world's Airflow beside the two jobs, then
upgrades the job back to v1 with the CLI's procedure so that the next step finds it as the
campaign started it (unless it is the campaign's last step).
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.airflow_api import Api
from support.chaos.actions import Inflicted
from support.chaos.race_faults import OnJob, ended, restart_hand
from support.chaos.world import ChaosWorld
from support.integration import describe_job, wait_until

from streamops.exceptions import StreamopsError
from streamops.health.checks import run_checks
from streamops.health.report import Level
from streamops.job_reads import read_submissions, view_of
from streamops.procedures.upgrade import upgrade
from streamops.services import running_service
from streamops.stack.airflow_stack import COMPONENTS, AirflowStack, service_name

DAG = "savepoint_and_upgrade"


MOMENTS = {"savepoint": "request_savepoint", "stopped": "savepoint_answered"}
"""Where in the run the database is killed: the step of its upgrade intent just done (the
savepoint with cancel asked of the old version; the old version stopped by it)."""


def _reached(world: OnJob, run_id: str, step: str) -> str:
    """``"now"`` once this run's upgrade intent has done ``step`` and is not finished,
    ``"over"`` if it finished first, ``""`` before. Read from the state root every 0.1 s: a
    warm upgrade goes from the savepoint to its end in a few seconds, which polling Airflow's
    API every 2 s missed (the cause of a step that waited 600 s for a task that had run)."""
    try:
        intent = json.loads((world.settings.layout.job_dir(world.job) / "upgrade.json")
                            .read_text(encoding="utf-8"))  # fmt: skip
    except (OSError, ValueError):
        return ""
    if intent.get("owner") != f"airflow:{DAG}/{run_id}":
        return ""
    if intent.get("phase") in ("done", "rolled-back", "failed"):
        return "over"
    return "now" if step in intent.get("done", []) else ""


def _live(world: OnJob) -> bool:
    try:
        return world.registry.view(world.job).is_live
    except StreamopsError:
        return view_of(world.settings, world.job, None).is_live


def _watch_jobs(world: OnJob, seconds: float) -> tuple[int, list[str]]:
    """Sample the ``jobs`` checks for ``seconds``: how many samples saw the job down, and
    those that said OK then."""
    down, wrong = 0, []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        live = _live(world)
        verdict = run_checks(world.settings, groups=["jobs"])
        if not live and not _live(world):
            down += 1
            if verdict.level is Level.OK:
                wrong.append(verdict.summary()[:300])
        time.sleep(2)
    return down, wrong


@dataclass
class JobOn:
    """A job on a cluster that is not a campaign's world (the multi-host module's)."""

    settings: Any
    registry: Any
    job: str


@dataclass
class DbKilled:
    """What :func:`kill_db_mid_upgrade` did: when the database was killed, whether the
    upgrade went by a warm standby, and its words."""

    at: float
    warm: bool
    note: str


def kill_db_mid_upgrade(world: OnJob, stack: AirflowStack, spec: Path, rng: random.Random,
                        start_again: Callable[[], AirflowStack],
                        standby: str = "auto") -> DbKilled:  # fmt: skip
    """Trigger ``savepoint_and_upgrade`` of ``world.job`` to ``spec`` in ``stack`` (its
    ``standby`` param: ``auto`` is warm when a worker has a free core), kill its PostgreSQL
    at a moment ``rng`` draws, check a CLI restart meanwhile and health's ``jobs`` checks,
    start Airflow again with ``start_again`` (``streamops airflow start``) and see the run
    finish."""
    api = Api(stack)
    first = str(world.registry.view(world.job).driver_id)
    run_id = api.trigger(DAG, {"job": world.job, "spec": str(spec), "standby": standby})
    moment = rng.choice(tuple(MOMENTS))
    where = wait_until(lambda: _reached(world, run_id, MOMENTS[moment]), 600,
                       f"{run_id}'s upgrade to do {MOMENTS[moment]}", interval=0.1)
    assert where == "now", f"{run_id} finished before its {MOMENTS[moment]} was seen"
    pids = {c: running_service(stack.settings, service_name(c)) for c in COMPONENTS}
    postmaster = stack.database.postgres.pid()
    assert postmaster is not None, "Airflow's PostgreSQL does not run"
    at = time.time()
    os.kill(postmaster, signal.SIGKILL)
    down_for = rng.uniform(10, 20)
    # a second hand meanwhile: the run holds the job though its Airflow cannot answer
    hand = ended([restart_hand(world)])[0]
    problem = hand.refused_by(f"DAG run {DAG}/{run_id}")
    assert not problem, f"a CLI restart during the upgrade DAG run: {problem}"
    down, wrong = _watch_jobs(world, max(0.0, down_for - hand.took))
    assert not wrong, f"health's jobs checks said OK while the job was down: {wrong}"
    started = time.monotonic()
    stack = start_again()  # `streamops airflow start`
    back = time.monotonic() - started
    for component, before in pids.items():  # a scheduler whose database vanished can hang
        after = running_service(stack.settings, service_name(component))  # its heartbeat fresh
        assert before and after and after.pid != before.pid, f"{component} not started again"
    api = Api(stack)
    state, cleared = api.wait_finished(DAG, run_id), []
    for _ in range(2):
        if state == "success":
            break
        cleared += api.clear_failed(DAG, run_id)
        state = api.wait_finished(DAG, run_id)
    assert state == "success", (f"{DAG} run {run_id} ended {state} after its tasks "
                                f"{cleared} were cleared: {api.task_states(DAG, run_id)}")
    view = world.registry.view(world.job)
    assert view.is_live and str(view.driver_id) != first, describe_job(view)
    warm = api.task_states(DAG, run_id).get("start_standby") == "success"
    if warm:  # the standby the DAG started is the driver that took over
        standbys = [s for s in read_submissions(world.settings.layout.submissions_file(world.job))
                    if s.get("event") == "submitted" and s.get("standby")]  # fmt: skip
        assert standbys and standbys[-1]["driver_id"] == view.driver_id, (standbys, view)
    how = f"its tasks {', '.join(sorted(set(cleared)))} cleared" if cleared else "no clear needed"
    note = (f"Airflow's PostgreSQL killed ({moment}), down {down_for:.0f} s (a CLI restart "
            f"refused in {hand.took:.1f} s naming the run; {down} samples with the job down, "
            f"none OK), Airflow back {back:.0f} s later; the upgrade run finished "
            f"({'warm' if warm else 'cold'}, {how})")  # fmt: skip
    return DbKilled(at, warm, note)


def airflow_db_killed(world: ChaosWorld, rng: random.Random) -> Inflicted:
    stack = world.airflow()
    done = kill_db_mid_upgrade(world, stack, world.spec_file("fleet-pings-v2.yaml"), rng,
                               start_again=lambda: _started(stack))  # fmt: skip
    then = "left on v2 (the campaign's last step)"
    if not world.last_step:  # the next step finds the job as the campaign started it
        upgrade(world.settings, world.job, world.spec(), allow_state_drop=True)
        then = "back to v1 by the CLI"
    return Inflicted(done.at, f"{done.note}; {then}")


def _started(stack: AirflowStack) -> AirflowStack:
    stack.start()
    return stack
