"""One hand on a job at a time (issue 44, item 1): two operators' real ``streamops``
processes on one job (each on its own fake cluster, the state root shared): the second is
refused at once naming the first, queues with ``--wait``, and takes over a holder killed with
``kill -9``, resuming its intent."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from support import operators
from support.restart_fake import JOB

from streamops.cli.queueing import summarised
from streamops.exceptions import JobBusy
from streamops.procedures.job_lease import acting_as, holder_of, job_operation
from streamops.procedures.savepoint_restart import STORE
from streamops.settings import Settings
from streamops.state import op_lease

RESTART = ("restart", JOB, "--mode", "last-checkpoint")


def test_two_cli_restarts_of_one_job_at_once_the_second_is_refused_naming_the_first(
    tmp_path: Path,
) -> None:
    first = operators.start(tmp_path, "first", *RESTART)
    with operators.stopped_at_the_end(first):
        first.wait_at_submit()
        code, err, took = operators.run(tmp_path, "second", *RESTART)
        assert code == 2, err
        line = err.strip().splitlines()[-1]
        assert line.startswith(f"error: job {JOB} is busy: restart (last-checkpoint) (step "
                               "resubmit) of cli run"), line  # fmt: skip
        assert f"pid {first.proc.pid} on host {socket.gethostname()}" in line
        assert "since " in line and "--wait SECONDS" in line
        assert took < 10, took  # at once, not after a wait
        code, err = first.finish()
    assert code == 0, err
    intent = STORE.load(Settings.from_env({}, state_root=str(tmp_path)), JOB)
    assert intent is not None and intent.phase == "done"  # the first ran whole, untouched
    assert not op_lease.operation_file(Settings.from_env({}, state_root=str(tmp_path)).layout,
                                       JOB).exists()  # fmt: skip  # given up at its end


def test_wait_queues_behind_the_holder(tmp_path: Path) -> None:
    first = operators.start(tmp_path, "first", *RESTART)
    with operators.stopped_at_the_end(first):
        first.wait_at_submit()
        operators.gate_path(tmp_path, "second").touch()
        second = operators.start(tmp_path, "second", *RESTART, "--wait", "60")
        with operators.stopped_at_the_end(second):
            second.wait_said("waiting up to")  # queued, not refused (however slow its start)
            assert second.proc.poll() is None
            assert first.finish()[0] == 0
            code, err = second.finish()
    assert code == 0, err
    assert "is busy" in err and "waiting up to" in err


def test_a_holder_killed_with_kill_9_is_taken_over_and_its_intent_resumed(
    tmp_path: Path,
) -> None:
    first = operators.start(tmp_path, "first", *RESTART)
    with operators.stopped_at_the_end(first):
        first.wait_at_submit()
        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait(timeout=10)
    # the first had stopped the job: the second operator's cluster has no driver running
    code, err, _ = operators.run(tmp_path, "second", *RESTART, stopped=True)
    assert code == 0, err
    assert f"taking over the operation lease of a holder that is gone: restart (last-checkpoint) " \
           f"(step resubmit) of cli run cli-{first.proc.pid}" in err  # fmt: skip
    assert "resuming the restart of fleet-pings from its last checkpoint at phase" in err
    intent = STORE.load(Settings.from_env({}, state_root=str(tmp_path)), JOB)
    assert intent is not None and intent.phase == "done" and "stop" in intent.done


def test_a_reused_pid_is_not_the_holder_and_another_host_lives_by_its_ttl(
    tmp_path: Path,
) -> None:
    layout = Settings.from_env({}, state_root=str(tmp_path)).layout
    me = op_lease.holder(JOB, "cli", "r1", "upgrade")
    assert op_lease.holder_alive(me)
    assert not op_lease.holder_alive(replace(me, started="1"))  # same pid, another process
    away = replace(me, host="elsewhere", heartbeat_at=time.time() - 5)
    assert op_lease.holder_alive(away)
    assert not op_lease.holder_alive(replace(away, heartbeat_at=time.time() - 60))
    op_lease.try_acquire(layout, away)
    other = op_lease.holder(JOB, "reconcile", "r2", "reconcile: deploy")
    with pytest.raises(JobBusy, match="cli run r1, pid .* on host elsewhere"):
        op_lease.try_acquire(layout, other)


def test_nested_operations_of_one_process_hold_once_and_steps_are_named(
    tmp_path: Path,
) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    with acting_as("cli", "r1"), job_operation(settings, JOB, "upgrade to v2"):
        with job_operation(settings, JOB, "restore v1 (rollback)"):  # the upgrade's rollback
            from streamops.procedures.job_lease import note_step

            note_step("rollback")
            held = holder_of(settings, JOB)
            assert held is not None and (held.procedure, held.step) == ("upgrade to v2",
                                                                         "rollback")  # fmt: skip
        assert holder_of(settings, JOB) is not None
    assert holder_of(settings, JOB) is None


def test_a_long_error_is_summarised() -> None:
    command = "spark-submit " + " ".join(f"--conf spark.x{i}=y" for i in range(300))
    line = summarised(f"driver failed to start: {command}")
    assert len(line) < 800 and line.startswith("driver failed to start: spark-submit")
    assert "characters cut; run with -v" in line


def test_each_procedure_refuses_a_busy_job_before_it_records_anything(tmp_path: Path) -> None:
    """The procedures' own hold, past the CLI's early refusal: the python API, the rollback,
    the handover and the rebalance meet it."""
    from support.restart_fake import install, settings_at

    from streamops.procedures.entry_points import cancel_job, restart_job, savepoint_job

    cluster = install(settings_at(tmp_path))
    first = operators.start(tmp_path, "first", *RESTART)
    with operators.stopped_at_the_end(first):
        first.wait_at_submit()
        before = STORE.read(cluster.ops, JOB)
        with acting_as("cli", "second"):
            for attempt in (lambda: restart_job(cluster.ops, JOB, "savepoint"),
                            lambda: cancel_job(cluster.ops, JOB),
                            lambda: savepoint_job(cluster.ops, JOB, "sp", cancel=True)):
                with pytest.raises(JobBusy, match=f"cli run cli-{first.proc.pid}"):
                    attempt()
        assert STORE.read(cluster.ops, JOB) == before and cluster.calls == []
        code, err = first.finish()
    assert code == 0, err


def test_an_operation_taken_over_stops_at_its_next_step_and_undoes_nothing(
    tmp_path: Path,
) -> None:
    """A holder thought gone (its heartbeat late past the TTL on another host) whose lease
    another operator took over must not go on acting on the job: it stops before its next step,
    without its failure policy (a rollback would act on the other operator's job)."""
    from streamops.exceptions import OperationLost
    from streamops.procedures.step_runner import run_steps

    settings = Settings.from_env({}, state_root=str(tmp_path))
    done: list[str] = []
    undone: list[str] = []

    def first_step() -> None:
        done.append("first")
        # meanwhile another operator took the job over
        other = op_lease.holder(JOB, "cli", "other", "restart (savepoint)")
        op_lease.operation_file(settings.layout, JOB).write_text(json.dumps(asdict(other)))

    def second_step() -> None:
        done.append("second")

    with acting_as("cli", "mine"), job_operation(settings, JOB, "upgrade to v2"):
        with pytest.raises(OperationLost, match=r"upgrade to v2 stopped before step "
                           r"second_step: another operator took .* cli run other"):
            run_steps([first_step, second_step], on_failure=lambda exc: undone.append(str(exc)))
    assert done == ["first"] and undone == []
    held = holder_of(settings, JOB)
    assert held is not None and held.run == "other"  # not given up by the loser at its end
