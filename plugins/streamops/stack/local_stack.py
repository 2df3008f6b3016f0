"""The embedded local stack behind ``streamops up`` / ``streamops down``.

``up``: the local Spark cluster, fleetsim-alpha, fleetsim-beta and the dashboard as background
services (:mod:`streamops.services`; journals under ``<state>/journals``), the embedded
Airflow (:mod:`streamops.stack.airflow_stack`), then the fleet-pings job submitted and waited for
(not while a procedure in progress stopped it: an upgrade, a restart, a cluster restart
resume it themselves), then Airflow waited for; what it says of the jobs comes from a health
observation (:func:`job_lines`).
``down``: refused while an operation holds a job (``--wait`` queues); else stop Airflow,
cancel live jobs (each holding its operation lease), stop the simulators and the dashboard,
stop the cluster. Each step logs one line.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from streamops import describe_ahead
from streamops.cluster.profile import ClusterProfile
from streamops.exceptions import JobBusy, ProcessError
from streamops.health.checks import HealthInputs, Thresholds, check_jobs, gather
from streamops.jobs import JobRegistry
from streamops.procedures.deploy import start_job
from streamops.procedures.job_lease import holder_of, job_operation
from streamops.services import start_service, stop_services
from streamops.settings import Settings
from streamops.sim.background import command as simulator_command
from streamops.sim.background import remember as remember_simulator
from streamops.sim.background import service_name
from streamops.spec import load_spec
from streamops.stack.airflow_stack import AirflowStack
from streamops.stack.local_cluster import LocalCluster

log = logging.getLogger("streamops.stack.local_stack")


@dataclass(frozen=True)
class StackOptions:
    spec: Path
    beta_port: int = 8000
    rate: float = 20.0
    vehicles: int = 50
    wait: float = 300.0
    airflow: bool = True


def beta_url(settings: Settings, opts: StackOptions) -> str:
    """Where the stack's fleetsim-beta serves: this node's address (``settings.local_host``,
    loopback by default), which the drivers on this machine's workers dial."""
    return f"http://{settings.local_host}:{opts.beta_port}/pings"


def simulator_options(settings: Settings, opts: StackOptions) -> dict[str, list[str]]:
    """The flags of fleetsim-beta and fleetsim-alpha in the stack, with journals."""
    journals = settings.layout.journals_dir
    common = ["--rate", str(opts.rate), "--vehicles", str(opts.vehicles)]
    return {
        "beta": ["--host", settings.local_host, "--port", str(opts.beta_port),
                 "--journal", str(journals / "beta.jsonl"), *common],
        "alpha": ["--dir", str(settings.layout.alpha_dir),
                  "--journal", str(journals / "alpha.jsonl"), *common],
    }  # fmt: skip


def simulator_commands(settings: Settings, opts: StackOptions) -> dict[str, list[str]]:
    """fleetsim-beta and fleetsim-alpha as ``streamops sim start`` runs them, with journals."""
    return {
        service_name(sim): simulator_command(settings, sim, options)
        for sim, options in simulator_options(settings, opts).items()
    }


def dashboard_command(settings: Settings) -> list[str]:
    """The dashboard as a service of the stack: ``streamops dashboard`` where the settings
    say (``dashboard_host``, loopback by default)."""
    return [sys.executable, "-m", "streamops", "--state-root", str(settings.state_root),
            "dashboard", "--port", str(settings.dashboard_port)]  # fmt: skip


def _wait_beta(url: str, timeout: float = 30.0) -> None:
    import time

    health = url.removesuffix("/pings") + "/health"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            requests.get(health, timeout=2).raise_for_status()
            return
        except requests.RequestException:
            time.sleep(0.5)
    raise ProcessError(f"fleetsim-beta did not answer at {health} within {timeout:.0f}s")


