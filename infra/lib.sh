# shellcheck shell=bash
# Shared by infra/up.sh, down.sh, status.sh and ctl.sh. Sourced, never run.
#
# Settings (environment, with defaults):
#   TTLSTREAM_STACK_LANE                 0           which of several side-by-side stacks (npm test runs one per jest
#                                                    worker): lane N shifts every default port below by 100 x N and
#                                                    keeps its data, logs and endpoints file apart (lane-N folders)
#   TTLSTREAM_STACK_HOST                 127.0.0.1   address every service binds to
#   TTLSTREAM_STACK_KAFKA_PORT           19092       Kafka broker (PLAINTEXT)
#   TTLSTREAM_STACK_KAFKA_CONTROLLER_PORT 19093      Kafka KRaft controller
#   TTLSTREAM_STACK_DYNAMODB_PORT        18000       dynalite (DynamoDB API)
#   TTLSTREAM_STACK_S3_PORT              19000       moto server (S3 API)
#   TTLSTREAM_STACK_KAFKA_PROXIED_PORT   19094       Kafka's second listener (PROXIED), the upstream of the kafka proxy
#   TTLSTREAM_STACK_TOXIPROXY_PORT       18474       Toxiproxy's HTTP API
#   TTLSTREAM_STACK_TOXIPROXY_KAFKA_PORT 19095       Toxiproxy's kafka proxy (what the PROXIED listener advertises)
#   TTLSTREAM_STACK_TOXIPROXY_DYNAMODB_PORT 18001    Toxiproxy's dynamodb proxy (upstream: dynalite)
#   TTLSTREAM_STACK_KAFKA_SCRAM_PORT     19096       Kafka listener SASL_SSL with SCRAM-SHA-512 (user ttlstream)
#   TTLSTREAM_STACK_KAFKA_MTLS_PORT      19097       Kafka listener SSL requiring a client certificate (mutual TLS)
#   TTLSTREAM_STACK_KAFKA_OAUTH_PORT     19098       Kafka listener SASL_SSL with OAUTHBEARER (unsecured JWT validator)
#   TTLSTREAM_STACK_REGISTRY_PORT        18081       Apicurio Registry (Confluent-compatible API under /apis/ccompat/v7)
#   TTLSTREAM_STACK_GO                   go          Go toolchain that builds Toxiproxy (else /usr/local/go/bin/go)
#   TTLSTREAM_STACK_RUN_DIR              infra/run   data, logs, pid files (lane N: in lane-N/), jars, venv
#   TTLSTREAM_STACK_CACHE_DIR            ~/.cache/ttlstream  the venvs and the registry build, shared by checkouts
#   TTLSTREAM_STACK_KAFKA_HEAP           -Xms512m -Xmx1g
#   TTLSTREAM_STACK_REGISTRY_HEAP        -Xmx256m
#   TTLSTREAM_STACK_JVM_FLAGS            -XX:TieredStopAtLevel=1 -XX:+UseSerialGC   for Kafka and the registry
#   TTLSTREAM_STACK_KAFKA_VERSION        4.4.0       Apache Kafka release to run (4.x; 3.9.1 for the compatibility run)
#   TTLSTREAM_STACK_MAVEN_REPO           (unset)     passed as -Dmaven.repo.local (cold-start measurements)
#   TTLSTREAM_STACK_PYTHON               python3     interpreter for the moto venv and the consumers' venv
#   TTLSTREAM_DYNAMODB_INMEMORY          (unset)     1 = dynalite keeps tables in memory (lost on restart)
#   TTLSTREAM_STATE_DIR                  .ttlstream  where endpoints.json is written (core/config.ts reads it);
#                                                    lane N > 0: .ttlstream/lane-N

INFRA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT_DIR="$(cd "$INFRA_DIR/.." && pwd)"

# test/support/ports.ts mirrors the lane arithmetic and the defaults: change both together.
LANE="${TTLSTREAM_STACK_LANE:-0}"
[[ "$LANE" =~ ^[0-9]$ ]] ||
  { printf '[infra] ERROR: TTLSTREAM_STACK_LANE=%s: expected a lane number from 0 to 9\n' "$LANE" >&2; exit 1; }
lane_port() { echo $(($1 + 100 * LANE)); }

