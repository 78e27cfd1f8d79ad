"""cuBLASLt loading and the layout mapping, without a GPU: where the library is looked
for, the status when it is absent, and which strided views map to which op flags."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import cublaslt, matmul


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cublaslt, "_tried", False)
    monkeypatch.setattr(cublaslt, "_lib", None)


def test_env_path_comes_first_then_what_pathfinder_finds(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    lib = tmp_path / "libcublasLt.so.13"
    lib.write_bytes(b"not a library")
    monkeypatch.setenv("PYGPUKIT_CUBLASLT_PATH", str(tmp_path))
    monkeypatch.setattr(cublaslt, "_pathfinder_path", lambda: "/wheel/libcublasLt.so.13")
    assert cublaslt.candidates() == [str(lib), "/wheel/libcublasLt.so.13"]
    monkeypatch.delenv("PYGPUKIT_CUBLASLT_PATH")
    monkeypatch.setattr(cublaslt, "_pathfinder_path", lambda: None)
    assert cublaslt.candidates() == []


def test_native_open_names_the_path_and_what_is_missing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pygpukit_cuda import _loader

    bogus = tmp_path / "libcublasLt.so.13"
    bogus.write_bytes(b"not a library")
    with pytest.raises(RuntimeError, match=str(bogus)):
        _loader.native().CublasLt(str(bogus))
    with pytest.raises(RuntimeError, match="no symbol cublasLtCreate"):
        _loader.native().CublasLt("libm.so.6")


def test_absent_library_gives_none_and_a_status_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch, fresh: None, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    bogus = tmp_path / "libcublasLt.so.13"
    bogus.write_bytes(b"not a library")
    monkeypatch.setattr(cublaslt, "candidates", lambda: [str(bogus), "libcublasLt.so.999"])
    assert cublaslt.library() is None
    text = cublaslt.status()
    assert "cuBLASLt not found" in text and "nvidia-cublas" in text
    assert "libcublasLt.so.999" in text


def test_disabled_by_environment(monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    monkeypatch.setenv("PYGPUKIT_CUBLASLT", "0")
    assert cublaslt.library() is None
    assert "PYGPUKIT_CUBLASLT=0" in cublaslt.status()


def test_layouts_of_row_major_transposed_and_unsupported_views() -> None:
    op = cublaslt.as_operand
    # rows contiguous: column-major as is
    assert op(4, 3, 1, 4) == cublaslt.Operand(cublaslt.OP_N, 4, 3, 4)
    # columns contiguous: stored transposed, op T, ld the row stride
    assert op(4, 3, 3, 1) == cublaslt.Operand(cublaslt.OP_T, 3, 4, 3)
    # padded leading dimension (a slice of a wider matrix)
    assert op(4, 3, 1, 10) == cublaslt.Operand(cublaslt.OP_N, 4, 3, 10)
    # negative or doubly strided: no layout, the caller copies
    assert op(4, 3, -1, 4) is None
    assert op(4, 3, 2, 8) is None
    # a single row or column takes any stride on its length-1 axis
    assert op(1, 3, 7, 2) is not None and op(4, 1, 1, 99) is not None


def test_alignment_is_the_largest_power_of_two_up_to_256() -> None:
    assert cublaslt._alignment(0x1000) == 256
    assert cublaslt._alignment(0x1002) == 2
    assert cublaslt._alignment(0x1010) == 16


def test_batch_dims_merge_only_where_every_operand_steps_evenly() -> None:
    # (2, 3) batches, contiguous in both operands: one dimension of 6
    assert matmul._merge_batch((2, 3), (30, 10), (60, 20)) == [(6, (10, 20))]
    # a broadcast operand (stride 0) merges with itself; size-1 dims vanish
    assert matmul._merge_batch((2, 1, 3), (30, 0, 10), (0, 0, 0)) == [(6, (10, 0))]
    # uneven strides stay two dimensions
    assert matmul._merge_batch((2, 3), (40, 10), (60, 20)) == [(2, (40, 60)), (3, (10, 20))]


def test_broadcast_rhs_folds_into_rows_only_for_evenly_spaced_lhs() -> None:
    a = gp.asarray(np.ones((2, 3, 4, 5), np.float32), device="cpu")
    b = gp.asarray(np.ones((5, 6), np.float32), device="cpu").broadcast_to((2, 3, 5, 6))
    assert matmul._fold_rows(a, b) == 24
    # every other row is still evenly spaced; the first 2 rows of 4 are not
    assert matmul._fold_rows(a[..., ::2, :], b) == 12
    assert matmul._fold_rows(a[..., :2, :], b) is None
    b_real = gp.asarray(np.ones((2, 3, 5, 6), np.float32), device="cpu")
    assert matmul._fold_rows(a, b_real) is None
