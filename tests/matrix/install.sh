#!/usr/bin/env bash
# Install Synapse into a venv (idempotent).  Usage: install.sh [VENV]
#   VENV             default: $SYNAPSE_VENV or /opt/synapse-venv
#   SYNAPSE_VERSION  default: 1.163.2 (the version this harness was tested with);
#                    set to "latest" for an unpinned install.
# Uses Debian's /usr/bin/python3 (not a pyenv shim) when present.  On Debian 12
# `python3 -m venv` needs the python3-venv package (ensurepip); installed here
# with apt-get if missing.
set -euo pipefail

default_venv=/opt/synapse-venv
[ "$(id -u)" -eq 0 ] || default_venv="$HOME/.cache/coe/synapse-venv"
VENV="${1:-${SYNAPSE_VENV:-$default_venv}}"
VERSION="${SYNAPSE_VERSION:-1.163.2}"
PY="${SYNAPSE_BASE_PYTHON:-/usr/bin/python3}"
[ -x "$PY" ] || PY="$(command -v python3)"

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import synapse' 2>/dev/null; then
    exit 0
fi

if ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "install.sh: python3-venv missing, installing with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq python3-venv >/dev/null
fi

"$PY" -m venv "$VENV"
spec="matrix-synapse"
[ "$VERSION" = latest ] || spec="matrix-synapse==$VERSION"
# --only-binary: Synapse ships manylinux wheels (its Rust extension is
# prebuilt), so nothing is compiled; an sdist fallback would need a Rust
# toolchain and take many minutes.
nice -n 10 "$VENV/bin/pip" install -q --only-binary=:all: "$spec"
"$VENV/bin/python" -c 'import synapse; print("installed matrix-synapse", synapse.__version__)' >&2