STACK_HOST="${TTLSTREAM_STACK_HOST:-127.0.0.1}"
KAFKA_PORT="${TTLSTREAM_STACK_KAFKA_PORT:-$(lane_port 19092)}"
KAFKA_CONTROLLER_PORT="${TTLSTREAM_STACK_KAFKA_CONTROLLER_PORT:-$(lane_port 19093)}"
DYNAMODB_PORT="${TTLSTREAM_STACK_DYNAMODB_PORT:-$(lane_port 18000)}"
S3_PORT="${TTLSTREAM_STACK_S3_PORT:-$(lane_port 19000)}"
MOTO_PORT="${TTLSTREAM_STACK_MOTO_PORT:-$(lane_port 18002)}"
KAFKA_PROXIED_PORT="${TTLSTREAM_STACK_KAFKA_PROXIED_PORT:-$(lane_port 19094)}"
TOXIPROXY_PORT="${TTLSTREAM_STACK_TOXIPROXY_PORT:-$(lane_port 18474)}"
TOXIPROXY_KAFKA_PORT="${TTLSTREAM_STACK_TOXIPROXY_KAFKA_PORT:-$(lane_port 19095)}"
TOXIPROXY_DYNAMODB_PORT="${TTLSTREAM_STACK_TOXIPROXY_DYNAMODB_PORT:-$(lane_port 18001)}"
KAFKA_SCRAM_PORT="${TTLSTREAM_STACK_KAFKA_SCRAM_PORT:-$(lane_port 19096)}"
KAFKA_MTLS_PORT="${TTLSTREAM_STACK_KAFKA_MTLS_PORT:-$(lane_port 19097)}"
KAFKA_OAUTH_PORT="${TTLSTREAM_STACK_KAFKA_OAUTH_PORT:-$(lane_port 19098)}"
REGISTRY_PORT="${TTLSTREAM_STACK_REGISTRY_PORT:-$(lane_port 18081)}"
# The SCRAM user of the SASL_SCRAM listener (test/support/ports.ts knows it too). Not a secret: a local stack.
KAFKA_SCRAM_USER=ttlstream
KAFKA_SCRAM_PASSWORD=ttlstream-secret
# RUN_DIR holds what every lane shares (jars, venv, builds, the Node release); DATA_DIR what one stack owns.
RUN_DIR="${TTLSTREAM_STACK_RUN_DIR:-$INFRA_DIR/run}"
DATA_DIR="$RUN_DIR"
((LANE == 0)) || DATA_DIR="$RUN_DIR/lane-$LANE"
KAFKA_HEAP="${TTLSTREAM_STACK_KAFKA_HEAP:--Xms512m -Xmx1g}"
REGISTRY_HEAP="${TTLSTREAM_STACK_REGISTRY_HEAP:--Xmx256m}"
# A test stack's JVMs serve a trickle of requests and are restarted often, yet C2, the optimising JIT, took a third
# of each broker's CPU in a test run (top -H): on 2 vCPUs that is time the suites wait for. C1 alone compiles
# cheaply and is fast enough for test traffic; the serial GC has no concurrent threads to feed. Not for benchmarks.
STACK_JVM_FLAGS="${TTLSTREAM_STACK_JVM_FLAGS--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
STACK_PYTHON="${TTLSTREAM_STACK_PYTHON:-python3}"
STATE_DIR="${TTLSTREAM_STATE_DIR:-$ROOT_DIR/.ttlstream}"
((LANE == 0)) || STATE_DIR="${TTLSTREAM_STATE_DIR:-$ROOT_DIR/.ttlstream/lane-$LANE}"

KAFKA_VERSION="${TTLSTREAM_STACK_KAFKA_VERSION:-4.4.0}"
# The major line picks the logging binding (pom.xml profiles) and the log config the broker is given.
KAFKA_MAJOR="${KAFKA_VERSION%%.*}"
[[ "$KAFKA_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ && ("$KAFKA_MAJOR" == 3 || "$KAFKA_MAJOR" == 4) ]] ||
  { printf '[infra] ERROR: TTLSTREAM_STACK_KAFKA_VERSION=%s: expected a 4.x.y or 3.x.y release\n' "$KAFKA_VERSION" >&2; exit 1; }
MOTO_VERSION=5.2.5
TOXIPROXY_VERSION=v2.5.0
TOXIPROXY_MODULE=github.com/Shopify/toxiproxy/v2/cmd/server
# Apicurio Registry, assembled by infra/registry/pom.xml (whose apicurio.version is this release + ".Final").
REGISTRY_VERSION=2.4.2

LOG_DIR="$DATA_DIR/logs"
PID_DIR="$DATA_DIR/pids"
# Jars and data per version: switching versions neither fetches again nor hands a newer release's storage to an older
# broker (KRaft metadata cannot be downgraded).
KAFKA_LIBS="$RUN_DIR/kafka-libs/$KAFKA_VERSION"
KAFKA_DIR="$DATA_DIR/kafka"
KAFKA_DATA="$KAFKA_DIR/data-$KAFKA_VERSION"
DYNAMODB_DATA="$DATA_DIR/dynamodb"
S3_DATA="$DATA_DIR/s3"
# Built once per machine, not per checkout: the venvs and the registry build take minutes of CPU to make (the moto
# venv alone took 112 s of a CI run's set-up) and depend only on their recipe, which names their entry in CACHE_DIR
# (cached_build). RUN_DIR links to the entries, so every path below stays as it was.
CACHE_DIR="${TTLSTREAM_STACK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ttlstream}"
VENV_DIR="$RUN_DIR/venv"
TOXIPROXY_DIR="$RUN_DIR/toxiproxy"
TOXIPROXY_BIN="$TOXIPROXY_DIR/bin/toxiproxy-server-$TOXIPROXY_VERSION"
TOXIPROXY_CONFIG="$DATA_DIR/toxiproxy/proxies.json"
# The registry's Quarkus fast-jar (shared by the lanes; each lane's registry keeps its schemas in memory).
REGISTRY_DIR="$RUN_DIR/registry-$REGISTRY_VERSION"
# Python clients of the registry (confluent-kafka with Avro and schema-registry support) for the integration tests.
CONSUMERS_VENV="$RUN_DIR/venv-consumers"
CONSUMERS_REQUIREMENTS="$INFRA_DIR/consumers-requirements.txt"
# Each lane its own CA: lanes start side by side, and certs.sh writing one folder twice at once would race.
TLS_DIR="$DATA_DIR/tls"

SERVICES=(kafka dynamodb s3 toxiproxy registry moto)

mkdir -p "$LOG_DIR" "$PID_DIR"

now_ms() { date +%s%3N; }
log() { printf '[infra %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

service_port() {
  case "$1" in
    kafka) echo "$KAFKA_PORT" ;;
    dynamodb) echo "$DYNAMODB_PORT" ;;
    s3) echo "$S3_PORT" ;;
    toxiproxy) echo "$TOXIPROXY_PORT" ;;
    registry) echo "$REGISTRY_PORT" ;;
    moto) echo "$MOTO_PORT" ;;
    *) die "unknown service '$1' (expected kafka, dynamodb, s3, toxiproxy, registry or moto)" ;;
  esac
}

