"""Resources as files: validation (one error line per bad field), the store's generations."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamops.exceptions import ConfigError
from streamops.state.declarative.resources import (
    Deployment,
    SavepointRequest,
    duration_seconds,
    load_resources,
)
from streamops.state.declarative.store import Store
from streamops.state.layout import StateLayout

REPO = Path(__file__).resolve().parents[3]


def write(tmp_path: Path, text: str, name: str = "r.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_examples_load() -> None:
    files = sorted((REPO / "config" / "deployments").glob("*.yaml"))
    files += sorted((REPO / "config" / "savepoint-requests").glob("*.yaml"))
    assert files
    for path in files:
        for resource in load_resources(path):
            assert resource.name


def test_spec_file_relative_to_the_resource(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    write(
        tmp_path / "jobs",
        "name: tx\nversion: '1'\nentrypoint: spark_jobs.transactions\n",
        "tx.yaml",
    )
    path = write(
        tmp_path,
        "kind: JobDeployment\nname: tx\nspec_file: jobs/tx.yaml\n"
        "savepoints: {interval: 10 minutes, max_count: 3, max_age: 7d}\n",
    )
    (dep,) = load_resources(path)
    assert isinstance(dep, Deployment)
    assert dep.spec.version == "1" and dep.state == "running" and dep.upgrade.mode == "savepoint"
    assert dep.savepoints.interval_s == 600 and dep.savepoints.max_age_s == 7 * 86400


def test_every_bad_field_is_one_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
kind: JobDeployment
name: tx
state: paused
restart_nonce: x
upgrade: {mode: fast, standby: cold}
savepoints: {interval: soon, cron: '* * *', max_count: 0}
initial_savepoint: ../etc
spec: {name: tx, version: '1', entrypoint: 'not a module', trigger_interval: '0 s'}
""",
    )
    with pytest.raises(ConfigError) as err:
        load_resources(path)
    lines = str(err.value).splitlines()
    assert lines[0] == f"{path}: invalid JobDeployment"
    fields = sorted(line.split(":")[0].strip() for line in lines[1:])
    assert fields == sorted(
        [
            "state",
            "restart_nonce",
            "upgrade.mode",
            "upgrade.standby",
            "savepoints.interval",
            "savepoints.cron",
            "savepoints.max_count",
            "initial_savepoint",
            "spec.entrypoint",
            "spec.trigger_interval",
        ]
    )


def test_missing_spec_and_other_errors_together(tmp_path: Path) -> None:
    path = write(tmp_path, "kind: JobDeployment\nname: tx\nstate: paused\n")
    with pytest.raises(ConfigError) as err:
        load_resources(path)
    lines = str(err.value).splitlines()[1:]
    assert [line.split(":")[0].strip() for line in lines] == ["spec", "state"]
    path = write(tmp_path, "kind: JobDeployment\nname: tx\nspec_file: nowhere.yaml\n")
    with pytest.raises(ConfigError, match="spec_file: cannot read"):
        load_resources(path)


def test_spec_name_must_be_the_deployment_name(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "kind: JobDeployment\nname: tx\nspec: {name: other, version: '1', entrypoint: a.b}\n",
    )
    with pytest.raises(ConfigError, match="the spec's name 'other' is not the deployment's"):
        load_resources(path)


def test_savepoint_request_and_unknown_kind(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "kind: SavepointRequest\nname: tx-final\njob: tx\ncancel: true\n"
        "---\nkind: SavepointRequest\nname: Bad/Name\njob: tx\ncancel: maybe\n",
    )
    with pytest.raises(ConfigError) as err:
        load_resources(path)
    text = str(err.value)
    assert "(document 2): invalid SavepointRequest" in text
    assert "  name: invalid savepoint name" in text and "  cancel:" in text
    with pytest.raises(ConfigError, match="kind: 'Job' is not one of"):
        load_resources(write(tmp_path, "kind: Job\nname: x\n"))


def test_durations() -> None:
    assert duration_seconds("30s") == 30 and duration_seconds("2 hours") == 7200
    with pytest.raises(ValueError):
        duration_seconds("soon")


def test_store_generations(tmp_path: Path) -> None:
    store = Store(StateLayout.at(tmp_path))
    spec = {"name": "tx", "version": "1", "entrypoint": "a.b"}
    dep = Deployment.model_validate({"name": "tx", "spec": spec})
    applied, verb = store.apply(dep)
    assert (applied.generation, verb) == (1, "created")
    assert store.apply(dep)[1] == "unchanged"
    changed = dep.model_copy(update={"state": "suspended"})
    applied, verb = store.apply(changed)
    assert (applied.generation, verb) == (2, "configured")
    assert store.get("JobDeployment", "tx") == applied
    assert store.mark_deleting("JobDeployment", "tx").deleting
    assert store.names("JobDeployment") == ["tx"]
    req = SavepointRequest(name="tx-sp", job="tx", cancel=True)
    store.apply(req)
    assert store.apply(req)[1] == "unchanged"
    with pytest.raises(ConfigError, match="exists already"):
        store.apply(req.model_copy(update={"cancel": False}))
    store.remove("SavepointRequest", "tx-sp")
    assert store.names("SavepointRequest") == []
