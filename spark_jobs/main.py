"""Driver entry point of every job: ``main.py --spec-b64 SPEC --state-root DIR``.

Submitted with ``org.apache.spark.deploy.PythonRunner`` as main class; the job spec comes
inline (base64 JSON) so a relaunched driver on any worker runs exactly the same version.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from pyspark.sql import SparkSession

from spark_jobs.runtime.context import JobContext
from streamops.layout import StateLayout
from streamops.spec import decode_spec

log = logging.getLogger("spark_jobs.main")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_jobs.main")
    parser.add_argument("--spec-b64", required=True)
    parser.add_argument("--state-root", required=True)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    args = parse_args(sys.argv[1:] if argv is None else argv)
    spec = decode_spec(args.spec_b64)
    layout = StateLayout.at(args.state_root)
    module = importlib.import_module(spec.entrypoint)
    spark = SparkSession.builder.appName(spec.name).getOrCreate()
    ctx = JobContext(spark, spec, layout)
    ident = ctx.board.snapshot()
    log.info(
        "job %s v%s starting (driver %s, app %s)",
        spec.name, spec.version, ident.get("driver_id"), ident.get("app_id"),
    )  # fmt: skip
    module.build(ctx)
    ctx.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