service_endpoint() {
  case "$1" in
    kafka) echo "$STACK_HOST:$KAFKA_PORT" ;;
    dynamodb) echo "http://$STACK_HOST:$DYNAMODB_PORT" ;;
    s3) echo "http://$STACK_HOST:$S3_PORT" ;;
    toxiproxy) echo "http://$STACK_HOST:$TOXIPROXY_PORT" ;;
    # What a Confluent schema-registry client is given (its base URL).
    registry) echo "http://$STACK_HOST:$REGISTRY_PORT/apis/ccompat/v7" ;;
    moto) echo "http://$STACK_HOST:$MOTO_PORT" ;;
  esac
}

# A fragment of the command line that identifies our process, so a recycled pid is not mistaken for it.
service_marker() {
  case "$1" in
    kafka) echo "kafka.Kafka" ;;
    dynamodb) echo "dynalite/cli.js" ;;
    s3) echo "s3_server.py" ;;
    toxiproxy) echo "toxiproxy-server-$TOXIPROXY_VERSION" ;;
    registry) echo "registry-$REGISTRY_VERSION/quarkus-run.jar" ;;
    moto) echo "bin/moto_server -H $STACK_HOST -p $MOTO_PORT" ;;
  esac
}

service_logs() {
  case "$1" in
    kafka) echo "$LOG_DIR/kafka-server.log $LOG_DIR/kafka.out" ;;
    dynamodb) echo "$LOG_DIR/dynamodb.log" ;;
    s3) echo "$LOG_DIR/s3.log" ;;
    toxiproxy) echo "$LOG_DIR/toxiproxy.log" ;;
    registry) echo "$LOG_DIR/registry.log" ;;
    moto) echo "$LOG_DIR/moto.log" ;;
  esac
}

pid_file() { echo "$PID_DIR/$1.pid"; }

# The Kafka release a running broker of this checkout was started with (from its class path), or nothing.
running_kafka_version() {
  local pid
  pid="$(service_pid kafka)" || return 0
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | sed -n 's#.*/kafka-libs/\([^/]*\)/\*$#\1#p' | head -n 1
}

