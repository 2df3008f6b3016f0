#!/usr/bin/env bash
# Build the classpath jar releases: java/udf/<release>/**.java, compiled with the JDK against
# the jars of the installed pyspark, into config/jars/releases/<release>/streamops-udf.jar;
# and the base jar every job JVM loads whatever the release: java/fs/**.java into
# config/jars/base/streamops-fs.jar; the master's REST token filter, java/auth into
# config/jars/base/streamops-auth.jar. Idempotent: a jar newer than all its sources is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=".venv/bin/python"
[ -x "$PY" ] || PY="$(command -v python3)"
if ! command -v javac >/dev/null 2>&1 || ! command -v jar >/dev/null 2>&1; then
  echo "build_jars: javac/jar not found (Debian: apt-get install openjdk-17-jdk-headless)" >&2
  exit 1
fi
spark_jars="$("$PY" -c 'import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"

# build_jar SRC_DIR JAR: compile SRC_DIR's sources into JAR unless JAR is newer than all of them
build_jar() {
  local src="$1" jarfile="$2"
  if [ -f "$jarfile" ] && [ -z "$(find "$src" -name '*.java' -newer "$jarfile")" ]; then
    return 0
  fi
  classes="$(mktemp -d)"  # global: the EXIT trap removes it if javac fails
  trap 'rm -rf "$classes"' EXIT
  mapfile -t sources < <(find "$src" -name '*.java' | sort)
  javac --release 17 -nowarn -cp "$spark_jars/*" -d "$classes" "${sources[@]}"
  mkdir -p "$(dirname "$jarfile")"
  jar --create --file "$jarfile.tmp" -C "$classes" .
  mv "$jarfile.tmp" "$jarfile"
  rm -rf "$classes"
  trap - EXIT
  echo "build_jars: built $jarfile" >&2
}

for src in java/udf/*/; do
  build_jar "$src" "config/jars/releases/$(basename "$src")/streamops-udf.jar"
done
# on every job JVM's classpath whatever the release (plugins/streamops/cluster/local_fs.py)
build_jar java/fs config/jars/base/streamops-fs.jar
# the master's REST server guard, on the master's classpath (plugins/streamops/cluster/rest_auth.py)
build_jar java/auth config/jars/base/streamops-auth.jar
