#!/usr/bin/env bash
# Install PyPI's scim2-tester (with scim2-client's httpx2 engine) into a venv
# (idempotent).  Usage: install.sh [VENV]
#   VENV  default: $SCIM_TESTER_VENV or /opt/scim2-tester-venv (as root), else
#         ~/.cache/coe/scim2-tester-venv
# Versions are pinned to those the checks were last run with (tests/api/scim.rs).
# Uses Debian's /usr/bin/python3 (3.11; scim2-tester needs >= 3.11) when present.
set -euo pipefail

default_venv=/opt/scim2-tester-venv
[ "$(id -u)" -eq 0 ] || default_venv="$HOME/.cache/coe/scim2-tester-venv"
VENV="${1:-${SCIM_TESTER_VENV:-$default_venv}}"
PY="${SCIM_TESTER_BASE_PYTHON:-/usr/bin/python3}"
[ -x "$PY" ] || PY="$(command -v python3)"

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import scim2_tester, httpx2' 2>/dev/null; then
    exit 0
fi

if ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "install.sh: python3-venv missing, installing with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq python3-venv >/dev/null
fi

"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --only-binary=:all: \
    "scim2-tester==0.5.2" "scim2-client[httpx2]==0.13.2" "scim2-models==0.12.3"
"$VENV/bin/python" -c 'import scim2_tester; print("installed scim2-tester")' >&2
