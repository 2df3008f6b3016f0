"""Describing a job version's stages: ``spark_jobs.describe_cli`` in a local Spark, in a
subprocess, so that the ops side never imports pyspark. What it prints is kept by
:mod:`streamops.describe_cache`; the upgrade planner (:mod:`streamops.planner`) compares the
descriptors.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
from typing import Any

from streamops import describe_cache
from streamops.exceptions import JobError
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import JobSpec, encode_spec

log = logging.getLogger(__name__)

_STDERR_TAIL = 25


def describe_spec_stages(
    spec: JobSpec, settings: Settings, timeout: float = 180.0
) -> dict[str, dict[str, Any]]:
    """Stage descriptors of ``spec``, built in a local Spark (a subprocess); no query starts.
    A description made before for the same spec and code is reused (:mod:`describe_cache`).

    Runs ``python -m spark_jobs.describe_cli`` with the Python of the jobs. Raises
    :class:`~streamops.exceptions.JobError` with the end of its stderr when it fails.
    """
    known = describe_cache.get(settings, spec)
    if known is not None:
        return known
    argv = [
        settings.python, "-m", "spark_jobs.describe_cli",
        "--spec-b64", encode_spec(spec), "--state-root", str(settings.state_root),
    ]  # fmt: skip
    env = dict(os.environ)
    paths = [str(PROJECT_ROOT), str(PROJECT_ROOT / "plugins")]
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH")] if p])
    log.info("describing the stages of %s v%s (local Spark, no query)", spec.name, spec.version)
    stdout, stderr, code = _run(argv, env, timeout, f"{spec.name} v{spec.version}")
    if code != 0:
        raise JobError(
            f"describing the stages of {spec.name} v{spec.version} failed (exit {code}):\n"
            + _tail(stderr)
        )
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise JobError(
            f"describing {spec.name} v{spec.version} printed no JSON ({exc}):\n{_tail(stderr)}"
        ) from exc
    stages = doc.get("stages") if isinstance(doc, dict) else None
    if not isinstance(stages, dict) or doc.get("job") != spec.name:
        raise JobError(f"describing {spec.name} v{spec.version} printed an unexpected document")
    log.info("job %s v%s: stages %s", spec.name, spec.version, ", ".join(stages) or "none")
    describe_cache.put(settings, spec, stages)
    return stages


def _run(argv: list[str], env: dict[str, str], timeout: float, what: str) -> tuple[str, str, int]:
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv from settings and a spec token, no shell
            argv, cwd=PROJECT_ROOT, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        raise JobError(f"cannot run {argv[0]} to describe {what}: {exc.strerror}") from exc
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        with contextlib.suppress(ProcessLookupError):  # its own session: the JVM goes too
            os.killpg(proc.pid, signal.SIGKILL)
        _, stderr = proc.communicate()
        raise JobError(
            f"describing {what} took longer than {timeout:g}s:\n{_tail(stderr)}"
        ) from exc
    return stdout, stderr, proc.returncode


def _tail(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return "\n".join(lines[-_STDERR_TAIL:]) or "(no output on stderr)"
