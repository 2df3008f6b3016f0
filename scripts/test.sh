#!/usr/bin/env bash
# README command 2: set up, lint, check that no import runs back up (no module circle, no two
# folders importing each other), then run the whole test suite (unit + integration on a real
# local Spark cluster, SQLite and an embedded PostgreSQL the tests start). Extra arguments go to
# pytest, as one run. STREAMOPS_REQUIRE_ALL=1 (.ci/run sets it): a test that would be skipped
# fails.
#
# With no arguments the suite runs in two lanes at once: the unit tests (tests/unit: no Spark
# cluster of the session; local Spark sessions, real processes, their own embedded PostgreSQL)
# at a lower CPU priority (nice 10), beside the rest on the session's cluster, which leaves
# part of the two cores idle while its drills wait on Spark. The cluster lane starts with the
# DAG tests, whose figures are printed, never asserted. The unit lane's report follows the
# cluster lane's; the run fails if either fails. STREAMOPS_ONE_LANE=1: one pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMOPS_WITH_CHROMIUM=1 bash scripts/bootstrap.sh
.venv/bin/ruff check .
.venv/bin/python scripts/import_cycles.py
if [ "$#" -gt 0 ] || [ "${STREAMOPS_ONE_LANE:-0}" = 1 ]; then
  exec .venv/bin/pytest "$@"
fi

lanes=$(mktemp -d -t streamops-lanes.XXXXXX)
# the unit lane's temporary files apart from /tmp/pytest-of-<user>: a pytest session makes that
# directory private again when it starts, which would cut off an embedded PostgreSQL of the
# other lane (it runs as its own user, through directories made traversable for it)
nice -n 10 .venv/bin/pytest tests/unit --basetemp="$lanes/unit" >"$lanes/unit.log" 2>&1 &
unit=$!
# an interrupted run stops the unit lane too (pytest ends its session's processes on SIGINT)
trap 'kill -INT "$unit" 2>/dev/null; wait "$unit" 2>/dev/null; rm -rf "$lanes"' EXIT
echo "test: the unit lane runs beside this one (pid $unit); its report follows at the end"
status=0
.venv/bin/pytest tests/dags tests/chaos tests/e2e tests/integration tests/multihost || status=$?
unit_status=0
wait "$unit" || unit_status=$?
echo "==================== the unit lane (tests/unit, nice 10) ===================="
cat "$lanes/unit.log"
echo "test: cluster lane exit $status, unit lane exit $unit_status"
[ "$status" -eq 0 ] && [ "$unit_status" -eq 0 ]
