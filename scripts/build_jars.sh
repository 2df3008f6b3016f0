#!/usr/bin/env bash
# Build the classpath jar releases: java/udf/<release>/**.java, compiled with the JDK against
# the jars of the installed pyspark, into config/jars/releases/<release>/streamops-udf.jar.
# Idempotent: a release whose jar is newer than all its sources is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=".venv/bin/python"
[ -x "$PY" ] || PY="$(command -v python3)"
if ! command -v javac >/dev/null 2>&1 || ! command -v jar >/dev/null 2>&1; then
  echo "build_jars: javac/jar not found (Debian: apt-get install openjdk-17-jdk-headless)" >&2
  exit 1
fi
spark_jars="$("$PY" -c 'import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"

for src in java/udf/*/; do
  release="$(basename "$src")"
  out="config/jars/releases/$release"
  jarfile="$out/streamops-udf.jar"
  if [ -f "$jarfile" ] && [ -z "$(find "$src" -name '*.java' -newer "$jarfile")" ]; then
    continue
  fi
  classes="$(mktemp -d)"
  trap 'rm -rf "$classes"' EXIT
  mapfile -t sources < <(find "$src" -name '*.java' | sort)
  javac --release 17 -nowarn -cp "$spark_jars/*" -d "$classes" "${sources[@]}"
  mkdir -p "$out"
  jar --create --file "$jarfile.tmp" -C "$classes" .
  mv "$jarfile.tmp" "$jarfile"
  rm -rf "$classes"
  trap - EXIT
  echo "build_jars: built $jarfile" >&2
done
