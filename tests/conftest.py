"""Fixtures shared by every test: free loopback ports and a throwaway PostgreSQL database."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest
from support.postgres import throwaway_database


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def free_port() -> Callable[[], int]:
    """A function returning a currently free TCP port on 127.0.0.1."""
    return _free_port


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a fresh PostgreSQL database, dropped after the session.

    Skipped when no server is reachable, except under CI (CI=true), where it must be.
    """
    with throwaway_database("streamops_it") as url:
        try:
            yield url
        finally:
            from spark_jobs.sinks import store

            engine = store._engines.pop(url, None)
            if engine is not None:
                engine.dispose()