# Prints the pid if the service started by this checkout is alive.
service_pid() {
  local f pid
  f="$(pid_file "$1")"
  [[ -s "$f" ]] || return 1
  pid="$(cat "$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$(service_marker "$1")" || return 1
  echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/$STACK_HOST/$1") 2>/dev/null; }

probe() { # probe <service> <timeout-ms> [pid]
  local args=("$1" "$(service_endpoint "$1")" --timeout-ms "$2")
  [[ -n "${3:-}" ]] && args+=(--pid "$3")
  (cd "$ROOT_DIR" && node --no-warnings "$INFRA_DIR/probe.mjs" "${args[@]}")
}

tail_logs() {
  local f
  for f in $(service_logs "$1"); do
    [[ -f "$f" ]] || continue
    echo "----- last 40 lines of $f -----" >&2
    tail -n 40 "$f" >&2
  done
}

# Start a command detached from this shell's session (survives the script, the terminal and
# jest's process group); the pid written is the service's own, because bash execs it.
spawn() { # spawn <service> <log file> <cmd...>
  local svc="$1" logfile="$2"
  shift 2
  local pf
  pf="$(pid_file "$svc")"
  rm -f "$pf"
  printf '\n===== %s starting %s =====\n' "$(date -Is)" "$svc" >>"$logfile"
  # shellcheck disable=SC2016 # fd 9 is the up.lock: a service must not hold it for its lifetime
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pf" "$@" >>"$logfile" 2>&1 </dev/null 9>&- &
  local i
  for i in $(seq 1 100); do
    [[ -s "$pf" ]] && return 0
    sleep 0.05
  done
  die "$svc: no pid file after spawning (see $logfile)"
}

# --- preparation -------------------------------------------------------------------------------

# one_at_a_time <tool> <cmd...>: runs the command holding $RUN_DIR/<tool>.lock. Preparations run side by side (up.sh),
# but two Maven runs on one local repository, or two pip installs on one cache, must not (a pip pair once broke a
# wheel's hash check).
one_at_a_time() {
  local tool="$1"
  shift
  flock -w 900 "$RUN_DIR/$tool.lock" "$@"
}

# cached_build <link> <entry> <builder> [args...]: makes RUN_DIR's <link> point at CACHE_DIR/<entry>, first running
# `<builder> [args...] <entry dir>` if the entry is not complete. One build of an entry at a time on the machine (its
# lock); an entry counts only once its builder succeeded (.complete), so a killed build is started over.
cached_build() {
  local link="$1" entry="$CACHE_DIR/$2"
  shift 2
  mkdir -p "$CACHE_DIR"
  (
    exec 7>"$entry.lock"
    flock -w 900 7 || die "another build of $entry has been running for more than 900 s ($entry.lock)"
    [[ -f "$entry/.complete" ]] && exit 0
    rm -rf "$entry"
    "$@" "$entry" && touch "$entry/.complete"
  ) || return 1
  [[ -L "$link" && "$(readlink "$link")" == "$entry" ]] && return 0
  rm -rf "$link"
  ln -s "$entry" "$link"
}

# The interpreter a venv is made with: a venv runs only on the Python it was made from.
python_tag() {
  local exe
  exe="$("$STACK_PYTHON" -c 'import sys; print(sys.executable, "%d.%d.%d" % sys.version_info[:3])')" || return 1
  echo "py$(echo "$exe" | sha256sum | cut -c1-8)"
}

ensure_kafka_libs() {
  local stamp="$KAFKA_LIBS/.complete-$KAFKA_VERSION"
  [[ -f "$stamp" ]] && return 0
  command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch the Kafka $KAFKA_VERSION jars"
  log "fetching Kafka $KAFKA_VERSION jars with Maven into $KAFKA_LIBS"
  rm -rf "$KAFKA_LIBS"
  local mvn_args=(-q -B -f "$INFRA_DIR/pom.xml" dependency:copy-dependencies "-Dkafka.version=$KAFKA_VERSION"
    "-Dkafka.major=$KAFKA_MAJOR" "-DoutputDirectory=$KAFKA_LIBS")
  [[ -n "${TTLSTREAM_STACK_MAVEN_REPO:-}" ]] && mvn_args+=("-Dmaven.repo.local=$TTLSTREAM_STACK_MAVEN_REPO")
  if ! one_at_a_time maven mvn "${mvn_args[@]}" >"$LOG_DIR/maven.log" 2>&1; then
    tail -n 40 "$LOG_DIR/maven.log" >&2
    die "Maven could not fetch the Kafka jars (full log: $LOG_DIR/maven.log)"
  fi
  [[ -f "$KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar" ]] || die "Maven finished but kafka_2.13-$KAFKA_VERSION.jar is missing"
  touch "$stamp"
}

ensure_venv() {
  local stamp="$VENV_DIR/.moto-$MOTO_VERSION"
  [[ -f "$stamp" && -x "$VENV_DIR/bin/moto_server" ]] && return 0
  command -v "$STACK_PYTHON" >/dev/null || die "$STACK_PYTHON is needed for the moto S3 server"
  cached_build "$VENV_DIR" "venv-moto-$MOTO_VERSION-$(python_tag)" make_moto_venv ||
    die "could not install moto $MOTO_VERSION (full log: $LOG_DIR/pip.log)"
}

make_moto_venv() {
  local dir="$1"
  log "creating the moto $MOTO_VERSION venv in $dir"
  if ! { "$STACK_PYTHON" -m venv "$dir" &&
    one_at_a_time pip "$dir/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION" &&
    touch "$dir/.moto-$MOTO_VERSION"; } >"$LOG_DIR/pip.log" 2>&1; then
    tail -n 40 "$LOG_DIR/pip.log" >&2
    return 1
  fi
}

# Apicurio Registry: infra/registry/pom.xml assembles the app jar from Maven into a Quarkus fast-jar, built outside the
# source tree and moved to REGISTRY_DIR; built again when the recipe (the pom or the Java source) changes. -DskipDefault
# turns off the profile of Apicurio's parent POM that adds two repositories besides Maven's central one: everything
# comes from the central one. Times and sizes: infra/README.md.
registry_recipe_digest() {
  find "$INFRA_DIR/registry/pom.xml" "$INFRA_DIR/registry/src" -type f -print0 | LC_ALL=C sort -z | xargs -0 cat |
    sha256sum | cut -c1-12
}

ensure_registry() {
  local digest
  digest="$(registry_recipe_digest)"
  [[ -f "$REGISTRY_DIR/.complete-$digest" && -f "$REGISTRY_DIR/quarkus-run.jar" ]] && return 0
  command -v mvn >/dev/null || die "Maven (mvn) is needed to build Apicurio Registry $REGISTRY_VERSION"
  # Another build is linked in: not under a registry that runs from the old one (another lane's, or another checkout's).
  if pgrep -f -- "$REGISTRY_DIR/quarkus-run.jar" >/dev/null; then
    die "the registry's recipe changed, but a registry runs from the old build in $REGISTRY_DIR: stop every lane's registry first (bash infra/lanes.sh down)"
  fi
  cached_build "$REGISTRY_DIR" "registry-$REGISTRY_VERSION-$digest" build_registry "$digest" ||
    die "Maven could not build Apicurio Registry (full log: $LOG_DIR/maven-registry.log)"
}

build_registry() {
  local digest="$1" dir="$2" build="$2.build.tmp"
  log "building Apicurio Registry $REGISTRY_VERSION with Maven into $dir"
  rm -rf "$build"
  local mvn_args=(-q -B -f "$INFRA_DIR/registry/pom.xml" -DskipDefault -Dmaven.test.skip=true "-Dregistry.build.dir=$build"
    package)
  [[ -n "${TTLSTREAM_STACK_MAVEN_REPO:-}" ]] && mvn_args+=("-Dmaven.repo.local=$TTLSTREAM_STACK_MAVEN_REPO")
  if ! one_at_a_time maven mvn "${mvn_args[@]}" >"$LOG_DIR/maven-registry.log" 2>&1; then
    tail -n 40 "$LOG_DIR/maven-registry.log" >&2
    return 1
  fi
  [[ -f "$build/quarkus-app/quarkus-run.jar" ]] || {
    log "Maven finished but $build/quarkus-app/quarkus-run.jar is missing"
    return 1
  }
  mv "$build/quarkus-app" "$dir" && rm -rf "$build" && touch "$dir/.complete-$digest"
}

# The registry's Python clients for the integration tests: confluent-kafka with its Avro and schema-registry extras,
# every package pinned in infra/consumers-requirements.txt; made again when that file changes.
ensure_consumers_venv() {
  local digest
  digest="$(sha256sum <"$CONSUMERS_REQUIREMENTS" | cut -c1-12)"
  [[ -f "$CONSUMERS_VENV/.complete-$digest" && -x "$CONSUMERS_VENV/bin/python" ]] && return 0
  command -v "$STACK_PYTHON" >/dev/null || die "$STACK_PYTHON is needed for the registry consumers' venv"
  cached_build "$CONSUMERS_VENV" "venv-consumers-$digest-$(python_tag)" make_consumers_venv "$digest" ||
    die "could not make the registry consumers' venv (full log: $LOG_DIR/pip-consumers.log)"
}

make_consumers_venv() {
  local digest="$1" dir="$2"
  log "creating the registry consumers' venv (confluent-kafka) in $dir"
  if ! { "$STACK_PYTHON" -m venv "$dir" &&
    one_at_a_time pip "$dir/bin/pip" install -q --disable-pip-version-check -r "$CONSUMERS_REQUIREMENTS" &&
    "$dir/bin/python" -c 'from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer' && touch "$dir/.complete-$digest"; } >"$LOG_DIR/pip-consumers.log" 2>&1; then
    tail -n 40 "$LOG_DIR/pip-consumers.log" >&2
    return 1
  fi
}

# Toxiproxy is built from source with the Go toolchain (module and build caches: Go's defaults), once per
# version; the binary's name carries the version, so a version bump builds again.
ensure_toxiproxy() {
  [[ -x "$TOXIPROXY_BIN" ]] && return 0
  local go="${TTLSTREAM_STACK_GO:-}"
  if [[ -z "$go" ]]; then
    if command -v go >/dev/null; then go=go; else go=/usr/local/go/bin/go; fi
  fi
  command -v "$go" >/dev/null || die "Go is needed to build Toxiproxy $TOXIPROXY_VERSION (set TTLSTREAM_STACK_GO)"
  log "building Toxiproxy $TOXIPROXY_VERSION with $go into $TOXIPROXY_DIR/bin"
  local tmp="$TOXIPROXY_DIR/gobin.tmp"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  if ! GOBIN="$tmp" "$go" install "$TOXIPROXY_MODULE@$TOXIPROXY_VERSION" >"$LOG_DIR/go.log" 2>&1; then
    tail -n 40 "$LOG_DIR/go.log" >&2
    die "could not build Toxiproxy $TOXIPROXY_VERSION (full log: $LOG_DIR/go.log)"
  fi
  [[ -x "$tmp/server" ]] || die "go install finished but $tmp/server is missing"
  mkdir -p "$(dirname "$TOXIPROXY_BIN")"
  mv "$tmp/server" "$TOXIPROXY_BIN"
  rm -rf "$tmp"
}

# The proxies exist from the start (Toxiproxy's -config): a restarted Toxiproxy has them again, and the port the
# PROXIED Kafka listener advertises is always served. Tests add and remove toxics; they do not create these.
write_toxiproxy_config() {
  mkdir -p "$(dirname "$TOXIPROXY_CONFIG")"
  cat >"$TOXIPROXY_CONFIG" <<EOF
[
  {"name": "kafka", "listen": "$STACK_HOST:$TOXIPROXY_KAFKA_PORT", "upstream": "$STACK_HOST:$KAFKA_PROXIED_PORT", "enabled": true},
  {"name": "dynamodb", "listen": "$STACK_HOST:$TOXIPROXY_DYNAMODB_PORT", "upstream": "$STACK_HOST:$DYNAMODB_PORT", "enabled": true}
]
EOF
}

write_kafka_config() {
  mkdir -p "$KAFKA_DIR" "$KAFKA_DATA"
  bash "$INFRA_DIR/certs.sh" "$TLS_DIR"
  cat >"$KAFKA_DIR/server.properties" <<EOF
# Written by infra/up.sh on every start; edit infra/lib.sh instead.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$STACK_HOST:$KAFKA_CONTROLLER_PORT
# PROXIED: a second plain listener that advertises Toxiproxy's kafka proxy. A client connects to the broker
# addresses the metadata response advertises for the listener it bootstrapped on, so a client bootstrapping
# through the proxy stays on it (a plain TCP proxy in front of PLAINTEXT would be bypassed after the metadata).
# Only the network-fault tests use it.
# SASL_SCRAM, MTLS, SASL_OAUTH: the secured listeners of test/integration/security (certificates of infra/certs.sh in
# $TLS_DIR, a private CA). The broker talks to itself over PLAINTEXT.
listeners=PLAINTEXT://$STACK_HOST:$KAFKA_PORT,CONTROLLER://$STACK_HOST:$KAFKA_CONTROLLER_PORT,PROXIED://$STACK_HOST:$KAFKA_PROXIED_PORT,SASL_SCRAM://$STACK_HOST:$KAFKA_SCRAM_PORT,MTLS://$STACK_HOST:$KAFKA_MTLS_PORT,SASL_OAUTH://$STACK_HOST:$KAFKA_OAUTH_PORT
advertised.listeners=PLAINTEXT://$STACK_HOST:$KAFKA_PORT,PROXIED://$STACK_HOST:$TOXIPROXY_KAFKA_PORT,SASL_SCRAM://$STACK_HOST:$KAFKA_SCRAM_PORT,MTLS://$STACK_HOST:$KAFKA_MTLS_PORT,SASL_OAUTH://$STACK_HOST:$KAFKA_OAUTH_PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,PROXIED:PLAINTEXT,SASL_SCRAM:SASL_SSL,MTLS:SSL,SASL_OAUTH:SASL_SSL
ssl.keystore.type=PEM
ssl.keystore.location=$TLS_DIR/broker-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$TLS_DIR/ca.pem
listener.name.mtls.ssl.client.auth=required
listener.name.sasl_scram.sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_scram.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_oauth.sasl.enabled.mechanisms=OAUTHBEARER
listener.name.sasl_oauth.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="ttlstream-broker";
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$KAFKA_DATA
num.partitions=6
auto.create.topics.enable=false
offsets.topic.replication.factor=1
# Fewer offsets partitions than the default 50: the first consumer group on a fresh broker joins faster.
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
# Short enough that a test can watch records age out (small retention.ms + segment.ms on its topic).
log.retention.check.interval.ms=5000
log.segment.delete.delay.ms=1000
EOF
  write_kafka_log_config "$KAFKA_DIR"
}

# write_kafka_log_config <dir>: the broker's logging config (both bindings' files) into <dir>; infra/cluster.sh's
# brokers take the same.
write_kafka_log_config() {
  local dir="$1"
  cat >"$dir/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, kafkaAppender
log4j.appender.kafkaAppender=org.apache.log4j.RollingFileAppender
log4j.appender.kafkaAppender.File=${kafka.logs.dir}/kafka-server.log
log4j.appender.kafkaAppender.MaxFileSize=20MB
log4j.appender.kafkaAppender.MaxBackupIndex=3
log4j.appender.kafkaAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.kafkaAppender.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.controller=INFO
log4j.logger.state.change.logger=WARN
log4j.logger.org.apache.kafka.controller=INFO
log4j.logger.kafka.log.LogCleaner=WARN
EOF
  # Kafka 4 logs through log4j2 (log4j 1 / reload4j is gone): the same file, levels and rolling as above.
  cat >"$dir/log4j2.properties" <<'EOF'
status = warn
appender.file.type = RollingFile
appender.file.name = kafkaAppender
appender.file.fileName = ${sys:kafka.logs.dir}/kafka-server.log
appender.file.filePattern = ${sys:kafka.logs.dir}/kafka-server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 20MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = info
rootLogger.appenderRef.file.ref = kafkaAppender
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.statechange.name = state.change.logger
logger.statechange.level = warn
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = warn
EOF
}

# JVM flags that point the broker's logging binding at its config (log4j2 for Kafka 4, reload4j for 3.x).
# kafka_log_flags [dir]: for the config write_kafka_log_config wrote into dir (default: the lane's broker's).
kafka_log_flags() {
  local dir="${1:-$KAFKA_DIR}"
  if [[ "$KAFKA_MAJOR" == 3 ]]; then
    echo "-Dlog4j.configuration=file:$dir/log4j.properties"
  else
    echo "-Dlog4j2.configurationFile=$dir/log4j2.properties"
  fi
}

# A Kafka Uuid: 16 random bytes, base64url without padding; Kafka's own tool avoids a leading '-'.
new_kafka_cluster_id() {
  node -e "let id; do { id = require('crypto').randomBytes(16).toString('base64url'); } while (id.startsWith('-')); process.stdout.write(id)"
}

format_kafka_storage() {
  [[ -f "$KAFKA_DATA/meta.properties" ]] && return 0
  local cluster_id
  cluster_id="$(new_kafka_cluster_id)"
  log "formatting Kafka $KAFKA_VERSION KRaft storage in $KAFKA_DATA (cluster id $cluster_id)"
  # shellcheck disable=SC2086 # STACK_JVM_FLAGS is a list of JVM flags
  if ! java $STACK_JVM_FLAGS -cp "$KAFKA_LIBS/*" "$(kafka_log_flags)" -Dkafka.logs.dir="$LOG_DIR" \
    kafka.tools.StorageTool format -t "$cluster_id" -c "$KAFKA_DIR/server.properties" \
    --add-scram "SCRAM-SHA-512=[name=$KAFKA_SCRAM_USER,password=$KAFKA_SCRAM_PASSWORD]" >>"$LOG_DIR/kafka.out" 2>&1; then
    tail_logs kafka
    die "formatting Kafka storage failed"
  fi
  touch "$KAFKA_DATA/.scram-user"
}

# Storage formatted before the SASL_SCRAM listener existed has no SCRAM user: add it once, through the running
# broker, with the Admin API of the broker's own client jar (a one-file Java program; about 3 s, once per data dir).
ensure_scram_user() {
  [[ -f "$KAFKA_DATA/.scram-user" ]] && return 0
  log "adding the SCRAM user $KAFKA_SCRAM_USER to existing Kafka storage (once)"
  # shellcheck disable=SC2086
  java $STACK_JVM_FLAGS -cp "$KAFKA_LIBS/*" "$INFRA_DIR/AddScramUser.java" "$STACK_HOST:$KAFKA_PORT" "$KAFKA_SCRAM_USER" \
    "$KAFKA_SCRAM_PASSWORD" >>"$LOG_DIR/kafka.out" 2>&1 || die "adding the SCRAM user failed; see $LOG_DIR/kafka.out"
  touch "$KAFKA_DATA/.scram-user"
}

# --- start / stop ------------------------------------------------------------------------------

start_kafka() {
  write_kafka_config
  format_kafka_storage
  # shellcheck disable=SC2086 # KAFKA_HEAP and STACK_JVM_FLAGS are lists of JVM flags
  spawn kafka "$LOG_DIR/kafka.out" java $KAFKA_HEAP $STACK_JVM_FLAGS -XX:+ExitOnOutOfMemoryError \
    "$(kafka_log_flags)" -Dkafka.logs.dir="$LOG_DIR" \
    -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_DIR/server.properties"
}

# dynalite runs on the project's Node release (the one CI tests on), whatever `node` the caller's PATH has first.
stack_node_bin() { bash "$ROOT_DIR/scripts/ensure-node.sh"; }

start_dynamodb() {
  local path_args=(--path "$DYNAMODB_DATA")
  if [[ "${TTLSTREAM_DYNAMODB_INMEMORY:-}" == 1 ]]; then
    path_args=()
  else
    mkdir -p "$DYNAMODB_DATA"
  fi
  [[ -f "$ROOT_DIR/node_modules/dynalite/cli.js" ]] || die "node_modules/dynalite is missing: run npm ci first"
  local node_bin
  node_bin="$(stack_node_bin)" || die "could not install the project's Node release (scripts/ensure-node.sh)"
  spawn dynamodb "$LOG_DIR/dynamodb.log" "$node_bin/node" "$ROOT_DIR/node_modules/dynalite/cli.js" \
    --host "$STACK_HOST" --port "$DYNAMODB_PORT" "${path_args[@]}"
}

start_s3() {
  # moto itself keeps S3 in memory; the wrapper saves it to S3_DATA so restarts keep the objects.
  mkdir -p "$S3_DATA"
  spawn s3 "$LOG_DIR/s3.log" "$VENV_DIR/bin/python" "$INFRA_DIR/s3_server.py" \
    --host "$STACK_HOST" --port "$S3_PORT" --state "$S3_DATA/state.pickle"
}

# moto's server as a second DynamoDB-API implementation, which also serves DynamoDB Streams (the streams role's tests;
# shared/notes: what it does and does not do). In memory: a restart empties it.
start_moto() {
  spawn moto "$LOG_DIR/moto.log" "$VENV_DIR/bin/moto_server" -H "$STACK_HOST" -p "$MOTO_PORT"
}

start_toxiproxy() {
  write_toxiproxy_config
  # Its default level traces every chunk written through a proxy (megabytes a minute under test traffic).
  spawn toxiproxy "$LOG_DIR/toxiproxy.log" env LOG_LEVEL=info "$TOXIPROXY_BIN" -host "$STACK_HOST" \
    -port "$TOXIPROXY_PORT" -config "$TOXIPROXY_CONFIG"
}

# In-memory storage (the app's H2 in memory): a restart or a kill forgets every schema.
start_registry() {
  # shellcheck disable=SC2086 # REGISTRY_HEAP and STACK_JVM_FLAGS are lists of JVM flags
  spawn registry "$LOG_DIR/registry.log" java $REGISTRY_HEAP $STACK_JVM_FLAGS -XX:+ExitOnOutOfMemoryError \
    -Dquarkus.http.port="$REGISTRY_PORT" -Dquarkus.http.host="$STACK_HOST" -jar "$REGISTRY_DIR/quarkus-run.jar"
}

start_service() {
  case "$1" in
    kafka) start_kafka ;;
    dynamodb) start_dynamodb ;;
    s3) start_s3 ;;
    toxiproxy) start_toxiproxy ;;
    registry) start_registry ;;
    moto) start_moto ;;
  esac
}

