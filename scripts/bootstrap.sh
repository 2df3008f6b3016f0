#!/usr/bin/env bash
# Create .venv at the repository root and install the pinned environment into it:
# requirements.lock (uv pip compile of pyproject.toml, one Spark version: pyspark 4.3.0 with
# its jars; the Airflow Spark provider's pyspark-client is overridden away) + this project,
# editable. Idempotent: does nothing when the lock and pyproject have not changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
"$PYTHON" - <<'PY' || { echo "error: Python >= 3.11 is required (set PYTHON=...)" >&2; exit 1; }
import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY
if ! java -version >/dev/null 2>&1; then
  echo "error: Java 17+ is required by Spark 4 (Debian: apt-get install openjdk-17-jre-headless)" >&2
  exit 1
fi

# The page tests (tests/e2e/) drive Debian's Chromium headless; no browser is downloaded. Only
# the test command needs it (scripts/test.sh sets STREAMOPS_WITH_CHROMIUM=1; `up` does not wait
# for it): installed then when missing, as root with apt-get (CI); elsewhere install it
# yourself or those tests are skipped. STREAMOPS_NO_CHROMIUM=1 skips this step.
if [ -n "${STREAMOPS_WITH_CHROMIUM:-}" ] && [ -z "${STREAMOPS_NO_CHROMIUM:-}" ] \
   && ! command -v chromium >/dev/null 2>&1 \
   && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "bootstrap: installing Debian's chromium (for the Airflow UI test)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null; } \
    || echo "bootstrap: warning: could not install chromium; the Airflow UI test will be skipped" >&2
fi

# Compiled bytecode of the project's own modules, written here because Python does not write
# it where PYTHONDONTWRITEBYTECODE is set (as on CI machines): each driver, Python worker and CLI
# call would otherwise compile every module it imports again (docs/performance.md)
compile_project() {
  .venv/bin/python -m compileall -q spark_jobs plugins dags >/dev/null
}

stamp=.venv/.streamops-installed
# (the installation's recipe is part of the stamp: a change to it installs again)
want="$( (cat requirements.lock pyproject.toml; echo "compile-bytecode") | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x .venv/bin/streamops ]; then
  compile_project
  bash scripts/build_jars.sh  # classpath jar releases (idempotent)
  exit 0
fi

if ! command -v uv >/dev/null 2>&1 && ! "$PYTHON" -m uv --version >/dev/null 2>&1; then
  echo "bootstrap: installing uv" >&2
  "$PYTHON" -m pip install --quiet --disable-pip-version-check uv
fi
UV=(uv); command -v uv >/dev/null 2>&1 || UV=("$PYTHON" -m uv)
export UV_PYTHON_DOWNLOADS=never

echo "bootstrap: creating .venv and installing requirements.lock" >&2
[ -x .venv/bin/python ] || "${UV[@]}" venv --quiet --python "$PYTHON" .venv
# --compile-bytecode: what pip does by default and uv does not; without it every Python process
# compiles the modules it imports (PySpark, SQLAlchemy, Airflow) again at each start
VIRTUAL_ENV="$PWD/.venv" "${UV[@]}" pip sync --quiet --compile-bytecode requirements.lock
VIRTUAL_ENV="$PWD/.venv" "${UV[@]}" pip install --quiet --no-deps -e .
compile_project
.venv/bin/python - <<'PY'
from streamops.cluster.spark_home import check_spark_install
install = check_spark_install()
print(f"bootstrap: Spark {install.version} (Python package and jars agree) at {install.home}")
PY
echo "$want" > "$stamp"
bash scripts/build_jars.sh  # classpath jar releases (idempotent)
