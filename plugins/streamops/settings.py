"""Where things are: the state root, the master's address and ports, the Python of the jobs.

Read from ``STREAMOPS_*`` environment variables (so tests and compose can move every port
and directory), with loopback defaults for the embedded local cluster.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from streamops.exceptions import ConfigError
from streamops.state.layout import StateLayout
from streamops_contract.hosts import LOOPBACK, dial_address

PROJECT_ROOT = Path(__file__).resolve().parents[2]

_ENV = {
    "state_root": "STREAMOPS_STATE_ROOT",
    "config_dir": "STREAMOPS_CONFIG_DIR",
    "master_host": "STREAMOPS_MASTER_HOST",
    "node_host": "STREAMOPS_NODE_HOST",
    "master_port": "STREAMOPS_MASTER_PORT",
    "master_webui_port": "STREAMOPS_MASTER_WEBUI_PORT",
    "rest_port": "STREAMOPS_REST_PORT",
    "dashboard_host": "STREAMOPS_DASHBOARD_HOST",
    "dashboard_port": "STREAMOPS_DASHBOARD_PORT",
    "rest_auth": "STREAMOPS_REST_AUTH",
    "rest_token_lifetime": "STREAMOPS_REST_TOKEN_LIFETIME",
    "python": "STREAMOPS_PYTHON",
}


class Settings(BaseModel):
    """Process-wide settings. Immutable; build one with :meth:`from_env`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state_root: Path = Field(default=Path("var"), description="root of all job state")
    config_dir: Path = Field(default=PROJECT_ROOT / "config")
    master_host: str = Field(default=LOOPBACK, description="the master's address (RPC, UI, REST)")
    node_host: str = Field(
        default="", description="this node's address for its daemon (default: master_host)"
    )
    master_port: int = Field(default=7077, ge=1, le=65535)
    master_webui_port: int = Field(default=8080, ge=1, le=65535)
    rest_port: int = Field(default=6066, ge=1, le=65535)
    dashboard_host: str = Field(
        default=LOOPBACK, description="where the dashboard binds (it shows every VIN)"
    )
    dashboard_port: int = Field(
        default=8050, ge=1, le=65535, description="the read-only dashboard (map, jobs, /metrics)"
    )
    python: str = Field(default=sys.executable, description="Python of drivers and executors")
    rest_auth: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="a token for the master's REST server: auto = when it is not on loopback",
    )
    rest_token_lifetime: int = Field(
        default=600, ge=1, le=86400,
        description="seconds a REST bearer token is good for (its exp claim); a token "
        "replayed later is refused",
    )  # fmt: skip
    master_patience: float = Field(
        default=0.0, ge=0,
        description="seconds a master call waits for a master that does not answer before it "
        "fails (0: at once); the procedures set it, so a master restarted in the middle of "
        "one is waited for (never exported to a child process)",
    )  # fmt: skip

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {k: env[v] for k, v in _ENV.items() if env.get(v)}
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            settings = cls(**values)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = str(err["loc"][0]) if err["loc"] else "?"
            raise ConfigError(
                f"invalid setting {field} ({_ENV.get(field, field)}): {err['msg']}"
            ) from exc
        return settings.model_copy(
            update={"state_root": settings.state_root.expanduser().resolve()}
        )

    def to_env(self) -> dict[str, str]:
        """These settings as ``STREAMOPS_*`` variables (for a child process or Airflow task)."""
        return {var: str(getattr(self, field)) for field, var in _ENV.items()}

    def to_b64(self) -> str:
        """:meth:`to_env` as one argument (base64 JSON): how a hot job's driver, which may
        submit its own standby, learns where the master is."""
        return base64.urlsafe_b64encode(json.dumps(self.to_env()).encode()).decode()

    @classmethod
    def from_b64(cls, text: str) -> Settings:
        return cls.from_env(json.loads(base64.urlsafe_b64decode(text)))

    @property
    def layout(self) -> StateLayout:
        return StateLayout.at(self.state_root)

    @property
    def local_host(self) -> str:
        """The address this node's Spark daemon binds to and advertises."""
        return self.node_host or self.master_host

    @property
    def master_url(self) -> str:
        return f"spark://{self.master_host}:{self.master_port}"

    @property
    def rest_url(self) -> str:
        return f"http://{self.master_host}:{self.rest_port}"

    @property
    def webui_url(self) -> str:
        return f"http://{self.master_host}:{self.master_webui_port}"

    @property
    def dashboard_url(self) -> str:
        """Where the dashboard is reached (``dashboard_host``: loopback unless set; on every
        interface, this node's address)."""
        return f"http://{dial_address(self.dashboard_host, self.node_host)}:{self.dashboard_port}"
