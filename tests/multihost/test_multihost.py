"""streamops beyond one machine, in network namespaces (``support.netns``): the master, three
workers each with its node agent, and the simulators on hosts of their own, the state root
one shared directory; the test process is the operator's machine on the same network.

- security is on by default (``auto``: the master is not on loopback), and every refusal is
  seen from another host: an agent without its token, the REST server without a signed token,
  a worker without the RPC secret; every server is bound to its host's address (never every
  interface, never loopback where the host's address is meant); no secret is in a log, a
  status file, a manifest or a command line;
- fleet-pings deployed across hosts (the oracle), its driver's host torn down (processes
  killed, link cut) → the master relaunches it on another host, which takes the lease once
  its TTL passed; every stage's next batch, then the oracle: nothing lost, nothing twice;
- the health check and the dashboard see every host;
- the longer procedures driven as users drive them, through the DAGs of an Airflow that runs
  on the master's host (its embedded PostgreSQL, api-server, scheduler, dag-processor and
  triggerer there, at that host's address), triggered over its REST API from the operator's
  machine: ``savepoint_and_upgrade`` v1 → v2 with a warm standby, Airflow's PostgreSQL
  killed -9 in the middle and Airflow started again (the hosts of the old and the new driver
  printed), then ``cluster_restart`` switching the jar release r1 → r2 (every
  node stopped and started again through its agent on its own host, the master's host
  keeping Airflow running; the job restored from its savepoint). Airflow is stopped after
  them; the faults above come next, on the job they left (v2, release r2).

One set of hosts and one deployment for the whole module (the oracle at its end covers every
procedure and fault). Skipped, with the reason, where network namespaces cannot be made (not
root, no ``ip``); alone: ``./scripts/test.sh -m multihost tests/multihost``.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.airflow_api import Api
from support.chaos.airflow_fault import JobOn, kill_db_mid_upgrade
from support.faults import driver_jvm_pid
from support.integration import describe_job, pids_with_args, wait_until
from support.multihost import (
    AGENT_PORT,
    WORKER_TIMEOUT_S,
    HostFleet,
    MultiHost,
    next_batches,
)

from streamops.cluster import rest_auth, rpc_auth
from streamops.cluster.client import MasterClient
from streamops.cluster.releases import ReleaseStore
from streamops.stack.airflow_stack import AirflowStack
from streamops_contract.hosts import is_loopback
from streamops_contract.state import lease

pytestmark = [pytest.mark.integration, pytest.mark.multihost]


def _from(hosts: MultiHost, host: str, code: str) -> str:
    """Run Python ``code`` on ``host`` (another machine of the network); its output."""
    done = hosts.lab.run(hosts.hosts[host], [sys.executable, "-c", code], timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_security_is_on_by_default_across_hosts(hosts: MultiHost) -> None:
    settings = hosts.settings
    assert settings.rest_auth == "auto" and rest_auth.enabled(settings)  # not a forced flag
    assert rpc_auth.enabled(settings)
    master = hosts.hosts["master"]
    worker = hosts.hosts["worker-1"]

    # an agent refuses a request from another host without its token, or with another
    agent = f"http://{worker.address}:{AGENT_PORT}/v1/nodes/worker-1/daemon/stop"
    code = (
        "import requests\n"
        f"print(requests.post({agent!r}, timeout=10).status_code)\n"
        f"print(requests.post({agent!r}, headers={{'Authorization': 'Bearer x'}},"
        " timeout=10).status_code)\n"
    )
    assert _from(hosts, "sim", code).split() == ["401", "401"]
    assert worker.address in hosts.alive_workers()  # it still runs

    # the REST server refuses a submission without a signed token
    rest = f"http://{master.address}:{settings.rest_port}/v1/submissions/status/driver-1"
    status = _from(hosts, "sim", f"import requests\nprint(requests.get({rest!r}, "
                                 "timeout=10).status_code)")  # fmt: skip
    assert status in ("401", "403"), status

    # a worker without the RPC secret, on another host, is refused by the master
    stranger = _from(hosts, "sim", _STRANGER.format(master=settings.master_url,
                                                    host=hosts.hosts["sim"].address,
                                                    work=hosts.root / "stranger"))  # fmt: skip
    assert "SASL" in stranger or "authenticat" in stranger.lower(), stranger[-2000:]
    assert len(hosts.alive_workers()) == 3

    _bound_where_the_settings_say(hosts)


def _bound_where_the_settings_say(hosts: MultiHost) -> None:
    """Every server listens on its host's address (or loopback for what is local: a
    driver's Python gateways), never on every interface."""
    for name, host in hosts.hosts.items():
        for address in hosts.lab.listeners(host):
            ip = address.rsplit(":", 1)[0].strip("[]").removeprefix("::ffff:")  # IPv4-mapped
            assert ip == host.address or is_loopback(ip), (
                f"{name}: something listens on {address}")  # fmt: skip


