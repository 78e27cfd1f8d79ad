#!/usr/bin/env bash
# Set up a fresh machine for PyGPUkit development: a virtual environment in .venv with
# every package installed editable, the Rust runtime built, and the test plugins.
# Safe to run again: it reuses .venv and reinstalls what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    echo "== creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
fi
PY=.venv/bin/python
"$PY" -m pip install -q --upgrade pip

echo "== Rust runtime (_pygpukit_rust, built by maturin)"
if ! command -v cargo >/dev/null; then
    echo "cargo not found: install Rust (https://rustup.rs) to build the runtime" >&2
    exit 1
fi
"$PY" -m pip install -q ./rust

echo "== Python packages (editable) and dev tools"
"$PY" -m pip install -q -r requirements-dev.txt

for extra in tests/plugins/*/; do
    [ -f "$extra/pyproject.toml" ] && "$PY" -m pip install -q "$extra"
done
if [ -f pygpukit-cuda/pyproject.toml ]; then
    echo "== CUDA backend (builds without a GPU or CUDA Toolkit) and the NVRTC wheel"
    "$PY" -m pip install -q -e ./pygpukit-cuda nvidia-cuda-nvrtc
fi
echo "== ready: $("$PY" -c 'import pygpukit; print("pygpukit", pygpukit.__version__)')"
