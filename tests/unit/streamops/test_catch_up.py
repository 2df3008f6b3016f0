"""Changes timed to the backlog: the catch-up prediction (pure), the gate of the upgrade and
the restart through the fake port, and ``scale --advise``."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support import upgrade_fake
from support.upgrade_fake import V2, FakeCluster, FakeRegistry

from streamops.cli.scale_cmds import run_advise
from streamops.exceptions import JobError, UpgradeRefused
from streamops.procedures import upgrade_steps as steps
from streamops.procedures.backlog_gate import recent_gap
from streamops.procedures.catch_up import Measured, StageRates, advise, longest_pause, predict
from streamops.procedures.restart import hold_restart, timed_to_backlog
from streamops.spec import JobSpec, load_spec, spec_from_dict
from streamops.state.job_status import StageStatus
from streamops.world.operations import BacklogSeen, Operations

JOB = upgrade_fake.JOB
SLO = {"objective": "10 seconds", "allowed_breach": "60 seconds", "max_wait": "0 s"}


def measured(backlog: int = 1000, cap: float = 100.0, rate: float = 50.0,
             gap: float = 30.0) -> Measured:  # fmt: skip
    return Measured(gap, "its last upgrade", backlog, (StageRates("vehicles", rate, cap),))


# --- the formula ------------------------------------------------------------------------
def test_prediction_terms_on_given_numbers() -> None:
    p = predict(measured(), objective_s=10, allowed_breach_s=60)
    # now 1000/100; peak now + gap; pile 1000 + 50*30 drains at 100-50
    assert (p.now_s, p.peak_s, p.catch_up_s) == (10.0, 40.0, 50.0)
    assert p.breach_s == pytest.approx(30 + (2500 - 1000) / 50)  # 60: the gap, then draining
    assert p.ok  # 60 s allowed
    p = predict(measured(), objective_s=20, allowed_breach_s=25)
    assert p.breach_s == pytest.approx((30 - 10) + (2500 - 2000) / 50)  # 30
    assert not p.ok
    assert predict(measured(backlog=0, gap=5), 10, 0).breach_s == 0  # peak 5 s: within
    never = predict(measured(cap=50, rate=60), 10, 60)
    assert math.isinf(never.breach_s) and math.isinf(never.catch_up_s) and not never.ok
    assert "ever (processing does not outpace the input)" in never.render()


def test_the_slowest_stage_drains_the_job() -> None:
    m = Measured(10, "assumed", 0, (StageRates("a", 50, 500), StageRates("b", 50, 60)))
    assert m.bottleneck == StageRates("b", 50, 60)
    no_rates = Measured(10, "assumed", 0, ())
    assert predict(no_rates, 1, 0).ok  # nothing is predicted without rates: no wait


def test_longest_pause_is_the_benchmarks_gap() -> None:
    times = [0, 2, 4, 6, 21, 23, 25]
    assert longest_pause(times, since=5, until=20) == 15  # 6 → 21
    assert longest_pause(times, since=5, until=30) is None  # no batch after: not closed


def test_advice_terms_after_flinks_formula() -> None:
    m = Measured(60, "its last restart", 18_000, (StageRates("vehicles", 70, 200),))
    a = advise(m, cores_now=4, cores_per_worker=2)
    assert a is not None
    assert (a.backlog_term, a.rate_term, a.per_core) == (10.0, 100.0, 50.0)
    assert a.restart_term == pytest.approx(70 * 60 / 1800)
    assert (a.cores, a.workers, a.partitions) == (3, 2, 4)  # ceil(112.3 / 50) cores
    line = a.lines(m, catch_up_s=1800, utilization=0.7)[1]
    assert "backlog / catch-up + rate * restart / catch-up + rate / utilization" in line
    assert "10.0 + 2.3 + 100.0 = 112.3 rows/s" in line


# --- the gate, through the fake port -----------------------------------------------------
@dataclass
class Backlog:
    rows: list[int]  # one per look; the last repeats
    calls: int = 0

    def of(self, view: Any) -> BacklogSeen:
        self.calls += 1
        return BacklogSeen(self.rows[min(self.calls, len(self.rows)) - 1], ("alpha: in files",))


@dataclass
class Clock:
    t: float = 1000.0
    slept: list[float] = field(default_factory=list)

    def time(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


class RatedRegistry(FakeRegistry):
    """The fake registry, its job's stage reporting rates, its master two 4-core workers."""

    views = 0

    def view(self, job: str) -> Any:
        RatedRegistry.views += 1
        view = super().view(job)
        view.stages["vehicles"] = StageStatus(input_rows_per_second=50.0,
                                              processed_rows_per_second=60.0)  # fmt: skip
        return view

    @property
    def client(self) -> Any:
        worker = {"state": "ALIVE", "cores": 4, "memory": 4096, "host": "h", "port": 1}
        return SimpleNamespace(state=lambda: {"workers": [worker, worker]})


