"""The audio package's fused CUDA kernels compile to CUBIN with NVRTC for sm_80 and sm_90
(no GPU needed), with the argument layout their callers pass."""

from __future__ import annotations

import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit import _dtypes as dt
from pygpukit.audio import _fused
from pygpukit_cuda import _loader, compiler

pytestmark = pytest.mark.skipif(
    not _loader.is_nvrtc_available(), reason="no NVRTC: pip install nvidia-cuda-nvrtc"
)

#: (kernel, placeholder types, which parameters are scalars)
_FRAMES_SCALARS = (False, False, *([True] * 8), False, True, True, False)
_CASES = [
    (_fused._frames_kernel, {"T": dt.float32}, _FRAMES_SCALARS),
    (_fused._frames_kernel, {"T": dt.float64}, _FRAMES_SCALARS),
    (_fused._power_kernel, {"T": dt.float32}, None),
    (_fused._power_kernel, {"T": dt.float64}, None),
    (_fused._log_kernel, {}, None),
]


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("case", range(len(_CASES)))
def test_fused_kernel_compiles(arch: int, case: int) -> None:
    make, types, scalars = _CASES[case]
    kernel = make.__wrapped__()  # a fresh one: the cached instance may be a stub's
    if scalars is not None:
        assert len(scalars) == kernel.nin + kernel.nout
    name, source, _ = kernel.kernel_source(types, scalars)
    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}"]
    ok, image, log = _loader.nvrtc().compile(source, f"{name}.cu", options, True)
    assert ok, log
    assert image[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", [80, 90])
def test_warp_per_frame_kernels_compile(arch: int) -> None:
    """Both precisions of the framing kernel that float32/float64 signals take."""
    from pygpukit.audio import _frames

    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}"]
    ok, image, log = _loader.nvrtc().compile(_frames._SOURCE, "frames.cu", options, True)
    assert ok, log
    assert image[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", [80, 90])
def test_packed_power_kernels_compile(arch: int) -> None:
    """|X|^2 of complex64 (two values a thread) and complex128, as _power launches them."""
    from pygpukit.audio import _power

    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}"]
    ok, image, log = _loader.nvrtc().compile(_power._SOURCE, "power.cu", options, True)
    assert ok, log
    assert image[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", [80, 90])
def test_mel_power_kernel_compiles_without_a_stack_frame(arch: int) -> None:
    """|X|^2 and the mel product in one kernel (one accumulator a thread: no local memory)."""
    from pygpukit.audio import _mel_power

    options = [*compiler.BASE_OPTIONS, f"-arch=sm_{arch}", "--ptxas-options=-v"]
    ok, image, log = _loader.nvrtc().compile(_mel_power._SOURCE, "mel.cu", options, True)
    assert ok, log
    assert image[:4] == b"\x7fELF" and " 0 bytes stack frame" in log, log


@pytest.mark.parametrize("which", ["elementwise", "warp"])
def test_framing_kernels_keep_no_stack_frame(which: str) -> None:
    """No thread copies a layout struct to local memory: the ElementwiseKernel framing once
    did (a 128-byte stack frame: 16 local stores in every one of its 16.7 M threads on the
    600 s stft, far more traffic than the frames themselves)."""
    from pygpukit.audio import _frames

    if which == "warp":
        source = _frames._SOURCE
    else:
        kernel = _fused._frames_kernel.__wrapped__()
        _, source, _ = kernel.kernel_source({"T": dt.float32}, _FRAMES_SCALARS)
    options = [*compiler.BASE_OPTIONS, "-arch=sm_90", "--ptxas-options=-v"]
    ok, _, log = _loader.nvrtc().compile(source, "frames.cu", options, True)
    assert ok, log
    frames = [line for line in log.splitlines() if "stack frame" in line]
    assert frames and all(" 0 bytes stack frame" in line for line in frames), log
