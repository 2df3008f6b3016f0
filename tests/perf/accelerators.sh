#!/usr/bin/env bash
# The start-up accelerators side by side, one after another the same hour: each one changed
# alone against the upgrade gap (cold and warm, tests/perf/bench_upgrade.py) and, for those
# that act after start-up too (the JIT and code generation settings), against ingest latency
# at 20,000 pings/s (tests/perf/bench_fleet_ingest.py): the class archives and the fork
# server off, C2 on (the specs run C1 only), whole-stage code generation off (the specs
# leave Spark's default, on, since this comparison measured nothing for turning it off).
# About 45 minutes; one cluster at a time. Figures: docs/performance.md, "Start-up
# accelerators".
#
#   bash tests/perf/accelerators.sh 2>&1 | tee /tmp/accelerators.log
set -euo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
full_jit=(--conf "spark.driver.extraJavaOptions=-XX:+UseSerialGC"
          --conf "spark.executor.extraJavaOptions=-XX:+UseSerialGC")
codegen_off=(--conf "spark.sql.codegen.wholeStage=false")

run() {
  echo; echo "=== $*"
  "$py" "$@" 2>&1 | grep -v "^WARN\|^\s*at \|^Using\|^Setting\|^[0-9/ :]* WARN" || echo "=== failed: $*"
}

run tests/perf/bench_upgrade.py --rate 200 --mode both
run tests/perf/bench_upgrade.py --rate 200 --mode both --no-class-archives
run tests/perf/bench_upgrade.py --rate 200 --mode both --conf spark.streamops.pythonForkServer=false
run tests/perf/bench_upgrade.py --rate 200 --mode both "${full_jit[@]}"
run tests/perf/bench_upgrade.py --rate 200 --mode both "${codegen_off[@]}"
run tests/perf/bench_fleet_ingest.py --rate 20000 --seconds 60 --warmup 40
run tests/perf/bench_fleet_ingest.py --rate 20000 --seconds 60 --warmup 40 "${full_jit[@]}"
run tests/perf/bench_fleet_ingest.py --rate 20000 --seconds 60 --warmup 40 "${codegen_off[@]}"
