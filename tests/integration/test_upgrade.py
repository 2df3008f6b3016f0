"""Savepoints and upgrades on the real local cluster, checked against the journals.

v1 runs with both simulators → a savepoint without cancel (the job keeps going) → plans of
incompatible versions are refused with the job untouched → upgrade to v2 while data flows
→ a crashing v3 is rolled back to v2 → after the simulators stop, every sink equals its
batch recomputation: nothing lost, nothing duplicated.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.integration import ClusterHandle, source_positions, wait_until

from spark_jobs.sinks import store
from streamops import savepoints
from streamops.restore import earliest_positions, savepoint_job
from streamops.sim import AlphaSimulator, BetaSimulator, read_journal
from streamops.sim.fleet import Ping
from streamops.sim.journal import JournalRecord, valid_pings
from streamops.sim.oracle import (
    compare_vehicles,
    compare_windows,
    latest_per_vin,
    sliding_windows,
    tumbling_windows,
)
from streamops.spec import JobSpec, load_spec
from streamops.submit import submit_job
from streamops.upgrade import UpgradeFailed, UpgradeRefused, plan_upgrade, upgrade

pytestmark = pytest.mark.integration
CONFIG = Path(__file__).resolve().parents[2] / "config" / "jobs"
JOB = "fleet-upgrade-it"


def variant(spec: JobSpec, **changes: object) -> JobSpec:
    return spec.model_copy(update=changes)


def after_position(records: list[JournalRecord], positions: dict[str, dict]) -> list[Ping]:
    """Valid pings strictly after the savepoint's position of their source."""
    alpha = positions.get("fleetsim-alpha", {}).get("file", "")
    beta = int(positions.get("fleetsim-beta", {}).get("sequence", 0))
    out = []
    for r in records:
        if r.ping is None:
            continue
        if (r.source == "alpha" and (r.file or "") > alpha) or (
            r.source == "beta" and r.sequence > beta
        ):
            out.append(r.ping)
    return out


def test_savepoint_upgrade_and_rollback(spark_cluster: ClusterHandle, tmp_path: Path) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    alpha_dir, url = tmp_path / "alpha", f"sqlite:///{tmp_path / 'fleet.db'}"
    alpha = AlphaSimulator(
        alpha_dir, seed=21, vehicles=30, rate=30, pings_per_file=40, malformed_every=101,
        max_pings=14000, journal=tmp_path / "a.jsonl",
    )  # fmt: skip
    beta = BetaSimulator(
        port=0, seed=22, vehicles=30, rate=30, malformed_every=103, max_pings=14000,
        journal=tmp_path / "b.jsonl",
    )  # fmt: skip
    beta.start()
    alpha.start()
    args = {"alpha_dir": str(alpha_dir), "beta_url": beta.url, "store_url": url}
    v1 = load_spec(CONFIG / "fleet-pings.yaml")
    v1 = variant(v1, name=JOB, trigger_interval="1 second", args={**v1.args, **args})
    v2 = load_spec(CONFIG / "fleet-pings-v2.yaml")
    v2 = variant(v2, name=JOB, trigger_interval="1 second", args={**v2.args, **args})
    try:
        submit_job(v1, settings, wait_healthy=300)

        # a savepoint without cancel: the job continues
        result = savepoint_job(settings, JOB, "it-live", cancel=False)
        assert result.ok and registry.view(JOB).is_live
        manifest = savepoints.get_savepoint(settings.layout, "it-live")
        assert set(manifest.stages) == {"vehicles", "vehicle-stats-1m"}
        assert manifest.stages["vehicle-stats-1m"].stateful
        assert "it-live" in [s.name for s in savepoints.list_savepoints(settings.layout, JOB)]
        wait_until(lambda: registry.view(JOB).healthy, 60, "v1 healthy after the savepoint")

        # incompatible versions are refused before anything stops
        for entry, why in (
            ("spark_jobs.testing.fleet_pings_changed_accumulator", "vehicle-stats-1m"),
            ("spark_jobs.testing.fleet_pings_renamed_stage", "vehicle-stats-1m"),
        ):
            bad = variant(v2, entrypoint=entry, version="2-bad")
            plan = plan_upgrade(settings, JOB, bad)
            assert not plan.allowed and why in plan.render()
            with pytest.raises(UpgradeRefused):
                upgrade(settings, JOB, bad)
            view = registry.view(JOB)
            assert view.is_live and view.version == "1"

        plan = plan_upgrade(settings, JOB, v2)
        assert plan.allowed, plan.render()
        outcome = upgrade(settings, JOB, v2, health_timeout=300)
        assert registry.view(JOB).version == "2"
        upgrade_sp = savepoints.get_savepoint(settings.layout, outcome.savepoint)
        positions = earliest_positions(upgrade_sp)

        # a version that crashes on start is rolled back to v2 from the same savepoint
        v3 = variant(v2, entrypoint="spark_jobs.testing.crash_on_start", version="3")
        with pytest.raises(UpgradeFailed, match="rolled back"):
            upgrade(settings, JOB, v3, health_timeout=90)
        wait_until(lambda: registry.view(JOB).healthy, 300, "v2 healthy after the rollback")
        assert registry.view(JOB).version == "2"

        assert alpha.wait_done(300) and beta.wait_done(300)
        last_file = max(p.name for p in alpha_dir.glob("pings-*.csv"))
        final = {"file": last_file, "sequence": beta.emitted}

        def caught_up() -> bool:
            got = source_positions(registry.view(JOB))
            return len(got) == 3 and all(
                p.get("file") == final["file"] and p.get("sequence") == final["sequence"]
                for p in got.values()
            )

        wait_until(caught_up, 300, f"{JOB} to read up to {final}")
        records = read_journal(tmp_path / "a.jsonl") + read_journal(tmp_path / "b.jsonl")
        good = valid_pings(records)
        engine = store.engine_for(url)
        checks = [
            compare_vehicles(latest_per_vin(good), store.read_table(engine, store.vehicles)),
            compare_windows(tumbling_windows(good), store.read_table(engine, store.vehicle_stats)),
            compare_windows(
                sliding_windows(after_position(records, positions)),
                store.read_table(engine, store.avg_speed_5m),
                "avg_speed_5m",
            ),
        ]
        for check in checks:
            assert check.ok, check.summary()
    finally:
        alpha.stop()
        beta.stop()
        if registry.view(JOB).is_live:
            registry.cancel(JOB)