_STRANGER = """
import os, subprocess, time
from streamops.cluster.spark_home import check_spark_install
env = {{k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}}
env["SPARK_LOCAL_IP"] = "{host}"
p = subprocess.Popen([str(check_spark_install().spark_class),
    "org.apache.spark.deploy.worker.Worker", "--host", "{host}", "--cores", "1",
    "--memory", "512m", "--work-dir", "{work}", "{master}"], env=env,
    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True)
out, deadline = [], time.monotonic() + 90
for line in p.stdout:
    out.append(line)
    if "Failed to connect to master" in line or time.monotonic() > deadline:
        break
os.killpg(p.pid, 9)
p.wait()
print("".join(out[-60:]))
"""


def test_deploy_across_hosts_seen_by_health_and_dashboard(
    hosts: MultiHost, fleet: HostFleet
) -> None:
    view = hosts.registry.view(fleet.job)
    assert view.driver_id is not None
    node = hosts.node_of_driver(view.driver_id)
    held = lease.read_lease(hosts.settings.layout, fleet.job)
    assert held is not None and held.host == hosts.hosts[node].address  # its node's address
    from streamops.health.checks import Thresholds, check_cluster, check_jobs, gather
    from streamops.health.report import Level

    obs = gather(hosts.settings, Thresholds(expected_workers=3), groups=["cluster", "jobs"])
    results = [*check_cluster(obs), *check_jobs(obs)]
    assert all(r.level == Level.OK for r in results), [r.message for r in results]
    assert obs.workers is not None
    assert sorted(str(w.name) for w in obs.workers.workers if w.state == "ALIVE") == [
        "worker-1", "worker-2", "worker-3"], obs.workers  # fmt: skip
    _dashboard_sees(hosts, fleet.job)
    _bound_where_the_settings_say(hosts)  # the driver's and executors' servers too


@pytest.fixture(scope="module")
def airflow(hosts: MultiHost) -> Iterator[AirflowStack]:
    started = time.monotonic()
    stack = hosts.start_airflow()
    try:
        print(f"FIGURE Airflow up on the master's host ({stack.options.url}) in "
              f"{time.monotonic() - started:.1f}s")
        yield stack
    finally:  # a no-op when the last procedure stopped it
        stack.stop()
        assert stack.database.postgres.pid() is None, "Airflow's PostgreSQL runs on"


def _run(stack: AirflowStack, dag: str, conf: dict[str, object]) -> tuple[dict[str, str], float]:
    api, started = Api(stack), time.monotonic()
    run_id = api.trigger(dag, conf)
    state = api.wait_finished(dag, run_id, timeout=900)
    tasks = api.task_states(dag, run_id)
    assert state == "success", f"{dag} run {run_id} ended {state}: {tasks}"
    return tasks, time.monotonic() - started


@pytest.mark.slow
def test_upgrade_with_a_warm_standby_across_hosts_airflows_database_killed_midway(
    hosts: MultiHost, fleet: HostFleet, airflow: AirflowStack
) -> None:
    """The warm upgrade through Airflow, its PostgreSQL killed -9 in the middle
    (``support/chaos/airflow_fault.py``): a CLI restart meanwhile refused naming the run,
    health's jobs checks never OK while the job has no driver, ``streamops airflow start`` on
    the master's host, the run finishes and the standby it started is the new driver."""
    old = hosts.registry.view(fleet.job)
    old_host = hosts.node_of_driver(str(old.driver_id))
    seed = int(os.environ.get("STREAMOPS_CHAOS_SEED", "1"))
    started = time.monotonic()
    done = kill_db_mid_upgrade(JobOn(hosts.settings, hosts.registry, fleet.job), airflow,
                               fleet.spec_file("fleet-pings-v2.yaml"), random.Random(seed),
                               start_again=hosts.start_airflow, standby="warm")  # fmt: skip
    took = time.monotonic() - started
    assert done.warm, done.note
    view = hosts.registry.view(fleet.job)
    assert view.version == "2" and view.healthy, describe_job(view)
    new_host = hosts.node_of_driver(str(view.driver_id))
    print(f"FIGURE savepoint_and_upgrade v1 → v2 (warm standby) across hosts through Airflow "
          f"on the master's host: {took:.1f}s; old driver on {old_host}, new on {new_host}; "
          f"{done.note} (seed {seed})")


