"""The op layer: public functions that check inputs, pick a kernel and make outputs.

Each family lives in its own module and lists its public names in ``__all__``.
"""

from .aliases import *  # noqa: F403  (the seed's short names)
from .copying import assign, astype, copy, fill, getitem_advanced, inplace, setitem_advanced
from .creation import (
    arange, asarray, empty, empty_like, eye, from_dlpack, from_numpy, full, full_like,
    linspace, meshgrid, ones, ones_like, tril, triu, zeros, zeros_like,
)  # fmt: skip
from .elementwise import *  # noqa: F403  (one function per table entry)
from .elementwise import BINARY, UNARY, apply_binary, apply_unary, clip, gelu, where
from .indexing import *  # noqa: F403
from .linalg import *  # noqa: F403
from .manipulation import *  # noqa: F403
from .nn import *  # noqa: F403
from .searching import *  # noqa: F403
from .sets import *  # noqa: F403
from .sorting import *  # noqa: F403
from .statistical import *  # noqa: F403
from .utility import *  # noqa: F403
