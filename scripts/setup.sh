#!/usr/bin/env bash
# Set up a fresh machine for PyGPUkit development: a virtual environment in .venv with
# every package installed editable and the Rust runtime built.
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

# The test-fixture plugins (tests/plugins/*) are not installed: the tests put them on the
# path themselves (tests/plugins/testsite.py), so they never land in the user's environment.
# A .venv made by an older setup.sh may still hold them; take them out.
for fixture in pygpukit-broken pygpukit-toyblas; do
    if "$PY" -m pip show -q "$fixture" >/dev/null 2>&1; then
        "$PY" -m pip uninstall -q -y "$fixture"
    fi
done
if [ -f pygpukit-cuda/pyproject.toml ]; then
    echo "== CUDA backend (builds without a GPU or CUDA Toolkit) and the NVRTC wheel"
    "$PY" -m pip install -q -e ./pygpukit-cuda nvidia-cuda-nvrtc
fi
if [ -f pygpukit-triton/pyproject.toml ]; then
    # after pygpukit-cuda, which it needs; Triton itself (its extra) runs the kernels in
    # Triton's interpreter for the CPU tests (TRITON_INTERPRET=1), no GPU or PyTorch needed
    echo "== Triton backend and Triton"
    "$PY" -m pip install -q -e "./pygpukit-triton[triton]"
fi
echo "== ready: $("$PY" -c 'import pygpukit; print("pygpukit", pygpukit.__version__)')"
