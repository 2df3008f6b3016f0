"""The REST server's token: when it is required, the key's file, the header, the master's
command line (never the key), and the client's error on a refused request."""

from __future__ import annotations

import base64
import stat
import time
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
    claims = jwt.decode(header.split()[1], raw, algorithms=["HS256"])
    assert claims["sub"] == "streamops"
    assert claims["exp"] - claims["iat"] == s.rest_token_lifetime == 600  # 10 min by default
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(header.split()[1], b"x" * 32, algorithms=["HS256"])
    assert rest_auth.headers(settings(tmp_path / "other")) == {}  # loopback, auto


def test_a_token_expires_after_its_lifetime(tmp_path: Path) -> None:
    s = settings(tmp_path, rest_auth="on", rest_token_lifetime=30)
    key = rest_auth.ensure_secret(s)
    raw = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
    token = rest_auth.token(s, now=1_000_000.0)
    claims = jwt.decode(token, raw, algorithms=["HS256"], options={"verify_exp": False})
    assert (claims["iat"], claims["exp"]) == (1_000_000, 1_000_030)
    with pytest.raises(jwt.ExpiredSignatureError):  # replayed long after: refused
        jwt.decode(token, raw, algorithms=["HS256"])
    fresh = rest_auth.token(s)
    assert jwt.decode(fresh, raw, algorithms=["HS256"])["exp"] > time.time()
    with pytest.raises(ConfigError, match="STREAMOPS_REST_TOKEN_LIFETIME"):
        Settings.from_env({"STREAMOPS_REST_TOKEN_LIFETIME": "0"})


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
    # the jar of the project's filter is not built in this config dir: Spark's filter, which
    # still requires an expiry
    assert f"spark.{rest_auth.SPARK_FILTER}.param.secretKey={key}" in text
    assert f"spark.{rest_auth.SPARK_FILTER}.param.requireExpiration=true" in text
    assert "spark.master.rest.filters=org.apache.spark.ui.JWSFilter" in text
    assert "spark.ui.killEnabled false" in text  # the defaults the file replaces
    assert key not in " ".join(spec.argv) and key not in str(spec.env)
    plain = daemons.master_spec(settings(tmp_path / "lo"), ClusterProfile(), install)
    assert "--properties-file" not in plain.argv
    assert "streamops-auth" not in plain.env["SPARK_DIST_CLASSPATH"]


def test_the_master_loads_the_projects_filter_when_its_jar_is_built(tmp_path: Path) -> None:
    s = settings(tmp_path, master_host="10.0.0.5")
    rest_auth.filter_jar(s).parent.mkdir(parents=True)
    rest_auth.filter_jar(s).write_bytes(b"PK")
    install = SparkInstall(home=tmp_path / "spark", version="4.3.0", scala_version="2.13")
    spec = daemons.master_spec(s, ClusterProfile(), install)
    text = Path(spec.argv[-1]).read_text()
    assert "spark.master.rest.filters=streamops.auth.TokenFilter" in text
    assert "requireExpiration" not in text
    assert spec.env["SPARK_DIST_CLASSPATH"].endswith(f":{rest_auth.filter_jar(s)}")


class Refusing:
    """Answers like Spark's JWSFilter (403) or the project's filter (401, a reason) without a
    valid token."""

    def __init__(self, status: int = 403, body: bytes = b"<html>Forbidden</html>") -> None:
        self.headers: dict[str, str] = {}
        self.status, self.body = status, body

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        self.headers = dict(kwargs.get("headers") or {})
        response = requests.Response()
        response.status_code = self.status
        response._content = self.body
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


def test_the_client_repeats_the_servers_reason(tmp_path: Path) -> None:
    s = settings(tmp_path, rest_auth="on")
    rest_auth.ensure_secret(s)
    http = Refusing(401, b"bearer token expired at 2026-01-01T00:00:00Z (now ...)\nmore")
    client = MasterClient(s, session=http)  # type: ignore[arg-type]
    with pytest.raises(ClusterError, match=r"server says: bearer token expired at 2026") as e:
        client.submission_status("driver-1")
    assert "more" not in str(e.value)
