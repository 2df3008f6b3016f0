"""The agent's supervisor: it starts its node's daemon again when it dies on a live host.

Desired state first: the daemon is kept running only after this agent started it on
request (or found it running at boot); a stop, kill or decommission request clears that
*before* it waits for the agent's operation lock, and the supervisor decides and restarts
only while holding that lock, so a deliberate stop is never undone and no two paths start
the daemon at once (every start of a node goes through its agent).

Each look (:meth:`Supervisor.look`, every ``policy.interval`` seconds on a thread): a daemon
that should run and does not is started again, the first time at once, then with backoff;
more than ``policy.limit`` restarts in ``policy.window`` seconds and the supervisor gives up
and says so. Every step is a line of the agent's log and lands in the node's supervision
record (:mod:`streamops.agent.supervision`), which ``cluster status`` and health show.
A node whose agent is gone too is a lost host: nothing restarts it here.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

from streamops.agent import supervision
from streamops.agent.supervision import Attempt, RestartPolicy, SupervisionRecord
from streamops.state.layout import StateLayout
from streamops.tracebacks import describe

log = logging.getLogger("streamops.agent")

__all__ = ["RestartPolicy", "Supervised", "Supervisor"]


class Supervised(Protocol):
    """What the supervisor needs of a node daemon (a subset of the agent's ``NodeDaemon``)."""

    node: str
    role: str

    def pid(self) -> int | None: ...

    def start(self) -> None: ...


class Supervisor:
    """Keeps ``daemon`` running while it is wanted; its record is ``<state>/cluster/
    supervision/<node>.json``. ``lock`` is the agent's one-operation-at-a-time lock."""

    def __init__(self, daemon: Supervised, layout: StateLayout, policy: RestartPolicy,
                 lock: threading.Lock | None = None, clock: Callable[[], float] = time.time,
                 agent_pid: int | None = None) -> None:  # fmt: skip
        self.daemon = daemon
        self.layout = layout
        self.policy = policy
        self.lock = lock or threading.Lock()
        self.clock = clock
        self.record = SupervisionRecord(daemon.node, daemon.role, agent_pid or os.getpid(),
                                        policy.limit, policy.window)
        self._down_since: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        return f"{self.daemon.node} ({self.daemon.role})"

    def _say(self, level: int, message: str) -> None:
        log.log(level, "agent %s: %s", self.daemon.node, message)
        self.record.said(message, self.clock())
        self._save()

    def _save(self) -> None:
        supervision.write(self.layout, self.record)

    # --- desired state ---------------------------------------------------------------
    def boot(self) -> None:
        """At agent start: a daemon already running is adopted (kept running), else the
        daemon waits for a start request."""
        pid = self.daemon.pid()
        r = self.record
        if pid is not None:
            r.keep_running, r.state, r.pid = True, "running", pid
            r.reason = "running when the agent started"
        if self.policy.limit <= 0:
            r.keep_running, r.reason = False, "supervision off (daemon_restart_limit 0)"
        if r.limit > 0 and r.keep_running:
            said = (f"supervising {self.name}: {r.reason}; restarted at most {r.limit} times "
                    f"in {r.window:g} s")
        elif r.limit > 0:
            said = (f"{self.name} does not run; supervised once started on request "
                    f"(restarted at most {r.limit} times in {r.window:g} s)")
        else:
            said = f"{self.name} not supervised: {r.reason}"
        self._say(logging.INFO, said)

    def requested(self, action: str) -> None:
        """A stop, kill or decommission request: the daemon is no longer kept running
        (called before the request waits for the lock, so no restart slips in between)."""
        if action == "start" or not self.record.keep_running:
            return
        self.record.keep_running = False
        self.record.reason = f"{action} requested"
        self.record.state = "stopped"
        self._down_since = None
        self._say(logging.INFO, f"{self.name} no longer kept running: {action} requested")

    def done(self, action: str, pid_before: int | None) -> None:
        """After a request's action, under the lock: a start makes the daemon wanted (a
        given-up supervisor starts counting afresh)."""
        if action != "start" or self.policy.limit <= 0:
            return
        r = self.record
        pid = self.daemon.pid()
        if r.keep_running and pid == pid_before and r.state == "running":
            return  # it ran already: nothing changed
        now = self.clock()
        r.keep_running, r.state, r.pid, r.gave_up_at = True, "running", pid, None
        r.counted_from = now
        self._down_since = None
        r.reason = "started on request"
        how = "was running" if pid == pid_before else "started"
        self._say(logging.INFO, f"{self.name} {how} on request (pid {pid}); supervised")

    # --- looking ---------------------------------------------------------------------
    def look(self) -> None:
        """One look at the daemon (skipped while a request holds the lock)."""
        if not self.lock.acquire(blocking=False):
            return
        try:
            self._look()
        finally:
            self.lock.release()

    def _look(self) -> None:
        r = self.record
        if not r.keep_running or r.state == "gave-up":
            return
        pid = self.daemon.pid()
        now = self.clock()
        if pid is not None:
            if r.state != "running" or pid != r.pid:
                self._say(logging.INFO, f"{self.name} runs again (pid {pid}), not started by "
                                        "this supervisor")
            r.state, r.pid, self._down_since = "running", pid, None
            return
        if self._down_since is None:
            self._down_since = now
            r.state = "down"
            self._say(logging.WARNING, f"{self.name} (pid {r.pid}) is no longer running on a "
                                       "live host; starting it again")
        recent = r.recent(now)
        if len(recent) >= r.limit:
            r.state, r.gave_up_at = "gave-up", now
            self._say(logging.ERROR, (
                f"gave up restarting {self.name}: {len(recent)} restarts in the last "
                f"{r.window:g} s (limit {r.limit}); it stays down until started again "
                f"(`streamops cluster start`, or `streamops scale --add {self.daemon.node}` "
                f"for a worker); see its log under {self.layout.logs_dir}"))
            return
        due = recent[-1].at + self.policy.delay(len(recent)) if recent else now
        if now < due:
            if r.state != "backoff":
                r.state = "backoff"
                self._say(logging.INFO, f"restart {len(recent) + 1} of {r.limit} of "
                                        f"{self.name} in {due - now:.0f} s (backoff)")
            return
        self._restart(now, len(recent) + 1)

    def _restart(self, now: float, number: int) -> None:
        r = self.record
        r.state = "restarting"
        self._save()
        try:
            self.daemon.start()
        except Exception as exc:  # counted; the next look retries after the backoff
            r.add(Attempt(now, False, None, self.clock() - (self._down_since or now),
                          describe(exc)))
            r.state = "down"
            self._say(logging.ERROR, f"restart {number} of {r.limit} of {self.name} failed: "
                                     f"{describe(exc)}")
            return
        pid = self.daemon.pid()
        took = self.clock() - (self._down_since or now)
        r.add(Attempt(now, True, pid, took))
        r.state, r.pid, self._down_since = "running", pid, None
        self._say(logging.WARNING, f"restarted {self.name} by its agent's supervisor: pid "
                                   f"{pid}, {took:.1f} s after it was seen dead (restart "
                                   f"{number} of {r.limit} in {r.window:g} s)")

    # --- the thread ------------------------------------------------------------------
    def start(self) -> None:
        """Look every ``policy.interval`` seconds on a daemon thread (no-op if off)."""
        if self.policy.limit <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=f"supervise-{self.daemon.node}",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.policy.interval):
            try:
                self.look()
            except Exception:  # never let the supervisor die silently
                log.exception("agent %s: supervisor look failed; trying again",
                              self.daemon.node)

    def stop(self, timeout: float = 2.0) -> None:
        """End the thread (at agent shutdown); the record says the agent stopped."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.record.state = "agent stopped"
        self._say(logging.INFO, f"agent stopped: {self.name} is no longer supervised")
