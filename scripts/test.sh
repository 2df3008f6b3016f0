#!/usr/bin/env bash
# README command 2: set up, lint, then run the whole test suite (unit + integration on a
# real local Spark cluster, SQLite and PostgreSQL). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check .
exec .venv/bin/pytest "$@"
