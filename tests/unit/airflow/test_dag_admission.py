"""The DAGs that change what runs or what it runs on check admission (N+1) in their first
task, as the CLI does: ``deploy_job``, ``savepoint_and_upgrade`` and a scale-down of
``rolling_scale`` fail ``validate`` naming the shortfall, nothing changed; their
``allow_no_spare`` param goes on with a warning. The master is a real master's document on
loopback (two 4-core workers, ``transactions`` running)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.dag_runs import dag_tasks
from support.master_doc import issue_master, serving

from streamops.cluster.submission import record_submission
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import load_spec
from streamops_airflow.exceptions import ProcedureFailed

CONFIG = PROJECT_ROOT / "config" / "jobs"
REFUSED = re.escape("refused: no spare capacity (N+1): after the loss of its largest worker")


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    with serving(issue_master()) as port:
        settings = Settings.from_env({}, state_root=str(tmp_path / "state"),
                                     master_webui_port=port)  # fmt: skip
        record_submission(settings, load_spec(CONFIG / "transactions.yaml"), "driver-1")
        monkeypatch.setattr("streamops_airflow.hooks.ops_settings", lambda *_: settings)
        yield settings


@pytest.mark.parametrize(("dag", "params"), [
    ("deploy_job", {"spec": "fleet-pings.yaml"}),
    ("savepoint_and_upgrade", {"job": "transactions", "spec": "transactions-v2.yaml"}),
])  # fmt: skip
def test_a_dag_refuses_in_validate_naming_the_shortfall(settings: Settings, dag: str,
                                                        params: dict[str, object]) -> None:
    validate = dag_tasks(dag)["validate"].python_callable
    if dag == "savepoint_and_upgrade":  # v2 of transactions fits; a 5-core v2 does not
        v2 = load_spec(CONFIG / "transactions-v2.yaml")
        big = v2.model_copy(update={"resources": v2.resources.model_copy(
            update={"executor_cores": 4, "max_cores": 4})})
        path = Path(settings.state_root) / "transactions-big.yaml"
        path.write_text(big.model_dump_json())
        params = {**params, "spec": str(path)}
    with pytest.raises(ProcedureFailed, match=REFUSED) as refused:
        validate(params=params)
    assert "trigger with allow_no_spare" in str(refused.value)
    assert validate(params={**params, "allow_no_spare": True})  # warned, goes on


def test_a_scale_down_dag_refuses_and_a_scale_up_is_not_checked(settings: Settings,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:  # fmt: skip
    monkeypatch.setattr("streamops.agent.registry.Agents.workers",
                        lambda self: ["worker-1", "worker-2", "worker-3"])  # fmt: skip
    validate = dag_tasks("rolling_scale")["validate"].python_callable
    with pytest.raises(ProcedureFailed, match=REFUSED):
        validate(params={"workers": 1})
    assert validate(params={"workers": 1, "allow_no_spare": True}) == {"action": "workers",
                                                                       "workers": 1}
    assert validate(params={"add": "worker-3"}) == {"action": "add", "node": "worker-3"}
