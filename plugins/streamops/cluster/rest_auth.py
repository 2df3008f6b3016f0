"""A token for the master's REST submission server when it is reachable beyond loopback.

Anyone who can reach Spark's REST server can submit a driver, which runs any code on the
cluster. A servlet filter guards it: every request must carry ``Authorization: Bearer <JWS>``,
a token signed (HS256) with the cluster's key and carrying an expiry (``exp``, the setting
``rest_token_lifetime``, 10 minutes by default; the client signs a new token per request),
so a token seen once cannot be replayed for ever. The filter is the project's
``streamops.auth.TokenFilter`` (``java/auth``, built by ``scripts/build_jars.sh``): a refused
request gets a 401 that says why (no token, another key or tampered, no expiry, expired).
Without its jar the master falls back to Spark's ``JWSFilter`` with ``requireExpiration``:
tokens still expire, but a refusal is a bare 403 "JWT Validate Fail".

``rest_auth`` (setting ``STREAMOPS_REST_AUTH``): ``auto`` (the default) turns it on when the
master listens on anything but loopback, ``on`` always, ``off`` never. The key is created
once, 256 random bits, in ``<state>/cluster/rest-secret`` (mode 0600): every process that
operates the cluster shares the state root (the compose services share its volume) and so
the key, and nothing prints it. The master reads it from a properties file of its own
(``--properties-file``), never from its command line, which ``ps`` and pid files show.
"""

from __future__ import annotations

import base64
import logging
import os
import secrets
import time
from pathlib import Path

import jwt

from streamops.exceptions import ConfigError
from streamops.settings import Settings
from streamops_contract.hosts import is_loopback

FILTER = "streamops.auth.TokenFilter"
SPARK_FILTER = "org.apache.spark.ui.JWSFilter"
"""The fallback when :data:`FILTER`'s jar is not built (403 whatever the reason)."""

log = logging.getLogger(__name__)


def enabled(settings: Settings) -> bool:
    """Whether the REST server requires a token (see the module's docstring)."""
    if settings.rest_auth == "auto":
        return not is_loopback(settings.master_host)
    return settings.rest_auth == "on"


def secret_file(settings: Settings) -> Path:
    return settings.layout.cluster_dir / "rest-secret"


def ensure_secret(settings: Settings) -> str:
    """The key (base64url), created on first use with mode 0600."""
    return ensure_key(secret_file(settings))


def ensure_key(path: Path) -> str:
    """The key in ``path`` (256 random bits, base64url), created on first use, mode 0600."""
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        key = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii").rstrip("=")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: use theirs
            return path.read_text(encoding="ascii").strip()
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(key + "\n")
    return path.read_text(encoding="ascii").strip()


def write_properties(path: Path, props: dict[str, str], settings: Settings) -> Path:
    """A properties file of mode 0600: the cluster's ``spark-defaults.conf`` (a process given
    a properties file reads no other), then ``props``."""
    defaults = settings.config_dir / "spark" / "spark-defaults.conf"
    text = defaults.read_text(encoding="utf-8") if defaults.is_file() else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text.rstrip("\n") + "\n")
        f.writelines(f"{key}={value}\n" for key, value in props.items())
    return path


def filter_jar(settings: Settings) -> Path:
    """Where ``scripts/build_jars.sh`` puts :data:`FILTER`'s jar."""
    return settings.config_dir / "jars" / "base" / "streamops-auth.jar"


def master_classpath(settings: Settings) -> str | None:
    """The filter's jar, for the master's classpath (None when no token is required or the
    jar is not built)."""
    jar = filter_jar(settings)
    return str(jar) if enabled(settings) and jar.is_file() else None


def master_properties(settings: Settings) -> dict[str, str]:
    """The filter and its key, for the master's properties file ({} when no token is
    required)."""
    if not enabled(settings):
        return {}
    key = ensure_secret(settings)
    if master_classpath(settings):
        return {"spark.master.rest.filters": FILTER, f"spark.{FILTER}.param.secretKey": key}
    log.warning(
        "the REST token filter's jar %s is not built (run scripts/build_jars.sh): the master "
        "uses Spark's %s instead; tokens still expire, but a refusal does not say why",
        filter_jar(settings), SPARK_FILTER,
    )
    return {"spark.master.rest.filters": SPARK_FILTER,
            f"spark.{SPARK_FILTER}.param.secretKey": key,
            f"spark.{SPARK_FILTER}.param.requireExpiration": "true"}  # fmt: skip


def token(settings: Settings, now: float | None = None) -> str:
    """A bearer token signed with the cluster's key, good for ``rest_token_lifetime``
    seconds from ``now`` (default: the clock)."""
    path = secret_file(settings)
    if not path.is_file():
        raise ConfigError(
            f"the master's REST server requires a token, but {path} does not exist: run this "
            "where the cluster's state root is mounted, or start the cluster first"
        )
    key = path.read_text(encoding="ascii").strip()
    raw = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
    issued = int(time.time() if now is None else now)
    claims = {"sub": "streamops", "iat": issued, "exp": issued + settings.rest_token_lifetime}
    return jwt.encode(claims, raw, algorithm="HS256")


def headers(settings: Settings) -> dict[str, str]:
    """The ``Authorization`` header for the REST server ({} when it needs none)."""
    if not enabled(settings):
        return {}
    return {"Authorization": f"Bearer {token(settings)}"}
