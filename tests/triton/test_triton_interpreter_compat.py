"""The interpreter loop-bound fix: a runtime scalar (a 1-element array in Triton's
interpreter) converts to an index under NumPy 2.4+, which refuses int() of such an array
(Triton 3.6 on the first GPU machine failed matmul, attention and rope so)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from pygpukit.triton import interpreter_compat


def test_a_one_element_scalar_is_an_index() -> None:
    scalar = SimpleNamespace(handle=SimpleNamespace(data=np.array([37], np.int32)))
    assert interpreter_compat._index(scalar) == 37
    assert list(range(0, interpreter_compat._index(scalar), 16)) == [0, 16, 32]


def test_a_block_is_still_no_index() -> None:
    block = SimpleNamespace(handle=SimpleNamespace(data=np.arange(4)))
    with pytest.raises(TypeError):
        interpreter_compat._index(block)


def test_the_interpreter_indexes_scalars_after_install() -> None:
    triton = pytest.importorskip("triton")
    from triton.runtime import interpreter

    interpreter_compat.install()
    interpreter_compat.install()  # once per process: a second call changes nothing
    scope = interpreter._LangPatchScope()
    interpreter._patch_lang_tensor(triton.language.core.tensor, scope)
    try:
        t = triton.language.core.tensor.__new__(triton.language.core.tensor)
        t.handle = SimpleNamespace(data=np.array([5], np.int64))
        assert list(range(t)) == [0, 1, 2, 3, 4]
    finally:
        scope.restore()
