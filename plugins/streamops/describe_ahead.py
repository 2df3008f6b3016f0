"""Describe ahead: the versions a running job may be upgraded to are described in the
background once ``streamops up`` has the job running, so that the first ``plan-upgrade`` (or the
upgrade DAG's ``plan`` task) answers from the description cache in about a second instead of
starting a local Spark for twenty.

The candidates are the specs of ``<config>/jobs/`` whose job runs at another version. The run is
a service of the stack (``describe-ahead``, so ``down`` stops it) at the lowest CPU priority:
it takes only what the running job leaves, and ends when every candidate is described. A spec
that fails to describe is logged and left for the plan to report.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from streamops.describe_stages import describe_spec_stages
from streamops.exceptions import StreamopsError
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.spec import load_spec

log = logging.getLogger("streamops.describe_ahead")
SERVICE = "describe-ahead"


def candidates(settings: Settings, live: dict[str, str | None]) -> list[Path]:
    """Spec files of ``<config>/jobs`` whose job is in ``live`` ({job: running version}) at
    another version."""
    out = []
    for path in sorted((settings.config_dir / "jobs").glob("*.yaml")):
        try:
            spec = load_spec(path)
        except (StreamopsError, OSError, ValueError) as exc:
            log.warning("not describing %s ahead: %s", path, exc)
            continue
        if spec.name in live and live[spec.name] != spec.version:
            out.append(path)
    return out


def command(settings: Settings) -> list[str]:
    return [sys.executable, "-m", "streamops.describe_ahead",
            "--state-root", str(settings.state_root)]  # fmt: skip


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    os.nice(19)
    root = argv[argv.index("--state-root") + 1] if "--state-root" in argv else None
    settings = Settings.from_env(dict(os.environ), state_root=root)
    try:
        live = {v.name: v.version for v in JobRegistry(settings).list() if v.is_live}
    except StreamopsError as exc:
        log.warning("nothing described ahead: %s", exc)
        return 0
    for path in candidates(settings, live):
        spec = load_spec(path)
        try:
            describe_spec_stages(spec, settings)
            log.info("%s v%s described ahead (%s)", spec.name, spec.version, path)
        except StreamopsError as exc:
            log.warning("%s v%s could not be described ahead: %s", spec.name, spec.version, exc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
