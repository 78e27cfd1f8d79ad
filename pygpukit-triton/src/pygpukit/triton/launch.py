"""`Program`: one Triton function, launched on GPUArrays through pygpukit-cuda's native
launch point (compiled CUBIN, a LaunchPlan per argument layout), or, under
``TRITON_INTERPRET=1``, run by Triton's interpreter on host arrays.

A call names each runtime argument's Triton type and the constexpr values; everything but
the pointer and scalar values is fixed per (device, types, constexprs, grid, 16-byte
alignment), so after the first call a launch is a dict lookup and one native call on the
current stream: no allocation and no host wait, so it records into CUDA graphs.

A kernel that asks for global scratch (tensor descriptors: each program writes its own
there) gets a buffer per plan and stream, made on the first launch on that stream: two
streams running one plan at once never share it. A CUDA graph keeps the buffer of the
stream it was captured on, so replaying it while the same plan runs directly on that
stream would share it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from pygpukit import GPUArray
from pygpukit.backend import as_dtype
from pygpukit_cuda.cubin import current_stream as stream

from . import availability, interpreter_compat
from .array import TritonArray
from .compiled import Compiled, compile_program

#: a plan cache this big starts over rather than grows (a program of endless new shapes)
_MAX_PLANS = 2048


def write_param(buf: bytearray, offset: int, code: str, value: Any) -> None:
    """Write one parameter into a packed buffer as the launch plan does: pointers and
    integers wrapped to their width (a C cast), floats as floats."""
    if code in "fd":
        struct.pack_into("@" + code, buf, offset, float(value))
        return
    unsigned = "Q" if code == "P" else code.upper()
    mask = (1 << (8 * struct.calcsize(unsigned))) - 1
    struct.pack_into("@" + unsigned, buf, offset, int(value) & mask)


#: every plan cache (Programs' own and the hot paths' kept by `bound`), for `clear_plans`
_caches: list[dict[Any, Callable[..., None]]] = []


#: other holders of plans (the elementwise kernels' native fast paths), cleared with them
_holders: list[Any] = []


def forget_with_plans(holder: Any) -> None:
    """Have `clear_plans` call ``holder.clear()`` too (it keeps launch plans of its own)."""
    _holders.append(holder)


def clear_plans() -> None:
    """Forget every launch plan (the next call of each kernel binds again): for tests that
    swap the loader, and after a GPU context is lost."""
    for cache in _caches:
        cache.clear()
    for holder in _holders:
        holder.clear()


def specialization(args: Sequence[Any], values: Sequence[Any],
                   slots: Sequence[int]) -> tuple[int, int]:  # fmt: skip
    """(align, ones) bitmasks as Triton's JIT specialises: pointers and integers that are
    multiples of 16 (divisibility hints: vector loads, folded index math), and integers
    equal to 1 outside `slots` (constants: a unit stride makes a row contiguous)."""
    align = ones = pointers = 0
    every_pointer = True
    for i, (a, v) in enumerate(zip(args, values, strict=True)):
        if type(a) is GPUArray:
            if v & 15:
                every_pointer = False
            else:
                pointers |= 1 << i
        elif type(a) is int:
            if v == 1 and i not in slots:
                ones |= 1 << i
            elif v % 16 == 0:
                align |= 1 << i
    # pointers are hinted all or none: the hot paths key on "every pointer aligned", so a
    # plan must hold for any mix of addresses that shares that answer
    return align | (pointers if every_pointer else 0), ones


class Scratch:
    """Triton's global scratch of one launch plan: `nbytes` aligned to `align`, one buffer
    per stream, allocated on the first launch on that stream and kept with the plan."""

    def __init__(self, device: Any, nbytes: int, align: int) -> None:
        self.device, self.nbytes, self.align = device, nbytes, max(1, align)
        self._by_stream: dict[int, tuple[GPUArray, int]] = {}

    def pointer(self, stream_handle: int) -> int:
        found = self._by_stream.get(stream_handle)
        if found is None:
            buf = GPUArray.empty((self.nbytes + self.align,), as_dtype("uint8"), self.device)
            base = buf._buffer.ptr + buf._offset
            found = self._by_stream[stream_handle] = (buf, -(-base // self.align) * self.align)
        return found[1]


class Program:
    """A ``@triton.jit`` function and the launch plans made for it."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.arg_names: list[str] = list(fn.arg_names)
        self._plans: dict[tuple[Any, ...], Callable[..., None]] = {}
        _caches.append(self._plans)

    def __call__(self, grid: tuple[int, ...], args: Sequence[Any], types: tuple[str, ...],
                 constexprs: tuple[tuple[str, Any], ...], num_warps: int = 4,
                 num_stages: int = 2) -> None:  # fmt: skip
        """Launch on `grid` with `args` (GPUArrays, ints, floats) typed by `types` (Triton
        type names, in the order of the function's runtime parameters)."""
        if availability.interpret():
            self._interpret(grid, args, constexprs, num_warps)
            return
        first = next(a for a in args if type(a) is GPUArray)
        index = first._device.index
        values = [a._buffer.ptr + a._offset if type(a) is GPUArray else a for a in args]
        align, ones = specialization(args, values, ())
        key = (index, grid, types, constexprs, num_warps, num_stages, align, ones)
        hit = self._plans.get(key)
        if hit is None:
            slots = [i for i in range(len(types)) if not ones >> i & 1]
            plan = self.bind(index, grid, values, types, constexprs, num_warps, num_stages,
                             align, ones, slots, first._device)  # fmt: skip
            hit = self._plans[key] = (plan, slots)  # type: ignore[assignment]
            if len(self._plans) > _MAX_PLANS:
                self._plans.clear()
        plan, slots = hit  # type: ignore[misc]
        plan(stream(index), *[values[i] for i in slots])

    def bound(self, cache: dict[Any, Callable[..., None]], key: Any, grid: tuple[int, ...],
              args: Sequence[Any], types: tuple[str, ...],
              constexprs: tuple[tuple[str, Any], ...], slots: Sequence[int],
              num_warps: int = 4, num_stages: int = 2) -> Callable[..., None]:  # fmt: skip
        """`bind` for `args` (GPUArrays and numbers, specialised on the values outside
        `slots`), kept in `cache` under `key`: a hot path's slow half. The key must fix
        every value outside `slots` (shapes and strides do)."""
        first = next(a for a in args if type(a) is GPUArray)
        index = first._device.index
        values = [a._buffer.ptr + a._offset if type(a) is GPUArray else a for a in args]
        align, ones = specialization(args, values, slots)
        plan = self.bind(index, grid, values, types, constexprs, num_warps, num_stages, align,
                         ones, slots, first._device)  # fmt: skip
        if not cache:
            if all(c is not cache for c in _caches):
                _caches.append(cache)
        elif len(cache) > _MAX_PLANS:
            cache.clear()
        cache[key] = plan
        return plan

    def bind(self, index: int, grid: tuple[int, ...], values: Sequence[Any],
             types: tuple[str, ...], constexprs: tuple[tuple[str, Any], ...], num_warps: int,
             num_stages: int, align: int, ones: int, slots: Sequence[int],
             device: Any = None) -> Callable[..., None]:  # fmt: skip
        """A launch plan on GPU `index` with `values` packed in and the arguments at
        positions `slots` left to each call: ``plan(stream, *their values)``. Hot paths
        keep one per operand layout so a call passes only its pointers. Arguments in
        `ones` (a bitmask; never slots) are compiled in as the constant 1. `device` (the
        operands' device) holds the global scratch of kernels that ask for it."""
        from pygpukit_cuda import cubin

        arch = cubin.compute_capability(index)
        done = self.compile(arch, types, constexprs, num_warps, num_stages, align, ones)
        # `load` keeps the module loaded for the process: the plan holds only the kernel's
        # handle, which would die with the module when `fn` goes (INVALID_HANDLE at launch)
        fn = cubin.load(index, done.cubin, done.name, done.shared)
        offsets = done.offsets()
        runtime = [i for i in range(len(types)) if not ones >> i & 1]
        where = {i: k for k, i in enumerate(runtime)}  # our argument -> kernel parameter
        code = {i: "P" if types[i].startswith("*") else done.param_codes[k]
                for i, k in where.items()}  # fmt: skip
        template = bytearray(struct.calcsize(done.arg_format))
        for i in runtime:  # fixed values, written as a C cast would
            write_param(template, offsets[where[i]], code[i], values[i])
        plan_slots = [(offsets[where[i]], code[i]) for i in slots]
        grid3 = grid + (1,) * (3 - len(grid))
        if not done.global_scratch:
            return fn.plan(grid3, (32 * done.num_warps,), bytes(template), plan_slots)
        # Triton's first trailing parameter: the global scratch, one slice per program
        plan_slots.append((offsets[len(runtime)], "P"))
        plan = fn.plan(grid3, (32 * done.num_warps,), bytes(template), plan_slots)
        scratch = Scratch(device, done.global_scratch * grid3[0] * grid3[1] * grid3[2],
                          done.scratch_align)  # fmt: skip
        return lambda s, *slot_values: plan(s, *slot_values, scratch.pointer(s))

    def compile(self, arch: int, types: tuple[str, ...], constexprs: tuple[tuple[str, Any], ...],
                num_warps: int, num_stages: int, align: int,
                ones: int = 0) -> Compiled:  # fmt: skip
        """The compiled kernel for sm_`arch` (no GPU needed). Bit k of `align` marks the
        k-th runtime argument as a multiple of 16 (a pointer's address or an integer), of
        `ones` as the integer 1, compiled in as a constant (as Triton's JIT specialises)."""
        given = dict(constexprs)
        signature: dict[str, str] = {}
        aligned, k = [], 0
        for i, name in enumerate(self.arg_names):
            if name in given:
                signature[name] = "constexpr"
                continue
            if ones >> k & 1:
                signature[name] = "constexpr"
                given[name] = 1
            else:
                signature[name] = types[k]
                if align >> k & 1:
                    aligned.append(i)
            k += 1
        return compile_program(self.fn, signature, given, tuple(aligned), arch, num_warps,
                               num_stages)  # fmt: skip

    def _interpret(self, grid: tuple[int, ...], args: Sequence[Any],
                   constexprs: tuple[tuple[str, Any], ...], num_warps: int) -> None:  # fmt: skip
        interpreter_compat.install()
        given = dict(constexprs)
        runtime = iter(TritonArray(a) if isinstance(a, GPUArray) else a for a in args)
        named = {n: given[n] if n in given else next(runtime) for n in self.arg_names}
        self.fn[grid](**named, num_warps=num_warps)
