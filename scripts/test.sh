#!/usr/bin/env bash
# README command 2: set up, lint, check that no import runs back up (no module circle, no two
# folders importing each other), then run the whole test suite: the unit tests on both cores
# (pytest-xdist, two workers), then everything else in one pytest process, one after the other
# (integration, DAG runs, pages, the chaos campaign and the multi-host module on one real local
# Spark cluster, SQLite and an embedded PostgreSQL the tests start). Both parts always run; the
# script fails if either did. With arguments, one pytest run with those arguments instead
# (e.g. `./scripts/test.sh tests/chaos`, `./scripts/test.sh -m multihost tests/multihost`).
# STREAMOPS_REQUIRE_ALL=1 (.ci/run sets it): a test that would be skipped fails.
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMOPS_WITH_CHROMIUM=1 bash scripts/bootstrap.sh
.venv/bin/ruff check .
.venv/bin/python scripts/import_cycles.py
if [ "$#" -gt 0 ]; then
    exec .venv/bin/pytest "$@"
fi
unit=0
rest=0
.venv/bin/pytest -n 2 tests/unit || unit=$?
.venv/bin/pytest --ignore=tests/unit || rest=$?
echo "test.sh: unit tests exit ${unit}, the other tests exit ${rest}" >&2
[ "$unit" -eq 0 ] && [ "$rest" -eq 0 ]