@pytest.mark.slow
def test_full_restart_with_a_jar_swap_across_hosts(hosts: MultiHost, fleet: HostFleet,
                                                    airflow: AirflowStack) -> None:  # fmt: skip
    tasks, took = _run(airflow, "cluster_restart", {"release": "r2", "path": "full"})
    assert ReleaseStore(hosts.settings).active() == "r2"
    assert len(hosts.alive_workers()) == 3
    addresses = {h.address for n, h in hosts.hosts.items() if n.startswith("worker-")}
    assert set(hosts.alive_workers()) == addresses  # each on its own host again
    wait_until(lambda: hosts.registry.view(fleet.job).healthy, 300, "the job restored",
               describe=lambda: describe_job(hosts.registry.view(fleet.job)))  # fmt: skip
    assert MasterClient(hosts.settings).state().get("status") == "ALIVE"
    print(f"FIGURE cluster_restart r1 → r2 across hosts through Airflow on the master's host: "
          f"{took:.1f}s ({len(tasks)} tasks)")
    airflow.stop()  # the faults that follow need no Airflow: its CPU goes back to the job


def test_partition_fences_the_cut_off_driver(hosts: MultiHost, fleet: HostFleet) -> None:
    """The driver's host cut off by the network, its processes alive: the master declares
    the worker dead and relaunches the driver elsewhere; the relaunch fences the old one by
    the lease (the master dropped it), although it still reaches the shared state root. The
    link back, the old driver is gone; only the new one writes."""
    layout = hosts.settings.layout
    view = hosts.registry.view(fleet.job)
    stages, old = set(view.stages), str(view.driver_id)
    node = hosts.node_of_driver(old)
    host = hosts.hosts[node]
    before = lease.read_lease(layout, fleet.job)
    assert before is not None
    old_pid = driver_jvm_pid(old)
    cut_at = time.time()
    hosts.lab.cut(host)

    def dead() -> bool:
        return any(w.host == host.address and w.state == "DEAD"
                   for w in MasterClient(hosts.settings).workers())  # fmt: skip

    wait_until(dead, 120, f"the master to declare {node} DEAD")
    detected = time.time() - cut_at

    def fenced() -> lease.Lease | None:
        now = lease.read_lease(layout, fleet.job)
        return now if now is not None and now.epoch > before.epoch else None

    taken = wait_until(fenced, 240, "the relaunched driver to take the lease",
                       describe=lambda: describe_job(hosts.registry.view(fleet.job)))  # fmt: skip
    assert isinstance(taken, lease.Lease) and taken.holder != old
    assert taken.host != host.address
    fenced_s = time.time() - cut_at
    gap = wait_until(lambda: next_batches(hosts.settings, fleet.job, cut_at, stages), 240,
                     "every stage's next batch after the partition",
                     describe=lambda: describe_job(hosts.registry.view(fleet.job)))  # fmt: skip
    alive_while_cut = _alive(old_pid)
    hosts.lab.restore(host)
    wait_until(lambda: not _alive(old_pid), 120, f"the old driver {old} to stand down")
    back = lambda: host.address in hosts.alive_workers()  # noqa: E731
    wait_until(back, 120, f"{node} to register again")
    now = lease.read_lease(layout, fleet.job)
    assert now is not None and now.epoch == taken.epoch and now.holder == taken.holder
    running = [d for d in MasterClient(hosts.settings).active_drivers()
               if d.state == "RUNNING"]  # fmt: skip
    assert len(running) == 1, running  # one driver of the job: never two writers
    print(f"FIGURE partition ({node} cut off, spark.worker.timeout {WORKER_TIMEOUT_S}s): "
          f"worker declared DEAD {detected:.1f}s after the cut, old driver fenced by the "
          f"lease {fenced_s:.1f}s after, every stage's next batch {gap:.1f}s after; the old "
          f"driver still alive while cut off: {alive_while_cut}")


