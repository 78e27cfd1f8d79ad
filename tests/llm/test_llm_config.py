"""config.json reading (both rope field styles, per-family defaults) and family detection."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pygpukit.llm import TransformerConfig, detect_model_spec, load_config
from pygpukit.llm.rope import inverse_frequencies
from tiny_models import CONFIGS, random_weights


def test_every_family_reads() -> None:
    for family, raw in CONFIGS.items():
        cfg = TransformerConfig.from_dict(raw)
        assert cfg.model_type == family and cfg.num_layers == 2
    gpt2 = TransformerConfig.from_dict(CONFIGS["gpt2"])
    assert (gpt2.norm, gpt2.positions, gpt2.activation) == ("layer", "learned", "gelu_tanh")
    assert gpt2.tie_word_embeddings and gpt2.intermediate_size == 4 * gpt2.hidden_size
    assert TransformerConfig.from_dict(CONFIGS["qwen3"]).qk_norm
    assert TransformerConfig.from_dict(CONFIGS["mistral"]).head_dim == 12
    mixtral = TransformerConfig.from_dict(CONFIGS["mixtral"])
    assert (mixtral.num_experts, mixtral.num_experts_per_tok) == (4, 2)
    qwen2 = TransformerConfig.from_dict(CONFIGS["qwen2"])
    assert qwen2.attention_bias and not qwen2.output_bias
    assert qwen2.rope_scaling == {"type": "linear", "factor": 3.0, "rope_type": "linear"}


def test_rope_parameters_and_rope_scaling_agree() -> None:
    old = dict(CONFIGS["llama"], rope_theta=5e5)
    new = {k: v for k, v in old.items() if k not in ("rope_theta", "rope_scaling")}
    new["rope_parameters"] = dict(old["rope_scaling"], rope_theta=5e5)
    a, b = TransformerConfig.from_dict(old), TransformerConfig.from_dict(new)
    assert a.rope_theta == b.rope_theta == 5e5
    np.testing.assert_array_equal(inverse_frequencies(a)[0], inverse_frequencies(b)[0])
    plain = dict(new, rope_parameters={"rope_type": "default", "rope_theta": 1e4})
    assert TransformerConfig.from_dict(plain).rope_scaling is None


def test_rope_variants() -> None:
    base = TransformerConfig.from_dict(dict(CONFIGS["qwen3"]))
    inv, attention = inverse_frequencies(base)
    np.testing.assert_allclose(inv, 1e4 ** -(np.arange(0, 16, 2) / 16))
    assert attention == 1.0
    linear = TransformerConfig.from_dict(
        dict(CONFIGS["qwen3"], rope_scaling={"type": "linear", "factor": 4.0})
    )
    np.testing.assert_allclose(inverse_frequencies(linear)[0], inv / 4)
    dyn = TransformerConfig.from_dict(
        dict(
            CONFIGS["qwen3"],
            max_position_embeddings=8,
            rope_scaling={"type": "dynamic", "factor": 2.0},
        )
    )
    np.testing.assert_array_equal(inverse_frequencies(dyn, 8)[0], inv)  # within the trained length
    longer = inverse_frequencies(dyn, 32)[0]
    assert (longer[1:] < inv[1:]).all() and longer[0] == inv[0] == 1.0
    yarn = TransformerConfig.from_dict(
        dict(
            CONFIGS["qwen3"],
            rope_scaling={
                "rope_type": "yarn",
                "factor": 4.0,
                "original_max_position_embeddings": 16,
            },
        )
    )
    y_inv, y_att = inverse_frequencies(yarn)
    assert y_att == pytest.approx(0.1 * np.log(4.0) + 1.0)
    assert y_inv[0] == pytest.approx(inv[0]) and y_inv[-1] == pytest.approx(inv[-1] / 4)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_type": "t5"}, "model_type 't5' is not supported"),
        ({"num_key_value_heads": 3}, "multiple of num_kv_heads"),
        ({"hidden_act": "relu6"}, "hidden_act 'relu6' is not supported"),
        ({"rope_scaling": {"type": "longrope", "factor": 2.0}}, "'longrope' is not supported"),
        ({"hidden_size": None}, "missing hidden_size"),
        ({"num_hidden_layers": 0}, "num_layers must be a positive int"),
    ],
)
def test_bad_configs(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TransformerConfig.from_dict(dict(CONFIGS["llama"], **change))


def test_qwen_sliding_window_only_when_enabled() -> None:
    raw = dict(CONFIGS["qwen2"], sliding_window=4)
    assert TransformerConfig.from_dict(raw).sliding_window is None
    assert TransformerConfig.from_dict(dict(raw, use_sliding_window=True)).sliding_window == 4


def test_load_config_errors(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        load_config(tmp_path)
    (tmp_path / "config.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_config(tmp_path / "config.json")
    (tmp_path / "config.json").write_text(json.dumps(CONFIGS["mixtral"]))
    assert load_config(tmp_path).num_experts == 4


def test_detection_from_tensor_names() -> None:
    for family, raw in CONFIGS.items():
        names = list(random_weights(raw))
        want = "llama" if family == "mistral" else family  # Mistral's names are Llama's
        assert detect_model_spec(names).name == want
    assert detect_model_spec(["x"], model_type="mistral").name == "mistral"
    gpt2_unprefixed = [n.removeprefix("transformer.") for n in random_weights(CONFIGS["gpt2"])]
    assert detect_model_spec(gpt2_unprefixed).name == "gpt2"
    with pytest.raises(ValueError, match="match no supported family"):
        detect_model_spec(["encoder.layer.0.weight"])
    with pytest.raises(ValueError, match="no tensors"):
        detect_model_spec([])
    with pytest.raises(ValueError, match="model_type 'bert'"):
        detect_model_spec(["x"], model_type="bert")
