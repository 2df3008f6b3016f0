"""The shape of the embedded local cluster: how many workers, their size, their timeouts.

Loaded from ``config/cluster/local.yaml``; every field has a default, so a missing file
means "the defaults". Ports of the master come from :class:`~streamops.settings.Settings`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from streamops.exceptions import ConfigError

MEMORY_PATTERN = r"^[1-9][0-9]*[kKmMgGtT]$"

PROFILE_FILE = Path("cluster") / "local.yaml"


class ClusterProfile(BaseModel):
    """Sizes and timeouts of the local Spark standalone cluster. Immutable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workers: int = Field(default=2, ge=0, le=64, description="workers started by `start`")
    worker_cores: int = Field(default=4, ge=1, le=1024, description="cores each worker offers")
    worker_memory: str = Field(
        default="4g", pattern=MEMORY_PATTERN, description="memory each worker offers (e.g. 4g)"
    )
    max_workers: int = Field(
        default=3, ge=0, le=64,
        description="worker nodes that get an agent (spares idle until a scale-up starts them)",
    )
    jar_release: str | None = Field(
        default="r1", description="jar release activated at first start if none is active"
    )
    daemon_memory: str = Field(
        default="512m", pattern=MEMORY_PATTERN, description="heap of the master/worker JVMs"
    )
    worker_webui_port_base: int = Field(
        default=8181, ge=0, le=65535,
        description="web UI port of worker-1; worker-i uses base+i-1; 0 lets Spark pick",
    )
    start_timeout: float = Field(
        default=90.0, gt=0, description="seconds to wait for the master and workers to answer"
    )
    stop_timeout: float = Field(
        default=10.0, gt=0, description="seconds between SIGTERM and SIGKILL of a daemon"
    )
    decommission_timeout: float = Field(
        default=120.0, gt=0,
        description="seconds to wait for a worker to be DECOMMISSIONED before stopping it",
    )
    daemon_restart_limit: int = Field(
        default=5, ge=0, le=100,
        description="restarts of a dead master/worker by its node's agent within "
        "daemon_restart_window before it gives up (0: no supervision)",
    )
    daemon_restart_window: float = Field(
        default=600.0, gt=0, description="seconds over which daemon restarts are counted"
    )
    worker_cleanup_interval: int = Field(
        default=1800, ge=1, description="seconds between cleanups of old application dirs"
    )
    worker_cleanup_app_data_ttl: int = Field(
        default=7 * 24 * 3600, ge=1, description="age in seconds of application dirs to remove"
    )
    master_properties: dict[str, str] = Field(
        default_factory=dict, description="extra -D properties of the master"
    )
    worker_properties: dict[str, str] = Field(
        default_factory=dict, description="extra -D properties of every worker"
    )

    @field_validator("master_properties", "worker_properties")
    @classmethod
    def _spark_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not key.startswith("spark.") or any(c.isspace() for c in key):
                raise ValueError(f"property {key!r} must start with 'spark.' and have no spaces")
        return value

    def worker_webui_port(self, index: int) -> int:
        """Web UI port of ``worker-<index>`` (1-based); 0 when Spark picks it."""
        if self.worker_webui_port_base == 0:
            return 0
        port = self.worker_webui_port_base + index - 1
        if port > 65535:
            raise ConfigError(
                f"worker_webui_port_base {self.worker_webui_port_base} leaves no port for "
                f"worker-{index}; lower it or set it to 0"
            )
        return port

    @classmethod
    def from_mapping(cls, data: dict[str, Any], source: str = "cluster profile") -> ClusterProfile:
        try:
            return cls(**data)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "?"
            raise ConfigError(
                f"{source}: invalid field {field}: {err['msg']} (got {err.get('input')!r})"
            ) from exc

    @classmethod
    def load(cls, path: Path) -> ClusterProfile:
        """Read a profile YAML file; a missing file gives the defaults."""
        if not path.is_file():
            return cls()
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of field: value at the top level")
        return cls.from_mapping(data, source=str(path))

    @classmethod
    def for_config_dir(cls, config_dir: Path) -> ClusterProfile:
        """The profile of a config directory: ``<config_dir>/cluster/local.yaml``."""
        return cls.load(config_dir / PROFILE_FILE)
