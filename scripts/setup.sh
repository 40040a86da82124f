#!/usr/bin/env bash
# Create .venv (if missing) and install the project with every extra, at the versions the tests
# ran with (constraints.txt: pyproject.toml declares ranges, this file the tested set).
# Idempotent: a re-run with nothing changed only checks a stamp and returns.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.zocrates-installed
want=$(cat pyproject.toml constraints.txt scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
# torch first: the constrained version is a local CPU wheel; anything else pulls a multi-GB CUDA
# build. (A torch already in the environment that satisfies pyproject's range is kept.)
.venv/bin/python -m pip install -q -c constraints.txt torch
# Everything else in ONE resolve (litellm and chromadb conflict on python-dateutil otherwise).
.venv/bin/python -m pip install -q -c constraints.txt -e ".[dev,mcp,notebooks,samples,telemetry]"
# Editable installs skip data-files (setuptools bug): enable the Jupyter server extension by hand.
install -D -m 644 jupyter-config/jupyter_server_config.d/zocrates_nb.json \
  .venv/etc/jupyter/jupyter_server_config.d/zocrates_nb.json
echo "$want" > "$stamp"
