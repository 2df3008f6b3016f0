"""Describe a job's stages without running it: ``describe_cli --spec-b64 SPEC --state-root DIR``.

Builds the job exactly as the driver does (``build(ctx)`` of the spec's entrypoint) in a
local SparkSession, starts no query, and prints one JSON document on stdout::

    {"job": "fleet-pings", "version": "2", "stages": {"<stage>": <descriptor>, ...}}

Everything else (Spark's and the job's logs) goes to stderr: file descriptor 1 is pointed
at stderr for the whole run, so neither the JVM nor Python can mix text into the JSON.
The upgrade planner runs this for the new version before anything stops.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from typing import Any

from spark_jobs.forkserver.client import SOCKET_ENV
from spark_jobs.forkserver.server import client_path
from spark_jobs.runtime.describe import describe_job_stages
from streamops_contract.hosts import LOOPBACK
from streamops_contract.spec import JobSpec, decode_spec
from streamops_contract.state.layout import StateLayout

log = logging.getLogger("spark_jobs.describe_cli")
DEFAULT_SHUFFLE_PARTITIONS = "4"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_jobs.describe_cli")
    parser.add_argument("--spec-b64", required=True, help="the job spec (streamops encode_spec)")
    parser.add_argument("--state-root", required=True)
    return parser.parse_args(argv)


def local_session(spec: JobSpec) -> Any:
    """A local[1] SparkSession on loopback, UI off, with the spec's SQL settings."""
    from pyspark.sql import SparkSession

    # the workers that create the data sources run as streamops-python: the real Python with
    # Spark's zipped PySpark off its path (compiled once, not at each worker's start)
    client = client_path()
    os.environ["PYSPARK_PYTHON"] = str(client) if client.exists() else sys.executable
    os.environ.pop(SOCKET_ENV, None)  # no fork server here
    builder = (
        SparkSession.builder.master("local[1]")
        .appName(f"describe-{spec.name}")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", LOOPBACK)
        .config("spark.driver.bindAddress", LOOPBACK)
        .config("spark.sql.shuffle.partitions", DEFAULT_SHUFFLE_PARTITIONS)
    )
    for key, value in spec.conf.items():
        if key.startswith("spark.sql."):  # what shapes the plan; not cluster resources
            builder = builder.config(key, value)
    return builder.getOrCreate()


def describe(spec: JobSpec, state_root: str) -> dict[str, Any]:
    from spark_jobs.runtime import job_code
    from spark_jobs.runtime.context import JobContext

    job_code.on_path(spec)
    module = importlib.import_module(spec.entrypoint)
    spark = local_session(spec)
    try:
        ctx = JobContext(spark, spec, StateLayout.at(state_root))
        module.build(ctx)
        stages = describe_job_stages(ctx)
    finally:
        spark.stop()
    return {"job": spec.name, "version": spec.version, "stages": stages}


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    args = parse_args(sys.argv[1:] if argv is None else argv)
    spec = decode_spec(args.spec_b64)
    sys.stdout.flush()
    result_fd = os.dup(1)
    os.dup2(2, 1)  # the JVM inherits fd 1: its output must not land in the JSON
    try:
        log.info("describing job %s v%s (%s)", spec.name, spec.version, spec.entrypoint)
        result = describe(spec, args.state_root)
        log.info(
            "job %s v%s: %d stage(s) described", spec.name, spec.version, len(result["stages"])
        )
    finally:
        sys.stdout.flush()
    with os.fdopen(result_fd, "w", encoding="utf-8") as out:
        json.dump(result, out)  # stages in declaration order
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
