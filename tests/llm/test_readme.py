"""The README's quick-start example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parents[2] / "pygpukit-llm" / "README.md"


def test_quick_start_runs(capsys: object) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    quick_start = blocks[0]
    assert "load_model_from_safetensors" in quick_start
    namespace: dict[str, object] = {}
    exec(compile(quick_start, str(README), "exec"), namespace)
    assert "model" in namespace
    del namespace  # free the model's arrays before the pool check
