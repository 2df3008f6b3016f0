#!/usr/bin/env bash
# README command 1: set up, then run the local cluster, both simulators and fleet-pings.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/streamops up "$@"