def test_scale_by_agent_onto_a_new_host(hosts: MultiHost, fleet: HostFleet) -> None:
    """A new host joins: its agent (on its own address, the cluster's token) starts its
    worker, which registers with the master at that address; health expects and sees it."""
    started = time.monotonic()
    host = hosts.add_worker_host("worker-4")
    assert host.address in hosts.alive_workers()
    print(f"FIGURE scale by agent: worker-4 on a new host ALIVE {time.monotonic() - started:.1f}s "
          "after its host was made")
    from streamops.health.checks import Thresholds, check_cluster, gather
    from streamops.health.report import Level

    obs = gather(hosts.settings, Thresholds(expected_workers=4), groups=["cluster"])
    assert all(r.level == Level.OK for r in check_cluster(obs)), check_cluster(obs)
    assert hosts.registry.view(fleet.job).driver_state == "RUNNING"


def test_failover_when_a_host_is_torn_down(hosts: MultiHost, fleet: HostFleet) -> None:
    view = hosts.registry.view(fleet.job)
    stages, driver = set(view.stages), view.driver_id
    assert driver is not None
    node = hosts.node_of_driver(driver)
    held = lease.read_lease(hosts.settings.layout, fleet.job)
    assert held is not None
    address = hosts.hosts[node].address
    cut_at = hosts.lab.tear_down(hosts.hosts[node])  # its processes killed, its link gone

    def dead() -> bool:
        return any(w.host == address and w.state == "DEAD"
                   for w in MasterClient(hosts.settings).workers())  # fmt: skip

    wait_until(dead, 120, f"the master to declare {node} DEAD", interval=0.5)
    detected = time.time() - cut_at

    def relaunched() -> bool:
        v = hosts.registry.view(fleet.job)
        return v.driver_id not in (None, driver) and v.driver_state == "RUNNING"

    def taken_over() -> bool:
        now = lease.read_lease(hosts.settings.layout, fleet.job)
        return now is not None and now.epoch > held.epoch

    wait_until(taken_over, 180, "the relaunched driver to take the lease", interval=0.5,
               describe=lambda: describe_job(hosts.registry.view(fleet.job)))  # fmt: skip
    leased = time.time() - cut_at
    wait_until(relaunched, 180, "the driver relaunched on another host",
               describe=lambda: describe_job(hosts.registry.view(fleet.job)))  # fmt: skip
    gap = wait_until(lambda: next_batches(hosts.settings, fleet.job, cut_at, stages), 240,
                     "every stage's next batch after the host was torn down",
                     describe=lambda: describe_job(hosts.registry.view(fleet.job)))  # fmt: skip
    new_node = hosts.node_of_driver(str(hosts.registry.view(fleet.job).driver_id))
    taken = lease.read_lease(hosts.settings.layout, fleet.job)
    assert new_node != node and taken is not None and taken.epoch > held.epoch
    assert taken.host == hosts.hosts[new_node].address
    print(f"FIGURE failover across hosts ({node} torn down, spark.worker.timeout "
          f"{WORKER_TIMEOUT_S}s): worker declared DEAD {detected:.1f}s after, lease taken by "
          f"the relaunched driver {leased:.1f}s after, every stage's next batch {gap:.1f}s "
          f"after; driver now on {new_node}")
    fleet.finish_and_check()  # the oracle: 0 lost, 0 duplicated, over every procedure and fault
    _no_secret_anywhere(hosts)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _dashboard_sees(hosts: MultiHost, job: str) -> None:
    """The dashboard's JSON API (served in process here) lists the job and every worker."""
    from fastapi.testclient import TestClient

    from streamops.dashboard.app import create_app

    with TestClient(create_app(hosts.settings)) as client:
        text = " ".join(client.get(p).text for p in ("/api/jobs", "/api/health"))
    assert job in text, text[:2000]


def _no_secret_anywhere(hosts: MultiHost) -> None:
    """No key or token in a log, status, manifest or any other file of the state root but
    its own file and the daemons' private properties files; none on a command line."""
    layout = hosts.settings.layout
    secrets = {
        "rest key": rest_auth.secret_file(hosts.settings).read_text().strip(),
        "rpc secret": rpc_auth.secret_file(hosts.settings).read_text().strip(),
        "agent token": layout.agent_token_file.read_text().strip(),
    }
    own = {rest_auth.secret_file(hosts.settings), rpc_auth.secret_file(hosts.settings),
           layout.agent_token_file}  # fmt: skip
    for path in hosts.root.rglob("*"):
        if not path.is_file() or path in own or path.name.endswith("-auth.properties"):
            continue
        if layout.recovery_dir in path.parents:  # private (0700); REST submissions carry none
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        for what, value in secrets.items():
            assert value.encode() not in data, f"the {what} is in {path}"
    for what, value in secrets.items():
        on_line = pids_with_args(value)
        assert not on_line, f"the {what} is on the command line of pid(s) {on_line}"
