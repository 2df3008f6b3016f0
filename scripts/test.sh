#!/usr/bin/env bash
# README command 2: set up, lint, check that no import runs back up (no module circle, no two
# folders importing each other), then run the whole test suite (unit + integration on a real
# local Spark cluster, SQLite and an embedded PostgreSQL the tests start). Extra arguments go to
# pytest. STREAMOPS_REQUIRE_ALL=1 (.ci/run sets it): a test that would be skipped fails.
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMOPS_WITH_CHROMIUM=1 bash scripts/bootstrap.sh
.venv/bin/ruff check .
.venv/bin/python scripts/import_cycles.py
exec .venv/bin/pytest "$@"
