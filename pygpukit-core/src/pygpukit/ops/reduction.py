"""`pygpukit.ops.reduction`, the seed's module path for reductions (and softmax)."""

from .._ops.nn import softmax
from .._ops.searching import argmax, argmin
from .._ops.statistical import max, mean, min, prod, std, sum, var

__all__ = ["argmax", "argmin", "max", "mean", "min", "prod", "softmax", "std", "sum", "var"]
