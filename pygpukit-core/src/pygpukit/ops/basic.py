"""`pygpukit.ops.basic`, the seed's flat module of ops (everything `pygpukit.ops` has)."""

from .elementwise import *
from .matmul import *
from .nn import *
from .reduction import *
from .tensor import *
from .unary import *
