"""Health lists the intents of every kind from the state root alone (the registry of
:mod:`streamops.state.intents`), without importing the module of each procedure, and the
reconcile's action in flight among them; the registry agrees with the procedures."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path

from streamops.procedures import (
    cluster_restart,
    deploy,
    restart,
    savepoint_restart,
    scale,
    upgrade_steps,
)
from streamops.procedures.step_runner import step_name
from streamops.settings import PROJECT_ROOT
from streamops.state import intents

HEALTH = PROJECT_ROOT / "plugins" / "streamops" / "health" / "procedures.py"
GATHER = """
import json, sys
from streamops.health.procedures import gather_procedures, procedure_result
from streamops.settings import Settings

settings = Settings.from_env({}, state_root=sys.argv[1])
seen = gather_procedures(settings, ["fleet-pings"], 1)
print(json.dumps({
    "checks": [[r.name, r.level.value, r.message]
               for r in (procedure_result(p, p.at + 5) for p in seen)],
    "modules": sorted(m for m in sys.modules
                      if m.startswith(("streamops.procedures", "streamops.declarative"))),
}))
"""


def test_the_health_of_procedures_imports_no_procedure_module() -> None:
    tree = ast.parse(HEALTH.read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.startswith("streamops.procedures")}, imported
    assert "streamops.state.intents" in imported


def test_health_lists_an_unfinished_reconcile_action_and_a_procedure_from_the_state_root(
    tmp_path: Path,
) -> None:
    """In a process of its own: none of the procedures' modules is loaded to list them."""
    root, now = tmp_path / "state", time.time()
    inflight = root / "declarative" / "inflight" / "JobDeployment-fleet-pings.json"
    inflight.parent.mkdir(parents=True)
    inflight.write_text(json.dumps({  # as the reconcile wrote it before it was an intent
        "kind": "JobDeployment", "name": "fleet-pings", "action": "suspend", "generation": 3,
        "detail": {"savepoint": "sp-1", "phase": "savepoint-requested",
                   "cancel": {"job": "fleet-pings", "name": "sp-1", "cancel": True,
                              "request": "req-1"}},
        "started_at": now - 100, "updated_at": now - 90}))  # fmt: skip
    scale_file = root / "cluster" / "intents" / "scale.json"
    scale_file.parent.mkdir(parents=True)
    scale_file.write_text(json.dumps({"owner": "cli", "workers": 3, "phase": "begun",
                                      "at": now - 50, "started_at": now - 60}))  # fmt: skip
    out = subprocess.run([sys.executable, "-c", GATHER, str(root)], capture_output=True,
                         text=True, check=True)  # fmt: skip
    found = json.loads(out.stdout)
    assert found["modules"] == [], found["modules"]
    checks = {name: (level, message) for name, level, message in found["checks"]}
    level, message = checks["procedure/reconcile/JobDeployment-fleet-pings"]
    assert level == "fail"  # its savepoint with cancel was asked: the job stops
    for part in ("reconcile action suspend of JobDeployment/fleet-pings (generation 3) has not "
                 "finished", f"owner reconcile:JobDeployment/fleet-pings@{now - 100:.3f}",
                 "phase acting", "the next reconcile pass resumes it first"):  # fmt: skip
        assert part in message, message
    level, message = checks["procedure/scale"]
    assert level == "fail" and "next step change_workers" in message


def test_the_registry_of_intent_kinds_agrees_with_the_procedures() -> None:
    names = {"upgrade": upgrade_steps.STORE, "restart": savepoint_restart.STORE,
             "deploy": deploy.STORE, "cluster-restart": cluster_restart.STORE,
             "scale": scale.STORE}  # fmt: skip
    for name, store in names.items():
        assert store.registered is intents.KINDS[name]
    steps = intents.KINDS
    assert steps["upgrade"].steps == {"": tuple(map(step_name, upgrade_steps.STEPS))}
    assert steps["restart"].steps == {
        "savepoint": tuple(map(step_name, savepoint_restart.STEPS)),
        "last-checkpoint": tuple(map(step_name, restart.CHECKPOINT_STEPS))}  # fmt: skip
    assert steps["scale"].steps == {"": scale.SCALE_STEPS}
