"""The real ``streamops`` command line in a process of its own, on the fake cluster of
:mod:`support.restart_fake` (the registry, the savepoints, the submitter), so that two
operators' terminals can race on one job without Spark. Only the port is faked: the CLI,
the procedures, the intent records and the job's operation lease are the real ones, on the
state root given.

``python tests/support/op_lease_cli.py STATE_ROOT GATE [--stopped] -- VERB ARGS...``

The fake submitter blocks until the file ``GATE`` exists (the operation sits in its submit
step for as long as the test wants), after writing ``GATE.reached``; ``--stopped``: the
job's driver is not running (an earlier operator already stopped it).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.restart_fake import install, settings_at  # noqa: E402

from streamops.cli import main  # noqa: E402
from streamops.world import port as world  # noqa: E402


def run(argv: list[str]) -> int:
    split = argv.index("--")
    ours, verb = argv[:split], argv[split + 1 :]
    root, gate = Path(ours[0]), Path(ours[1])
    cluster = install(settings_at(root))
    if "--stopped" in ours:
        cluster.driver = None
    start = cluster.start

    def blocked_start(*args: Any, **kwargs: Any) -> str:
        gate.with_suffix(".reached").write_text("at submit\n", encoding="utf-8")
        while not gate.exists():
            time.sleep(0.05)
        return start(*args, **kwargs)

    cluster.start = blocked_start  # type: ignore[method-assign]
    world.real_operations = lambda settings: cluster.ops  # type: ignore[assignment]
    return main(["--state-root", str(root), *verb])


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
