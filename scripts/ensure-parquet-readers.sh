#!/usr/bin/env bash
# Installs the readers the Parquet archive is proven against in CI (test/integration/archive/parquet-readers.test.ts)
# into a folder of their own (infra/run/parquet-readers):
#
#   bash scripts/ensure-parquet-readers.sh
#
# - venv/: pyarrow and pyspark (local mode on the machine's Java 17), pinned in test/readers/requirements.txt;
# - jars/: hadoop-aws, the AWS SDK bundle it pins and the S3 analytics accelerator, from Maven
#   (test/readers/pom.xml), which Spark's s3a file system needs to read the s3:// archive.
#
# Idempotent. Heavy (pyspark is a ~450 MB download, the SDK bundle ~670 MB), so it is made once per machine in
# ~/.cache/ttlstream (TTLSTREAM_STACK_CACHE_DIR), named by the digest of its two recipes and the Python, and linked
# from infra/run, as scripts/ensure-deploy-tools.sh does: a fresh clone (CI) links it. Maven runs on a local
# repository of its own inside the entry (removed once the jars are copied), so it neither waits for nor delays the
# stack's Maven runs on ~/.m2; pip keeps no cache.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
LINK="${TTLSTREAM_STACK_RUN_DIR:-infra/run}/parquet-readers"
REQUIREMENTS=test/readers/requirements.txt
POM=test/readers/pom.xml

say() { printf '[ensure-parquet-readers] %s\n' "$*" >&2; }

CACHE="${TTLSTREAM_STACK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ttlstream}"
digest="$(cat "$REQUIREMENTS" "$POM" | sha256sum | cut -c1-12)"
python_tag="py$(python3 -c 'import sys; print(sys.executable, "%d.%d.%d" % sys.version_info[:3])' | sha256sum | cut -c1-8)"
ENTRY="$CACHE/parquet-readers-$digest-$python_tag"
mkdir -p "$CACHE" "$(dirname "$LINK")"
(
  exec 7>"$ENTRY.lock"
  flock -w 1800 7 || {
    say "ERROR: another install into $ENTRY has been running for more than 1800 s"
    exit 1
  }
  [[ -f "$ENTRY/.complete" ]] && exit 0
  command -v java >/dev/null || {
    say "ERROR: Java (17) is needed for pyspark"
    exit 1
  }
  say "installing pyarrow, pyspark ($REQUIREMENTS) and the s3a jars ($POM) into $ENTRY"
  rm -rf "$ENTRY"
  mkdir -p "$ENTRY"
  python3 -m venv "$ENTRY/venv"
  "$ENTRY/venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir -r "$REQUIREMENTS"
  mvn -q -B -f "$POM" dependency:copy-dependencies "-DoutputDirectory=$ENTRY/jars" \
    "-Dmaven.repo.local=$ENTRY/m2"
  rm -rf "$ENTRY/m2"
  [[ "$(find "$ENTRY/jars" -name '*.jar' | wc -l)" == 3 ]] || {
    say "ERROR: Maven finished but $ENTRY/jars does not hold the three jars"
    exit 1
  }
  "$ENTRY/venv/bin/python" -c 'import pyarrow.parquet, pyspark.sql'
  touch "$ENTRY/.complete"
)
if [[ ! -L "$LINK" || "$(readlink "$LINK")" != "$ENTRY" ]]; then
  rm -rf "$LINK"
  ln -s "$ENTRY" "$LINK"
fi
say "pyarrow, pyspark and the s3a jars are in $LINK"
