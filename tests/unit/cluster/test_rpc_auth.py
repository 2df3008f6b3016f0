"""Spark's RPC authentication beyond loopback: the secret in the master's and every worker's
properties file (never a command line), a submission that asks for it without carrying it,
and nothing of it when the cluster is on loopback."""

from __future__ import annotations

import stat
from pathlib import Path

from streamops.cluster import daemons, rpc_auth
from streamops.cluster.profile import ClusterProfile
from streamops.cluster.spark_home import SparkInstall
from streamops.cluster.submission import build_submission
from streamops.settings import Settings
from streamops.spec import JobSpec


def settings(tmp_path: Path, **changes: str) -> Settings:
    (tmp_path / "config" / "spark").mkdir(parents=True, exist_ok=True)
    return Settings.from_env({}, state_root=str(tmp_path / "state"),
                             config_dir=str(tmp_path / "config"), **changes)  # fmt: skip


def install(tmp_path: Path) -> SparkInstall:
    return SparkInstall(home=tmp_path / "spark", version="4.3.0", scala_version="2.13")


def test_every_daemon_reads_the_secret_from_a_private_file(tmp_path: Path) -> None:
    s = settings(tmp_path, master_host="10.0.0.5")
    master = daemons.master_spec(s, ClusterProfile(), install(tmp_path))
    worker = daemons.worker_spec(s, ClusterProfile(), install(tmp_path), "worker-1", 8181)
    secret = rpc_auth.secret_file(s).read_text().strip()
    assert stat.S_IMODE(rpc_auth.secret_file(s).stat().st_mode) == 0o600
    for spec in (master, worker):
        at = spec.argv.index("--properties-file")
        props = Path(spec.argv[at + 1])
        assert stat.S_IMODE(props.stat().st_mode) == 0o600
        text = props.read_text()
        assert "spark.authenticate=true" in text
        assert f"spark.authenticate.secret={secret}" in text
        assert secret not in " ".join(spec.argv) and secret not in str(spec.env)
    assert worker.argv[-1] == s.master_url  # the master's URL stays the last argument
    assert rpc_auth.daemon_properties(s)["spark.authenticate.secret"] == secret  # made once


def test_a_submission_asks_for_authentication_and_carries_no_secret(tmp_path: Path) -> None:
    s = settings(tmp_path, rest_auth="on")
    rpc_auth.daemon_properties(s)  # the cluster made its secret
    spec = JobSpec.model_validate({"name": "j", "version": "1", "entrypoint": "spark_jobs.x"})
    props = build_submission(spec, s).spark_properties
    assert props["spark.authenticate"] == "true"
    assert "spark.authenticate.secret" not in props
    secret = rpc_auth.secret_file(s).read_text().strip()
    client = rpc_auth.submit_properties_file(s)
    assert client is not None and f"spark.authenticate.secret={secret}" in client.read_text()


def test_nothing_of_it_on_loopback(tmp_path: Path) -> None:
    s = settings(tmp_path)
    worker = daemons.worker_spec(s, ClusterProfile(), install(tmp_path), "worker-1", 8181)
    assert "--properties-file" not in worker.argv
    assert rpc_auth.submission_properties(s) == {}
    assert rpc_auth.submit_properties_file(s) is None
    assert not rpc_auth.secret_file(s).exists()
