"""fleet-pings v1 on the real local cluster, checked against the simulators' journals.

Both simulators run while the job (a supervised cluster-mode driver) ingests; after they
stop and the job has read everything, ``vehicles`` must equal the latest ping per VIN,
``vehicle_stats`` a batch recomputation of the 1-minute windows, and ``quarantine`` exactly
the malformed records, with reasons.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.integration import ClusterHandle, source_positions, wait_until
from support.oracle import (
    compare_quarantine,
    compare_vehicles,
    compare_windows,
    latest_per_vin,
    tumbling_windows,
)

from streamops.cluster.client import MasterClient
from streamops.cluster.spark_home import check_spark_install
from streamops.cluster.submission import build_submission
from streamops.exceptions import JobAlreadyRunning
from streamops.sim import AlphaSimulator, BetaSimulator, read_journal
from streamops.sim.journal import valid_pings
from streamops.spec import JobSpec, load_spec
from streamops.world.submit import submit_job
from streamops_contract.sinks import store
from streamops_contract.state import lease

pytestmark = pytest.mark.integration
SPEC = Path(__file__).resolve().parents[2] / "config" / "jobs" / "fleet-pings.yaml"
PINGS_PER_SOURCE = 4000
RATE = 150.0


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.db'}"
    return str(request.getfixturevalue("postgres_url"))


def assert_duplicate_driver_is_fenced(
    cluster: ClusterHandle, spec: JobSpec, driver: str
) -> None:
    """A second driver of the job, submitted behind the registry's back, writes nothing."""
    settings = cluster.settings
    client = MasterClient(settings)
    body = build_submission(spec, settings).rest_body(check_spark_install().version)
    duplicate = client.create_submission(body)
    ended = ("FINISHED", "FAILED", "ERROR", "KILLED")
    wait_until(
        lambda: client.submission_status(duplicate).driver_state in ended, 300,
        "the duplicate driver to exit",
    )  # fmt: skip
    assert client.submission_status(duplicate).driver_state == "FINISHED"  # not relaunched
    logs = list(settings.layout.cluster_dir.glob(f"work/*/{duplicate}/stdout"))
    assert logs and "already run by driver" in logs[0].read_text()
    view = cluster.registry.view(spec.name)
    assert view.driver_id == driver and view.status.driver_id == driver
    held = lease.read_lease(settings.layout, spec.name)
    assert held is not None and held.holder == driver


def test_fleet_pings_matches_the_oracle(
    spark_cluster: ClusterHandle, store_url: str, tmp_path: Path
) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    job = f"fleet-it-{'pg' if store_url.startswith('postgresql') else 'sqlite'}"
    alpha_dir = tmp_path / "alpha"
    alpha = AlphaSimulator(
        alpha_dir, seed=11, vehicles=40, rate=RATE, pings_per_file=50,
        malformed_every=97, max_pings=PINGS_PER_SOURCE, journal=tmp_path / "alpha.jsonl",
    )  # fmt: skip
    beta = BetaSimulator(
        port=0, seed=12, vehicles=40, rate=RATE, malformed_every=89,
        max_pings=PINGS_PER_SOURCE, journal=tmp_path / "beta.jsonl",
    )  # fmt: skip
    base = load_spec(SPEC)
    spec = base.model_copy(
        update={
            "name": job,
            "trigger_interval": "1 second",
            "args": {
                **base.args,
                "alpha_dir": str(alpha_dir),
                "beta_url": "",
                "store_url": store_url,
            },
        }
    )
    beta.start()
    alpha.start()
    try:
        spec = spec.model_copy(update={"args": {**spec.args, "beta_url": beta.url}})
        driver = submit_job(spec, settings, wait_healthy=300)
        view = registry.view(job)
        assert view.healthy and view.driver_id == driver and view.version == "1"

        with pytest.raises(JobAlreadyRunning, match="already running"):
            submit_job(spec, settings)
        if store_url.startswith("sqlite"):  # once per session is enough: it takes a minute
            assert_duplicate_driver_is_fenced(spark_cluster, spec, driver)

        assert alpha.wait_done(120) and beta.wait_done(120), "simulators did not finish"
        last_file = max(p.name for p in alpha_dir.glob("pings-*.csv"))
        expected_positions = {"file": last_file, "sequence": beta.emitted}

        def caught_up() -> bool:
            positions = source_positions(registry.view(job))
            return bool(positions) and all(
                {k: p.get(k) for k in expected_positions} == expected_positions
                for p in positions.values()
            )

        wait_until(caught_up, 180, f"{job} to read up to {expected_positions}")

        records = read_journal(tmp_path / "alpha.jsonl") + read_journal(tmp_path / "beta.jsonl")
        good = valid_pings(records)
        assert len(records) == 2 * PINGS_PER_SOURCE and 0 < len(good) < len(records)
        engine = store.engine_for(store_url)
        vehicles = compare_vehicles(latest_per_vin(good), store.read_table(engine, store.vehicles))
        assert vehicles.ok, vehicles.summary()
        windows = compare_windows(
            tumbling_windows(good), store.read_table(engine, store.vehicle_stats)
        )
        assert windows.ok, windows.summary()
        bad = [r for r in records if r.malformed]
        quarantined = compare_quarantine(bad, store.read_table(engine, store.quarantine))
        assert quarantined.ok, quarantined.summary()

        status = registry.view(job).status
        assert status.stages["vehicle-stats-1m"].late_rows == 0
        assert status.stages["vehicle-stats-1m"].watermark
        assert {"vehicles", "vehicle-stats-1m"} == set(status.stages)
    finally:
        alpha.stop()
        beta.stop()
        spark_cluster.let_go(job)
    assert not registry.view(job).is_live
    assert os.path.isdir(settings.layout.checkpoint(job, "vehicles"))
