#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run every check CI runs: lint, types, Rust tests, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=.venv/bin/python

echo "== ruff"
"$PY" -m ruff check .
"$PY" -m ruff format --check .
echo "== mypy (pygpukit-core, pygpukit-cuda, pygpukit-llm, pygpukit-audio)"
"$PY" -m mypy
if [ -f rust/Cargo.toml ]; then
    echo "== cargo test"
    (cd rust && cargo test --quiet)
fi
echo "== pytest"
"$PY" -m pytest -q "$@"
