"""The secrets sweep (``support.secrets_sweep``) on planted trees: each secret written
anywhere (deep in a log dir, in a binary file, in Airflow's home; a bearer token signed with a
state root's key) is found, with its file and byte offset and never its value; the places a
secret belongs are allowed; and a session whose test writes a secret into a log fails.

Every planted tree is removed when its test ends: the session's own sweep would find it."""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.secrets_sweep import Finding, find_secrets, sweep, sweep_roots

from streamops.cluster import rest_auth
from streamops.settings import Settings


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "planted"
    root.mkdir()
    yield root
    shutil.rmtree(root)


def _state_root(root: Path) -> tuple[Settings, dict[str, str]]:
    """A state root with its three secrets, as the project makes them."""
    settings = Settings.from_env({}, state_root=str(root), rest_auth="on")
    rest = rest_auth.ensure_secret(settings)
    rpc = rest_auth.ensure_key(settings.layout.cluster_dir / "rpc-secret")
    agent = rest_auth.ensure_key(settings.layout.agent_token_file)
    return settings, {"rest": rest, "rpc": rpc, "agent": agent}


def _found(findings: list[Finding], base: Path) -> set[tuple[str, int, str]]:
    return {(str(f.path.relative_to(base)), f.offset, f.what.split(" of ")[0])
            for f in findings}  # fmt: skip


def test_each_secret_is_found_anywhere_with_its_offset_never_its_value(planted: Path) -> None:
    settings, values = _state_root(planted / "state")
    logs = settings.layout.logs_dir / "apps" / "app-1" / "0"
    logs.mkdir(parents=True)
    (logs / "stderr").write_text(f"line one\nspark.authenticate.secret={values['rpc']}\n")
    raw = base64.urlsafe_b64decode(values["rest"] + "=" * (-len(values["rest"]) % 4))
    (planted / "state" / "checkpoint.bin").write_bytes(b"\x00\xff" * 10 + raw + b"\x00")
    airflow = planted / "airflow" / "logs" / "dag_id=deploy" / "attempt=1.log"
    airflow.parent.mkdir(parents=True)
    airflow.write_bytes(b"\xc3\x28 invalid utf-8 " + values["agent"].encode())
    token = rest_auth.token(settings)
    events = planted / "state" / "spark-events" / "app-2.inprogress"
    events.parent.mkdir(parents=True)
    events.write_text(f'{{"Authorization": "Bearer {token}"}}')
    foreign = rest_auth.token(Settings.from_env({}, state_root=str(_other_key(planted))))
    (settings.layout.logs_dir / "master.log").write_text(f"another cluster's {foreign}\n")

    findings = sweep_roots([planted / "state", planted / "airflow"], {})

    assert _found(findings, planted) == {
        ("state/cluster/logs/apps/app-1/0/stderr", 35, "the RPC secret"),
        ("state/checkpoint.bin", 20, "the REST key (raw bytes)"),
        ("airflow/logs/dag_id=deploy/attempt=1.log", 17, "the agent token"),
        ("state/spark-events/app-2.inprogress", 26, "a bearer token signed with the REST key"),
    }
    report = "\n".join(map(str, findings))
    assert "at byte 35: the RPC secret of" in report
    for value in (*values.values(), token, raw.hex()):
        assert value not in report


def _other_key(planted: Path) -> Path:
    other = planted / "elsewhere"
    rest_auth.ensure_secret(Settings.from_env({}, state_root=str(other)))
    return other


def test_a_secret_in_its_own_places_is_allowed(planted: Path) -> None:
    settings, values = _state_root(planted / "state")
    props = settings.layout.cluster_dir / "master-auth.properties"
    props.write_text(f"spark.authenticate.secret={values['rpc']}\n")
    recovery = settings.layout.recovery_dir
    recovery.mkdir(mode=0o700)
    (recovery / "driver_1").write_bytes(b"..." + values["rpc"].encode())
    secrets = find_secrets([planted], {})
    assert {s.what for s in secrets} == {
        "REST key", "REST key (raw bytes)", "RPC secret", "agent token"}
    assert sweep([planted], secrets) == []

    os.chmod(recovery, 0o755)  # readable by all: no longer a place for a secret
    assert [str(f.path) for f in sweep([planted], secrets)] == [str(recovery / "driver_1")]


def test_the_agent_token_from_the_environment_is_searched_for(planted: Path) -> None:
    (planted / "agent.log").write_text("token=" + "t0ken-from-the-env-1234")
    env = {"STREAMOPS_AGENT_TOKEN": "t0ken-from-the-env-1234"}
    assert _found(sweep_roots([planted], env), planted) == {
        ("agent.log", 6, "the agent token (STREAMOPS_AGENT_TOKEN)")}
    assert sweep_roots([planted], {"STREAMOPS_AGENT_TOKEN": "short"}) == []


SESSION_CONFTEST = """
from pathlib import Path

import pytest
from support.secrets_sweep import fail_session_on_leaks

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    fail_session_on_leaks(session, [Path({root!r})])
"""

LEAKING_TEST = """
from pathlib import Path

def test_writes_a_log():
    state = Path({root!r})
    secret = (state / "cluster" / "rpc-secret").read_text().strip()
    log = state / "cluster" / "logs" / "worker-1" / "deep" / "worker.log"
    log.parent.mkdir(parents=True)
    log.write_text({text})
"""


@pytest.mark.parametrize(
    ("text", "leaks"), [("'started, the secret is ' + secret", True), ("'started'", False)]
)
def test_a_session_that_writes_a_secret_into_a_log_fails(
    pytester: pytest.Pytester, planted: Path, text: str, leaks: bool
) -> None:
    _settings, values = _state_root(planted / "state")
    root = str(planted / "state")
    pytester.makeconftest(SESSION_CONFTEST.format(root=root))
    pytester.makepyfile(test_leak=LEAKING_TEST.format(root=root, text=text))
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    output = result.stdout.str()
    assert values["rpc"] not in output
    if leaks:
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines([
            "*secrets sweep: a key or token outside its file*",
            f"secret leaked: {root}/cluster/logs/worker-1/deep/worker.log at byte 23: the RPC "
            f"secret of {root}",
        ])  # fmt: skip
    else:
        assert result.ret == pytest.ExitCode.OK
        assert "secret leaked" not in output
