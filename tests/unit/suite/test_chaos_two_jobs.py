"""The chaos campaign's judgement of its two jobs (``support/chaos/judge.py``,
``support/journal_oracle.py``), without a cluster: a step recovers when every stage of both
jobs committed again, health is OK again only having judged both jobs (an agent's restart,
done, is no warning then), and the transactions job's oracle counts what a step lost,
logged twice or changed."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.chaos.catalogue import BY_NAME
from support.chaos.judge import every_job_again, health_after_step, recovery_problem, tally
from support.journal_oracle import check_logged_once, compare_logged

from streamops.health.report import Level
from streamops.sim.transactions import RecordFile
from streamops_contract.sinks import journal_store
from streamops_contract.sinks.journal_store import Entry

JOBS = ("fleet-chaos", "transactions-chaos")


# -- recovery over both jobs --------------------------------------------------------------
def test_a_step_recovers_when_every_stage_of_both_jobs_committed_again() -> None:
    """The campaign waited for the fleet job's stages alone: the transactions job, its driver
    lost on the same node, was never waited for."""
    assert every_job_again({"fleet-chaos": 12.5, "transactions-chaos": None}) is None
    assert every_job_again({"fleet-chaos": 12.5, "transactions-chaos": 17.0}) == 17.0
    assert every_job_again({"fleet-chaos": 3.0, "transactions-chaos": 1.0}) == 3.0
    assert every_job_again({}) is None


# -- health after a step, over both jobs --------------------------------------------------
@dataclass
class _Result:
    group: str
    name: str
    level: Level
    message: str


def _ok(group: str, name: str) -> _Result:
    return _Result(group, name, Level.OK, "fine")


def test_health_is_ok_again_only_having_judged_both_jobs() -> None:
    both = [_ok("jobs", JOBS[0]), _ok("jobs", JOBS[1]), _ok("cluster", "workers")]
    assert health_after_step(both, JOBS, daemons_running=True) == ("ok", "")
    level, message = health_after_step(both[::2], JOBS, daemons_running=True)
    assert level == "fail" and "jobs/transactions-chaos: not judged by health" in message
    warned = [*both[:1], _Result("jobs", JOBS[1], Level.WARN, "no batch for 50 s")]
    assert health_after_step(warned, JOBS, daemons_running=True) == (
        "warn", "jobs/transactions-chaos: no batch for 50 s")


def test_an_agents_restart_done_is_no_warning_after_a_step_one_in_progress_is() -> None:
    """``cluster/daemons`` warns for its restart window (10 min) after an agent restarted its
    worker: every later step would fail on it."""
    restarted = _Result("cluster", "daemons", Level.WARN,
                        "worker-2's worker died and was restarted by its agent 1 time(s)")
    results = [_ok("jobs", JOBS[0]), _ok("jobs", JOBS[1]), restarted]
    assert health_after_step(results, JOBS, daemons_running=True) == ("ok", "")
    level, message = health_after_step(results, JOBS, daemons_running=False)
    assert level == "warn" and "cluster/daemons" in message
    gave_up = _Result("cluster", "daemons", Level.FAIL, "the agent of worker-2 gave up")
    assert health_after_step([*results[:2], gave_up], JOBS, daemons_running=True)[0] == "fail"


# -- the journal oracle -------------------------------------------------------------------
def _entry(n: int) -> Entry:
    return Entry(n, 1000.0 + n, "insert", f"tx-{n:07d}", f'{{"amount": {n}}}')


@pytest.fixture
def journal(tmp_path: Path) -> tuple[object, Path]:
    records = RecordFile(tmp_path / "entries.jsonl")
    records.append([_entry(n) for n in range(1, 11)])
    records.close()
    engine = journal_store.engine_for(f"sqlite:///{tmp_path / 'tx.db'}", journal_store.LOG_TABLES)
    return engine, tmp_path / "entries.jsonl"


def _log(engine: object, numbers: list[int], payload: str | None = None) -> None:
    rows = [{**_entry(n).to_dict(), **({"payload": payload} if payload else {})} for n in numbers]
    journal_store.log_entries(engine, rows, "1")  # type: ignore[arg-type]


def test_the_journal_oracle_counts_lost_and_changed_entries(journal: tuple[object, Path]) -> None:
    engine, record_file = journal
    _log(engine, [1, 2, 3, 5, 6, 7, 8, 9])
    _log(engine, [10], payload='{"amount": 99}')
    cmp = compare_logged(engine, record_file, 10, lambda n: "1")
    assert not cmp.ok and cmp.missing == [4] and [d[0] for d in cmp.different] == [10]
    found = tally([cmp])
    assert (found.missing, found.unexpected, found.different) == (1, 0, 1)
    with pytest.raises(AssertionError, match="1 missing"):
        check_logged_once(engine, record_file, 10, lambda n: "1")


def test_the_journal_oracle_passes_each_entry_logged_once_up_to_the_hold(
    journal: tuple[object, Path],
) -> None:
    engine, record_file = journal
    _log(engine, list(range(1, 9)))
    held = compare_logged(engine, record_file, 8, lambda n: "1")
    assert held.ok and held.expected == 8 and held.actual == 8
    assert not compare_logged(engine, record_file, 8, lambda n: "2").ok  # another version
    _log(engine, [1, 2])  # a replayed batch inserts nothing twice
    assert compare_logged(engine, record_file, 8, lambda n: "1").ok
    later = compare_logged(engine, record_file, 7, lambda n: "1")
    assert later.unexpected == [8]


# -- the new kinds ------------------------------------------------------------------------
def test_the_two_job_kinds_are_short_and_bounded() -> None:
    for name in ("both-drivers-node", "worker-jvm"):
        action = BY_NAME[name]
        assert action.short and action.kind == "fault" and action.recover_s <= 60, name


def test_a_node_holding_both_drivers_takes_the_bound_of_both_drivers_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``node`` step whose node held the transactions driver too relaunched two drivers at
    once and failed on the one-driver bound (25.8 s over 20 s then; 45 s now)."""
    from support.chaos import catalogue

    node = BY_NAME["node"]
    monkeypatch.setattr(catalogue, "kill_node_of", lambda cluster, driver: (100.0, "worker-2"))
    view = SimpleNamespace(driver_id="driver-1")
    world = SimpleNamespace(cluster=None, job="fleet-chaos",
                            registry=SimpleNamespace(view=lambda job: view))  # fmt: skip
    for both, bound in ((True, BY_NAME["both-drivers-node"].recover_s), (False, None)):
        monkeypatch.setattr(catalogue, "together", lambda w, b=both: b)
        inflicted = node.run(world, random.Random(1))  # type: ignore[arg-type]
        assert inflicted.recover_s == bound
    assert recovery_problem(node, 25.8, BY_NAME["both-drivers-node"].recover_s) == ""
    assert "over its bound of 45 s" in recovery_problem(node, 45.8)
    assert "over its bound of 60 s" in recovery_problem(node, 61.0, 60.0)


def test_the_plan_of_a_one_job_world_leaves_out_only_what_needs_the_second_job() -> None:
    """The test command's campaign runs fleet-pings alone unless STREAMOPS_CHAOS_TWO_JOBS=1:
    then ``both-drivers-node`` has no world, and every other short kind still runs."""
    from support.chaos.catalogue import CATALOGUE
    from support.chaos.judge import covering_plan

    one, two = (SimpleNamespace(second_job=flag, standby="none", store_link=None,
                                airflow_port=0) for flag in (False, True))  # fmt: skip
    alone = covering_plan(CATALOGUE, 1, 0, one)  # type: ignore[arg-type]
    beside = covering_plan(CATALOGUE, 1, 0, two)  # type: ignore[arg-type]
    assert "both-drivers-node" not in alone and "both-drivers-node" in beside
    assert set(beside) - set(alone) == {"both-drivers-node"}
    assert {"worker-jvm", "two-hands", "node"} <= set(alone)
