"""The cluster's authentication on (``rest_auth: on``), on a master of its own: the REST
server answers the project's client and refuses a request without the token or signed with
another key, with a clear error; a worker given the cluster's RPC secret registers, one
started without it is refused (``spark.authenticate``); ``spark-submit`` given the project's
properties file is let in (the master's recovery directory, where Spark keeps the secret of
such a submission, is private); no key is on a command line or in a log. A bearer token is
good until its expiry: replayed after it, tampered, or without one, it is refused with a 401
that says why.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import jwt
import pytest
import requests

from streamops.cluster import ClusterProfile, MasterClient, rest_auth, rpc_auth
from streamops.cluster.spark_home import check_spark_install
from streamops.exceptions import ClusterError
from streamops.settings import Settings
from streamops.stack.local_cluster import LocalCluster

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
        bare = requests.get(url, timeout=10)
        assert bare.status_code == 401 and "missing bearer token" in bare.text
        other = settings.model_copy(update={"state_root": tmp_path / "x"})
        rest_auth.ensure_secret(other)  # another key: another cluster's
        with pytest.raises(ClusterError, match="server says: bearer token not signed with"):
            MasterClient(other).submission_status("driver-20990101000000-0000")

        # RPC: the cluster's worker (the secret in its properties file) registers; a worker
        # started by hand without the secret is refused
        cluster.add_worker("worker-1")
        log = tmp_path / "stranger.log"
        stranger_log = log.open("wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
        stranger = subprocess.Popen(
            [str(check_spark_install().spark_class), "org.apache.spark.deploy.worker.Worker",
             "--host", "127.0.0.1", "--cores", "1", "--memory", "512m",
             "--work-dir", str(tmp_path / "stranger"), settings.master_url],
            env=env, stdout=stranger_log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while "Failed to connect to master" not in (text := log.read_text()):
                assert time.monotonic() < deadline, text[-3000:]
                time.sleep(0.5)
            assert "SASL" in text  # refused by the master's authentication
            workers = MasterClient(settings).workers()
            assert [w.state for w in workers] == ["ALIVE"], workers  # ours alone
        finally:
            os.killpg(stranger.pid, 9)
            stranger.wait()
            stranger_log.close()

        key = rest_auth.ensure_secret(settings)
        rpc = rpc_auth.secret_file(settings).read_text().strip()

        # spark-submit (the deploy DAG's RPC client) with the project's properties file is let
        # in; what the master keeps of its submission carries the secret (Spark copies the
        # client's spark.* properties into it), so the recovery directory is private
        install = check_spark_install()
        client = rpc_auth.submit_properties_file(settings)
        assert client is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
        jar = next(install.jars_dir.glob("spark-core_*.jar"))
        submit = subprocess.run(
            [str(install.home / "bin" / "spark-submit"), "--master", settings.master_url,
             "--deploy-mode", "cluster", "--conf", "spark.master.rest.enabled=false",
             "--properties-file", str(client), "--class", "streamops.NoSuchMain", str(jar)],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        said = submit.stdout + submit.stderr
        assert "successfully submitted as driver-" in said, said[-3000:]
        assert settings.layout.recovery_dir.stat().st_mode & 0o777 == 0o700
        ps = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
        assert key not in ps and rpc not in ps
        for daemon_log in settings.layout.logs_dir.glob("*.log"):
            text = daemon_log.read_text()
            assert key not in text and rpc not in text, daemon_log
    finally:
        cluster.stop()
        shutil.rmtree(tmp_path / "x", ignore_errors=True)


def test_a_token_replayed_after_its_expiry_is_refused(
    tmp_path: Path, free_port: Callable[[], int]
) -> None:
    settings = Settings.from_env(
        {}, state_root=str(tmp_path / "state"), master_port=free_port(),
        master_webui_port=free_port(), rest_port=free_port(), rest_auth="on",
        rest_token_lifetime=2,
    )  # fmt: skip
    cluster = LocalCluster(settings, ClusterProfile.from_mapping({"workers": 0}))
    url = f"{settings.rest_url}/v1/submissions/status/driver-20990101000000-0000"

    def ask(token: str) -> requests.Response:
        return requests.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=10)

    try:
        cluster.start(workers=0)
        token = rest_auth.token(settings)
        exp = jwt.decode(token, options={"verify_signature": False})["exp"]
        first = ask(token)
        assert first.status_code == 200, first.text  # before its expiry: let in
        while time.time() <= exp + 0.2:  # the edge: exp is a whole second
            time.sleep(0.1)
        replayed = ask(token)
        assert replayed.status_code == 401, replayed.text
        assert "bearer token expired at" in replayed.text, replayed.text
        assert token not in replayed.text

        head, body, sig = rest_auth.token(settings).split(".")
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        claims["exp"] += 86400  # a day more, without the key
        forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        tampered = ask(f"{head}.{forged}.{sig}")
        assert tampered.status_code == 401
        assert "not signed with this cluster's key" in tampered.text, tampered.text

        key = rest_auth.ensure_secret(settings)
        raw = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
        forever = ask(jwt.encode({"sub": "streamops"}, raw, algorithm="HS256"))
        assert forever.status_code == 401 and "without an expiry" in forever.text, forever.text
        assert not MasterClient(settings).submission_status("driver-20990101000000-0000").found
    finally:
        cluster.stop()
