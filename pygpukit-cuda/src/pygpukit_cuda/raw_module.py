"""`gp.RawModule`: several kernels (and the `__device__` state they share) in one source.

    mod = gp.RawModule(src)
    fill = mod.get_function("fill")
    fill(x, 2.0, n=x.size)

The source is compiled once per device and loaded as one CUDA module, so every function
taken from it sees the same module-scope variables, as in the source. Each function is a
`JitKernel`: arguments are read from its declaration in the source, checked and converted
before launch, and launched on the current stream.
"""

from __future__ import annotations

import threading
from typing import Any

from . import _loader, compiler, launcher
from .device_choice import require_gpu
from .jit_kernel import JitKernel


class _ModuleFunction(launcher.Function):
    """A kernel of an already loaded module (no second cuModuleLoadData)."""

    def __init__(self, module: Any, device_index: int, name: str, image: compiler.Image,
                 arg_format: str) -> None:  # fmt: skip
        self._shared_module = module
        super().__init__(device_index, name, image, arg_format)

    def context_module(self, data: bytes) -> Any:
        return self._shared_module


class ModuleKernel(JitKernel):
    """One function of a `RawModule`."""

    def __init__(self, module: RawModule, func: str, param_types: list[str] | None,
                 block: int) -> None:  # fmt: skip
        super().__init__(module.code, func, module.options, param_types, block)
        self._module = module

    def compile(self, device_index: int = 0) -> launcher.Function:
        return self._module.function(device_index, self.func, self.arg_format)

    def __repr__(self) -> str:
        return "<RawModule " + super().__repr__()[1:]


class RawModule:
    """CUDA C source holding one or more ``extern "C" __global__`` kernels."""

    def __init__(
        self,
        code: str,
        *,
        options: tuple[str, ...] | list[str] = (),
        device: Any = None,
    ) -> None:
        if not isinstance(code, str) or not code.strip():
            raise TypeError("RawModule(code) wants the CUDA C source as a non-empty string")
        self.code = code
        self.options = tuple(options)
        self._loaded: dict[int, tuple[Any, compiler.Image]] = {}
        self._functions: dict[tuple[int, str, str], launcher.Function] = {}
        self._lock = threading.Lock()
        # compile now, so source errors raise here with NVRTC's log
        self._module(require_gpu("gp.RawModule", device))

    def _module(self, device_index: int) -> tuple[Any, compiler.Image]:
        loaded = self._loaded.get(device_index)
        if loaded is None:
            with self._lock:
                loaded = self._loaded.get(device_index)
                if loaded is None:
                    target = launcher.target_for(device_index)
                    image = compiler.compile_source(self.code, "module", target, self.options)
                    native = _loader.driver().Module(launcher.context(device_index), image.data)
                    loaded = self._loaded[device_index] = (native, image)
        return loaded

    def function(self, device_index: int, name: str, arg_format: str) -> launcher.Function:
        """The loaded kernel `name` on one device (loaded once per device)."""
        key = (device_index, name, arg_format)
        fn = self._functions.get(key)
        if fn is None:
            native, image = self._module(device_index)
            fn = _ModuleFunction(native, device_index, name, image, arg_format)
            with self._lock:
                fn = self._functions.setdefault(key, fn)
        return fn

    def get_function(
        self, name: str, *, param_types: list[str] | None = None, block: int = 256
    ) -> ModuleKernel:
        """The kernel `name` as a callable (its parameters read from the source unless
        `param_types` gives them); a name the module lacks raises at once."""
        kernel = ModuleKernel(self, name, param_types, block)
        for index in list(self._loaded):
            kernel.compile(index)
        return kernel

    def __repr__(self) -> str:
        return f"<RawModule {len(self.code)} chars, options={list(self.options)}>"


def raw_kernel(
    code: str, name: str, *, options: tuple[str, ...] | list[str] = (), device: Any = None
) -> ModuleKernel:
    """CuPy's ``RawKernel(code, name)``: the one kernel `name` of `code`."""
    return RawModule(code, options=options, device=device).get_function(name)
