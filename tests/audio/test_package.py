"""pygpukit-audio as a package: the gp.audio plugin namespace, the README and the example."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pygpukit as gp
import pygpukit.audio
from pygpukit.audio import plugin

ROOT = Path(__file__).parents[2] / "pygpukit-audio"


def test_namespace_is_the_package() -> None:
    info = gp.plugins.get("audio")
    assert info.namespaces == ["audio"]
    assert gp.audio is pygpukit.audio
    assert gp.audio.stft is pygpukit.audio.stft


def test_doctor_reports_soundfile() -> None:
    checks: list[tuple[str, bool, str]] = []
    plugin.pygpukit_diagnose(lambda name, ok, detail: checks.append((name, ok, detail)))
    assert [c[0].split()[0] for c in checks] == ["soundfile"]


def test_every_public_name_resolves() -> None:
    for name in pygpukit.audio.__all__:
        assert getattr(pygpukit.audio, name) is not None
    for module in (gp.audio.feature, gp.audio.effects, gp.audio.onset, gp.audio.decompose):
        for name in module.__all__:
            assert callable(getattr(module, name))


def test_readme_quick_start_runs() -> None:
    quick_start = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)[0]
    namespace: dict[str, object] = {}
    exec(compile(quick_start, "README.md", "exec"), namespace)
    f0 = np.asarray(namespace["f0"])
    np.testing.assert_allclose(np.median(f0, axis=-1), [440.0, 660.0], rtol=5e-3)


def test_example_runs(tmp_path: Path) -> None:
    script = ROOT / "examples" / "audio_tour.py"
    done = subprocess.run([sys.executable, str(script), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "equals the offline STFT: True" in done.stdout
    assert (tmp_path / "tour.wav").is_file()


def test_clear_cache_drops_this_threads_nan_flags() -> None:
    # the GPU path keeps one NaN flag per thread and device between calls; clear_cache (as
    # the tests' pool check needs) must give its memory back
    from pygpukit.audio import _nan_flag

    _nan_flag._local.flags = {0: object()}
    pygpukit.audio.clear_cache()
    assert not hasattr(_nan_flag._local, "flags")
