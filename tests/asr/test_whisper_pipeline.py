"""Whisper end to end on a tiny random checkpoint written with NumPy (no torch needed):
loading and its errors, batched decoding, beam search bookkeeping, long-form segments."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from pygpukit.asr import whisper
from tiny_whisper import (
    EOT,
    SOT,
    SOURCE_POSITIONS,
    TIMESTAMP_BEGIN,
    make_checkpoint,
    write_generation_config,
)

WINDOW_SAMPLES = 2 * SOURCE_POSITIONS * 160  # 0.5 s: the tiny model's window


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-whisper")
    make_checkpoint(path, seed=3)
    return path


def _load(folder: Path) -> whisper.Whisper:
    # loaded inside each test (not a fixture) so its arrays are freed before the pool check
    return whisper.load(folder, progress=False)


def _speechlike(seed: int, seconds: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 16000)) / 16000
    tone = np.sin(2 * np.pi * (180 + 60 * np.sin(3 * t)) * t) * (0.5 + 0.5 * np.sin(5 * t))
    return (0.3 * tone + 0.05 * rng.standard_normal(t.size)).astype(np.float32)


def _timestamp_grammar_holds(tokens: list[int]) -> None:
    stamps = [t for t in tokens if t >= TIMESTAMP_BEGIN]
    assert tokens and tokens[0] >= TIMESTAMP_BEGIN, "the first token is a timestamp"
    assert stamps == sorted(stamps), "timestamps never go back"
    for a, b, c in zip(tokens, tokens[1:], tokens[2:], strict=False):
        assert not (a >= TIMESTAMP_BEGIN and b >= TIMESTAMP_BEGIN and c >= TIMESTAMP_BEGIN)
    assert EOT not in tokens and SOT not in tokens


def test_loads_with_special_tokens(folder: Path) -> None:
    model = _load(folder)
    t = model.tokens
    assert (t.sot, t.eot, t.timestamp_begin) == (SOT, EOT, TIMESTAMP_BEGIN)
    assert t.multilingual and list(t.languages) == ["en", "de"]
    assert "multilingual" in repr(model)


def test_batch_decoding_equals_one_clip_at_a_time(folder: Path) -> None:
    model = _load(folder)
    clips = np.stack([_speechlike(1, 0.4), _speechlike(2, 0.4)])
    batch = model.decode(clips, language="de")
    for clip, got in zip(clips, batch, strict=True):
        alone = model.decode(clip, language="de")[0]
        assert got.tokens == alone.tokens
        assert got.avg_logprob == pytest.approx(alone.avg_logprob, abs=1e-6)
        _timestamp_grammar_holds(got.tokens)


def test_language_detection_gives_probabilities(folder: Path) -> None:
    model = _load(folder)
    probs = model.detect_language(np.stack([_speechlike(3, 0.3), _speechlike(4, 0.3)]))
    for p in probs:
        assert set(p) == {"en", "de"} and sum(p.values()) == pytest.approx(1.0)
    got = model.decode(_speechlike(3, 0.3))[0]
    assert got.language == max(probs[0], key=probs[0].__getitem__)


def _rescore(model: whisper.Whisper, clip: np.ndarray, tokens: list[int]) -> float:
    """Sum of log-probabilities of `tokens` after the start (and of the end token, when the
    sequence ended before the sample length), teacher-forced in one pass, with the same
    logit rules (suppression and timestamp grammar) applied step by step."""
    from pygpukit.asr.whisper.decoding import _log_softmax, _Rules

    options = whisper.DecodeOptions(language="en")
    m = model.model
    cross = m.cross_cache(m.encode(model.features(clip)))
    start = [SOT, model.tokens.languages["en"], model.tokens.transcribe]
    ids = np.array([start + tokens + [EOT]])
    logits = m.decode(ids, m.new_cache(1), cross).to_numpy()[0].astype(np.float64)
    rules = _Rules(model.tokens, options, m.config.vocab_size)
    total = 0.0
    ended = len(tokens) < m.config.max_target_positions // 2
    for i, tok in enumerate([*tokens, EOT] if ended else tokens):
        step = rules.apply(logits[len(start) - 1 + i][None], [tokens[:i]])
        total += float(_log_softmax(step)[0, tok])
    return total


def test_beam_search_scores_are_the_sequences_log_probabilities(folder: Path) -> None:
    model = _load(folder)
    clip = _speechlike(5, 0.45)
    greedy = model.decode(clip, language="en")[0]
    one_beam = model.decode(clip, language="en", beam_size=1)[0]
    assert one_beam.tokens == greedy.tokens
    for beams in (3, 5):
        best = model.decode(clip, language="en", beam_size=beams)[0]
        _timestamp_grammar_holds(best.tokens)
        total = best.avg_logprob * (len(best.tokens) + 1)
        assert total == pytest.approx(_rescore(model, clip, best.tokens), abs=1e-3)


def test_long_audio_becomes_ordered_segments(folder: Path) -> None:
    model = _load(folder)
    audio = _speechlike(6, 2.2)
    result = model.transcribe(audio, language="en", temperature=0.0, progress=True)
    assert result.language == "en" and result.segments
    assert result.text == "".join(s.text for s in result.segments)
    ends = [0.0]
    for s in result.segments:
        assert 0.0 <= s.start < s.end <= 2.2 + 0.5
        assert s.start >= ends[-1] - 0.5  # a window re-entered at its last timestamp
        assert all(t < EOT or t >= TIMESTAMP_BEGIN for t in s.tokens)
        ends.append(s.end)
    assert max(s.seek for s in result.segments) > 0  # more than one window was decoded
    plain = model.transcribe(audio, language="en", temperature=0.0, without_timestamps=True)
    starts = [s.start for s in plain.segments]
    assert starts == sorted(starts) and all(round(x / 0.5, 6).is_integer() for x in starts)


def test_transcribe_is_deterministic_with_fallback_sampling(folder: Path) -> None:
    model = _load(folder)
    audio = _speechlike(7, 1.1)
    a = model.transcribe(audio, seed=4, logprob_threshold=0.0)  # forces the fallback ladder
    b = model.transcribe(audio, seed=4, logprob_threshold=0.0)
    assert [s.tokens for s in a.segments] == [s.tokens for s in b.segments]
    assert any(s.temperature > 0 for s in a.segments)


@pytest.mark.parametrize("how", ["generation-config", "no-language-tokens"])
def test_english_only_model_has_no_language_or_task_tokens(tmp_path: Path, how: str) -> None:
    make_checkpoint(tmp_path, seed=8)
    if how == "generation-config":  # the released .en models keep the language tokens
        write_generation_config(tmp_path, is_multilingual=False)
    else:
        tok = json.loads((tmp_path / "tokenizer.json").read_text())
        for entry in tok["added_tokens"]:  # rename <|en|>, <|de|> so no language is found
            if entry["content"] in ("<|en|>", "<|de|>"):
                entry["content"] = entry["content"].replace("|>", "x|>").replace("<|", "<|_")
        (tmp_path / "tokenizer.json").write_text(json.dumps(tok))
    model = whisper.load(tmp_path, progress=False)
    assert not model.tokens.multilingual
    got = model.decode(_speechlike(9, 0.3))[0]
    assert got.language == "en" and not got.language_probs
    with pytest.raises(ValueError, match="English-only"):
        model.detect_language(_speechlike(9, 0.3))


@pytest.mark.parametrize(
    ("audio", "kwargs", "error", "match"),
    [
        (np.zeros(8000, np.float32), {"sample_rate": 8000}, ValueError, "resample"),
        (np.zeros((8000, 2), np.float32), {}, ValueError, "mono"),
        (np.zeros(0, np.float32), {}, ValueError, "empty"),
        (np.full(8000, np.nan, np.float32), {}, ValueError, "NaN"),
        (np.zeros(8000, np.float32), {"language": "xx"}, ValueError, "language 'xx'"),
        (np.zeros(8000, np.float32), {"task": "summarize"}, ValueError, "task"),
        (np.zeros(8000, np.float32), {"beam_size": 0}, ValueError, "beam_size"),
        ("/no/such/file.wav", {}, FileNotFoundError, "no such audio file"),
    ],
    ids=["rate", "stereo", "empty", "nan", "language", "task", "beam", "missing-file"],
)
def test_transcribe_refuses_bad_input(
    folder: Path, audio: object, kwargs: dict[str, object], error: type, match: str
) -> None:
    model = _load(folder)
    with pytest.raises(error, match=match):
        model.transcribe(audio, **kwargs)  # type: ignore[arg-type]


def test_corrupt_wav_is_refused(folder: Path, tmp_path: Path) -> None:
    model = _load(folder)
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunkjunkjunk")
    with pytest.raises(ValueError, match=r"bad\.wav"):
        model.transcribe(bad)


def test_features_must_fit_the_encoder(folder: Path) -> None:
    model = _load(folder)
    with pytest.raises(ValueError, match=r"\(batch, 80, 50\)"):
        model.model.encode(np.zeros((1, 80, 49), np.float32))
    with pytest.raises(ValueError, match=r"\(batch, 80, 50\)"):
        model.model.encode(np.zeros((1, 128, 50), np.float32))


def _copy(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(folder, target)
    return target


def test_missing_and_mismatched_folders_are_refused(folder: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a directory"):
        whisper.load(tmp_path / "absent", progress=False)
    broken = _copy(folder, tmp_path)
    (broken / "tokenizer.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"tokenizer\.json"):
        whisper.load(broken, progress=False)
    shutil.rmtree(broken)
    broken = _copy(folder, tmp_path)
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps(dict(config, model_type="gpt2")))
    with pytest.raises(ValueError, match="not 'whisper'"):
        whisper.load(broken, progress=False)
    (broken / "config.json").write_text(json.dumps(dict(config, decoder_ffn_dim=64)))
    with pytest.raises(ValueError, match=r"fc1\.weight"):
        whisper.load(broken, progress=False)
    (broken / "config.json").write_text(json.dumps(dict(config, encoder_layers=1)))
    with pytest.raises(ValueError, match="not used"):
        whisper.load(broken, progress=False)
    (broken / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="safetensors"):
        whisper.load(broken, progress=False)


def test_windows_judged_silent_are_skipped(folder: Path) -> None:
    model = _load(folder)
    audio = _speechlike(10, 1.2)
    # a no-speech threshold below every probability: each window counts as silence
    silent = model.transcribe(audio, language="en", no_speech_threshold=-1.0,
                              logprob_threshold=None)  # fmt: skip
    assert silent.segments == [] and silent.text == ""
    heard = model.transcribe(audio, language="en", no_speech_threshold=None)
    assert heard.segments


def test_gpuarray_audio_transcribes_like_numpy_audio(folder: Path) -> None:
    import pygpukit as gp

    model = _load(folder)
    audio = _speechlike(12, 0.9)
    want = model.transcribe(audio, language="en", temperature=0.0)
    got = model.transcribe(gp.from_numpy(audio), language="en", temperature=0.0)
    assert [s.tokens for s in got.segments] == [s.tokens for s in want.segments]