def up(settings: Settings, opts: StackOptions) -> HealthInputs:
    """Start everything and submit the job, unless a procedure in progress stopped it (it
    resumes the job itself; the observation returned says so). The jobs as health sees them
    at the end."""
    spec = load_spec(opts.spec)
    LocalCluster(settings, ClusterProfile.for_config_dir(settings.config_dir)).start()
    settings.layout.journals_dir.mkdir(parents=True, exist_ok=True)
    for sim, options in simulator_options(settings, opts).items():
        start_service(settings, service_name(sim), simulator_command(settings, sim, options))
        remember_simulator(settings, sim, options)  # `sim start SIM` starts it so again
    start_service(settings, "dashboard", dashboard_command(settings), env=settings.to_env())
    airflow = AirflowStack(settings) if opts.airflow else None
    if airflow is not None:
        airflow.launch()  # starts while the job is submitted; waited for at the end
    _wait_beta(beta_url(settings, opts))
    spec = spec.model_copy(update={"args": {**spec.args, "beta_url": beta_url(settings, opts)}})
    busy = [p for p in gather(settings, Thresholds(), groups=["jobs"]).procedures
            if p.stopped and p.job in (spec.name, None)]  # fmt: skip
    if busy:  # it stopped the job to start it again itself: a submission now would race it
        for p in busy:
            log.warning("job %s is not submitted: the %s has not finished (owner %s, phase "
                        "%s); resume: %s", spec.name, p.label, p.owner, p.phase, p.resume)
    elif JobRegistry(settings).view(spec.name).is_live:
        log.info("job %s already running; not submitting again", spec.name)
    else:
        start_job(settings, spec, wait_healthy=opts.wait)
    # the versions the running job may be upgraded to, described in the background (nice 19)
    # so the first plan-upgrade answers from the cache
    start_service(settings, describe_ahead.SERVICE, describe_ahead.command(settings),
                  env=settings.to_env())  # fmt: skip
    if airflow is not None:
        airflow.wait_ready()
    return gather(settings, Thresholds(), groups=["jobs"])


def job_lines(obs: HealthInputs) -> list[tuple[bool, str]]:
    """What ``up`` says of each job, from a health observation: ``(running, line)``. A job
    runs when its driver is live and healthy; any other is stopped, with the reason the
    health check gives, and every procedure in progress with what resumes it."""
    results = {r.name: r for r in check_jobs(obs)}
    out: list[tuple[bool, str]] = []
    for name in obs.jobs:
        view = obs.views.get(name)
        if view is not None and view.healthy:
            out.append((True, f"job {name} is running (v{view.version}, driver "
                              f"{view.driver_id})"))  # fmt: skip
        else:
            out.append((False, results[name].message))
    out += [(False, f"job {name} is stopped: {why}") for name, why in sorted(obs.dormant.items())]
    out += [(False, f"the {p.label} has not finished (owner {p.owner}, phase {p.phase}); "
                    f"resume: {p.resume}") for p in obs.procedures if not p.closed]  # fmt: skip
    return out


def busy_jobs(settings: Settings, wait: float = 0.0, poll: float = 1.0) -> list[str]:
    """The jobs another live operation holds (each as the holder's description), after
    waiting up to ``wait`` seconds for them to end."""
    deadline = time.monotonic() + wait
    while True:
        held = [(job, holder_of(settings, job)) for job in settings.layout.known_jobs()]
        busy = [f"{job}: {lease.describe()}" for job, lease in held if lease is not None]
        if not busy or time.monotonic() >= deadline:
            return busy
        time.sleep(poll)


def down(settings: Settings, wait: float = 0.0, force: bool = False) -> None:
    """Stop the stack. Refused, with nothing stopped, while an operation holds a job (an
    upgrade cut by ``down`` would roll back onto a cluster going away); ``wait`` queues,
    ``force`` stops it anyway (the operations' intents stay, to be resumed after ``up``)."""
    busy = busy_jobs(settings, wait)
    if busy and not force:
        raise JobBusy(
            f"the stack was not stopped: {len(busy)} job(s) busy with an operation: "
            f"{'; '.join(busy)}. Nothing was stopped; wait for them to end, queue with "
            "`streamops down --wait SECONDS`, or stop anyway with `--force`")  # fmt: skip
    for line in busy:
        log.warning("stopping the stack under a running operation (--force): %s", line)
    AirflowStack(settings).stop()  # first, so no scheduled run starts while jobs are cancelled
    registry = JobRegistry(settings)
    cluster = LocalCluster(settings, ClusterProfile.for_config_dir(settings.config_dir))
    if cluster.status().master_alive:
        for view in registry.list():
            if view.is_live and view.driver_id and force:
                registry.cancel(view.name)
            elif view.is_live and view.driver_id:
                with job_operation(settings, view.name, "down: cancel"):
                    registry.cancel(view.name)
    stop_services(settings)
    cluster.stop()
