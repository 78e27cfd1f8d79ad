"""The bad-input matrix: every wrong argument gets NumPy's exception type and a message
naming the problem (the argument, shape, dtype, size, file or setting at fault).

Each case is (call, exception type, regex the message must match). The regex names what
went wrong, so a bare "invalid argument" fails the test. Cases that could take the
interpreter down (DLPack capsules, whose destructors run in C) run in a subprocess, in
tests/core/test_bad_input_subprocess.py; settings and files in test_bad_input_config.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pygpukit as gp
import pytest

rng = np.random.default_rng(15)


def _f32(*shape: int) -> gp.GPUArray:
    return gp.asarray(rng.standard_normal(shape).astype(np.float32))


def _i32(*shape: int) -> gp.GPUArray:
    return gp.asarray(rng.integers(-50, 50, shape).astype(np.int32))


@dataclass(frozen=True)
class Case:
    id: str
    call: Callable[[], Any]
    exc: type[BaseException]
    match: str


def _setitem(x: gp.GPUArray, key: Any, value: Any) -> None:
    x[key] = value


def _iadd(x: gp.GPUArray, value: Any) -> None:
    x += value


def _imul(x: gp.GPUArray, value: Any) -> None:
    x *= value


def _imatmul(x: gp.GPUArray, value: Any) -> None:
    x @= value


def _submit(**kwargs: Any) -> Any:
    """Submit a task with these arguments to a scheduler that is shut down afterwards."""
    with gp.Scheduler(total_memory="1MB", workers=1) as sched:
        return sched.submit(print, **kwargs)


def _submit_fn(fn: Any) -> Any:
    with gp.Scheduler(total_memory="1MB", workers=1) as sched:
        return sched.submit(fn)


def _partition(*args: Any, **kwargs: Any) -> Any:
    with gp.Scheduler(total_memory="1MB", workers=1) as sched:
        return sched.create_partition(*args, **kwargs)


def _broadcast_view() -> gp.GPUArray:
    return gp.broadcast_to(_f32(1, 4), (3, 4))


READ_ONLY = "read-only.*broadcast view"

VIEWS = [
    Case("broadcast_to-iadd", lambda: _iadd(_broadcast_view(), 1.0), ValueError, READ_ONLY),
    Case("broadcast_to-imul", lambda: _imul(_broadcast_view(), 2), ValueError, READ_ONLY),
    Case("broadcast_to-setitem-all", lambda: _setitem(_broadcast_view(), ..., 0.0),
         ValueError, READ_ONLY),
    Case("broadcast_to-setitem-row", lambda: _setitem(_broadcast_view(), 0, 5.0),
         ValueError, READ_ONLY),
    Case("broadcast_to-setitem-mask",
         lambda: _setitem(_broadcast_view(), _broadcast_view() > 0, 1.0), ValueError, READ_ONLY),
    Case("broadcast_to-setitem-intarray",
         lambda: _setitem(_broadcast_view(), gp.asarray([0, 1]), 1.0), ValueError, READ_ONLY),
    Case("broadcast_to-view-of-view",
         lambda: _iadd(_broadcast_view()[1:, ::2], 1.0), ValueError, READ_ONLY),
    Case("broadcast_to-transposed", lambda: _iadd(_broadcast_view().T, 1.0), ValueError,
         READ_ONLY),
    Case("broadcast_to-same-shape", lambda: _iadd(gp.broadcast_to(_f32(3), (3,)), 1.0),
         ValueError, READ_ONLY),
    Case("broadcast_to-imatmul", lambda: _imatmul(gp.broadcast_to(_f32(1, 2), (2, 2)),
                                                  _f32(2, 2)), ValueError, READ_ONLY),
    Case("broadcast_arrays-first", lambda: _iadd(gp.broadcast_arrays(_f32(3, 1), _f32(4))[0],
                                                 1.0), ValueError, READ_ONLY),
    Case("broadcast_arrays-second",
         lambda: _setitem(gp.broadcast_arrays(_f32(3, 1), _f32(4))[1], ..., 1.0),
         ValueError, READ_ONLY),
    Case("meshgrid-copy-false", lambda: _iadd(gp.meshgrid(_f32(2), _f32(3), copy=False)[0],
                                              10.0), ValueError, READ_ONLY),
    Case("rope-broadcast-k", lambda: gp.rope_inplace(
        _f32(2, 4, 1, 8), gp.broadcast_to(_f32(2, 4, 1, 8), (2, 4, 1, 8)), _f32(4, 4),
        _f32(4, 4)), ValueError, "rope_inplace: k is read-only"),
    Case("bias_add-broadcast", lambda: gp.bias_add_inplace(
        gp.broadcast_to(_f32(1, 4), (1, 4)), _f32(4)), ValueError,
        "bias_add_inplace: x is read-only"),
]  # fmt: skip

CREATION = [
    Case("asarray-int-overflow", lambda: gp.asarray([2**70]), OverflowError, "overflows int64"),
    Case("asarray-int-overflow-nested", lambda: gp.asarray([[1, 2], [3, -(2**64)]]),
         OverflowError, r"-18446744073709551616 overflows int64"),
    Case("asarray-uint64-range", lambda: gp.asarray(2**64 - 1), OverflowError,
         "18446744073709551615 overflows int64"),
    Case("asarray-int8-overflow", lambda: gp.asarray([300], dtype="int8"), OverflowError,
         "300 is out of range for int8"),
    Case("asarray-uint8-negative", lambda: gp.asarray([-1], dtype="uint8"), OverflowError,
         "-1 is out of range for uint8"),
    Case("asarray-float-to-int", lambda: gp.asarray([1.5], dtype="int32"), TypeError,
         "1.5 is not a whole number: refusing to truncate floats to int32"),
    Case("asarray-string", lambda: gp.asarray("abc"), TypeError, "cannot make an array from str"),
    Case("asarray-strings", lambda: gp.asarray(["a", "b"]), TypeError,
         "cannot make an array from list"),
    Case("asarray-ragged", lambda: gp.asarray([[1, 2], [3]]), ValueError, "inhomogeneous"),
    Case("asarray-dict", lambda: gp.asarray({"a": 1}), TypeError, "cannot make an array"),
    Case("asarray-copy-false-host", lambda: gp.asarray([1.0], copy=False), ValueError,
         "copy=False"),
    Case("asarray-unknown-dtype", lambda: gp.asarray([1], dtype="float128"), TypeError,
         "float128"),
    Case("asarray-unknown-device", lambda: gp.asarray([1.0], device="tpu"), ValueError,
         "device type 'tpu'"),
    Case("asarray-bad-device-text", lambda: gp.asarray([1.0], device="cpu:x"), ValueError,
         "cpu:x"),
    Case("asarray-missing-cpu-index", lambda: gp.asarray([1.0], device="cpu:3"), ValueError,
         "cpu:3 is not available"),
    Case("zeros-negative", lambda: gp.zeros((2, -1)), ValueError, "-1"),
    Case("zeros-float-shape", lambda: gp.zeros((2.5,)), TypeError, "2.5"),
    Case("zeros-str-shape", lambda: gp.zeros("3"), TypeError, "'3'"),
    Case("zeros-unknown-dtype", lambda: gp.zeros(3, dtype="quaternion"), TypeError,
         "quaternion"),
    Case("ones-dtype-object", lambda: gp.ones(3, dtype=object), TypeError, "object"),
    Case("empty-negative", lambda: gp.empty(-3), ValueError, "-3"),
    Case("full-overflow", lambda: gp.full(3, 2**40, dtype="int32"), OverflowError,
         "out of range for int32"),
    Case("full-nan-into-int", lambda: gp.full(3, float("nan"), dtype="int32"), ValueError,
         "nan.*int32"),
    Case("full-string", lambda: gp.full(3, "x"), TypeError, "str"),
    Case("full_like-not-array", lambda: gp.full_like([1, 2], 0.0), TypeError, "list"),
    Case("zeros_like-not-array", lambda: gp.zeros_like(np.zeros(3)), TypeError, "ndarray"),
    Case("arange-step-zero", lambda: gp.arange(0, 5, 0), ValueError, "step must not be zero"),
    Case("arange-inf", lambda: gp.arange(0, float("inf")), ValueError, "stop must be finite"),
    Case("arange-nan-step", lambda: gp.arange(0, 5, float("nan")), ValueError,
         "step must be finite"),
    Case("arange-str", lambda: gp.arange("5"), TypeError, "stop must be an int or float, got '5'"),
    Case("arange-int-dtype-overflow", lambda: gp.arange(0, 300, dtype="int8"), OverflowError,
         "int8"),
    Case("linspace-negative-num", lambda: gp.linspace(0, 1, -2), ValueError, "num"),
    Case("linspace-float-num", lambda: gp.linspace(0, 1, 2.5), TypeError,
         "linspace: num must be an int, got float 2.5"),
    Case("eye-negative", lambda: gp.eye(-1), ValueError, "-1"),
    Case("eye-float", lambda: gp.eye(2.5), TypeError, "2.5"),
    Case("eye-bad-k", lambda: gp.eye(3, k=1.5), TypeError, "eye: k must be an int, got float"),
    Case("tril-1d", lambda: gp.tril(_f32(4)), ValueError, "at least 2"),
    Case("meshgrid-2d", lambda: gp.meshgrid(_f32(2, 2)), ValueError,
         r"arrays\[0\] must be 1-D, got shape \(2, 2\)"),
    Case("meshgrid-list", lambda: gp.meshgrid([1, 2]), TypeError, r"arrays\[0\] is a list"),
    Case("meshgrid-indexing", lambda: gp.meshgrid(_f32(2), indexing="xx"), ValueError,
         "indexing must be 'xy' or 'ij'"),
    Case("from_numpy-object", lambda: gp.from_numpy(np.array([object()])), TypeError,
         "object"),
    Case("from_numpy-complex-string", lambda: gp.from_numpy(np.array(["a"])), TypeError,
         "<U1|str"),
]  # fmt: skip

ELEMENTWISE = [
    Case("add-shapes", lambda: gp.add(_f32(3), _f32(4)), ValueError, r"\(3,\).*\(4,\)"),
    Case("add-shapes-2d", lambda: _f32(2, 3) + _f32(3, 2), ValueError, r"\(2, 3\).*\(3, 2\)"),
    Case("add-host-ndarray", lambda: gp.add(_f32(3), np.ones(3)), TypeError,
         "host ndarray.*asarray"),
    Case("add-list", lambda: gp.add(_f32(3), [1, 2, 3]), TypeError, "host list"),
    Case("add-tuple", lambda: gp.add(_f32(3), (1, 2, 3)), TypeError, "host tuple"),
    Case("add-string", lambda: _f32(3) + "a", TypeError, "str"),
    Case("add-none", lambda: gp.add(_f32(3), None), TypeError, "NoneType"),
    Case("add-no-array", lambda: gp.add(1, 2), TypeError, "at least one argument"),
    Case("add-int-overflow", lambda: _i32(3) + 2**40, OverflowError, "out of range for int32"),
    Case("add-int-overflow-negative", lambda: _i32(3) - 2**63, OverflowError, "int32"),
    Case("iadd-dtype-change", lambda: _iadd(_i32(3), 1.5), ValueError,
         "add in place.*float32.*int32|int32.*float"),
    Case("iadd-shape-change", lambda: _iadd(_f32(3), _f32(2, 3)), ValueError,
         r"add in place.*\(2, 3\).*\(3,\)"),
    Case("iadd-host", lambda: _iadd(_f32(3), np.ones(3)), TypeError, "host ndarray"),
    Case("sqrt-list", lambda: gp.sqrt([1.0, 4.0]), TypeError, "list"),
    Case("bitwise-float", lambda: gp.bitwise_and(_f32(3), _f32(3)), TypeError, "float32"),
    Case("invert-float", lambda: ~_f32(3), TypeError, "float32"),
    Case("shift-float", lambda: _f32(3) << 1, TypeError, "float32"),
    Case("logical-not-list", lambda: gp.logical_not([True]), TypeError, "list"),
    Case("where-shapes", lambda: gp.where(_f32(3) > 0, _f32(4), _f32(3)), ValueError,
         r"\(4,\)"),
    Case("clip-shape", lambda: gp.clip(_f32(3), _f32(4)), ValueError, r"\(4,\)"),
    Case("clip-host-bound", lambda: gp.clip(_f32(3), np.zeros(3)), TypeError, "ndarray"),
    Case("fp8-add", lambda: gp.add(_f32(3).astype("float8_e4m3fn"), 1.0), TypeError,
         "float8_e4m3fn"),
    Case("pow-int-negative-exp", lambda: _i32(3) ** -1, ValueError, "negative"),
    Case("compare-shapes", lambda: _f32(2) < _f32(3), ValueError, r"\(2,\).*\(3,\)"),
    Case("eq-string", lambda: _f32(2) == "a", TypeError, "str"),
    Case("hash", lambda: hash(_f32(2)), TypeError, "unhashable type: 'GPUArray'"),
]  # fmt: skip

ARRAY = [
    Case("len-0d", lambda: len(gp.asarray(1.0)), TypeError, "len.*0-d"),
    Case("iter-0d", lambda: iter(gp.asarray(1.0)), TypeError, "iteration over a 0-d"),
    Case("item-size", lambda: _f32(3).item(), ValueError, "size 3"),
    Case("float-size", lambda: float(_f32(3)), ValueError, "size 3"),
    Case("index-float", lambda: [1, 2][gp.asarray(1.0)], TypeError, "integer arrays"),
    Case("T-3d", lambda: _f32(2, 2, 2).T, ValueError, "3-D"),
    Case("mT-1d", lambda: _f32(2).mT, ValueError, "at least 2 dimensions"),
    Case("array-copy-false", lambda: _f32(2).__array__(copy=False), ValueError,
         "without a copy"),
    Case("namespace-version", lambda: _f32(2).__array_namespace__(api_version="1999.01"),
         ValueError, "1999.01"),
    Case("astype-unknown", lambda: _f32(2).astype("float128"), TypeError, "float128"),
    Case("to_device-unknown", lambda: _f32(2).to_device("tpu"), ValueError, "'tpu'"),
    Case("reshape-size", lambda: _f32(2, 3).reshape(4, 2), ValueError, r"\(4, 2\)|6"),
    Case("reshape-two-minus-one", lambda: _f32(6).reshape(-1, -1), ValueError, "-1"),
    Case("reshape-copy-false", lambda: _f32(2, 3).T.reshape(6, copy=False), ValueError,
         "without a copy"),
    Case("transpose-axes", lambda: _f32(2, 3).transpose((0,)), ValueError,
         "do not match an array of 2 dimensions"),
    Case("squeeze-size", lambda: _f32(2, 3).squeeze(0), ValueError, "axis 0 of size 2"),
    Case("squeeze-0d", lambda: gp.asarray(1.0).squeeze(0), ValueError, "0-d"),
    Case("expand_dims-axis", lambda: _f32(2).expand_dims(5), (IndexError, ValueError), "5"),
    Case("broadcast_to-shape", lambda: _f32(3).broadcast_to((4,)), ValueError,
         r"\(3,\).*\(4,\)"),
    Case("broadcast_to-fewer-dims", lambda: _f32(2, 3).broadcast_to((3,)), ValueError,
         r"\(2, 3\)"),
]  # fmt: skip

INDEXING = [
    Case("int-out-of-range", lambda: _f32(3)[5], IndexError, "5.*size 3|out of range"),
    Case("int-negative-out-of-range", lambda: _f32(3)[-4], IndexError, "-4"),
    Case("too-many-indices", lambda: _f32(3)[0, 0], IndexError, "too many indices"),
    Case("float-index", lambda: _f32(3)[1.5], IndexError, "1.5|float"),
    Case("string-index", lambda: _f32(3)["a"], IndexError, "'a'|str"),
    Case("two-ellipses", lambda: _f32(3, 3)[..., ...], IndexError, "Ellipsis|\\.\\.\\."),
    Case("slice-step-zero", lambda: _f32(3)[::0], ValueError, "step"),
    Case("mask-shape", lambda: _f32(3)[gp.asarray([True, False])], IndexError,
         r"\(2,\).*\(3,\)|shape"),
    Case("int-array-out-of-range", lambda: _f32(3)[gp.asarray([0, 7])], IndexError, "7"),
    Case("float-array-index", lambda: _f32(3)[gp.asarray([0.0, 1.0])], IndexError,
         "float32"),
    Case("setitem-shape", lambda: _setitem(_f32(3), slice(None), _f32(4)), ValueError,
         r"\(4,\).*\(3,\)"),
    Case("setitem-overflow", lambda: _setitem(_i32(3), 0, 2**40), OverflowError, "int32"),
    Case("setitem-nan-int", lambda: _setitem(_i32(3), 0, float("nan")), ValueError,
         "nan.*int32"),
    Case("setitem-host", lambda: _setitem(_f32(3), 0, np.ones(1)), TypeError, "host ndarray"),
    Case("setitem-mask-count", lambda: _setitem(_f32(3), _f32(3) > 100, _f32(2)),
         ValueError, "shape|count"),
    Case("take-axis", lambda: gp.take(_f32(3, 2), gp.asarray([0]), axis=2), (ValueError,
         IndexError), "axis 2"),
    Case("take-float-indices", lambda: gp.take(_f32(3), gp.asarray([0.0])), TypeError,
         "float32"),
    Case("take-out-of-range", lambda: gp.take(_f32(3), gp.asarray([5])), IndexError, "5"),
    Case("take_along_axis-shape", lambda: gp.take_along_axis(_f32(3, 2), gp.asarray([0]),
         axis=0), ValueError, "dimensions|ndim|shape"),
]  # fmt: skip

AXES = "axis"
REDUCTIONS = [
    Case("sum-axis", lambda: gp.sum(_f32(2, 3), axis=2), (ValueError, IndexError), "axis 2"),
    Case("sum-axis-negative", lambda: gp.sum(_f32(2, 3), axis=-3), (ValueError, IndexError),
         "axis -3"),
    Case("sum-duplicate-axes", lambda: gp.sum(_f32(2, 3), axis=(0, 0)), ValueError,
         "repeated|duplicate"),
    Case("sum-float-axis", lambda: gp.sum(_f32(2, 3), axis=1.0), TypeError, AXES),
    Case("sum-bad-dtype", lambda: gp.sum(_f32(3), dtype="float128"), TypeError, "float128"),
    Case("sum-list", lambda: gp.sum([1, 2]), TypeError, "list"),
    Case("var-correction", lambda: gp.var(_f32(3), correction=-1), ValueError, "correction"),
    Case("std-correction-type", lambda: gp.std(_f32(3), correction="1"), TypeError,
         "correction"),
    Case("max-empty", lambda: gp.max(gp.zeros((0,))), ValueError, "axis . of length 0"),
    Case("min-empty-axis", lambda: gp.min(gp.zeros((2, 0)), axis=1), ValueError,
         "axis . of length 0"),
    Case("argmax-empty", lambda: gp.argmax(gp.zeros((0,))), ValueError, "axis . of length 0"),
    Case("argmax-axis", lambda: gp.argmax(_f32(3), axis=1), (ValueError, IndexError),
         "axis 1"),
    Case("cumsum-axis-needed", lambda: gp.cumulative_sum(_f32(2, 2)), ValueError, "axis"),
    Case("cumsum-axis", lambda: gp.cumulative_sum(_f32(2), axis=3), (ValueError, IndexError),
         "axis 3"),
    Case("sort-axis", lambda: gp.sort(_f32(2), axis=2), (ValueError, IndexError), "axis 2"),
    Case("sort-0d", lambda: gp.sort(gp.asarray(1.0)), ValueError, "0-d|at least 1"),
    Case("searchsorted-2d", lambda: gp.searchsorted(_f32(2, 2), _f32(2)), ValueError,
         "1-D"),
    Case("searchsorted-side", lambda: gp.searchsorted(_f32(2), _f32(2), side="middle"),
         ValueError, "side"),
    Case("nonzero-0d", lambda: gp.nonzero(gp.asarray(1.0)), ValueError, "0-d"),
    Case("count_nonzero-axis", lambda: gp.count_nonzero(_f32(2), axis=4),
         (ValueError, IndexError), "axis 4"),
]  # fmt: skip

MANIPULATION = [
    Case("concat-dims", lambda: gp.concat([_f32(2, 3), _f32(2)]), ValueError, "dimensions|1-D"),
    Case("concat-shapes", lambda: gp.concat([_f32(2, 3), _f32(2, 4)], axis=0), ValueError,
         r"\(2, 4\)|shape"),
    Case("concat-empty", lambda: gp.concat([]), ValueError, "at least one"),
    Case("concat-axis", lambda: gp.concat([_f32(2), _f32(2)], axis=1),
         (ValueError, IndexError), "axis 1"),
    Case("concat-host", lambda: gp.concat([_f32(2), np.ones(2)]), TypeError, "ndarray"),
    Case("stack-shapes", lambda: gp.stack([_f32(2), _f32(3)]), ValueError, r"\(3,\)|shape"),
    Case("stack-empty", lambda: gp.stack([]), ValueError, "at least one"),
    Case("squeeze-not-one", lambda: gp.squeeze(_f32(2, 3), axis=1), ValueError,
         "axis 1 of size 3"),
    Case("permute-length", lambda: gp.permute_dims(_f32(2, 3), (0,)), ValueError, r"\(0,\)"),
    Case("permute-repeat", lambda: gp.permute_dims(_f32(2, 3), (0, 0)), ValueError,
         "repeated|duplicate|permutation"),
    Case("expand-axis", lambda: gp.expand_dims(_f32(2), axis=3), (ValueError, IndexError),
         "axis 3"),
    Case("flip-axis", lambda: gp.flip(_f32(2), axis=1), (ValueError, IndexError), "axis 1"),
    Case("roll-axis", lambda: gp.roll(_f32(2), 1, axis=2), (ValueError, IndexError), "axis 2"),
    Case("roll-shift-float", lambda: gp.roll(_f32(2), 1.5), TypeError, "shift"),
    Case("reshape-fn-size", lambda: gp.reshape(_f32(6), (4,)), ValueError, r"\(4,\)|size 6"),
    Case("repeat-negative", lambda: gp.repeat(_f32(2), -1), ValueError, "negative|-1"),
    Case("repeat-float", lambda: gp.repeat(_f32(2), 1.5), TypeError, "repeats"),
    Case("tile-negative", lambda: gp.tile(_f32(2), (-1,)), ValueError, "-1|negative"),
    Case("moveaxis-axis", lambda: gp.moveaxis(_f32(2), 0, 3), (ValueError, IndexError),
         "axis 3|3"),
    Case("unstack-0d", lambda: gp.unstack(gp.asarray(1.0)), ValueError, "0-d|axis"),
    Case("broadcast_arrays-shapes", lambda: gp.broadcast_arrays(_f32(2), _f32(3)),
         ValueError, r"\(2,\).*\(3,\)"),
    Case("broadcast_to-list", lambda: gp.broadcast_to([1, 2], (2, 2)), TypeError, "list"),
]  # fmt: skip

LINALG = [
    Case("matmul-inner", lambda: gp.matmul(_f32(2, 3), _f32(4, 2)), ValueError,
         r"\(2, 3\).*\(4, 2\)|3.*4"),
    Case("matmul-0d", lambda: gp.matmul(gp.asarray(1.0), _f32(2)), ValueError,
         r"at least one dimension, got shapes \(\) and \(2,\)"),
    Case("matmul-batch", lambda: gp.matmul(_f32(2, 2, 3), _f32(3, 3, 2)), ValueError,
         r"\(2,\).*\(3,\)|batch"),
    Case("matmul-host", lambda: gp.matmul(_f32(2, 2), np.ones((2, 2))), TypeError, "ndarray"),
    Case("matmul-operator-scalar", lambda: _f32(2, 2) @ 2.0, TypeError, "float|scalar"),
    Case("matmul-bool", lambda: gp.matmul(_f32(2, 2) > 0, _f32(2, 2) > 0), TypeError, "bool"),
    Case("vecdot-shapes", lambda: gp.vecdot(_f32(3), _f32(4)), ValueError, "3.*4"),
    Case("tensordot-axes", lambda: gp.tensordot(_f32(2, 3), _f32(2, 3), axes=3), ValueError,
         "axes"),
    Case("tensordot-mismatch", lambda: gp.tensordot(_f32(2, 3), _f32(2, 3), axes=1),
         ValueError, "3.*2|size"),
    Case("matrix_transpose-1d", lambda: gp.matrix_transpose(_f32(3)), ValueError,
         "at least 2"),
]  # fmt: skip

NN = [
    Case("softmax-axis", lambda: gp.softmax(_f32(2, 3), axis=2), (ValueError, IndexError),
         "axis 2"),
    Case("softmax-int", lambda: gp.softmax(_i32(3)), TypeError, "int32"),
    Case("softmax-host", lambda: gp.softmax(np.ones(3)), TypeError, "ndarray"),
    Case("layernorm-gamma", lambda: gp.layernorm(_f32(2, 4), _f32(3), _f32(4)), ValueError,
         r"gamma has shape \(3,\)"),
    Case("layernorm-beta", lambda: gp.layernorm(_f32(2, 4), _f32(4), _f32(5)), ValueError,
         r"beta has shape \(5,\)"),
    Case("layernorm-eps-negative", lambda: gp.layernorm(_f32(2, 4), _f32(4), _f32(4),
         eps=-1.0), ValueError, "eps must be >= 0"),
    Case("layernorm-eps-nan", lambda: gp.layernorm(_f32(2, 4), _f32(4), _f32(4),
         eps=float("nan")), ValueError, "eps must be >= 0"),
    Case("layernorm-eps-str", lambda: gp.layernorm(_f32(2, 4), _f32(4), _f32(4), eps="1"),
         TypeError, "eps must be a float"),
    Case("rmsnorm-gamma", lambda: gp.rmsnorm(_f32(2, 4), _f32(2)), ValueError,
         r"gamma has shape \(2,\)"),
    Case("rmsnorm-int", lambda: gp.rmsnorm(_i32(2, 4), _f32(4)), TypeError, "int32"),
    Case("sdpa-rank", lambda: gp.sdpa_causal(_f32(4, 8), _f32(4, 8), _f32(4, 8)),
         ValueError, "q must have shape"),
    Case("sdpa-heads", lambda: gp.sdpa_causal(_f32(3, 4, 8), _f32(2, 4, 8), _f32(2, 4, 8)),
         ValueError, "head|3.*2"),
    Case("rope-shapes", lambda: gp.rope_inplace(_f32(2, 4, 1, 8), _f32(2, 4, 1, 8),
         _f32(3, 4), _f32(3, 4)), ValueError, "cos|shape"),
    Case("bias_add-shape", lambda: gp.bias_add_inplace(_f32(2, 4), _f32(3)), ValueError,
         r"bias has shape \(3,\)"),
    Case("linear_bias_gelu-shapes", lambda: gp.linear_bias_gelu(_f32(2, 4), _f32(3, 5),
         _f32(3)), ValueError, "weight|shape"),
]  # fmt: skip

DTYPES = [
    Case("finfo-int", lambda: gp.finfo(gp.int32), (TypeError, ValueError), "int32"),
    Case("iinfo-float", lambda: gp.iinfo(gp.float32), (TypeError, ValueError), "float32"),
    Case("isdtype-kind", lambda: gp.isdtype(gp.float32, "floaty"), ValueError, "floaty"),
    Case("can_cast-unknown", lambda: gp.can_cast(gp.float32, "float128"), TypeError,
         "float128"),
    Case("result_type-unknown", lambda: gp.result_type(gp.float32, "x"), TypeError, "'x'"),
    Case("result_type-none", lambda: gp.result_type(), ValueError, "at least one"),
    Case("promote-string", lambda: gp.promote_types("float32", "str"), TypeError, "str"),
    Case("astype-object", lambda: gp.astype(_f32(2), object), TypeError, "object"),
]  # fmt: skip

EXPLAIN_PLUGINS = [
    Case("explain-class", lambda: gp.explain("Scheduler"), ValueError,
         "Scheduler is not an op"),
    Case("explain-dtype", lambda: gp.explain("float32"), ValueError, "float32 is not an op"),
    Case("explain-module", lambda: gp.explain("config"), ValueError, "config is not an op"),
    Case("explain-helper", lambda: gp.explain("result_type"), ValueError,
         "result_type is not an op"),
    Case("explain-typo", lambda: gp.explain("sofmax"), ValueError,
         "unknown op 'sofmax'.*softmax"),
    Case("explain-not-str", lambda: gp.explain(3), TypeError, "op name"),
    Case("explain-host-arg", lambda: gp.explain("add", np.ones(2), np.ones(2)), TypeError,
         "host ndarray"),
    Case("explain-backend", lambda: gp.explain("add", _f32(2), _f32(2), backend="nope"),
         ValueError, "unknown backend 'nope'"),
    Case("op-backend", lambda: gp.add(_f32(2), _f32(2), backend="nope"), ValueError,
         "unknown backend 'nope'"),
    Case("plugins-get", lambda: gp.plugins.get("nope"), ValueError, "no plugin named 'nope'"),
    Case("plugins-unregister", lambda: gp.plugins.unregister("nope"), ValueError,
         "no plugin named 'nope'"),
    Case("plugins-register-name", lambda: gp.plugins.register(object(), ""), TypeError,
         "plugin name"),
    Case("plugins-register-taken", lambda: gp.plugins.register(object(), "cpu"), ValueError,
         "'cpu' is already registered"),
    Case("provider-name", lambda: gp.KernelProvider("a b", device_type="cpu"), ValueError,
         "'a b'"),
    Case("jit-not-str", lambda: gp.jit(5, func="f"), (TypeError, RuntimeError),
         "wants the CUDA C source|needs the CUDA backend"),
    Case("no-attribute", lambda: gp.not_a_thing, AttributeError, "'not_a_thing'"),
]  # fmt: skip

SCHEDULER = [
    Case("policy-int", lambda: _submit(policy=5),
         TypeError, "policy must be.*int 5"),
    Case("policy-unknown", lambda: _submit(policy="gold"), ValueError, "unknown policy 'gold'"),
    Case("workers-negative", lambda: gp.Scheduler(workers=-1), ValueError, "workers.*-1"),
    Case("workers-zero", lambda: gp.Scheduler(workers=0), ValueError, "workers.*0"),
    Case("workers-float", lambda: gp.Scheduler(workers=1.5), TypeError, "workers.*float"),
    Case("priority-huge", lambda: _submit(priority=2**70), ValueError,
         "priority.*1180591620717411303424"),
    Case("priority-str", lambda: _submit(priority="high"), TypeError, "priority must be an int"),
    Case("total_memory-zero", lambda: gp.Scheduler(total_memory=0), ValueError,
         "total_memory must be a positive"),
    Case("total_memory-negative-text", lambda: gp.Scheduler(total_memory="-1GB"), ValueError,
         "total_memory.*'-1GB'"),
    Case("total_memory-negative", lambda: gp.Scheduler(total_memory=-5), ValueError,
         "total_memory.*-5"),
    Case("total_memory-garbage", lambda: gp.Scheduler(total_memory="lots"), ValueError,
         "total_memory.*lots"),
    Case("total_memory-float", lambda: gp.Scheduler(total_memory=1.5e9), TypeError,
         "total_memory.*float"),
    Case("total_memory-huge", lambda: gp.Scheduler(total_memory=2**70), ValueError,
         "total_memory is too large"),
    Case("total_bandwidth-zero", lambda: gp.Scheduler(total_bandwidth=0), ValueError,
         "total_bandwidth must be in"),
    Case("launch_rate-negative", lambda: gp.Scheduler(launch_rate=-1.0), ValueError,
         "launch_rate"),
    Case("fair_share_idle-nan", lambda: gp.Scheduler(fair_share_idle=float("nan")),
         ValueError, "fair_share_idle"),
    Case("bandwidth-zero", lambda: _submit(bandwidth=0.0), ValueError, "bandwidth must be in"),
    Case("bandwidth-above-one", lambda: _submit(bandwidth=1.5), ValueError, "bandwidth.*1.5"),
    Case("memory-negative", lambda: _submit(memory="-5MB"), ValueError, "memory.*'-5MB'"),
    Case("memory-list", lambda: _submit(memory=[1]), TypeError, "memory must be a byte count"),
    Case("deadline-negative", lambda: _submit(deadline=-1.0), ValueError, "deadline"),
    Case("submit-not-callable", lambda: _submit_fn(5),
         TypeError, "callable"),
    Case("partition-compute", lambda: _partition("p", compute=2.0), ValueError, "compute.*2.0"),
    Case("partition-id", lambda: _partition(3),
         TypeError, "partition_id"),
]  # fmt: skip

CASES = [
    *VIEWS, *CREATION, *ELEMENTWISE, *ARRAY, *INDEXING, *REDUCTIONS, *MANIPULATION, *LINALG,
    *NN, *DTYPES, *EXPLAIN_PLUGINS, *SCHEDULER,
]  # fmt: skip


def test_case_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case) -> None:
    with pytest.raises(case.exc, match=case.match) as info:
        case.call()
    # never NumPy's or Python's internals leaking through in place of our own message
    assert type(info.value) is not SystemError
    assert str(info.value).strip()


def test_read_only_views_leave_the_source_alone() -> None:
    host = rng.standard_normal((1, 4)).astype(np.float32)
    source = gp.asarray(host)
    view = gp.broadcast_to(source, (3, 4))
    with pytest.raises(ValueError, match=READ_ONLY):
        view += 1.0
    np.testing.assert_array_equal(source.to_numpy(), host)
    assert not view.writable and source.writable
    # reading still works, and a copy is writable
    copy = view.copy()
    copy += 1.0
    np.testing.assert_allclose(copy.to_numpy(), np.broadcast_to(host, (3, 4)) + 1.0)


def test_meshgrid_returns_copies_by_default() -> None:
    hx = rng.standard_normal(3).astype(np.float32)
    hy = rng.standard_normal(2).astype(np.float32)
    x, y = gp.asarray(hx), gp.asarray(hy)
    grid_x, grid_y = gp.meshgrid(x, y)
    grid_x += 10.0
    np.testing.assert_array_equal(x.to_numpy(), hx)
    ref_x, _ = np.meshgrid(hx, hy)
    np.testing.assert_allclose(grid_x.to_numpy(), ref_x + 10.0)
    assert grid_x.writable and grid_y.writable


def test_cpu_pool_cache_is_bounded() -> None:
    """Freed host memory kept for reuse stays under max(floor, bytes in use)."""
    from pygpukit.backends.cpu.device import CACHE_FLOOR

    backend = gp.plugins.devices()["cpu"]
    cpu = gp.Device("cpu", 0)
    big = 24 * 1024**2 // 4  # float32 elements of a 24 MiB array
    arrays = [gp.empty((big,)) for _ in range(20)]  # ~480 MiB live
    del arrays
    assert backend.memory_stats(cpu)["cached"] >= 20 * 24 * 1024**2  # kept for reuse...
    probe = gp.empty((big,))  # ...until the next large allocation measures the cache
    stats = backend.memory_stats(cpu)
    assert stats["cached"] <= max(CACHE_FLOOR, stats["used"]), stats
    del probe
    # small allocations measure it too, every few hundred
    arrays = [gp.empty((big,)) for _ in range(12)]
    del arrays
    for _ in range(300):
        gp.empty((16,))
    stats = backend.memory_stats(cpu)
    assert stats["cached"] <= max(CACHE_FLOOR, stats["used"]) + 1024**2, stats