# Lanes share RUN_DIR: one preparation of a service at a time, so two stacks starting together fetch once.
prepare_service() {
  (
    exec 8>"$RUN_DIR/prepare-$1.lock"
    flock -w 900 8 || die "another stack has been preparing $1 for more than 900 s ($RUN_DIR/prepare-$1.lock)"
    case "$1" in
      kafka) ensure_kafka_libs ;;
      s3 | moto) ensure_venv ;;
      toxiproxy) ensure_toxiproxy ;;
      dynamodb) stack_node_bin >/dev/null ;;
      registry) ensure_registry && ensure_consumers_venv ;;
    esac
  )
}

# wait_ready <service> <timeout-s>: fails with the tail of its log when it does not come up.
wait_ready() {
  local svc="$1" timeout_s="$2" pid rc=0
  pid="$(service_pid "$svc" || true)"
  probe "$svc" $((timeout_s * 1000)) "$pid" || rc=$?
  if ((rc != 0)); then
    tail_logs "$svc"
    if ((rc == 2)); then
      die "$svc exited during start-up; see $(service_logs "$svc")"
    fi
    die "$svc not ready at $(service_endpoint "$svc") within ${timeout_s}s; see $(service_logs "$svc")"
  fi
}

ready_timeout() {
  case "$1" in
    kafka) echo 120 ;;
    dynamodb) echo 30 ;;
    s3) echo 60 ;;
    toxiproxy) echo 20 ;;
    registry) echo 120 ;;
    moto) echo 60 ;;
  esac
}

