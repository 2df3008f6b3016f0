"""Operators at their terminals: real ``streamops`` processes (:mod:`support.op_lease_cli`) on
one state root, each on its own fake cluster, whose submit step blocks until the test opens
the gate."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from streamops.settings import PROJECT_ROOT

SCRIPT = Path(__file__).with_name("op_lease_cli.py")


@dataclass
class Operator:
    proc: subprocess.Popen[str]
    gate: Path
    err: Path  # the terminal's stderr, as it is written
    started: float = field(default_factory=time.monotonic)

    def wait_at_submit(self, timeout: float = 30.0) -> None:
        """Until the operation sits in its (blocked) submit step, holding the job."""
        deadline = time.monotonic() + timeout
        while not self.gate.with_suffix(".reached").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.communicate(timeout=5)
                raise AssertionError("operator ended before its submit step: "
                                     f"{self.err.read_text(encoding='utf-8')}")  # fmt: skip
            time.sleep(0.02)

    def wait_said(self, words: str, timeout: float = 30.0) -> None:
        """Until the terminal's stderr says ``words`` (e.g. that it queues)."""
        deadline = time.monotonic() + timeout
        while words not in self.err.read_text(encoding="utf-8"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"operator did not say {words!r}: "
                                     f"{self.err.read_text(encoding='utf-8')}")  # fmt: skip
            time.sleep(0.05)

    def finish(self, timeout: float = 60.0) -> tuple[int, str]:
        """Open the gate; the exit code and the terminal's stderr."""
        self.gate.touch()
        self.proc.communicate(timeout=timeout)
        return self.proc.returncode, self.err.read_text(encoding="utf-8")


def gate_path(root: Path, name: str) -> Path:
    return root / f"gate-{name}"


def start(root: Path, name: str, *verb: str, stopped: bool = False) -> Operator:
    """``streamops VERB...`` on ``root`` (its submit step gated by ``gate-<name>``)."""
    gate = gate_path(root, name)
    flags = ["--stopped"] if stopped else []
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    err = root / f"stderr-{name}-{time.monotonic_ns()}.txt"
    with err.open("w", encoding="utf-8") as sink:
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), str(root), str(gate), *flags, "--", *verb],
            cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=sink, text=True,
        )  # fmt: skip
    return Operator(proc, gate, err)


def run(root: Path, name: str, *verb: str, stopped: bool = False,
        timeout: float = 60.0) -> tuple[int, str, float]:  # fmt: skip
    """``streamops VERB...`` to its end, its gate open: exit code, stderr, seconds."""
    gate_path(root, name).touch()
    op = start(root, name, *verb, stopped=stopped)
    code, err = op.finish(timeout)
    return code, err, time.monotonic() - op.started


@contextmanager
def stopped_at_the_end(*operators: Operator) -> Iterator[None]:
    """Every operator's process ends with the test (killed if it still runs)."""
    try:
        yield
    finally:
        for op in operators:
            if op.proc.poll() is None:
                op.proc.kill()
                op.proc.communicate(timeout=10)
