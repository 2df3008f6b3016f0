"""A reconcile pass while an operator's ``streamops restart`` runs on the job (a real process,
issue 44 item 1): the pass does not act on the job; the deployment says it waits for the
holder (no failure, no silent skip), and the next pass, once the restart ended, acts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support import operators
from support.reconcile_world import dep
from support.restart_fake import JOB

from streamops.declarative import reconcile


def test_a_reconcile_pass_while_a_cli_restart_runs_waits_for_it(
    world: dict[str, Any], tmp_path: Path
) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep(JOB))
    restart = operators.start(tmp_path, "restart", "restart", JOB, "--mode", "last-checkpoint")
    with operators.stopped_at_the_end(restart):
        restart.wait_at_submit()
        result = reconcile.reconcile_once(settings)
        assert result.ok, result.errors
        assert [a for _, a, _ in result.actions] == ["wait"]
        assert world["calls"] == []  # nothing done to the busy job
        waiting = store.deployment_status(JOB).condition("Progressing")
        assert waiting is not None and waiting.reason == "Waiting"
        assert waiting.message.startswith(
            f"waits for the job's operation holder (restart (last-checkpoint) (step resubmit) "
            f"of cli run cli-{restart.proc.pid}, pid {restart.proc.pid}")  # fmt: skip
        assert waiting.message.endswith("tried again at the next pass")
        code, err = restart.finish()
    assert code == 0, err
    assert [a for _, a, _ in reconcile.reconcile_once(settings).actions] == ["deploy"]
    assert [(job, action) for job, action, _ in world["calls"]] == [(JOB, "deploy")]
