"""What every benchmark needs: free loopback ports, a temporary state root, a local cluster.

Benchmarks run as scripts (``python tests/perf/bench_x.py``), so this directory is on
``sys.path`` and they ``from harness import bench_cluster``.
"""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

from streamops.cluster.local import LocalCluster
from streamops.cluster.profile import ClusterProfile
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import JobSpec, load_spec


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_cluster(
    prefix: str, worker_memory: str = "3g", worker_cores: int = 4
) -> tuple[Path, Settings, LocalCluster]:
    """A fresh state root, settings on free ports, and a 2-worker cluster (not yet started).

    Four cores a worker (Spark's slots, not the machine's), as in ``config/cluster/local.yaml``:
    a warm standby then gets its executors beside the running version."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    settings = Settings.from_env(
        {}, state_root=str(root), master_port=free_port(), master_webui_port=free_port(),
        rest_port=free_port(),
    )  # fmt: skip
    profile = ClusterProfile.from_mapping(
        {"workers": 2, "worker_cores": worker_cores, "worker_memory": worker_memory,
         "worker_webui_port_base": 0}
    )  # fmt: skip
    return root, settings, LocalCluster(settings, profile)


def fleet_spec(
    file: str, job: str, trigger: str, data: dict[str, object], conf: dict[str, str] | None = None
) -> JobSpec:
    """A spec of ``config/jobs/<file>`` renamed ``job``, with ``trigger``, its args updated with
    ``data`` (where the simulators and the store are) and its conf with ``conf`` (an empty
    value drops a key)."""
    spec = load_spec(PROJECT_ROOT / "config" / "jobs" / file)
    merged = {k: v for k, v in {**spec.conf, **(conf or {})}.items() if v != ""}
    return spec.model_copy(update={"name": job, "trigger_interval": trigger,
                                   "args": {**spec.args, **data}, "conf": merged})  # fmt: skip
