"""Alerts to a real HTTP receiver on loopback: what fails is posted as Alertmanager's JSON with
since when, keeps its ``startsAt`` while it fails, and is posted once more as resolved when it
fails no more; a chat webhook gets a line per change; a receiver that does not answer costs a
run its short timeout and nothing else, and what it missed is sent again."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from support.alert_receiver import hanging, receiving, refused

from streamops import alerts
from streamops.alerts import NOTHING, Firing, Scope, Webhook, deliver
from streamops.exceptions import ConfigError
from streamops.state.layout import StateLayout

NAME = "StreamopsHealthCheckFailed"
T0 = 1_800_000_000.0
DEAD = Firing("workers", "worker worker-2 is DEAD", group="cluster")
LATE = Firing("fleet-pings/vehicles", "stage vehicles committed no batch for 312 s",
              "fleet-pings", "progress")  # fmt: skip
JOURNAL = Firing("transactions/journal:transactions", "backlog 5000 entries (limit 4500)",
                 "transactions", "sources")  # fmt: skip


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout.at(tmp_path / "state")


def test_firing_then_resolved_in_alertmanager_json(layout: StateLayout) -> None:
    with receiving() as rx:
        hook = [Webhook(rx.url)]
        deliver(layout, NAME, [DEAD, LATE], hook, now=T0, generator_url="http://af/log")
        deliver(layout, NAME, [LATE], hook, now=T0 + 300)
        deliver(layout, NAME, [], hook, now=T0 + 600)
        deliver(layout, NAME, [], hook, now=T0 + 900)  # nothing fires, nothing recovered
        first, second, third = rx.bodies
    assert rx.paths == ["/api/v2/alerts"] * 3
    dead, late = first
    assert dead == {
        "labels": {"alertname": NAME, "check": "workers", "group": "cluster", "level": "fail",
                   "severity": "critical"},
        "annotations": {"summary": f"{NAME}: cluster, check workers is fail",
                        "message": "worker worker-2 is DEAD"},
        "startsAt": "2027-01-15T08:00:00Z", "endsAt": "2027-01-15T08:15:00Z",
        "generatorURL": "http://af/log",
    }  # fmt: skip
    assert late["labels"]["job"] == "fleet-pings" and late["labels"]["check"] == LATE.check
    # still firing: sent again, since when it began; the recovered one once, with its end
    by_check = {a["labels"]["check"]: a for a in second}
    assert by_check[LATE.check]["startsAt"] == "2027-01-15T08:00:00Z"
    assert by_check["workers"]["endsAt"] == "2027-01-15T08:05:00Z"
    assert by_check[LATE.check]["endsAt"] == "2027-01-15T08:20:00Z"  # ttl ahead
    [resolved] = third
    assert resolved["labels"]["check"] == LATE.check
    assert (resolved["startsAt"], resolved["endsAt"]) == ("2027-01-15T08:00:00Z",
                                                          "2027-01-15T08:10:00Z")  # fmt: skip


def test_a_chat_webhook_gets_a_line_per_change(layout: StateLayout) -> None:
    with receiving() as rx:
        hook = [Webhook(rx.url, "text")]
        deliver(layout, NAME, [DEAD], hook, now=T0)
        deliver(layout, NAME, [DEAD], hook, now=T0 + 300)  # no change: nothing posted
        deliver(layout, NAME, [], hook, now=T0 + 600)
    assert rx.bodies == [
        {"text": f"FIRING {NAME}: cluster, check workers is fail: worker worker-2 is DEAD "
                 "(since 2027-01-15T08:00:00Z)"},
        {"text": f"RESOLVED {NAME}: cluster, check workers is fail (since "
                 "2027-01-15T08:00:00Z, ended 2027-01-15T08:10:00Z)"},
    ]  # fmt: skip


def test_only_what_a_run_judged_is_resolved(layout: StateLayout) -> None:
    with receiving() as rx:
        hook = [Webhook(rx.url)]
        deliver(layout, NAME, [DEAD, LATE, JOURNAL], hook, now=T0)
        # a run of fleet-pings alone: transactions' alert fires on, the cluster's recovered
        only = deliver(layout, NAME, [], hook, scope=Scope(jobs=frozenset({"fleet-pings"})),
                       now=T0 + 60)  # fmt: skip
        assert {a.check for a in only.resolved} == {"workers", LATE.check}
        assert [a.check for a in only.firing] == [JOURNAL.check]
        # a run that judged nothing (its task crashed) resolves nothing
        crashed = deliver(layout, NAME, [Firing("report", "boom", group="task")], hook,
                          scope=NOTHING, now=T0 + 120)  # fmt: skip
        assert crashed.resolved == [] and len(crashed.firing) == 2
        # the sources group was not judged: its alert fires on
        run = deliver(layout, NAME, [], hook, scope=Scope(groups=frozenset({"task", "cluster"})),
                      now=T0 + 180)  # fmt: skip
        assert [a.check for a in run.resolved] == ["report"]
        assert [a.check for a in run.firing] == [JOURNAL.check]


@pytest.mark.parametrize("receiver", ["hanging", "refused"])
def test_a_receiver_that_does_not_answer_costs_its_timeout_and_nothing_else(
    layout: StateLayout, receiver: str, caplog: pytest.LogCaptureFixture
) -> None:
    with hanging() as hang_url:
        url = hang_url if receiver == "hanging" else refused()
        started = time.monotonic()
        out = deliver(layout, NAME, [DEAD], [Webhook(url, timeout_s=0.5)], now=T0)
        out = deliver(layout, NAME, [], [Webhook(url, timeout_s=0.5)], now=T0 + 60)
        seconds = time.monotonic() - started
    print(f"two runs against a {receiver} receiver (timeout 0.5 s) cost {seconds:.2f} s")
    assert len(out.failed) == 1 and out.failed[0].startswith("http://127.0.0.1:")
    assert "/api/v2/alerts" not in out.failed[0]  # a chat webhook's path is its secret
    assert "did not take the alerts" in caplog.text
    # the resolved notice it missed is sent to the next receiver that answers
    with receiving() as rx:
        deliver(layout, NAME, [], [Webhook(rx.url)], now=T0 + 120)
        deliver(layout, NAME, [], [Webhook(rx.url)], now=T0 + 180)
    [[resolved]] = rx.bodies
    assert resolved["labels"]["check"] == "workers" and resolved["endsAt"] == (
        "2027-01-15T08:01:00Z")


def test_webhook_settings() -> None:
    assert alerts.webhooks_from_env({}) == []
    [hook] = alerts.webhooks_from_env({
        "STREAMOPS_ALERT_WEBHOOK_URL": "https://hooks.example.com/services/T0/B0/secret",
        "STREAMOPS_ALERT_WEBHOOK_FORMAT": "text", "STREAMOPS_ALERT_TIMEOUT_S": "1.5"})  # fmt: skip
    assert (hook.format, hook.timeout_s, hook.where) == ("text", 1.5, "https://hooks.example.com")
    for url, fmt, timeout, error in [("ftp://x", None, None, "not an http(s) URL"),
                                     ("http://x", "xml", None, "format 'xml' is not one of"),
                                     ("http://x", None, "soon", "timeout 'soon' is no number"),
                                     ("http://x", None, "0", "is not > 0")]:  # fmt: skip
        with pytest.raises(ConfigError, match=re.escape(error)):
            Webhook.of(url, fmt, timeout)


def test_a_recovery_never_sent_is_dropped_when_the_check_fails_again(layout: StateLayout) -> None:
    dead = [Webhook(refused(), timeout_s=0.5)]
    deliver(layout, NAME, [DEAD], dead, now=T0)
    missed = deliver(layout, NAME, [], dead, now=T0 + 60)  # recovered, not taken
    assert [a.check for a in missed.resolved] == ["workers"]
    with receiving() as rx:
        deliver(layout, NAME, [DEAD], [Webhook(rx.url)], now=T0 + 120)  # fails again
    [[again]] = rx.bodies
    assert again["startsAt"] == "2027-01-15T08:02:00Z"  # a new failure, not the old one
    assert again["endsAt"] > again["startsAt"]


def test_a_state_that_cannot_be_read_starts_afresh(layout: StateLayout) -> None:
    path = alerts.alerts_file(layout, NAME)
    path.parent.mkdir(parents=True)
    path.write_text("{torn")
    out = deliver(layout, NAME, [DEAD], [], now=T0)
    assert [a.check for a in out.new] == ["workers"] and out.resolved == []
