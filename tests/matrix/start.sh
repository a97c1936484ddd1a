#!/usr/bin/env bash
# Start a throw-away Synapse homeserver for integration tests.
#
#   start.sh PORT DIR [--detach]
#
# * listens on plain HTTP, 127.0.0.1:PORT only, resource "client" only
#   (that includes /_synapse/admin); server_name "localhost", so user ids are
#   @name:localhost.  No federation listener, federation_domain_whitelist: [].
# * SQLite database, media store, signing key, logs: all inside DIR
#   (created if missing; reused if it already holds a database).
# * registration only via the admin shared-secret API; the secret is written to
#   DIR/shared_secret (setup_room.py reads it from there).
# * rate limits relaxed (all rc_* very high) unless SYNAPSE_DEFAULT_RATELIMITS=1.
# * prints "SYNAPSE READY" on stdout once GET /_matrix/client/versions answers
#   200, then (default) keeps running in the foreground: the script exec()s into
#   Synapse, so the PID you spawned *is* Synapse; SIGTERM/SIGINT stop it.
#   With --detach (or SYNAPSE_DETACH=1) Synapse is started in its own session,
#   the script exits 0 after READY, and its PID is in DIR/synapse.pid
#   (stop it with stop.sh DIR).
# * Synapse's own stdout/stderr go to DIR/synapse.out, its log to
#   DIR/homeserver.log; stdout of this script only carries the READY line
#   (plus "SYNAPSE PID n" in --detach mode).
# * on failure (port busy, Synapse died, timeout) prints "SYNAPSE FAILED ..."
#   on stderr with the log tail and exits non-zero.
#
# Environment:
#   SYNAPSE_VENV             venv with matrix-synapse (default /opt/synapse-venv;
#                            installed by install.sh beside this file if missing)
#   SYNAPSE_START_TIMEOUT    seconds to wait for READY (default 90)
#   SYNAPSE_LOG_LEVEL        root log level for DIR/homeserver.log (default INFO)
#   SYNAPSE_DEFAULT_RATELIMITS=1  keep Synapse's default rate limits
#   SYNAPSE_SERVER_NAME      default localhost
set -euo pipefail

usage() { echo "usage: $0 PORT DIR [--detach]" >&2; exit 2; }
[ $# -ge 2 ] || usage
PORT="$1"; DIR="$2"; DETACH="${SYNAPSE_DETACH:-0}"
[ "${3:-}" = "--detach" ] && DETACH=1
[[ "$PORT" =~ ^[0-9]+$ ]] || usage

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
default_venv=/opt/synapse-venv
[ "$(id -u)" -eq 0 ] || default_venv="$HOME/.cache/coe/synapse-venv"
VENV="${SYNAPSE_VENV:-$default_venv}"
TIMEOUT="${SYNAPSE_START_TIMEOUT:-90}"
LOG_LEVEL="${SYNAPSE_LOG_LEVEL:-INFO}"
SERVER_NAME="${SYNAPSE_SERVER_NAME:-localhost}"

if ! [ -x "$VENV/bin/python" ]; then
    bash "$HERE/install.sh" "$VENV" >&2
fi
PY="$VENV/bin/python"

mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
mkdir -p "$DIR/media_store"

# Refuse a busy port: otherwise a server already there would answer /versions
# and we would print READY for the wrong process.
if "$PY" - "$PORT" <<'EOF'
import socket, sys
s = socket.socket()
s.settimeout(0.5)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)          # nothing listening: good
sys.exit(0)
EOF
then
    echo "SYNAPSE FAILED: port $PORT on 127.0.0.1 is already in use" >&2
    exit 1
fi

# Secrets persist in DIR so a restart on the same DIR keeps working tokens.
secret() {  # secret FILE
    [ -s "$1" ] || "$PY" -c 'import secrets; print(secrets.token_hex(32))' > "$1"
    cat "$1"
}
SHARED_SECRET="$(secret "$DIR/shared_secret")"
MACAROON_SECRET="$(secret "$DIR/macaroon_secret")"
FORM_SECRET="$(secret "$DIR/form_secret")"

cat > "$DIR/log.config" <<EOF
version: 1
formatters:
  precise:
    format: '%(asctime)s - %(name)s - %(lineno)d - %(levelname)s - %(request)s - %(message)s'
handlers:
  file:
    class: logging.FileHandler
    formatter: precise
    filename: $DIR/homeserver.log
    encoding: utf8
loggers:
  synapse.storage.SQL:
    level: WARNING
  twisted:
    level: WARNING
root:
  level: $LOG_LEVEL
  handlers: [file]
disable_existing_loggers: false
EOF

