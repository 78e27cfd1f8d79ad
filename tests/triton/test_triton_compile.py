"""The GPU launch path's host half, without a GPU: every program compiles for sm_90 through
triton.compile, and the parameter layout read from the PTX matches what our launch plans
pack (our arguments, then Triton's trailing scratch pointers)."""

from __future__ import annotations

import struct

import pytest
from pygpukit.triton import availability
from pygpukit.triton.compiled import ptx_params

pytestmark = pytest.mark.skipif(not availability.status()[0], reason=availability.status()[1])

_PTX = """
.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0,
	.param .u32 k_param_1,
	.param .f32 k_param_2,
	.param .u64 .ptr .global .align 1 k_param_3
)
"""


def test_ptx_params_reads_types_in_order() -> None:
    assert ptx_params(_PTX, "k") == ["u64", "u32", "f32", "u64"]
    with pytest.raises(ValueError, match="no entry"):
        ptx_params(_PTX, "other")


def _compile(program: object, types: tuple[str, ...], consts: tuple[tuple[str, object], ...],
             warps: int = 4, stages: int = 2) -> object:  # fmt: skip
    from pygpukit.triton.launch import Program

    p = Program(program)
    return p.compile(90, types, consts, warps, stages, (1 << len(types)) - 1)


def test_rows_program_layout() -> None:
    from pygpukit.triton.programs import rows

    types = ("*fp16",) * 4 + ("i32",) * 4 + ("i64",) * 8 + ("fp32",)
    c = _compile(rows.rows_tile, types, (("OP", 3), ("F64", False), ("ROWS", 4), ("BLOCK", 512)))
    ours = c.param_codes[: len(types)]  # type: ignore[attr-defined]
    assert ours == ("Q",) * 4 + ("I",) * 4 + ("Q",) * 8 + ("f",)
    assert c.trailing >= 1 and set(c.param_codes[len(types) :]) == {"Q"}  # type: ignore[attr-defined]
    offsets = c.offsets()  # type: ignore[attr-defined]
    assert offsets[:6] == [0, 8, 16, 24, 32, 36]
    assert struct.calcsize(c.arg_format) == offsets[-1] + 8  # type: ignore[attr-defined]
    assert c.cubin[:4] == b"\x7fELF"  # type: ignore[attr-defined]


def test_flash_attention_compiles_for_hopper_with_its_shared_memory() -> None:
    from pygpukit.triton.programs import attention

    types = ("*bf16",) * 4 + ("i32",) * 7 + ("fp32",) + ("i64",) * 16
    consts = (("BM", 128), ("BN", 64), ("BD", 128), ("BDV", 128), ("IEEE", False),
              ("UPCAST", False), ("EVEN_D", False), ("SCALE_POS", True),
              ("SCHED", 0), ("LAZY", False), ("TMA", False))  # fmt: skip
    c = _compile(attention.flash_causal, types, consts, warps=8, stages=3)
    assert c.name == "flash_causal" and c.num_warps == 8  # type: ignore[attr-defined]
    assert c.shared > 0 and c.global_scratch == 0  # type: ignore[attr-defined]


#: sm_90's opt-in shared memory per block
_HOPPER_SHARED = 227 * 1024


@pytest.mark.slow
@pytest.mark.parametrize("d", [64, 128])
def test_every_flash_attention_config_fits_hopper(d: int) -> None:
    """Each autotuning candidate compiles as the launcher specialises a contiguous
    (batch, heads, seq, dim) layout (unit head-dim strides, 16-aligned others), with its
    key/value loads software-pipelined, in Hopper's shared memory."""
    from pygpukit.triton.kernels import attention as ka
    from pygpukit.triton.launch import Program
    from pygpukit.triton.programs import attention

    types = ("*bf16",) * 4 + ("i32",) * 7 + ("fp32",) + ("i64",) * 16
    # argument indices: 15/19/23/27 are the head-dim strides; 5 (G), 10 (W: an H100's 132
    # SMs) and 11 (scale) unhinted
    ones = sum(1 << i for i in (15, 19, 23, 27))
    align = sum(1 << i for i in range(28) if i not in (5, 10, 11, 15, 19, 23, 27))
    program = Program(attention.flash_causal)
    for bm, bn, warps, stages, sched, lazy in ka.CONFIGS_D64 if d == 64 else ka.CONFIGS_D128:
        consts = (("BM", bm), ("BN", bn), ("BD", d), ("BDV", d), ("IEEE", False),
                  ("UPCAST", False), ("EVEN_D", True), ("SCALE_POS", True),
                  ("SCHED", ka.SCHEDULES[sched]), ("LAZY", lazy), ("TMA", False))  # fmt: skip
        c = program.compile(90, types, consts, warps, stages, align, ones)
        assert 0 < c.shared <= _HOPPER_SHARED, (bm, bn, warps, stages, c.shared)
        usage = _resource_usage(c.cubin)
        if usage is not None:  # no spilled tiles: a few saved registers at most (d128's
            # 128x128 on 8 warps keeps an 8-byte stack frame, and measured well)
            assert usage["LOCAL"] == 0 and usage["STACK"] <= 16, (bm, bn, warps, stages, sched)


def _resource_usage(cubin: bytes) -> dict[str, int] | None:
    """REG/STACK/SHARED/LOCAL of a CUBIN's kernel, from the cuobjdump Triton ships (None
    where it ships none)."""
    import re
    import subprocess
    import tempfile
    from pathlib import Path

    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not tool.exists():
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([str(tool), "-res-usage", f.name], capture_output=True,
                              text=True, check=False).stdout  # fmt: skip
    found = dict(re.findall(r"(REG|STACK|SHARED|LOCAL):(\d+)", text))
    return {k: int(v) for k, v in found.items()} if "LOCAL" in found else None


def test_elementwise_template_compiles_a_scalar_operand_by_value() -> None:
    from pygpukit.triton.programs import elementwise

    types = ("*fp32", "fp32", "*fp32") + ("i64",) * 16
    consts = (("OP", "add"), ("A_SCALAR", False), ("B_SCALAR", True), ("F64", False),
              ("CONTIG", True), ("BLOCK", 1024))  # fmt: skip
    c = _compile(elementwise.binary, types, consts)
    assert c.param_codes[:3] == ("Q", "f", "Q")  # type: ignore[attr-defined]


def test_matmul_compiles() -> None:
    from pygpukit.triton.programs import matmul

    types = ("*fp16",) * 3 + ("i32",) * 3 + ("i64",) * 9
    consts = (("ALLOW_TF32", False), ("BM", 64), ("BN", 64), ("BK", 32), ("GROUP", 8),
              ("UPCAST", False))  # fmt: skip
    c = _compile(matmul.matmul, types, consts)
    assert len(c.param_codes) == len(types) + c.trailing  # type: ignore[attr-defined]
