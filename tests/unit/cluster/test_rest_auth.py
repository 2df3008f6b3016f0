"""The REST server's token: when it is required, the key's file, the header, the master's
command line (never the key), and the client's error on a refused request."""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

import jwt
import pytest
import requests

from streamops.cluster import daemons, rest_auth
from streamops.cluster.client import MasterClient
from streamops.cluster.profile import ClusterProfile
from streamops.cluster.spark_home import SparkInstall
from streamops.exceptions import ClusterError, ConfigError
from streamops.settings import Settings


def settings(tmp_path: Path, **changes: Any) -> Settings:
    config = tmp_path / "config"
    (config / "spark").mkdir(parents=True, exist_ok=True)
    (config / "spark" / "spark-defaults.conf").write_text("spark.ui.killEnabled false\n")
    return Settings.from_env({}, state_root=str(tmp_path / "state"), config_dir=str(config),
                             **changes)  # fmt: skip


@pytest.mark.parametrize(
    ("host", "mode", "required"),
    [("127.0.0.1", "auto", False), ("localhost", "auto", False), ("::1", "auto", False),
     ("spark-master", "auto", True), ("10.0.0.5", "auto", True), ("127.0.0.1", "on", True),
     ("10.0.0.5", "off", False)],
)  # fmt: skip
def test_required_beyond_loopback(tmp_path: Path, host: str, mode: str, required: bool) -> None:
    assert rest_auth.enabled(settings(tmp_path, master_host=host, rest_auth=mode)) is required


def test_the_key_is_made_once_private_and_signs_the_header(tmp_path: Path) -> None:
    s = settings(tmp_path, rest_auth="on")
    key = rest_auth.ensure_secret(s)
    path = rest_auth.secret_file(s)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert rest_auth.ensure_secret(s) == key  # kept
    assert len(base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))) == 32
    header = rest_auth.headers(s)["Authorization"]
    assert header.startswith("Bearer ")
    raw = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
    assert jwt.decode(header.split()[1], raw, algorithms=["HS256"])["sub"] == "streamops"
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(header.split()[1], b"x" * 32, algorithms=["HS256"])
    assert rest_auth.headers(settings(tmp_path / "other")) == {}  # loopback, auto


def test_a_client_without_the_key_says_where_it_is(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="rest-secret does not exist"):
        rest_auth.headers(settings(tmp_path, rest_auth="on"))


def test_the_master_reads_the_key_from_a_file_never_its_command_line(tmp_path: Path) -> None:
    s = settings(tmp_path, master_host="10.0.0.5")
    install = SparkInstall(home=tmp_path / "spark", version="4.3.0", scala_version="2.13")
    spec = daemons.master_spec(s, ClusterProfile(), install)
    key = rest_auth.ensure_secret(s)
    assert spec.argv[-2] == "--properties-file"
    props = Path(spec.argv[-1])
    assert stat.S_IMODE(props.stat().st_mode) == 0o600
    text = props.read_text()
    assert f"spark.{rest_auth.FILTER}.param.secretKey={key}" in text
    assert "spark.master.rest.filters=org.apache.spark.ui.JWSFilter" in text
    assert "spark.ui.killEnabled false" in text  # the defaults the file replaces
    assert key not in " ".join(spec.argv) and key not in str(spec.env)
    plain = daemons.master_spec(settings(tmp_path / "lo"), ClusterProfile(), install)
    assert "--properties-file" not in plain.argv


class Refusing:
    """Answers like Spark's JWSFilter without a valid token."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        self.headers = dict(kwargs.get("headers") or {})
        response = requests.Response()
        response.status_code = 403
        response._content = b"<html>Forbidden</html>"
        return response


def test_the_client_sends_the_token_and_names_a_refusal(tmp_path: Path) -> None:
    s = settings(tmp_path, rest_auth="on")
    rest_auth.ensure_secret(s)
    http = Refusing()
    client = MasterClient(s, session=http)  # type: ignore[arg-type]
    with pytest.raises(ClusterError, match=r"refused the request \(HTTP 403\): it requires a"):
        client.submission_status("driver-1")
    assert http.headers["Authorization"].startswith("Bearer ")
    with pytest.raises(ClusterError, match="without JSON"):  # the web UI needs no token
        client.state()
    assert "Authorization" not in http.headers
