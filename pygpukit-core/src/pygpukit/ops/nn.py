"""`pygpukit.ops.nn`, the seed's module path for neural-network ops."""

from .._ops.elementwise import gelu, relu, sigmoid, silu, tanh
from .._ops.nn import (
    bias_add_inplace,
    layernorm,
    linear_bias_gelu,
    log_softmax,
    rmsnorm,
    rope_inplace,
    sdpa,
    sdpa_causal,
    softmax,
)

__all__ = [
    "bias_add_inplace", "gelu", "layernorm", "linear_bias_gelu", "log_softmax", "relu",
    "rmsnorm", "rope_inplace", "sdpa", "sdpa_causal", "sigmoid", "silu", "softmax", "tanh",
]  # fmt: skip
