"""What `python -m pygpukit doctor` learns from the CUDA plugin: each check, and its fix."""

from __future__ import annotations

from collections.abc import Callable

from . import _loader

Report = Callable[[str, bool, str], None]


def run_checks(report: Report) -> None:
    """Report the native extension, driver, GPUs, NVRTC and a test compile, in that order;
    later checks are skipped (with a reason) once an earlier one fails; then cuFFT."""
    try:
        _loader.native()
    except _loader.CudaUnavailable as exc:
        report("CUDA extension", False, f"{exc}; fix: reinstall pygpukit-cuda for this Python")
        return
    report("CUDA extension", True, _loader.native_status())

    try:
        mod = _loader.driver()
    except _loader.CudaUnavailable as exc:
        report(
            "CUDA driver", False,
            f"{exc}; fix: install the NVIDIA driver (it provides libcuda.so.1), or use the "
            "CPU backend meanwhile",
        )  # fmt: skip
        _report_nvrtc(report)
        return
    report("CUDA driver", True, mod.driver_status())

    count = _loader.device_count()
    if count == 0:
        report("CUDA GPUs", False, "the driver sees no GPU; fix: check nvidia-smi and "
               "CUDA_VISIBLE_DEVICES")  # fmt: skip
    else:
        from .device import context

        names = ", ".join(
            f"cuda:{i} {context(i).name()} (sm_{''.join(map(str, context(i).compute_capability()))})"  # noqa: E501
            for i in range(count)
        )
        report("CUDA GPUs", True, names)
    if _report_nvrtc(report) and count:
        _report_compile(report)
    _report_cufft(report)


def _report_nvrtc(report: Report) -> bool:
    if not _loader.is_nvrtc_available():
        report("NVRTC", False, _loader.nvrtc_status())
        return False
    report("NVRTC", True, _loader.nvrtc_status())
    return True


def _report_compile(report: Report) -> None:
    from pygpukit.core import dtypes as dt

    from . import launcher
    from .kernels import source

    spec = source.copy_kernel(dt.float32)
    try:
        fn = launcher.function(0, spec.name, spec.source, spec.arg_format)
    except Exception as exc:
        report("CUDA kernel build", False, f"{type(exc).__name__}: {exc}; fix: install an "
               "nvidia-cuda-nvrtc wheel no newer than the driver")  # fmt: skip
        return
    how = "from the disk cache" if fn.image.from_cache else "compiled now"
    report("CUDA kernel build", True, f"{fn.image.target.option[6:]} ({how})")


def _report_cufft(report: Report) -> None:
    """cuFFT is optional (gp.fft on cuda arrays): its absence is reported, not failed."""
    from . import cufft

    why = cufft.missing()
    report("cuFFT (gp.fft on cuda)", True, cufft.status() if why is None else f"optional: {why}")