def port(cluster: FakeCluster, backlog: Backlog, clock: Clock | None = None) -> Operations:
    RatedRegistry.views = 0
    return replace(cluster.ops, registry=RatedRegistry(cluster), backlog=backlog,
                   clock=clock or Clock())  # fmt: skip


def with_slo(spec: JobSpec, **slo: str) -> JobSpec:
    return spec_from_dict({**spec.model_dump(mode="json"), "latency_slo": {**SLO, **slo}})


def test_a_deferred_upgrade_is_refused_with_its_numbers(tmp_path: Path) -> None:
    cluster = upgrade_fake.install(tmp_path)
    ops = port(cluster, Backlog([100_000]))
    with pytest.raises(UpgradeRefused) as refused:
        steps.plan(ops, JOB, "cli", with_slo(load_spec(V2)))
    text = str(refused.value)
    assert "upgrade of fleet-pings refused, nothing was stopped" in text
    assert "gap 30.0s (assumed: no measured run), backlog 100000 rows" in text
    assert "processing 60.0 rows/s vs input 50.0 rows/s (stage vehicles)" in text
    assert "peak 1696.7s, above the objective 10s for" in text and "(allowed 60s)" in text
    assert "--now" in text
    assert cluster.calls == [] and cluster.live == {"driver-old"}  # v1 untouched
    assert steps.load_intent(ops, JOB) is None


def test_now_overrides_the_gate(tmp_path: Path) -> None:
    cluster = upgrade_fake.install(tmp_path)
    backlog = Backlog([100_000])
    intent = steps.plan(port(cluster, backlog), JOB, "cli", with_slo(load_spec(V2)), now=True)
    assert intent.phase == "planned" and backlog.calls == 0


def test_an_upgrade_waits_for_the_backlog_then_goes(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    cluster, clock = upgrade_fake.install(tmp_path), Clock()
    ops = port(cluster, Backlog([100_000, 0]), clock)
    with caplog.at_level(logging.INFO, "streamops.procedures.backlog_gate"):
        intent = steps.plan(ops, JOB, "cli", with_slo(load_spec(V2), max_wait="1 minute",
                                                      allowed_breach="2 minutes"))
    assert intent.phase == "planned" and clock.slept == [10.0]
    assert "waiting for the backlog (0s of 1 minute)" in caplog.text


def test_a_job_without_slo_goes_straight_through(tmp_path: Path) -> None:
    cluster = upgrade_fake.install(tmp_path)
    backlog, clock = Backlog([100_000]), Clock()
    ops = port(cluster, backlog, clock)
    intent = steps.plan(ops, JOB, "cli", load_spec(V2))
    assert intent.phase == "planned"
    assert backlog.calls == 0 and clock.slept == [] and RatedRegistry.views == 2  # the plan's own


def test_a_restart_is_refused_too(tmp_path: Path) -> None:
    cluster = upgrade_fake.install(tmp_path)
    cluster.old = with_slo(cluster.old)
    with pytest.raises(JobError, match="restart of fleet-pings refused, nothing was stopped"):
        hold_restart(port(cluster, Backlog([100_000])), JOB, "cli", now=False)
    hold_restart(port(cluster, Backlog([100_000])), JOB, "cli", now=True)


def test_the_gap_is_the_last_runs_longest_pause(tmp_path: Path) -> None:
    layout = upgrade_fake.install(tmp_path).settings.layout
    record = layout.intent_record(JOB, "upgrade")
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"times": {"plan": 100.0, "finish": 130.0}}))
    history = layout.status_history(JOB)
    history.write_text("".join(json.dumps({"last_batch_at": t}) + "\n"
                               for t in (90, 98, 112.5, 131, 133)))  # fmt: skip
    assert recent_gap(layout, JOB, "upgrade") == (18.5, "its last upgrade")  # 112.5 → 131
    assert recent_gap(layout, JOB, "restart")[1] == "assumed: no measured run"


def test_a_spec_without_slo_dumps_as_before() -> None:
    spec = load_spec(V2)
    assert "latency_slo" not in spec.model_dump(mode="json")
    assert with_slo(spec).latency_slo.allowed_breach_s == 60  # type: ignore[union-attr]


def test_scale_advise_prints_its_terms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = upgrade_fake.install(tmp_path)
    assert run_advise(JOB, port(cluster, Backlog([90_000]))) == 0
    out = capsys.readouterr().out
    assert "scale advice for fleet-pings:" in out
    assert "backlog 90000 rows" in out
    assert "= 50.0 + 0.8 + 71.4 = 122.3 rows/s (catch-up 1800s, utilization 0.7)" in out
    assert "per core: 30.0 rows/s → 5 cores, 2 workers, 8 state partitions" in out
    assert "now: 2 cores (spark.cores.max), 2 workers of 4 cores" in out


def test_a_restart_is_timed_only_for_a_job_with_slo(tmp_path: Path) -> None:
    cluster = upgrade_fake.install(tmp_path)
    assert not timed_to_backlog(cluster.ops, JOB)
    cluster.old = with_slo(cluster.old)
    assert timed_to_backlog(cluster.ops, JOB)
