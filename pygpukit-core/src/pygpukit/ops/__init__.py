"""`pygpukit.ops`: the seed's op modules (elementwise, unary, reduction, matmul, nn, tensor),
kept so that code written for them runs; each re-exports the real ops of `pygpukit`.

The seed's LLM-only ops (KV cache, sampling, embeddings) belong to ``pygpukit.llm``.
"""

from . import basic, elementwise, nn, reduction, tensor, unary  # (matmul: the function wins)
from .elementwise import *
from .matmul import *
from .nn import *
from .reduction import *
from .tensor import *
from .unary import *
