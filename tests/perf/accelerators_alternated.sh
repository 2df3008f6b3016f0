#!/usr/bin/env bash
# The two start-up accelerators kept (the fork server and the class archives), each on and off
# in alternated rounds the same hour: per round the committed setting, then the class archives
# off, then the fork server off, each against the upgrade gap (cold and warm,
# tests/perf/bench_upgrade.py) and a node kill (tests/perf/bench_failover.py --faults node).
# ROUNDS rounds (3 by default); about 6 minutes a configuration and round, one cluster at a time.
# Figures: docs/performance.md, "Start-up accelerators, alternated".
#
#   bash tests/perf/accelerators_alternated.sh 2>&1 | tee /tmp/accelerators-alternated.log
set -euo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
rounds=${ROUNDS:-3}
fork_off=(--conf spark.streamops.pythonForkServer=false)

run() {
  echo; echo "=== $(date -u +%H:%M:%S) $*"
  "$py" "$@" 2>&1 | grep -v "^WARN\|^\s*at \|^Using\|^Setting\|^[0-9/ :]* WARN" || echo "=== failed: $*"
}

for round in $(seq "$rounds"); do
  echo; echo "##### round $round of $rounds"
  for config in on archives-off fork-off; do
    case $config in
      on) extra=() ;;
      archives-off) extra=(--no-class-archives) ;;
      fork-off) extra=("${fork_off[@]}") ;;
    esac
    echo "### $config"
    run tests/perf/bench_upgrade.py --rate 200 --mode both "${extra[@]}"
    run tests/perf/bench_failover.py --rate 100 --faults node "${extra[@]}"
  done
done
