"""Faults from outside, on one fleet-pings job of the session's cluster, the oracle after them.

fleetsim-beta runs as a real process on its own data directory (a durable log). (A frozen
beta, a node killed, beta restarted on its log or without it are steps of the chaos
campaign, judged there on two jobs with health and the oracle after each.)

1. the master is killed: the job commits on, health says it runs on without the master, and
   the master, started again, knows the job's driver again (its FILESYSTEM recovery; when the
   worker's re-registration wins the race, Spark relaunches the driver instead): one driver,
   the master's, holds the lease and every stage commits; when the recovery left the
   application without executors, the driver fails after ``NO_EXECUTOR_S`` and its relaunch
   commits before the next fault;
2. the job's PostgreSQL store unreachable for 20 s (a proxy between the job and the server
   breaks every connection and refuses new ones): the batches wait and retry, the job stays up,
   and every stage commits again once the store is back;
3. beta stopped and started again on its data directory: it keeps its stream and sequence and
   the job reads on where it left off; the sinks then equal the batch recomputation over
   every record both simulators emitted (0 lost, 0 duplicated, 0 different: nothing the
   store outage interrupted was lost or applied twice);
4. replaced by a beta on a fresh log (a new stream identity): the stage fails loudly naming
   the positions, the driver is not relaunched in a loop, and health fails naming it.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.beta_process import BetaProcess
from support.faults import next_batches
from support.integration import (
    ClusterHandle,
    describe_job,
    driver_log_tail,
    wait_quietly,
    wait_until,
)
from support.oracle import (
    compare_quarantine,
    compare_vehicles,
    compare_windows,
    latest_per_vin,
    tumbling_windows,
)
from support.postgres import cuttable_link, fails_the_test, throwaway_database
from support.tcp_proxy import TcpProxy

from spark_jobs.runtime.savepointing import committed_offsets
from spark_jobs.runtime.supervision import NO_EXECUTOR_S
from streamops.agent.processes import kill_agent
from streamops.cluster.daemons import MASTER_NAME
from streamops.health.checks import Level, Thresholds, run_checks
from streamops.procedures.restart import restart_job
from streamops.sim import AlphaSimulator, read_journal
from streamops.sim.journal import valid_pings
from streamops.spec import load_spec
from streamops.state.job_status import JobStatus
from streamops.world.submit import submit_job
from streamops_contract.sinks import store
from streamops_contract.state.checkpoint_cut import last_batch
from streamops_contract.state.lease import read_lease

pytestmark = pytest.mark.integration
SPEC = Path(__file__).resolve().parents[2] / "config" / "jobs" / "fleet-pings.yaml"
JOB = "fleet-faults"
RATE = 30.0
STORE_DOWN_S = 20
STAGES = {"vehicles", "vehicle-stats-1m"}


def beta_state(status: JobStatus) -> dict[str, Any]:
    """fleetsim-beta's entry in ``sources_state`` ({} when its readers reported nothing)."""
    return status.sources_state.get("fleetsim-beta") or {}


def committed(cluster: ClusterHandle) -> dict[str, dict[str, object]]:
    """Per stage, the end offsets of its last committed batch (from the checkpoints)."""
    out: dict[str, dict[str, object]] = {}
    for stage in ("vehicles", "vehicle-stats-1m"):
        checkpoint = cluster.settings.layout.checkpoint(JOB, stage)
        merged: dict[str, object] = {}
        for offset in committed_offsets(checkpoint, last_batch(checkpoint / "commits")):
            merged.update(offset)
        out[stage] = merged
    return out


@pytest.fixture
def store_proxy(pg_admin_url: str) -> Iterator[tuple[str, TcpProxy]]:
    """A fresh PostgreSQL database on the session's server, reached through a proxy the test
    can cut: its URL through the proxy, and the proxy."""
    with (
        fails_the_test(),
        throwaway_database("streamops_faults", pg_admin_url) as url,
        cuttable_link(url) as (through_url, proxy),
    ):
        try:
            yield through_url, proxy
        finally:
            engine = store._engines.pop(through_url, None)
            if engine is not None:
                engine.dispose()


