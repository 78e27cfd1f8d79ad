"""The benchmark's cases, family by family: inputs, the pygpukit call, each peer's call,
the reference it is checked against, and how much work one call does.

A case's peer calls take the library module first (`xp` is numpy or cupy, which share
NumPy's API; torch has its own), so one function serves NumPy and CuPy alike.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .results import Work

#: families in the order they run
FAMILIES = (
    "elementwise", "reductions", "matmul", "attention", "tiny", "compile", "transfer", "launch",
    "fft", "llm", "qos", "triton", "audio",
)  # fmt: skip
#: families run only when named: a minute or more of the GPU each (llm, qos), or an
#: optional plugin (triton: pygpukit-triton)
OPT_IN = ("llm", "qos", "triton")


@dataclass
class Sizes:
    """Problem sizes; `--sizes key=v1,v2` replaces one list."""

    #: element counts for the 1-D elementwise ops and reductions (each size gets add,
    #: multiply and sum; the other ops run at the largest)
    vector: list[int]
    #: rows of the (rows x cols) softmax / layernorm / rmsnorm inputs
    rows: list[int]
    #: the last axis of those inputs, and of the broadcast add
    cols: list[int]
    #: square matrix sides
    matmul: list[int]
    #: back-to-back calls per sample in the tiny-op family
    calls: list[int]
    #: float32 element counts of the host<->device copies (2^18 = 1 MiB, 2^28 = 1 GiB)
    transfer: list[int] = field(default_factory=lambda: [2**18, 2**24, 2**28])
    #: sequence lengths of the causal attention cases (16 heads, one batch)
    seq: list[int] = field(default_factory=lambda: [2048])
    #: decode batch sizes of the llm family (batch 1 runs every model shape, larger
    #: batches the TinyLlama shape), and the size in MB of its checkpoint-load case
    llm_batch: list[int] = field(default_factory=lambda: [1, 8, 32])
    llm_load_mb: list[int] = field(default_factory=lambda: [2000])
    #: signal lengths in seconds of the audio family (needs pygpukit-audio)
    audio: list[int] = field(default_factory=lambda: [600])

    @classmethod
    def preset(cls, device_type: str, quick: bool) -> Sizes:
        if quick:
            sizes = cls([2**12, 2**16], [16], [4096], [64, 128], [500], [2**10, 2**16], [64])
            sizes.llm_batch, sizes.llm_load_mb = [1], [200]  # one small model, 200 MB
            sizes.audio = [10]  # ten seconds of audio
            return sizes
        if device_type == "cpu":  # NumPy's float16 matmul has no BLAS: keep it small
            return cls([2**20, 2**24], [1024], [4096], [256, 512], [5000], [2**18], [256])
        return cls([2**20, 2**28], [8192], [4096], [1024, 4096, 8192], [5000])

    def override(self, spec: str) -> None:
        key, sep, values = spec.partition("=")
        key = key.strip()
        if not sep or key not in self.__dataclass_fields__:
            raise ValueError(
                f"--sizes wants KEY=V1,V2 with KEY one of {', '.join(self.__dataclass_fields__)}"
                f"; got {spec!r}"
            )
        parsed = [parse_size(v) for v in values.split(",") if v.strip()]
        if not parsed or any(v < 1 for v in parsed):
            raise ValueError(f"--sizes {key}: give one or more positive sizes, got {values!r}")
        setattr(self, key, parsed)


def parse_size(text: str) -> int:
    """'4096', '2^20', '2**20' or '1M' (2^20) / '1K' / '1G' as an int."""
    t = text.strip().replace("**", "^")
    try:
        if "^" in t:
            base, exp = t.split("^")
            return int(base) ** int(exp)
        suffix = {"K": 2**10, "M": 2**20, "G": 2**30}.get(t[-1:].upper())
        return int(t[:-1]) * suffix if suffix else int(t)
    except ValueError:
        raise ValueError(f"cannot read size {text!r} (try 4096, 2^20 or 1M)") from None


def size_label(n: int) -> str:
    """2^k for powers of two, else the number."""
    return f"2^{n.bit_length() - 1}" if n > 1 and n & (n - 1) == 0 else f"{n}"


@dataclass
class Expected:
    """The reference result, and how to compare: 'close' (max |got - want| / max |want|,
    NaN and shape checked), 'argmax' (the index must point at a maximum)."""

    value: np.ndarray
    how: str = "close"
    #: compare only these rows of the result (large matrix products)
    rows: np.ndarray | None = None


@dataclass
class ArrayCase:
    family: str
    op: str
    case: str
    #: the dispatch op name `gp.explain` is asked about
    dispatch: str
    #: host inputs: (kind, shape) pairs; kind is "normal" or "uniform" (in [0, 1))
    inputs: list[tuple[str, tuple[int, ...]]]
    #: storage dtype of each input on every library
    dtypes: list[str]
    ours: Callable[..., Any]
    #: peer name -> call; "numpy" also serves "cupy" unless "cupy" is given
    peers: dict[str, Callable[..., Any]]
    reference: Callable[..., Expected]
    tol: float
    work: Work
    #: gp.config.use settings for our call (and the TF32 flag peers get)
    settings: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    @property
    def key(self) -> str:
        return f"{self.family}/{self.op}/{self.case}"

    def peer_call(self, peer: str) -> Callable[..., Any] | None:
        if peer in self.peers:
            return self.peers[peer]
        if peer == "cupy":
            return self.peers.get("numpy")
        return None

    def nbytes_per_set(self) -> int:
        itemsize = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "complex64": 8,
                    "complex128": 16}  # fmt: skip
        return sum(
            int(np.prod(shape)) * itemsize[d]
            for (_, shape), d in zip(self.inputs, self.dtypes, strict=True)
        )


@dataclass
class SpecialCase:
    """A case with its own runner (tiny-op overhead, compile times)."""

    family: str
    op: str
    case: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.family}/{self.op}/{self.case}"


Case = ArrayCase | SpecialCase


# -- references (float64 on the host, from the inputs as stored) ------------------------
def _f64(*xs: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(x, dtype=np.float64) for x in xs]


def _softmax(xp: Any, x: Any) -> Any:
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layernorm(xp: Any, x: Any, g: Any, b: Any, eps: Any = 1e-5) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / xp.sqrt(var + eps) * g + b


def _rmsnorm(xp: Any, x: Any, g: Any, eps: Any = 1e-5) -> Any:
    return x / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * g


def _torch_rmsnorm(t: Any, x: Any, g: Any) -> Any:
    fn = getattr(t.nn.functional, "rms_norm", None)
    if fn is None:  # torch < 2.4: the composed form a user would write
        return x * t.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * g
    return fn(x, (x.shape[-1],), g, 1e-5)


def _gp() -> Any:
    import pygpukit

    return pygpukit


# -- families ---------------------------------------------------------------------------
def elementwise(sizes: Sizes) -> list[Case]:
    gp = _gp()
    cases: list[Case] = []
    for n in sizes.vector:
        label = f"{size_label(n)} float32"
        for op, np_fn, t_name in (("add", np.add, "add"), ("multiply", np.multiply, "mul")):
            cases.append(ArrayCase(
                "elementwise", op, label, op, [("normal", (n,)), ("normal", (n,))],
                ["float32", "float32"], getattr(gp, op),
                {"numpy": lambda xp, a, b, f=np_fn.__name__: getattr(xp, f)(a, b),
                 "torch": lambda t, a, b, f=t_name: getattr(t, f)(a, b)},
                lambda a, b, f=np_fn: Expected(f(*_f64(a, b))),
                1e-6, Work("GB/s", 3 * 4 * n),
            ))  # fmt: skip
    n = max(sizes.vector)
    cols = max(sizes.cols)
    rows = max(1, n // cols)
    cases += [
        ArrayCase(
            "elementwise", "exp", f"{size_label(n)} float32", "exp", [("normal", (n,))],
            ["float32"], gp.exp, {"numpy": lambda xp, a: xp.exp(a), "torch": lambda t, a: t.exp(a)},
            lambda a: Expected(np.exp(*_f64(a))), 1e-6, Work("GB/s", 2 * 4 * n),
        ),
        ArrayCase(
            "elementwise", "add (broadcast)", f"({rows},{cols}) + ({cols},) float32", "add",
            [("normal", (rows, cols)), ("normal", (cols,))], ["float32", "float32"], gp.add,
            {"numpy": lambda xp, a, b: a + b, "torch": lambda t, a, b: t.add(a, b)},
            lambda a, b: Expected(np.add(*_f64(a, b))), 1e-6,
            Work("GB/s", 4 * (2 * rows * cols + cols)),
        ),
        ArrayCase(
            "elementwise", "astype", f"{size_label(n)} float32->bfloat16", "copy",
            [("normal", (n,))], ["float32"], lambda x: gp.astype(x, "bfloat16"),
            {"numpy": lambda xp, a: a.astype(_bf16()), "torch": lambda t, a: a.to(t.bfloat16)},
            lambda a: Expected(np.asarray(a).astype(_bf16()).astype(np.float64)), 0.0,
            Work("GB/s", (4 + 2) * n), note="exact: round to nearest even, as NumPy/ml_dtypes",
        ),
        ArrayCase(
            "elementwise", "astype", f"{size_label(n)} float32->float16", "copy",
            [("normal", (n,))], ["float32"], lambda x: gp.astype(x, "float16"),
            {"numpy": lambda xp, a: a.astype(xp.float16), "torch": lambda t, a: a.to(t.float16)},
            lambda a: Expected(np.asarray(a).astype(np.float16).astype(np.float64)), 0.0,
            Work("GB/s", (4 + 2) * n), note="exact: round to nearest even",
        ),
    ]  # fmt: skip
    return cases


def _bf16() -> Any:
    import ml_dtypes

    return ml_dtypes.bfloat16


def reductions(sizes: Sizes) -> list[Case]:
    gp = _gp()
    cases: list[Case] = []
    for n in sizes.vector:
        cases.append(ArrayCase(
            "reductions", "sum", f"{size_label(n)} float32", "sum", [("uniform", (n,))],
            ["float32"], gp.sum, {"numpy": lambda xp, a: a.sum(), "torch": lambda t, a: t.sum(a)},
            lambda a: Expected(np.asarray(np.sum(a, dtype=np.float64))), 1e-5,
            Work("GB/s", 4 * n), note="inputs in [0, 1): the sum is far from zero",
        ))  # fmt: skip
    n = max(sizes.vector)
    label = f"{size_label(n)} float32"
    cases += [
        ArrayCase(
            "reductions", "max", label, "max", [("normal", (n,))], ["float32"], gp.max,
            {"numpy": lambda xp, a: a.max(), "torch": lambda t, a: t.max(a)},
            lambda a: Expected(np.asarray(np.max(a), dtype=np.float64)), 0.0, Work("GB/s", 4 * n),
        ),
        ArrayCase(
            "reductions", "argmax", label, "argmax", [("normal", (n,))], ["float32"], gp.argmax,
            {"numpy": lambda xp, a: a.argmax(), "torch": lambda t, a: t.argmax(a)},
            lambda a: Expected(np.asarray(a), how="argmax"), 0.0, Work("GB/s", 4 * n),
        ),
    ]  # fmt: skip
    cols = max(sizes.cols)
    for rows in sizes.rows:
        shape = (rows, cols)
        label = f"{rows}x{cols} float32"
        cells = rows * cols
        cases += [
            ArrayCase(
                "reductions", "softmax", f"{label}, last axis", "softmax",
                [("normal", shape)], ["float32"], lambda x: gp.softmax(x, axis=-1),
                {"numpy": _softmax, "torch": lambda t, x: t.softmax(x, dim=-1)},
                lambda x: Expected(_softmax(np, *_f64(x))), 1e-5, Work("GB/s", 2 * 4 * cells),
                note="numpy/cupy: composed from exp, max, sum",
            ),
            ArrayCase(
                "reductions", "layernorm", label, "layernorm",
                [("normal", shape), ("normal", (cols,)), ("normal", (cols,))],
                ["float32"] * 3, lambda x, g, b: gp.layernorm(x, g, b, 1e-5),
                {"numpy": _layernorm,
                 "torch": lambda t, x, g, b: t.nn.functional.layer_norm(x, (cols,), g, b, 1e-5)},
                lambda x, g, b: Expected(_layernorm(np, *_f64(x, g, b))), 1e-5,
                Work("GB/s", 4 * (2 * cells + 2 * cols)),
                note="numpy/cupy: composed from mean, var, sqrt",
            ),
            ArrayCase(
                "reductions", "rmsnorm", label, "rmsnorm", [("normal", shape), ("normal", (cols,))],
                ["float32"] * 2, lambda x, g: gp.rmsnorm(x, g, 1e-5),
                {"numpy": _rmsnorm, "torch": _torch_rmsnorm},
                lambda x, g: Expected(_rmsnorm(np, *_f64(x, g))), 1e-5,
                Work("GB/s", 4 * (2 * cells + cols)), note="numpy/cupy: composed",
            ),
        ]  # fmt: skip
        cases += half_row_ops(gp, rows, cols)
    return cases


#: tolerance of the half-precision row ops (outputs rounded to the storage dtype)
HALF_TOL = {"bfloat16": 1e-2, "float16": 2e-3}


def half_row_ops(gp: Any, rows: int, cols: int) -> list[Case]:
    """softmax, layernorm and rmsnorm with every array in bfloat16 or float16 (LLM
    activations), checked against float64 on the stored inputs."""
    shape, cells = (rows, cols), rows * cols
    out: list[Case] = []
    for d in ("bfloat16", "float16"):
        label, tol = f"{rows}x{cols} {d}", HALF_TOL[d]
        out += [
            ArrayCase(
                "reductions", "softmax", f"{label}, last axis", "softmax", [("normal", shape)],
                [d], lambda x: gp.softmax(x, axis=-1),
                {"numpy": _softmax, "torch": lambda t, x: t.softmax(x, dim=-1)},
                lambda x: Expected(_softmax(np, *_f64(x))), tol, Work("GB/s", 2 * 2 * cells),
            ),
            ArrayCase(
                "reductions", "layernorm", label, "layernorm",
                [("normal", shape), ("normal", (cols,)), ("normal", (cols,))], [d] * 3,
                lambda x, g, b: gp.layernorm(x, g, b, 1e-5),
                {"numpy": _layernorm,
                 "torch": lambda t, x, g, b: t.nn.functional.layer_norm(x, (cols,), g, b, 1e-5)},
                lambda x, g, b: Expected(_layernorm(np, *_f64(x, g, b))), tol,
                Work("GB/s", 2 * (2 * cells + 2 * cols)),
            ),
            ArrayCase(
                "reductions", "rmsnorm", label, "rmsnorm", [("normal", shape), ("normal", (cols,))],
                [d] * 2, lambda x, g: gp.rmsnorm(x, g, 1e-5),
                {"numpy": _rmsnorm, "torch": _torch_rmsnorm},
                lambda x, g: Expected(_rmsnorm(np, *_f64(x, g))), tol,
                Work("GB/s", 2 * (2 * cells + cols)),
            ),
        ]  # fmt: skip
    return out


#: matmul modes: (label, storage dtype, allow_tf32, tolerance)
MATMUL_MODES = (
    ("float32", "float32", False, 3e-5),  # TF32 lands near 3e-4: ten times over
    ("tf32", "float32", True, 3e-3),
    ("float16", "float16", False, 3e-3),
    ("bfloat16", "bfloat16", False, 1e-2),
)
#: rows of a large product compared with the float64 reference (all rows up to this)
CHECK_ROWS = 256


def _matmul_reference(a: np.ndarray, b: np.ndarray) -> Expected:
    m = a.shape[0]
    rows = None
    if m > CHECK_ROWS:
        rows = np.sort(np.random.default_rng(m).choice(m, CHECK_ROWS, replace=False))
        a = a[rows]
    a64, b64 = _f64(a, b)
    return Expected(a64 @ b64, rows=rows)


def matmul(sizes: Sizes) -> list[Case]:
    gp = _gp()
    cases: list[Case] = []
    for n in sizes.matmul:
        for mode, dtype, tf32, tol in MATMUL_MODES:
            note = f"checked on {CHECK_ROWS} random rows" if n > CHECK_ROWS else ""
            cases.append(ArrayCase(
                "matmul", "matmul", f"{n}x{n}x{n} {mode}", "matmul",
                [("normal", (n, n)), ("normal", (n, n))], [dtype, dtype], gp.matmul,
                {"numpy": lambda xp, a, b: xp.matmul(a, b),
                 "torch": lambda t, a, b: t.matmul(a, b)},
                _matmul_reference, tol, Work("TFLOP/s", 2.0 * n**3),
                settings={"allow_tf32": tf32}, note=note,
            ))  # fmt: skip
    return cases


def _attention(xp: Any, q: Any, k: Any, v: Any) -> Any:
    """Causal attention composed of matmul and softmax (what a NumPy or CuPy user writes)."""
    sq, skv = q.shape[-2], k.shape[-2]
    s = xp.matmul(q, xp.swapaxes(k, -1, -2)) * (1.0 / float(q.shape[-1]) ** 0.5)
    hidden = xp.arange(skv)[None, :] > xp.arange(sq)[:, None] + (skv - sq)
    return xp.matmul(_softmax(xp, xp.where(hidden, -xp.inf, s)), v)


def _torch_attention(t: Any, q: Any, k: Any, v: Any) -> Any:
    return t.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def attention(sizes: Sizes) -> list[Case]:
    """Causal self-attention, one batch of 16 heads, head_dim 64 and 128 (bf16, fp16)."""
    gp = _gp()
    cases: list[Case] = []
    for seq in sizes.seq:
        for d in (64, 128):
            for dtype, tol in (("bfloat16", 2e-2), ("float16", 5e-3)):
                shape = (1, 16, seq, d)
                cases.append(ArrayCase(
                    "attention", "sdpa_causal", f"16 heads x {seq} x {d} {dtype}",
                    "sdpa_causal", [("normal", shape)] * 3, [dtype] * 3, gp.sdpa_causal,
                    {"numpy": _attention, "torch": _torch_attention},
                    lambda q, k, v: Expected(_attention(np, *_f64(q, k, v))), tol,
                    Work("TFLOP/s", 2.0 * 16 * seq * seq * d),  # two products, half masked
                ))  # fmt: skip
    return cases


def tiny(sizes: Sizes) -> list[Case]:
    return [
        SpecialCase("tiny", "add", f"1 element float32, {calls} calls", "tiny", {"calls": calls})
        for calls in sizes.calls
    ]


def compile_family(sizes: Sizes) -> list[Case]:
    return [
        SpecialCase("compile", "jit", "cold NVRTC compile (fresh cache)", "compile_cold"),
        SpecialCase("compile", "jit", "cached kernel, first launch, new process", "compile_cached"),
    ]


def transfer(sizes: Sizes) -> list[Case]:
    cases: list[Case] = []
    for n in sizes.transfer:
        label = f"{_bytes_label(4 * n)} float32"
        for op, direction in (("host->device", "h2d"), ("device->host", "d2h")):
            params = {"n": n, "direction": direction}
            cases.append(SpecialCase("transfer", op, label, "transfer", params))
    return cases


def _bytes_label(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


BUILDERS: dict[str, Callable[[Sizes], list[Case]]] = {
    "elementwise": elementwise,
    "reductions": reductions,
    "matmul": matmul,
    "attention": attention,
    "tiny": tiny,
    "compile": compile_family,
    "transfer": transfer,
    "launch": lambda sizes: _launch_cases(sizes.calls),
    "qos": lambda sizes: _qos_cases(),
    "llm": lambda sizes: _llm_cases(sizes),
    "fft": lambda sizes: _fft_cases(sizes),
    "triton": lambda sizes: triton_family(sizes),
    "audio": lambda sizes: _audio_cases(sizes),
}


def triton_family(sizes: Sizes) -> list[Case]:
    """The row ops and causal attention again with the per-op dispatch setting naming the
    `triton` provider (PyTorch in the same rows; the reductions and attention families give
    the cuda provider's), and the tiny add through each of the two providers (host time)."""
    import dataclasses

    from .._plugins import registry

    if "triton" not in registry().providers:
        return []  # pygpukit-triton is not installed
    picked = [c for c in reductions(sizes) + attention(sizes)
              if isinstance(c, ArrayCase) and c.op in ("softmax", "layernorm", "rmsnorm",
                                                       "sdpa_causal")]  # fmt: skip
    out: list[Case] = [
        dataclasses.replace(c, family="triton", case=f"{c.case} [triton]",
                            settings={**c.settings, "dispatch": {c.dispatch: "triton"}})
        for c in picked
    ]  # fmt: skip
    for calls in sizes.calls:
        for backend in ("cuda", "triton"):
            out.append(SpecialCase("triton", "add", f"1 element float32, {calls} calls, "
                                   f"backend={backend}", "tiny",
                                   {"calls": calls, "backend": backend}))  # fmt: skip
    return out


def _qos_cases() -> list[Case]:
    from .qos import cases  # its own module: it imports the runner

    return list(cases())


def _llm_cases(sizes: Sizes) -> list[Case]:
    from .llm_decode import cases  # its own module: it imports the runner

    return list(cases(sizes.llm_batch, sizes.llm_load_mb, quick=sizes.llm_batch == [1]))


def _fft_cases(sizes: Sizes) -> list[Case]:
    from .fourier_cases import cases  # its own module: it builds on this one's classes

    return cases(sizes)


def _audio_cases(sizes: Sizes) -> list[Case]:
    try:
        from pygpukit.audio.bench import cases  # the audio package brings its own family
    except ImportError as exc:
        print(f"audio family skipped: pygpukit-audio is not installed ({exc})", file=sys.stderr)
        return []
    return list(cases(sizes))


def _launch_cases(calls: list[int]) -> list[Case]:
    from .launch_path import cases  # its own module: it imports the runner

    return list(cases(calls))


def build(families: list[str], sizes: Sizes) -> list[Case]:
    out: list[Case] = []
    for fam in families:
        out += BUILDERS[fam](sizes)
    return out