# The config is rewritten on every start (so PORT may change between runs);
# database, signing key and secrets are kept.
cat > "$DIR/homeserver.yaml" <<EOF
server_name: "$SERVER_NAME"
public_baseurl: "http://127.0.0.1:$PORT/"
pid_file: "$DIR/homeserver.pid"
listeners:
  - port: $PORT
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: "$DIR/homeserver.db"
log_config: "$DIR/log.config"
media_store_path: "$DIR/media_store"
signing_key_path: "$DIR/signing.key"
report_stats: false
enable_metrics: false
suppress_key_server_warning: true
trusted_key_servers: []
federation_domain_whitelist: []
allow_public_rooms_over_federation: false
enable_registration: false
registration_shared_secret: "$SHARED_SECRET"
macaroon_secret_key: "$MACAROON_SECRET"
form_secret: "$FORM_SECRET"
# bcrypt cost 4 instead of 12: register/login take ~1 ms instead of ~0.25 s.
bcrypt_rounds: 4
presence:
  enabled: false
url_preview_enabled: false
EOF

if [ "${SYNAPSE_DEFAULT_RATELIMITS:-0}" != 1 ]; then
    cat >> "$DIR/homeserver.yaml" <<'EOF'
# --- rate limits relaxed for tests ---
rc_message: {per_second: 10000, burst_count: 100000}
rc_registration: {per_second: 10000, burst_count: 100000}
rc_registration_token_validity: {per_second: 10000, burst_count: 100000}
rc_login:
  address: {per_second: 10000, burst_count: 100000}
  account: {per_second: 10000, burst_count: 100000}
  failed_attempts: {per_second: 10000, burst_count: 100000}
rc_admin_redaction: {per_second: 10000, burst_count: 100000}
rc_joins:
  local: {per_second: 10000, burst_count: 100000}
  remote: {per_second: 10000, burst_count: 100000}
rc_joins_per_room: {per_second: 10000, burst_count: 100000}
rc_3pid_validation: {per_second: 10000, burst_count: 100000}
rc_invites:
  per_room: {per_second: 10000, burst_count: 100000}
  per_user: {per_second: 10000, burst_count: 100000}
  per_issuer: {per_second: 10000, burst_count: 100000}
rc_third_party_invite: {per_second: 10000, burst_count: 100000}
rc_media_create: {per_second: 10000, burst_count: 100000}
rc_presence:
  per_user: {per_second: 10000, burst_count: 100000}
rc_delayed_event_mgmt: {per_second: 10000, burst_count: 100000}
rc_room_creation: {per_second: 10000, burst_count: 100000}
rc_reports: {per_second: 10000, burst_count: 100000}
rc_user_directory: {per_second: 10000, burst_count: 100000}
rc_profile: {per_second: 10000, burst_count: 100000}
rc_key_requests: {per_second: 10000, burst_count: 100000}
EOF
fi

# Signing key: Synapse's default mode (--generate-missing-and-run) creates
# DIR/signing.key on first start, so no separate
# `--generate-keys` run (it would cost another ~1.5 s of Python imports).

# Waits for /versions; prints READY on stdout.  Argument: PID to watch.
wait_ready() {
    "$PY" - "$PORT" "$1" "$TIMEOUT" "$DIR" <<'EOF'
import os, sys, time, urllib.request
port, pid, timeout, d = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
url = f"http://127.0.0.1:{port}/_matrix/client/versions"
deadline = time.monotonic() + timeout

def alive():
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped) also counts as dead
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

def fail(why):
    sys.stderr.write(f"SYNAPSE FAILED: {why}\n")
    for name in ("synapse.out", "homeserver.log"):
        try:
            with open(os.path.join(d, name), errors="replace") as f:
                tail = f.readlines()[-25:]
            sys.stderr.write(f"--- tail of {d}/{name} ---\n" + "".join(tail))
        except OSError:
            pass
    sys.exit(1)

while True:
    if not alive():
        fail(f"synapse (pid {pid}) exited before answering {url}")
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            if r.status == 200:
                print("SYNAPSE READY", flush=True)
                sys.exit(0)
    except Exception:
        pass
    if time.monotonic() > deadline:
        try:
            os.kill(pid, 15)   # don't leave a hung server behind
        except OSError:
            pass
        fail(f"no answer from {url} within {timeout:.1f}s (sent SIGTERM to {pid})")
    time.sleep(0.1)
EOF
}

RUN=("$PY" -m synapse.app.homeserver -c "$DIR/homeserver.yaml")

if [ "$DETACH" = 1 ]; then
    setsid "${RUN[@]}" >"$DIR/synapse.out" 2>&1 </dev/null &
    pid=$!
    echo "$pid" > "$DIR/synapse.pid"
    if wait_ready "$pid"; then
        echo "SYNAPSE PID $pid"
        exit 0
    fi
    kill "$pid" 2>/dev/null || true
    exit 1
fi

# Foreground: a detached watcher prints READY (on our original stdout) while
# this process exec()s into Synapse, keeping our PID.  If Synapse dies before
# it is ready, the watcher prints FAILED on stderr; our caller sees the exit.
echo "$$" > "$DIR/synapse.pid"
exec 3>&1
( ( wait_ready "$$" >&3 || true ) & ) 
exec "${RUN[@]}" >"$DIR/synapse.out" 2>&1 3>&- </dev/null
