"""The op layer: public functions that check inputs, pick a kernel and make outputs.

Each family lives in its own module and lists its public names in ``__all__``.
"""

from . import aliases as _aliases
from . import complex_parts as _complex_parts
from . import decode as _decode
from . import differences as _differences
from . import elementwise as _elementwise
from . import indexing as _indexing
from . import linalg as _linalg
from . import manipulation as _manipulation
from . import nn as _nn
from . import searching as _searching
from . import sets as _sets
from . import sorting as _sorting
from . import statistical as _statistical
from . import utility as _utility
from .aliases import *
from .complex_parts import *
from .copying import assign, astype, copy, fill, getitem_advanced, inplace, setitem_advanced
from .creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)  # fmt: skip
from .decode import *
from .differences import *
from .elementwise import *
from .elementwise import BINARY, UNARY, apply_binary, apply_unary, clip, gelu, where
from .indexing import *
from .linalg import *
from .manipulation import *
from .nn import *
from .searching import *
from .sets import *
from .sorting import *
from .statistical import *
from .utility import *

#: what ``pygpukit`` re-exports: each family's public names, the creation functions and
#: the two public copies; the helpers above (assign, inplace, apply_binary, ...) stay here
__all__ = [
    *_aliases.__all__, *_complex_parts.__all__, *_elementwise.__all__, *_indexing.__all__,
    *_decode.__all__, *_differences.__all__,
    *_linalg.__all__, *_manipulation.__all__, *_nn.__all__, *_searching.__all__, *_sets.__all__,
    *_sorting.__all__, *_statistical.__all__, *_utility.__all__,
    "arange", "asarray", "astype", "copy", "empty", "empty_like", "eye", "from_dlpack",
    "from_numpy", "full", "full_like", "linspace", "meshgrid", "ones", "ones_like", "tril",
    "triu", "zeros", "zeros_like",
]  # fmt: skip
