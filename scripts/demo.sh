#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the demo on the best device present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pygpukit demo "$@"
