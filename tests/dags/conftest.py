"""Fixtures of the DAG tests that run without a cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.airflow_fixture import environ_set

from streamops.settings import Settings


@pytest.fixture
def settings(tmp_path: Path, free_port: Callable[[], int]) -> Iterator[Settings]:
    """Settings of a state root of the test's own and ports nothing listens on, in the
    environment the DAGs' tasks read them from."""
    settings = Settings.from_env({}, state_root=str(tmp_path / "state"),
                                 master_webui_port=free_port(), rest_port=free_port())  # fmt: skip
    with environ_set(settings.to_env()):
        yield settings
