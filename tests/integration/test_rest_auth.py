"""The master's REST server with a token required (``rest_auth: on``), on a master of its own
(no worker: nothing is run): the project's client gets answers, a request without the token
or signed with another key is refused with a clear error, and the key is on no command line.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from streamops.cluster import ClusterProfile, LocalCluster, MasterClient, rest_auth
from streamops.exceptions import ClusterError
from streamops.settings import Settings

pytestmark = pytest.mark.integration


def test_the_rest_server_requires_the_token(
    tmp_path: Path, free_port: Callable[[], int]
) -> None:
    settings = Settings.from_env(
        {}, state_root=str(tmp_path / "state"), master_port=free_port(),
        master_webui_port=free_port(), rest_port=free_port(), rest_auth="on",
    )  # fmt: skip
    cluster = LocalCluster(settings, ClusterProfile.from_mapping({"workers": 0}))
    try:
        cluster.start(workers=0)
        status = MasterClient(settings).submission_status("driver-20990101000000-0000")
        assert not status.found  # answered: the token was accepted
        url = f"{settings.rest_url}/v1/submissions/status/driver-20990101000000-0000"
        assert requests.get(url, timeout=10).status_code in (401, 403)
        other = settings.model_copy(update={"state_root": tmp_path / "x"})
        rest_auth.ensure_secret(other)  # another key: another cluster's
        with pytest.raises(ClusterError, match="refused the request"):
            MasterClient(other).submission_status("driver-20990101000000-0000")
        key = rest_auth.ensure_secret(settings)
        ps = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
        assert key not in ps
        assert key not in (settings.layout.logs_dir / "master.log").read_text()
    finally:
        cluster.stop()
        shutil.rmtree(tmp_path / "x", ignore_errors=True)
