"""The seed API's short names for Array API functions (the same function objects)."""

from __future__ import annotations

from .elementwise import clip, divide, multiply, negative, subtract

__all__ = ["clamp", "div", "mul", "neg", "sub"]

sub = subtract
mul = multiply
div = divide
neg = negative
clamp = clip  # clamp(x, min=None, max=None): the same signature as clip
