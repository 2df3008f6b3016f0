"""Spark's RPC authentication (``spark.authenticate``) when the cluster is reachable beyond
loopback.

Whoever reaches the master's RPC port (7077) can register a worker or an application, and a
worker's port accepts the executors and drivers it is told to launch: code runs on the
cluster. With ``spark.authenticate`` every RPC connection between the master, the workers,
the drivers and the executors proves that both sides know a shared secret. A standalone
cluster has no way to hand one out: every node is given it. Here it is a key made once,
256 random bits, in ``<state>/cluster/rpc-secret`` (mode 0600) beside the REST server's key,
and it is on under the same setting (``STREAMOPS_REST_AUTH``: ``auto`` turns both on when
the master listens beyond loopback, ``on`` always, ``off`` never).

The secret is on no command line (``ps`` and the pid files show those):

- the master reads it from its properties file (with the REST server's key);
- a worker reads it from a properties file of its own (``--properties-file``);
- a worker hands it to the drivers and executors it launches in their environment (Spark's
  ``_SPARK_AUTH_SECRET``) and drops it from their command line; a driver's SparkContext
  still requires it in its configuration, so ``spark_jobs.main`` copies it from there
  (:data:`ENV_SECRET`);
- a submission asks for ``spark.authenticate=true`` and carries no secret;
- ``spark-submit`` (the deploy DAG's RPC client) reads it from a properties file. Its RPC
  client copies every ``spark.*`` property into the driver description it sends, which the
  master keeps in its recovery files: the recovery directory is private (mode 0700), as the
  key's own file is. (Spark 4 takes ``spark.authenticate.secret.file`` only on Kubernetes,
  and the environment variable the client would read is copied into the description too.)
"""

from __future__ import annotations

from pathlib import Path

from streamops.cluster import rest_auth
from streamops.settings import Settings

ENV_SECRET = "_SPARK_AUTH_SECRET"
"""Where a worker puts the secret for the drivers and executors it launches."""


def enabled(settings: Settings) -> bool:
    return rest_auth.enabled(settings)


def secret_file(settings: Settings) -> Path:
    return settings.layout.cluster_dir / "rpc-secret"


def daemon_properties(settings: Settings) -> dict[str, str]:
    """``spark.authenticate`` and its secret, for a daemon's properties file ({} when off)."""
    if not enabled(settings):
        return {}
    return {
        "spark.authenticate": "true",
        "spark.authenticate.secret": rest_auth.ensure_key(secret_file(settings)),
    }


def submission_properties(settings: Settings) -> dict[str, str]:
    """What a submission sets (never the secret: its driver gets that from its worker)."""
    return {"spark.authenticate": "true"} if enabled(settings) else {}


def worker_properties_file(settings: Settings, name: str) -> Path | None:
    """The properties file of worker ``name`` (the secret), or None when auth is off."""
    props = daemon_properties(settings)
    if not props:
        return None
    return rest_auth.write_properties(
        settings.layout.cluster_dir / f"{name}-auth.properties", props, settings
    )


def submit_properties_file(settings: Settings) -> Path | None:
    """The properties file of a ``spark-submit`` client (the secret), or None when off."""
    props = daemon_properties(settings)
    if not props:
        return None
    return rest_auth.write_properties(
        settings.layout.cluster_dir / "submit-auth.properties", props, settings
    )
