"""A real agent (uvicorn on a free loopback port, in a thread) over a fake node daemon."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import uvicorn
from support.agent_fake import TOKEN, AgentUnderTest, FakeDaemon, make_settings

from streamops.agent.server import create_app
from streamops.cluster.releases import ReleaseStore


@pytest.fixture
def agent(tmp_path: Path, free_port: Callable[[], int]) -> Iterator[AgentUnderTest]:
    settings = make_settings(tmp_path)
    daemon = FakeDaemon()
    app = create_app(daemon, ReleaseStore(settings), TOKEN)
    port = free_port()
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
