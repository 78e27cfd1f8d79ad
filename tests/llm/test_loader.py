"""Loading checkpoints that disagree with themselves or with config.json fails clearly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pygpukit.llm import SafeTensorsError, load_model_from_safetensors, open_checkpoint
from tiny_models import make_checkpoint, random_weights, write_safetensors


def test_missing_shard(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "llama", shards=2)
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(
        FileNotFoundError, match=r"shard model-00002-of-00002\.safetensors is missing"
    ):
        load_model_from_safetensors(tmp_path, progress=False)


def test_index_names_a_tensor_the_shard_lacks(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "llama", shards=2)
    index_path = tmp_path / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    index["weight_map"]["model.extra.weight"] = "model-00001-of-00002.safetensors"
    index_path.write_text(json.dumps(index))
    with pytest.raises(SafeTensorsError, match=r"'model\.extra\.weight'"):
        open_checkpoint(tmp_path)


def test_bad_index_json(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "llama", shards=2)
    (tmp_path / "model.safetensors.index.json").write_text("{")
    with pytest.raises(SafeTensorsError, match=r"not a valid JSON shard index"):
        open_checkpoint(tmp_path)


def test_tensor_in_two_shards(tmp_path: Path) -> None:
    cfg, _ = make_checkpoint(tmp_path, "llama", shards=2)
    weights = random_weights(cfg)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    second = "model-00002-of-00002.safetensors"
    mine = {k: weights[k] for k, f in index["weight_map"].items() if f == second}
    mine["model.embed_tokens.weight"] = weights["model.embed_tokens.weight"]  # also in shard 1
    write_safetensors(tmp_path / second, mine)
    with pytest.raises(SafeTensorsError, match=r"'model\.embed_tokens\.weight' is in both"):
        open_checkpoint(tmp_path)


def test_shape_disagrees_with_config(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "qwen2")
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["intermediate_size"] = 44
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(
        ValueError,
        match=r"model\.safetensors: tensor 'model\.layers\.0\.mlp\.gate_proj\.weight' "
        r"\(bytes \[\d+, \d+\)\) has shape \(40, 32\) but config\.json implies \(44, 32\)",
    ):
        load_model_from_safetensors(tmp_path, progress=False)


def test_unused_tensors_mean_a_mismatched_config(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "llama")
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["num_hidden_layers"] = 1
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"not used by a llama model"):
        load_model_from_safetensors(tmp_path, progress=False)


def test_missing_tensor(tmp_path: Path) -> None:
    cfg, _ = make_checkpoint(tmp_path, "mixtral")
    weights = random_weights(cfg)
    del weights["model.layers.1.block_sparse_moe.experts.3.w2.weight"]
    write_safetensors(tmp_path / "model.safetensors", weights)
    with pytest.raises(
        ValueError, match=r"no tensor 'model\.layers\.1\.block_sparse_moe\.experts\.3\.w2\.weight'"
    ):
        load_model_from_safetensors(tmp_path, progress=False)


def test_truncated_checkpoint_names_the_file(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "gpt2")
    path = tmp_path / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(
        SafeTensorsError,
        match=r"model\.safetensors: tensor '.*': byte range \[\d+, \d+\) runs past",
    ):
        load_model_from_safetensors(tmp_path, progress=False)


def test_missing_config_and_unknown_model_type(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "llama")
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, model_type="bert")))
    with pytest.raises(ValueError, match=r"model_type 'bert' is not supported"):
        load_model_from_safetensors(tmp_path, progress=False)
    (tmp_path / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        load_model_from_safetensors(tmp_path, progress=False)


def test_bad_dtype_argument(tmp_path: Path) -> None:
    make_checkpoint(tmp_path, "llama")
    with pytest.raises(ValueError, match=r"dtype must be one of"):
        load_model_from_safetensors(tmp_path, dtype="int8", progress=False)


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no model\.safetensors"):
        open_checkpoint(tmp_path)


def test_progress_bar_counts_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_checkpoint(tmp_path, "llama")
    model = load_model_from_safetensors(tmp_path, progress=True)
    assert "loading llama" in capsys.readouterr().err
    assert np.isfinite(model([1, 2]).to_numpy()).all()


def test_scaled_fp8_checkpoints_are_refused_by_name(tmp_path: Path) -> None:
    cfg, _ = make_checkpoint(tmp_path, "llama")
    weights = random_weights(cfg)
    weights["model.layers.0.mlp.up_proj.weight_scale_inv"] = np.ones((1, 1), np.float32)
    write_safetensors(tmp_path / "model.safetensors", weights)
    with pytest.raises(ValueError, match=r"FP8 scale tensors.*not supported yet"):
        load_model_from_safetensors(tmp_path, progress=False)
