#!/usr/bin/env bash
# Validates gpuplan's exports with the real tools, offline: Kubernetes objects
# with kubernetes-validate, SkyPilot tasks with SkyPilot's own loader
# (scripts/validate_exports.py says what exactly). The pinned tools live in a
# virtualenv under ~/.cache/gpuplan, keyed by the requirements file's hash, so a
# new pin gets a new environment; creating one takes a few minutes (pip).
#
#   scripts/validate-exports.sh [DIR...]   # default: every examples/exports/*/
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=scripts/export-validation-requirements.txt
key=$(sha256sum "$requirements" | cut -c1-12)
venv="${GPUPLAN_CACHE:-$HOME/.cache/gpuplan}/venv-exports-$key"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
  echo "== creating $venv (pip install -r $requirements)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  touch "$venv/.complete"
fi

if [ "$#" -eq 0 ]; then
  set -- examples/exports/*/
fi
exec "$venv/bin/python" scripts/validate_exports.py "$@"
