"""The safetensors reader: values, memory mapping, and every way a file can be broken."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from pygpukit.llm import SafeTensorsError, SafeTensorsFile, save_file
from tiny_models import write_safetensors


def _tensors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "a": rng.standard_normal((3, 5)).astype(np.float32),
        "b": rng.standard_normal(7).astype(np.float16),
        "c": rng.standard_normal((2, 2, 2)).astype(ml_dtypes.bfloat16),
        "d": rng.standard_normal(9).astype(ml_dtypes.float8_e4m3fn),
        "e": rng.integers(-5, 5, size=4).astype(np.int64),
    }


def _raw_file(path: Path, header: object, data: bytes) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data)
    return path


def test_reads_every_dtype_exactly(tmp_path: Path) -> None:
    tensors = _tensors()
    write_safetensors(tmp_path / "m.safetensors", tensors)
    st = SafeTensorsFile(tmp_path / "m.safetensors")
    assert st.tensor_names == list(tensors) and st.num_tensors == 5 and len(st) == 5
    for name, want in tensors.items():
        got = st.get(name)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_tensors_are_read_only_views_of_a_memory_map(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "m.safetensors", _tensors())
    st = SafeTensorsFile(tmp_path / "m.safetensors")
    a = st.get("a")
    assert not a.flags.writeable and not a.flags.owndata
    info = st.info("a")
    assert info.nbytes == a.nbytes and info.end == info.start + a.nbytes


def test_save_file_round_trips_with_metadata(tmp_path: Path) -> None:
    tensors = _tensors()
    save_file(tensors, tmp_path / "s.safetensors", metadata={"format": "np"})
    st = SafeTensorsFile(tmp_path / "s.safetensors")
    assert st.metadata == {"format": "np"}
    for name, want in tensors.items():
        np.testing.assert_array_equal(st.get(name).view(np.uint8), want.view(np.uint8))


def test_file_written_by_the_safetensors_package(tmp_path: Path) -> None:
    st_numpy = pytest.importorskip("safetensors.numpy")
    tensors = {k: v for k, v in _tensors().items() if k != "d"}
    st_numpy.save_file(tensors, str(tmp_path / "x.safetensors"))
    st = SafeTensorsFile(tmp_path / "x.safetensors")
    for name, want in tensors.items():
        np.testing.assert_array_equal(st.get(name), want)


def test_empty_and_zero_size_tensors(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "z.safetensors", {"z": np.zeros((0, 3), np.float32)})
    st = SafeTensorsFile(tmp_path / "z.safetensors")
    assert st.get("z").shape == (0, 3)


def test_truncated_file_names_file_tensor_and_range(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    write_safetensors(path, _tensors())
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(
        SafeTensorsError, match=r"t\.safetensors.*'e'.*byte range \[\d+, \d+\).*truncated"
    ):
        SafeTensorsFile(path)


def test_header_longer_than_the_file(tmp_path: Path) -> None:
    path = tmp_path / "h.safetensors"
    path.write_bytes((1000).to_bytes(8, "little") + b"{}")
    with pytest.raises(SafeTensorsError, match=r"bytes \[8, 1008\).*only 10 bytes"):
        SafeTensorsFile(path)


def test_file_shorter_than_the_length_field(tmp_path: Path) -> None:
    (tmp_path / "s.safetensors").write_bytes(b"\x01\x02")
    with pytest.raises(SafeTensorsError, match=r"too short"):
        SafeTensorsFile(tmp_path / "s.safetensors")


def test_huge_header_length_is_refused(tmp_path: Path) -> None:
    (tmp_path / "g.safetensors").write_bytes((2**62).to_bytes(8, "little") + b"{}")
    with pytest.raises(SafeTensorsError, match=r"100 MB"):
        SafeTensorsFile(tmp_path / "g.safetensors")


def test_header_that_is_not_json(tmp_path: Path) -> None:
    raw = b"{not json!"
    (tmp_path / "j.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw)
    with pytest.raises(SafeTensorsError, match=r"bytes \[8, 18\) are not valid UTF-8 JSON"):
        SafeTensorsFile(tmp_path / "j.safetensors")


def test_dtype_and_size_mismatch(tmp_path: Path) -> None:
    header = {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 12]}}
    path = _raw_file(tmp_path / "d.safetensors", header, bytes(12))
    with pytest.raises(
        SafeTensorsError,
        match=r"'w': F32 \(2, 3\) needs 24 bytes but its byte range \[\d+, \d+\) holds 12",
    ):
        SafeTensorsFile(path)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"dtype": "F33", "shape": [1], "data_offsets": [0, 4]}, "unknown dtype 'F33'"),
        ({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}, "shape must be"),
        ({"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}, "data_offsets must be"),
        ({"dtype": "F32", "shape": [1]}, "exactly dtype, shape, data_offsets"),
    ],
)
def test_bad_entries(tmp_path: Path, entry: dict[str, object], message: str) -> None:
    path = _raw_file(tmp_path / "e.safetensors", {"w": entry}, bytes(4))
    with pytest.raises(SafeTensorsError, match=message):
        SafeTensorsFile(path)


def test_overlapping_and_gapped_ranges(tmp_path: Path) -> None:
    header = {
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
    }
    with pytest.raises(SafeTensorsError, match=r"'b'.*overlaps"):
        SafeTensorsFile(_raw_file(tmp_path / "o.safetensors", header, bytes(12)))
    header["b"]["data_offsets"] = [12, 20]
    with pytest.raises(SafeTensorsError, match=r"'b'.*gap"):
        SafeTensorsFile(_raw_file(tmp_path / "g.safetensors", header, bytes(20)))


def test_trailing_bytes_belong_to_no_tensor(tmp_path: Path) -> None:
    header = {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}
    with pytest.raises(SafeTensorsError, match=r"3 bytes after the last tensor"):
        SafeTensorsFile(_raw_file(tmp_path / "x.safetensors", header, bytes(7)))


def test_missing_file_and_missing_tensor(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.safetensors"):
        SafeTensorsFile(tmp_path / "nope.safetensors")
    write_safetensors(tmp_path / "m.safetensors", _tensors())
    with pytest.raises(KeyError, match=r"no tensor named 'zz'"):
        SafeTensorsFile(tmp_path / "m.safetensors").get("zz")


def test_bad_metadata(tmp_path: Path) -> None:
    path = _raw_file(tmp_path / "m.safetensors", {"__metadata__": {"k": 1}}, b"")
    with pytest.raises(SafeTensorsError, match=r"__metadata__"):
        SafeTensorsFile(path)
