"""`python -m pygpukit.audio transcribe`: output formats, file input, and errors as exit code 2."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pygpukit.audio
import pytest
from pygpukit.audio.__main__ import main
from tiny_whisper import make_checkpoint

soundfile = pytest.importorskip("soundfile")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-whisper")
    make_checkpoint(path, seed=11)
    return path


def _wav(folder: Path, seconds: float, rate: int = 16000, channels: int = 1) -> Path:
    t = np.arange(int(seconds * rate)) / rate
    y = 0.3 * np.sin(2 * np.pi * 220 * t) * (1 + 0.5 * np.sin(7 * t))
    data = np.stack([y] * channels, axis=1) if channels > 1 else y
    path = folder / f"clip-{rate}-{channels}.wav"
    soundfile.write(path, data.astype(np.float32), rate)
    return path


def _run(*argv: str) -> str:
    out = io.StringIO()
    assert main(["transcribe", *argv, "--quiet"], stdout=out) == 0
    return out.getvalue()


def test_formats_agree_on_the_segments(model_dir: Path, tmp_path: Path) -> None:
    wav = _wav(tmp_path, 1.2, channels=2)  # stereo files are mixed down
    args = [str(wav), "--model", str(model_dir), "--language", "en", "--temperature", "0"]
    data = json.loads(_run(*args, "--format", "json"))
    segments = data["segments"]
    assert data["language"] == "en" and segments
    text_lines = _run(*args).splitlines()
    assert len(text_lines) == len(segments)
    assert text_lines[0].startswith("[00:00:0")
    srt = _run(*args, "--format", "srt")
    assert (
        srt.startswith("1\n00:00:0") and " --> " in srt and srt.count("\n\n") == len(segments) - 1
    )
    vtt = _run(*args, "--format", "vtt")
    assert vtt.startswith("WEBVTT\n\n")
    assert _run(*args, "--format", "plain").strip() == data["text"].strip()
    beam = json.loads(_run(*args, "--format", "json", "--beam-size", "3"))
    assert beam["segments"]


def test_errors_exit_with_a_message(
    model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wav = _wav(tmp_path, 0.3)
    assert main(["transcribe", str(wav), "--model", str(tmp_path / "none"), "--quiet"]) == 2
    assert "not a directory" in capsys.readouterr().err
    corrupt = tmp_path / "corrupt.wav"
    corrupt.write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunk")
    assert main(["transcribe", str(corrupt), "--model", str(model_dir), "--quiet"]) == 2
    assert "corrupt.wav" in capsys.readouterr().err
    missing = tmp_path / "missing.wav"
    assert main(["transcribe", str(missing), "--model", str(model_dir), "--quiet"]) == 2
    assert "no such audio file" in capsys.readouterr().err


def test_files_at_other_rates_are_resampled(model_dir: Path, tmp_path: Path) -> None:
    from pygpukit.asr import whisper

    t = np.arange(int(0.6 * 44100)) / 44100
    wav = tmp_path / "cd.wav"
    soundfile.write(wav, (0.3 * np.sin(2 * np.pi * 330 * t)).astype(np.float32), 44100)
    model = whisper.load(model_dir, progress=False)
    from_file = model.transcribe(wav, language="en", temperature=0.0)
    resampled = pygpukit.audio.resample(soundfile.read(wav, dtype="float32")[0], orig_sr=44100,
                                        target_sr=16000)  # fmt: skip
    from_array = model.transcribe(resampled, language="en", temperature=0.0)
    assert [s.tokens for s in from_file.segments] == [s.tokens for s in from_array.segments]


def test_module_runs_from_the_shell(model_dir: Path, tmp_path: Path) -> None:
    wav = _wav(tmp_path, 0.4)
    done = subprocess.run(
        [sys.executable, "-m", "pygpukit.audio", "transcribe", str(wav), "--model",
         str(model_dir), "--language", "de", "--format", "json", "--quiet"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["language"] == "de"
