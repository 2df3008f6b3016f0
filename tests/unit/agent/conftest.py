"""A real agent (uvicorn on a free loopback port, in a thread) over a fake node daemon."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI
from support.agent_fake import TOKEN, AgentUnderTest, FakeDaemon, make_settings

from streamops.agent.server import create_app
from streamops.agent.supervisor import RestartPolicy, Supervisor
from streamops.cluster.releases import ReleaseStore
from streamops.settings import Settings


@pytest.fixture
def agent(tmp_path: Path, free_port: Callable[[], int]) -> Iterator[AgentUnderTest]:
    settings = make_settings(tmp_path)
    daemon = FakeDaemon()
    yield from _serve(create_app(daemon, ReleaseStore(settings), TOKEN), daemon, settings,
                      free_port())


@pytest.fixture
def supervised_agent(
    tmp_path: Path, free_port: Callable[[], int]
) -> Iterator[tuple[AgentUnderTest, Supervisor]]:
    """An agent whose supervisor is looked at by the test (no thread)."""
    settings = make_settings(tmp_path)
    daemon = FakeDaemon()
    sup = Supervisor(daemon, settings.layout, RestartPolicy())
    app = create_app(daemon, ReleaseStore(settings), TOKEN, supervisor=sup)
    for served in _serve(app, daemon, settings, free_port()):
        yield served, sup


def _serve(app: FastAPI, daemon: FakeDaemon, settings: Settings, port: int
           ) -> Iterator[AgentUnderTest]:  # fmt: skip
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "agent did not start"
        time.sleep(0.05)
    try:
        yield AgentUnderTest(f"http://127.0.0.1:{port}", daemon, settings)
    finally:
        server.should_exit = True
        thread.join(10)
