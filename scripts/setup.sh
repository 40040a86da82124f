#!/usr/bin/env bash
# Create .venv (if missing) and install the project with its pinned dependencies.
# Idempotent: a re-run with nothing changed only checks a stamp and returns.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.zocrates-installed
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
# torch first: 2.13.0 is a local CPU wheel; anything else pulls a multi-GB CUDA build.
.venv/bin/python -m pip install -q "torch==2.13.0"
# Everything else in ONE resolve (litellm and chromadb conflict on python-dateutil otherwise).
.venv/bin/python -m pip install -q -e ".[dev,notebooks]"
# Editable installs skip data-files (setuptools bug): enable the Jupyter server extension by hand.
install -D -m 644 jupyter-config/jupyter_server_config.d/zocrates_nb.json \
  .venv/etc/jupyter/jupyter_server_config.d/zocrates_nb.json
echo "$want" > "$stamp"
