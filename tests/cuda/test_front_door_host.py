"""The front doors of the public elementwise functions, without a GPU: the native FrontDoor
must answer exactly as the reference `_python_door` does (the learned `fresh` for exact
GPUArrays of one dtype on the learned device object while the learned settings are in
force; what it declines to `declined`, anything else to `general`), so every case runs
against both."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from fake_device_arrays import CUDA0, FakeBuffer
from pygpukit import GPUArray, config
from pygpukit import _dtypes as dt
from pygpukit._ops import elementwise
from pygpukit.backend import front_door_settings

Door = Callable[..., Any]


class Recorder:
    """A stand-in for a learned `fresh` or the op layer: records operands, returns `answer`."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *xs: Any) -> Any:
        self.calls.append(xs)
        return self.answer


class Doors:
    """Makes doors of one kind over recording `general` and `declined` paths."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.general: Callable[..., Any] = Recorder("general")
        self.declined: Callable[..., Any] = Recorder("declined")

    def __call__(self, known: dict[str, Any], arity: int) -> Door:
        if self.kind == "python":
            return elementwise._python_door(known, arity, self.general, self.declined)
        native = pytest.importorskip("pygpukit_cuda._native")
        return native.front_door(known, arity, GPUArray, self.general, self.declined,
                                 *front_door_settings())  # fmt: skip


@pytest.fixture(params=["native", "python"])
def make(request: pytest.FixtureRequest) -> Doors:
    return Doors(request.param)


@pytest.fixture
def settings_restored() -> Iterator[None]:
    yield
    config.unset("backend")


def array(dtype: dt.DataType = dt.float32, device: gp.Device = CUDA0) -> GPUArray:
    return GPUArray(FakeBuffer(4096, 64), (4,), dtype, device)


def test_a_learned_pair_goes_to_its_fresh(make: Doors) -> None:
    fresh, (a, b) = Recorder("fresh"), (array(), array())
    door = make({"float32": (config.current(), CUDA0, fresh)}, 2)
    assert door(a, b) == "fresh"
    assert len(fresh.calls) == 1 and fresh.calls[0][0] is a and fresh.calls[0][1] is b
    assert make.general.calls == make.declined.calls == []


def test_entries_learned_after_the_door_was_made_count(make: Doors) -> None:
    known: dict[str, Any] = {}
    door, fresh, x = make(known, 1), Recorder("fresh"), array(dt.float64)
    assert door(x) == "general" and make.general.calls == [(x,)]
    known["float64"] = (config.current(), CUDA0, fresh)
    assert door(x) == "fresh" and fresh.calls == [(x,)]


def test_operands_it_does_not_cover_take_the_general_path(make: Doors) -> None:
    fresh = Recorder("fresh")
    door = make({"float32": (config.current(), CUDA0, fresh)}, 2)
    a = array()
    other_cuda0 = gp.Device("cuda", 0)  # equal, but not the learned device object
    assert other_cuda0 == CUDA0 and other_cuda0 is not CUDA0

    class Sub(GPUArray):
        __slots__ = ()

    uncovered = [
        (a, array(dt.float64)),  # dtypes differ
        (array(dt.float64), array(dt.float64)),  # a dtype nothing learned
        (a, array(device=other_cuda0)),  # devices differ
        (array(device=other_cuda0), array(device=other_cuda0)),  # not the learned device
        (a, 1.0),  # a scalar
        (np.ones(4, np.float32), a),  # a NumPy array
        (Sub(FakeBuffer(4096, 64), (4,), dt.float32, CUDA0), a),  # a subclass
    ]
    for x1, x2 in uncovered:
        assert door(x1, x2) == "general", (x1, x2)
    assert len(make.general.calls) == len(uncovered)
    assert all(got[0] is x1 and got[1] is x2 for got, (x1, x2) in
               zip(make.general.calls, uncovered, strict=True))  # fmt: skip
    assert fresh.calls == [] and make.declined.calls == []


def test_what_fresh_declines_goes_to_declined(make: Doors) -> None:
    fresh = Recorder(NotImplemented)
    door, x = make({"float32": (config.current(), CUDA0, fresh)}, 1), array()
    assert door(x) == "declined"
    assert fresh.calls == [(x,)] and make.declined.calls == [(x,)] and make.general.calls == []


def test_a_stale_snapshot_takes_the_general_path(make: Doors, settings_restored: None) -> None:
    fresh = Recorder("fresh")
    known = {"float32": (config.current(), CUDA0, fresh)}
    door = make(known, 1)
    config.set(backend=["cuda"])  # a new base snapshot: what was learned may not hold
    assert door(array()) == "general"
    known["float32"] = (config.current(), CUDA0, fresh)  # relearned under it
    assert door(array()) == "fresh"


def test_settings_layers_are_followed(make: Doors) -> None:
    fresh = Recorder("fresh")
    known = {"float32": (config.current(), CUDA0, fresh)}
    door, x = make(known, 1), array()
    with config.use(backend=["cuda"]) as layered:
        assert door(x) == "general"  # learned outside the layer
        known["float32"] = (layered, CUDA0, fresh)
        assert door(x) == "fresh"
    assert door(x) == "general"  # the layer is gone again
    assert len(fresh.calls) == 1


def test_errors_pass_through(make: Doors) -> None:
    def failing(*xs: Any) -> Any:
        raise ValueError("out of slots")

    door = make({"float32": (config.current(), CUDA0, failing)}, 2)
    with pytest.raises(ValueError, match="out of slots"):
        door(array(), array())
    make.general = failing
    with pytest.raises(ValueError, match="out of slots"):
        make({}, 1)(array())


def test_the_wrong_number_of_operands_is_a_type_error(make: Doors) -> None:
    door = make({}, 2)
    with pytest.raises(TypeError):
        door(array())


def test_the_native_door_checks_what_it_is_given() -> None:
    native = pytest.importorskip("pygpukit_cuda._native")
    paths = (print, print)
    settings = front_door_settings()
    with pytest.raises(TypeError, match="dicts"):
        native.front_door([], 2, GPUArray, *paths, *settings)
    with pytest.raises(ValueError, match="1 or 2 operands"):
        native.front_door({}, 3, GPUArray, *paths, *settings)
    with pytest.raises(TypeError, match="GPUArray class"):
        native.front_door({}, 2, object(), *paths, *settings)
    with pytest.raises(TypeError, match="callables"):
        native.front_door({}, 2, GPUArray, None, print, *settings)
    with pytest.raises(TypeError, match="ContextVar"):
        native.front_door({}, 2, GPUArray, *paths, settings[0], "_base", None, config.current)


def test_the_cuda_extension_puts_native_doors_in() -> None:
    pytest.importorskip("pygpukit_cuda._native")
    x = gp.asarray(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(gp.add(x, x).to_numpy(), [0, 2, 4])  # providers loaded
    kinds = {op: type(door.cell[0]).__name__ for op, door in elementwise._doors.items()}
    assert set(kinds.values()) == {"FrontDoor"}, kinds
    assert {"add", "exp", "equal", "logical_not"} <= set(kinds)
    np.testing.assert_allclose(gp.exp(x).to_numpy(), np.exp(np.arange(3.0)), rtol=1e-6)