def test_faults_from_outside(
    spark_cluster: ClusterHandle,
    tmp_path: Path,
    free_port: Callable[[], int],
    store_proxy: tuple[str, TcpProxy],
) -> None:
    store_url, proxy = store_proxy
    cluster, registry = spark_cluster, spark_cluster.registry
    alpha_dir = tmp_path / "alpha"
    alpha = AlphaSimulator(
        alpha_dir, seed=21, vehicles=30, rate=RATE, pings_per_file=40, malformed_every=101,
        max_pings=int(RATE * 80), journal=tmp_path / "alpha.jsonl",  # through the store outage
    )  # fmt: skip
    beta = BetaProcess(free_port(), tmp_path / "beta-log", tmp_path / "beta.jsonl",
                       tmp_path / "beta.log", rate=RATE)  # fmt: skip
    base = load_spec(SPEC)
    spec = base.model_copy(update={
        "name": JOB, "trigger_interval": "1 second",
        "args": {**base.args, "alpha_dir": str(alpha_dir), "beta_url": beta.url,
                 "store_url": store_url},
    })  # fmt: skip
    def describe() -> str:
        view = registry.view(JOB)
        return f"{describe_job(view)}; {driver_log_tail(cluster.settings.layout, view.driver_id)}"

    beta.start()
    alpha.start()
    try:
        submit_job(spec, cluster.settings, wait_healthy=300)
        stream = beta.head()["stream"]

        # 1. kill -9 of the master: the job commits on, health says the master is down and
        # the job alive; restarted (FILESYSTEM recovery), the master knows the driver again
        driver = registry.view(JOB).driver_id
        master = cluster.cluster.daemons()[MASTER_NAME]
        kill_agent(cluster.settings, MASTER_NAME)  # the master's host lost: nothing restarts it
        killed_at = time.time()
        os.kill(master.pid, signal.SIGKILL)
        wait_until(lambda: next_batches(cluster, JOB, killed_at + 2, STAGES), 60,
                   "batches while the master is down", describe=describe)  # fmt: skip
        checks = {r.name: r for r in run_checks(cluster.settings, groups=["jobs"]).results}
        assert checks[JOB].level is Level.WARN, checks
        assert "runs on without the master" in checks[JOB].message
        assert f"driver {driver} holds its lease" in checks[JOB].message
        cluster.cluster.start()
        # The recovering master either claims the driver again or, when the worker's own
        # re-registration reached it first, tells the worker to kill the driver it does not
        # know yet: Spark then relaunches it, or (seen 2026-11-29) leaves it KILLED, which
        # --supervise does not relaunch. Either way no orphan writes beside the driver the
        # master knows; a job left down must fail health (declared, not running), and the
        # operator's restart from the last checkpoint brings it back.
        def settled() -> str:
            view = registry.view(JOB)
            held = read_lease(cluster.settings.layout, JOB)
            if view.is_live and view.driver_state == "RUNNING" and held is not None \
                    and held.holder == view.driver_id and held.fresh:
                return "known"
            return "killed" if not view.is_live and view.driver_state == "KILLED" else ""

        outcome = wait_until(settled, 180, "the restarted master to know the driver that "
                             "holds the job's lease", describe=describe)  # fmt: skip
        if outcome == "killed":
            checks = {r.name: r for r in run_checks(cluster.settings, groups=["jobs"]).results}
            assert checks[JOB].level is Level.FAIL, checks
            print(f"master kill: the recovering master killed {driver} (Spark's re-registration "
                  f"race): health failed ({checks[JOB].message[:160]}); restarted from the "
                  "last checkpoint")  # fmt: skip
            restart_job(cluster.settings, JOB, "last-checkpoint")
        again = registry.view(JOB).driver_id
        how = "the same driver" if again == driver else f"relaunched {driver} as {again}"
        print(f"master kill: known again {time.time() - killed_at:.1f}s after it ({how})")
        next_batches_at = time.time()
        wait_until(lambda: next_batches(cluster, JOB, next_batches_at, STAGES), 120,
                   "every stage to commit under the restarted master", describe=describe)
        # A recovering master can drop the application's executor and grant it none after
        # (Spark 4.3, a worker registering again during the recovery): the driver then fails
        # once it had none for NO_EXECUTOR_S and its relaunch registers a new application.
        # The store's outage below starts on a job that has its executors.
        def granted() -> bool:
            app = registry.view(JOB).status.app_id
            return any(a.id == app and a.cores > 0 for a in registry.client.active_apps())

        if not wait_quietly(granted, 15):
            lost_at = time.time()
            wait_until(lambda: granted() and next_batches(cluster, JOB, lost_at, STAGES),
                       NO_EXECUTOR_S + 120, "the driver the recovering master left without "
                       "executors to be relaunched and commit", describe=describe)  # fmt: skip
            print("master kill: the recovering master left the application without executors; "
                  f"its relaunch committed {time.time() - lost_at:.1f}s later")  # fmt: skip

        # 2. the store unreachable for 20 s: the batches wait and retry, the job stays up
        proxy.cut()
        cut_at = time.time()
        time.sleep(STORE_DOWN_S)
        view = registry.view(JOB)
        assert view.is_live and view.state == "RUNNING", describe()
        proxy.restore()
        back_at = time.time()
        recovered = wait_until(lambda: next_batches(cluster, JOB, back_at, STAGES), 60,
                               "every stage to commit once the store is back",
                               describe=describe)  # fmt: skip
        print(
            f"store down {back_at - cut_at:.0f}s: every stage committed {recovered:.1f}s "
            "after it came back"
        )

        # 3. beta stopped and started again on its log: same stream, the sequence goes on
        beta.stop()
        last_before = max(r.sequence for r in read_journal(tmp_path / "beta.jsonl"))
        beta.start(max_pings=int(RATE * 10))
        head = beta.head()
        assert head["stream"] == stream and head["last"] >= last_before
        final_beta = beta.wait_generated(int(RATE * 10))
        assert alpha.wait_done(300), "fleetsim-alpha did not finish"
        final_alpha = max(p.name for p in alpha_dir.glob("pings-*.csv"))
        wait_until(
            lambda: all(p.get("sequence") == final_beta and p.get("file") == final_alpha
                        for p in committed(cluster).values()),
            240, f"{JOB} to read up to beta {final_beta} and alpha {final_alpha}",
            describe=describe,
        )  # fmt: skip
        records = read_journal(tmp_path / "alpha.jsonl") + read_journal(tmp_path / "beta.jsonl")
        beta_seqs = [r.sequence for r in records if r.source == "beta"]
        assert beta_seqs == list(range(1, final_beta + 1))  # one log, no gap, no repeat
        good = valid_pings(records)
        engine = store.engine_for(spec.args["store_url"])
        for result in (
            compare_vehicles(latest_per_vin(good), store.read_table(engine, store.vehicles)),
            compare_windows(tumbling_windows(good), store.read_table(engine, store.vehicle_stats)),
            compare_quarantine(
                [r for r in records if r.malformed], store.read_table(engine, store.quarantine)
            ),  # fmt: skip
        ):
            assert result.ok, result.summary()
        # a relaunched driver's readers report only changes: no entry is ok with no losses
        assert not beta_state(registry.view(JOB).status).get("losses"), describe()

        # 4. beta replaced by one on a fresh log: the stage fails loudly, no relaunch loop
        beta.stop()
        shutil.rmtree(beta.data_dir)
        beta.start(max_pings=50)
        new_stream = beta.head()["stream"]
        assert new_stream != stream
        wait_until(lambda: registry.view(JOB).status.state == "FAILED", 120,
                   "the job to fail on the replaced stream", describe=describe)  # fmt: skip
        error = str(registry.view(JOB).status.error)
        assert f"committed offset is sequence {final_beta} of stream {stream}" in error, error
        assert new_stream in error and "restart_from_earliest" in error
        wait_until(lambda: not registry.view(JOB).is_live, 60,
                   "the failed driver to end without a relaunch", describe=describe)  # fmt: skip
        time.sleep(3)
        view = registry.view(JOB)
        assert not view.is_live and view.driver_state == "FINISHED", describe()
        jobs = [r for r in run_checks(cluster.settings, Thresholds(), groups=["jobs"]).results
                if r.name == JOB]  # fmt: skip
        assert jobs and jobs[0].level is Level.FAIL and "was reset" in jobs[0].message, jobs
    finally:
        alpha.stop()
        beta.stop()
        spark_cluster.let_go(JOB)