# stop_service <service> [TERM|KILL]: stops our process; waits until it is gone.
stop_service() {
  local svc="$1" sig="${2:-TERM}" pid i
  if ! pid="$(service_pid "$svc")"; then
    rm -f "$(pid_file "$svc")"
    return 0
  fi
  kill -s "$sig" "$pid" 2>/dev/null || true
  # Kafka's controlled shutdown takes a few seconds; past 60 s it is stuck, so kill it.
  for i in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || break
    if ((i == 600)); then
      log "$svc (pid $pid) did not stop within 60s; sending SIGKILL"
      kill -s KILL "$pid" 2>/dev/null || true
    fi
    sleep 0.1
  done
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  # The port can linger a moment after the process is gone.
  for i in $(seq 1 50); do
    port_open "$(service_port "$svc")" || break
    sleep 0.1
  done
  rm -f "$(pid_file "$svc")"
  log "$svc stopped (pid $pid, SIG$sig)"
}

write_endpoints() {
  mkdir -p "$STATE_DIR"
  local file="$STATE_DIR/endpoints.json"
  cat >"$file.tmp" <<EOF
{"dynamodb":{"endpoint":"$(service_endpoint dynamodb)"},"kafka":{"brokers":["$(service_endpoint kafka)"]},"archive":{"s3Endpoint":"$(service_endpoint s3)"},"registry":{"url":"$(service_endpoint registry)"},"moto":{"endpoint":"$(service_endpoint moto)"}}
EOF
  mv "$file.tmp" "$file"
  echo "$file"
}
