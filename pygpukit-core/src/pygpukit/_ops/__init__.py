"""The op layer: public functions that check inputs, pick a kernel and make outputs.

Each family lives in its own module and lists its public names in ``__all__``.
"""

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
