"""Fixtures shared by every test: free loopback ports, the session's PostgreSQL and a throwaway
database in it (``support.postgres``), the session's one real Spark cluster and Airflow's
metadata database; under ``STREAMOPS_REQUIRE_ALL=1`` a skip fails (``support.require_all``).
When the session ends, the secrets sweep (``support.secrets_sweep``) searches every file of
the session's temporary directory (every state root, log, work dir) and Airflow's home for
the keys and tokens, and fails the run on a finding.

Airflow reads its configuration when it is first imported, so this module points it at a
throwaway ``AIRFLOW_HOME`` (SQLite metadata, the project's ``dags/`` and ``plugins/``) before
any test can import it. Nothing here starts a process until a test asks for the fixture.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from support.airflow_env import configure_airflow_env
from support.secrets_sweep import fail_session_on_leaks

_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="streamops-airflow-"))
configure_airflow_env(os.environ, _AIRFLOW_HOME)

# The drills' deliberately broken job versions (``drill_jobs``) are test code: importable here
# and, through PYTHONPATH (which the session's cluster hands on to its drivers and Python
# workers, and the planner to its describe), wherever a job runs.
_JOBS = str(Path(__file__).resolve().parent / "jobs")
if _JOBS not in sys.path:
    sys.path.append(_JOBS)
_PATH = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
if _JOBS not in _PATH:
    os.environ["PYTHONPATH"] = os.pathsep.join([_JOBS, *_PATH])


@pytest.hookimpl(trylast=True)  # after the session's fixtures (cluster, Airflow) stopped
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # no key or token in any file of the session's state roots, logs and Airflow's home
    factory = getattr(session.config, "_tmp_path_factory", None)
    roots = [_AIRFLOW_HOME] + ([factory.getbasetemp()] if factory is not None else [])
    try:
        fail_session_on_leaks(session, roots)
    finally:
        shutil.rmtree(_AIRFLOW_HOME, ignore_errors=True)
    # Py4J closes its gateway connections when the interpreter collects them, after pytest
    # has closed the streams its log handlers write to: its INFO line would end the run with
    # a "Logging error" traceback
    logging.getLogger("py4j").setLevel(logging.WARNING)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def free_port() -> Callable[[], int]:
    """A function returning a currently free TCP port on 127.0.0.1."""
    return _free_port


pytest_plugins = [
    "support.cluster_fixture",
    "support.airflow_fixture",
    "support.postgres",
    "support.require_all",
    "pytester",
]
