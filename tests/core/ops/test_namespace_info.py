"""__array_namespace_info__: capabilities, devices and dtypes of the namespace."""

from __future__ import annotations

import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt


def test_capabilities() -> None:
    info = gp.__array_namespace_info__()
    assert info.capabilities() == {"boolean indexing": True, "data-dependent shapes": True}


def test_reachable_from_an_array() -> None:
    x = gp.zeros((2,))
    ns = x.__array_namespace__()
    assert ns.__array_namespace_info__().default_device() == x.device


def test_devices_and_default_device() -> None:
    info = gp.__array_namespace_info__()
    devices = info.devices()
    assert gp.Device("cpu") in devices
    assert info.default_device() in devices
    assert info.default_device() == gp.zeros((1,)).device


def test_default_dtypes() -> None:
    info = gp.__array_namespace_info__()
    want = {
        "real floating": gp.float32,
        "complex floating": gp.complex64,
        "integral": gp.int64,
        "indexing": gp.int64,
    }
    assert info.default_dtypes() == want
    assert info.default_dtypes(device="cpu") == want
    assert gp.zeros((1,)).dtype is want["real floating"]
    assert gp.arange(3).dtype is want["integral"]
    assert gp.asarray([1j]).dtype is want["complex floating"]


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        ("bool", {"bool"}),
        ("signed integer", {"int8", "int16", "int32", "int64"}),
        ("unsigned integer", {"uint8"}),
        ("integral", {"int8", "int16", "int32", "int64", "uint8"}),
        # the extra storage types (float16, bfloat16, float8) are not Array API dtypes
        ("real floating", {"float32", "float64"}),
        ("complex floating", {"complex64", "complex128"}),
        (("bool", "unsigned integer"), {"bool", "uint8"}),
    ],
)  # fmt: skip
def test_dtypes_by_kind(kind: str | tuple[str, ...], names: set[str]) -> None:
    got = gp.__array_namespace_info__().dtypes(kind=kind)
    assert set(got) == names
    for name, dtype in got.items():
        assert dtype.name == name and dtype is dt.DataType.from_string(name)


def test_dtypes_all_and_errors() -> None:
    info = gp.__array_namespace_info__()
    extras = {"float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"}
    assert list(info.dtypes()) == [d.name for d in dt.EVERY_DTYPE if d.name not in extras]
    assert info.dtypes(device="cpu") == info.dtypes()
    with pytest.raises(ValueError, match="unknown kind 'float'"):
        info.dtypes(kind="float")
    with pytest.raises(ValueError, match="is not available"):
        info.dtypes(device="cpu:3")
    with pytest.raises(ValueError, match="no plugin provides device type 'tpu'"):
        info.default_dtypes(device="tpu")
