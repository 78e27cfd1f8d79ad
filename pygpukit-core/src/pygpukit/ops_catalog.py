"""The kernel calling conventions: what a provider's kernel for each op receives.

This is the plugin author's reference. A kernel registered with
``KernelProvider.kernel(op)`` is called by the op layer exactly as its op's
`Convention` says; ``KernelProvider.add`` checks the kernel's signature against it and
raises TypeError naming the op and the expected call when they cannot match.

Rules every kernel can rely on:

- Array arguments are `GPUArray`s already on the provider's device type, with the dtypes
  the kernel declared (``dtypes=`` at registration); the dispatcher never moves data to
  find a kernel.
- ``out`` is a new array of the shape and dtype the op layer computed, contiguous unless
  the family says otherwise; the kernel fills every element of it. Kernels are not called
  for empty outputs, except where a family says so.
- Inputs may be strided views (transposes, slices, broadcast views with zero strides):
  read them through their strides (the CPU backend's ``views.view(x)`` gives a NumPy
  view of a CPU array).
- Binary elementwise kernels also receive Python scalars (``x + 1.0`` calls
  ``kernel(x, 1.0, out, compute)``): either operand may be a bool, int or float.
- A unary or binary elementwise kernel of a provider that gates its own launches
  (``KernelProvider(gates_launches=True)``) may carry a ``fresh`` attribute: a callable
  taking the operands alone (``fresh(x)``, ``fresh(x1, x2)``; arrays of one dtype, shape
  and device, no parameters) that returns the new result array, or ``NotImplemented`` to
  have the op layer allocate ``out`` and call the kernel as usual. The CUDA provider's is
  native: the whole op in one call. The public functions (``gp.add``, ``a + b``) try the
  learned ``fresh`` before any dispatch through their op's *front door*; a native extension
  may put in its own with ``pygpukit.backend.use_front_doors``: a callable ``door(x)`` or
  ``door(x1, x2)`` that calls the learned ``fresh`` for exact GPUArrays of one dtype on the
  learned device object while the learned settings snapshot is in force, and otherwise
  returns ``NotImplemented`` (the reference is ``_python_door`` in
  ``pygpukit._ops.elementwise``).
- An FFT kernel (``fft_c2c``, ``fft_r2c``, ``fft_c2r``) of such a provider may carry a
  ``fresh_for`` attribute: after a call whose input went straight to the kernel, the op
  layer asks ``fresh_for(x, out, *args)`` once and keeps the answer under that call's key
  (function, x's shape, strides and dtype, arguments). The answer is None (no repeat) or a
  callable ``run(y)`` that does the whole call again for an array `y` of x's layout and
  returns a new array like `out`; it may return ``NotImplemented`` (the op layer then calls
  the kernel as usual) or None (never ask it again: the op layer decides afresh).
- Errors: raise NumPy's exception types (ValueError, IndexError, ...) naming the problem;
  the op layer has already checked shapes, dtypes and devices.

Each family's module docstring, ``pygpukit._ops.<family>``, adds the details (the dtype
rules, NaN ordering, what a reduction's ``axes`` hold); `convention(op).details` is that
text.

Adding an op (a plugin's own): call `register_op` before adding its kernels, give users
a public function that runs it through ``pygpukit.backend.kernel``, and hand
`register_op` a NumPy reference so the conformance suite and ``gp.explain`` cover it::

    def muladd(x, y, z, *, backend=None):          # the plugin's public function
        fn = pygpukit.backend.kernel("muladd", x, y, z, backend=backend)
        out = pygpukit.backend.empty(x.shape, x.dtype, x.device)
        fn(x, y, z, out)
        return out

    def inputs(rng, dtype):                        # random host inputs of a DataType
        shape = tuple(int(n) for n in rng.integers(0, 5, size=rng.integers(0, 3)))
        return tuple(pygpukit.testing.random_numpy(rng, shape, dtype) for _ in range(3))

    register_op(
        "muladd", "(x, y, z, out)", summary="x * y + z",
        reference=lambda x, y, z: x.astype("f8") * y + z,   # NumPy, any precision
        inputs=inputs, dtypes=("float32", "float64"), function=muladd,
    )

``pytest --pygpukit-backend=NAME --pyargs pygpukit.testing.conformance`` then tests
``muladd`` for provider NAME (when it has a kernel for it) in every listed dtype the kernel
declares: the public function (or, without one, the kernel that
``pygpukit.backend.kernel`` picks) on contiguous, strided and offset inputs, and the
kernel called directly into poisoned outputs, each against the reference cast to the
output dtype (the tested dtype unless ``out_dtype=``) within ``rtol``/``atol`` (default:
the ``elementwise`` row of `pygpukit.testing.tolerance`). A direct call passes the inputs
in the signature's order with the output at the parameter named ``out``; an op whose
signature has no ``out`` is tested through its public call only.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._dtypes import DataType, as_dtype
from ._ops.elementwise import BINARY, UNARY

#: builds one call's random host inputs of a dtype: (generator, dtype) -> host arrays
InputsFn = Callable[[np.random.Generator, DataType], tuple[np.ndarray, ...]]


@dataclass(frozen=True)
class OpCheck:
    """How the conformance suite tests a plugin's op (the `register_op` arguments)."""

    #: the NumPy reference: the host inputs in, the expected output out
    reference: Callable[..., np.ndarray]
    #: random host inputs of a dtype: called several times per dtype for varied shapes
    inputs: InputsFn
    #: the dtypes to test (each only where the kernel declares it)
    dtypes: tuple[DataType, ...]
    #: the plugin's public function ``(*arrays, backend=NAME) -> GPUArray``, or None to
    #: call the kernel that ``pygpukit.backend.kernel`` picks
    function: Callable[..., Any] | None = None
    #: the output's dtype (None: the tested dtype)
    out_dtype: DataType | None = None
    rtol: float | None = None
    atol: float | None = None


@dataclass(frozen=True)
class Convention:
    """How the op layer calls a kernel for `op`."""

    op: str
    family: str
    #: the call, as a Python signature: ``(x1, x2, out, compute)``
    signature: str
    #: what the kernel returns ("None": it writes into its output arguments)
    returns: str = "None"
    summary: str = ""
    #: a plugin op's conformance test (`register_op`'s ``reference=``), else None
    check: OpCheck | None = field(default=None, compare=False)

    @property
    def positional(self) -> tuple[str, ...]:
        """The arguments passed by position, in order."""
        return _parse(self.signature)[0]

    @property
    def keywords(self) -> tuple[str, ...]:
        """The arguments passed by keyword (``**params``: op-specific keywords may come)."""
        return _parse(self.signature)[1]

    @property
    def details(self) -> str:
        """The family module's docstring: the dtype rules and corner cases."""
        if self.family == "plugin":
            return self.summary
        module = importlib.import_module(f"pygpukit._ops.{self.family}")
        return inspect.getdoc(module) or ""

    def __str__(self) -> str:
        return f"{self.op}{self.signature} -> {self.returns}  [{self.family}] {self.summary}"


def _parse(signature: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(positional names, keyword-only names) of a signature such as ``(x, out, *, eps)``;
    parsed, never executed. SyntaxError for anything but a plain parameter list."""
    tree = ast.parse(f"def kernel{signature}: pass")
    fn = tree.body[0]
    if len(tree.body) != 1 or not isinstance(fn, ast.FunctionDef) or fn.returns is not None:
        raise SyntaxError(f"not a parameter list: {signature!r}")
    args = fn.args
    if args.defaults or (args.kw_defaults and any(d is not None for d in args.kw_defaults)):
        raise SyntaxError(f"a convention has no default values: {signature!r}")
    positional = tuple(a.arg for a in (*args.posonlyargs, *args.args))
    return positional, tuple(a.arg for a in args.kwonlyargs)


_REDUCTION = "(x, out, axes)"
_TABLE: list[tuple[str, str, str, str, str]] = [
    # (op, family, signature, returns, summary)
    ("where", "elementwise", "(condition, x1, x2, out)", "None",
     "all three broadcast to out's shape; x1/x2 may be Python scalars"),
    ("copy", "copying", "(src, out)", "None", "same shape; converts src.dtype to out.dtype"),
    ("fill", "copying", "(out, value)", "None", "a Python scalar that fits out.dtype"),
    ("arange", "creation", "(out, start, step)", "None", "out[i] = start + i * step"),
    ("linspace", "creation", "(out, start, stop, step, endpoint)", "None", "evenly spaced"),
    ("eye", "creation", "(out, k)", "None", "ones on diagonal k, zeros elsewhere"),
    ("tril", "creation", "(x, out, k)", "None", "zeros above diagonal k"),
    ("triu", "creation", "(x, out, k)", "None", "zeros below diagonal k"),
    ("take", "indexing", "(x, indices, out, axis)", "None", "out = x taken along axis"),
    ("take_along_axis", "indexing", "(x, indices, out, axis)", "None", "as numpy's"),
    ("gather", "indexing", "(x, indices, axes, out)", "None", "x[i0, i1, ...] for arrays"),
    ("scatter", "indexing", "(x, indices, axes, values)", "None", "x[i0, i1, ...] = values"),
    ("mask_select", "indexing", "(x, mask)", "GPUArray", "x[mask] (allocates: data sized)"),
    ("mask_assign", "indexing", "(x, mask, value)", "None", "x[mask] = value"),
    ("matmul", "linalg", "(x1, x2, out, allow_tf32)", "None", "(..., M, K) @ (..., K, N)"),
    ("concat", "manipulation", "(inputs, out, axis)", "None", "inputs already out.dtype"),
    ("roll", "manipulation", "(x, out, shifts, axes)", "None", "element i to (i + s) % n"),
    ("repeat", "manipulation", "(x, repeats, out, axis)", "None", "int or 1-D int array"),
    ("softmax", "nn", "(x, out, axis)", "None", "stable: subtract the max first"),
    ("log_softmax", "nn", "(x, out, axis)", "None", "log(softmax(x)) without log(0)"),
    ("layernorm", "nn", "(x, gamma, beta, out, eps)", "None", "over the last axis"),
    ("rmsnorm", "nn", "(x, gamma, out, eps)", "None", "x * gamma / sqrt(mean(x**2) + eps)"),
    ("sdpa_causal", "nn", "(q, k, v, out, scale)", "None", "causal attention, GQA heads"),
    ("sdpa", "nn", "(q, k, v, out, scale)", "None", "attention, no mask, GQA heads"),
    ("rope_inplace", "nn", "(q, k, cos, sin)", "None", "rotates q and k in place"),
    ("bias_add_inplace", "nn", "(x, bias)", "None", "x (..., n) += bias (n,)"),
    ("linear_bias_gelu", "nn", "(x, weight, bias, out, approximate)", "None",
     "gelu(x @ weight.T + bias)"),
    ("argmax", "searching", "(x, out, axis)", "None", "int64 keepdims out; first wins"),
    ("argmin", "searching", "(x, out, axis)", "None", "int64 keepdims out; first wins"),
    ("count_nonzero", "searching", _REDUCTION, "None", "int64 keepdims out"),
    ("nonzero", "searching", "(x,)", "tuple[GPUArray, ...]", "one int64 array per axis"),
    ("searchsorted", "searching", "(x1, x2, out, side, sorter, compute)", "None",
     "insertion points; NaN sorts last"),
    ("unique", "sets", "(x, want_indices, want_inverse, want_counts)",
     "tuple[GPUArray, GPUArray | None, GPUArray | None, GPUArray | None]",
     "sorted unique values, each NaN its own"),
    ("sort", "sorting", "(x, out, axis, descending, stable)", "None", "NaN last ascending"),
    ("argsort", "sorting", "(x, out, axis, descending, stable)", "None", "int64 indices"),
    ("sum", "statistical", _REDUCTION, "None", "keepdims out; half types sum in float32"),
    ("prod", "statistical", _REDUCTION, "None", "keepdims out"),
    ("mean", "statistical", _REDUCTION, "None", "keepdims out; NaN for no elements"),
    ("max", "statistical", _REDUCTION, "None", "keepdims out; NaN propagates"),
    ("min", "statistical", _REDUCTION, "None", "keepdims out; NaN propagates"),
    ("all", "statistical", _REDUCTION, "None", "bool keepdims out"),
    ("any", "statistical", _REDUCTION, "None", "bool keepdims out"),
    ("var", "statistical", "(x, out, axes, *, correction)", "None", "keepdims out"),
    ("std", "statistical", "(x, out, axes, *, correction)", "None", "keepdims out"),
    ("cumulative_sum", "statistical", "(x, out, axis, include_initial)", "None", "scan"),
    ("cumulative_prod", "statistical", "(x, out, axis, include_initial)", "None", "scan"),
    ("real", "complex_parts", "(x, out)", "None", "complex x; out of the real dtype"),
    ("imag", "complex_parts", "(x, out)", "None", "complex x; out of the real dtype"),
    ("conj", "complex_parts", "(x, out)", "None", "complex x; out of x's dtype"),
    ("angle", "complex_parts", "(x, out)", "None", "complex x; radians, real out"),
    ("fft_c2c", "fourier", "(x, out, axes, forward, scale)", "None",
     "unnormalised complex transform over axes, times scale"),
    ("fft_r2c", "fourier", "(x, out, axes, scale)", "None",
     "real to half-spectrum complex, times scale"),
    ("fft_c2r", "fourier", "(x, out, axes, scale)", "None",
     "half-spectrum complex to real (the inverse of fft_r2c), times scale"),
    ("cholesky", "factorizations", "(x, out, upper)", "None", "L (or U = L^H) of x = L L^H"),
    ("solve", "factorizations", "(x1, x2, out)", "None", "X of x1 @ X = x2, (..., n, k)"),
    ("inv", "factorizations", "(x, out)", "None", "the inverse of each matrix"),
    ("det", "factorizations", "(x, out)", "None", "the determinant, out (...)"),
    ("slogdet", "factorizations", "(x, sign, logabsdet)", "None", "sign and log|det|"),
    ("eigh", "factorizations", "(x, eigenvalues, eigenvectors)", "None",
     "Hermitian eigenpairs, ascending; lower triangle read"),
    ("eigvalsh", "factorizations", "(x, eigenvalues)", "None", "Hermitian eigenvalues"),
    ("qr", "factorizations", "(x, q, r, mode)", "None", "x = q r, mode reduced or complete"),
    ("svd", "factorizations", "(x, u, s, vh, full_matrices)", "None",
     "x = u diag(s) vh, s descending"),
    ("svdvals", "factorizations", "(x, s)", "None", "singular values, descending"),
    ("embedding", "decode", "(weight, ids, out)", "None", "rows of weight at device ids"),
    ("rope_at_inplace", "decode", "(q, k, cos, sin, positions)", "None",
     "rope with table rows at device positions (B, S)"),
    ("kv_cache_write", "decode", "(cache, new, slots)", "None",
     "cache[b, :, slots[b] + s] = new[b, :, s]"),
    ("kv_cache_write_pair", "decode", "(keys, values, new_keys, new_values, slots)", "None",
     "kv_cache_write of keys and values at once"),
    ("sdpa_causal_cache", "decode", "(q, k, v, starts, ends, out, scale, window)", "None",
     "causal attention over cache slots [starts[b], ends[b]), optional sliding window"),
    ("gather_matmul", "decode", "(x, weights, ids, out)", "None",
     "out[t] = weights[ids[t]] @ x[t] (per-row expert matrices)"),
    ("silu_mul", "decode", "(gate, up, out)", "None", "silu(gate) * up in one pass"),
    ("add_rmsnorm", "decode", "(x, y, gamma, total, out, eps)", "None",
     "total = x + y; out = rmsnorm(total) in one pass"),
    ("linear_rows", "decode", "(x, weight, out)", "None",
     "x (M <= 8, K) @ weight (N, K).T: decode-step matrix-vector products"),
    ("rope_kv_cache_write", "decode",
     "(q, k, v, cos, sin, positions, keys, values, slots)", "None",
     "rope_at_inplace then kv_cache_write_pair of the rotated k and v, in one pass"),
    ("rope_cache_attention", "decode",
     "(q, k, v, cos, sin, positions, keys, values, slots, starts, ends, out, scale, window)",
     "None", "rope_kv_cache_write, then sdpa_causal_cache of the rotated q, in one pass"),
    ("decode_advance", "decode", "(tokens, chosen, positions, slots, ends)", "None",
     "tokens = chosen; positions, slots, ends += 1 (a decode step's end)"),
]  # fmt: skip

_conventions: dict[str, Convention] = {
    **{op: Convention(op, "elementwise", "(x, out, **params)", "None", f"elementwise {doc}")
       for op, (_, doc) in UNARY.items()},
    **{op: Convention(op, "elementwise", "(x1, x2, out, compute)", "None", f"elementwise {doc}")
       for op, (_, doc) in BINARY.items()},
    **{row[0]: Convention(*row) for row in _TABLE},
}  # fmt: skip


def conventions() -> dict[str, Convention]:
    """Every op the dispatcher knows (the core's and those plugins registered), by name."""
    return dict(_conventions)


def convention(op: str) -> Convention:
    """The convention of `op`; ValueError naming the closest ops for an unknown name."""
    found = _conventions.get(op)
    if found is None:
        close = difflib.get_close_matches(op, sorted(_conventions), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(
            f"unknown op {op!r}{hint} (a plugin adds an op with "
            "pygpukit.ops_catalog.register_op first)"
        )
    return found


def is_known(op: str) -> bool:
    return op in _conventions


_FLOATS = ("float16", "bfloat16", "float32", "float64")


def register_op(
    op: str,
    signature: str,
    *,
    returns: str = "None",
    summary: str = "",
    reference: Callable[..., np.ndarray] | None = None,
    inputs: InputsFn | None = None,
    dtypes: tuple[str | DataType, ...] = _FLOATS,
    function: Callable[..., Any] | None = None,
    out_dtype: str | DataType | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """Add an op of a plugin's own to the dispatcher: kernels for `op` are then checked
    against `signature` (e.g. ``"(x, out, alpha)"``) and load without a warning.

    With `reference` (a NumPy function of the host inputs) and `inputs` (``(rng, dtype
    name) -> tuple of host arrays``) the conformance suite tests every provider's kernel
    for `op` in `dtypes`, through `function` when given; the module docstring has the
    details. Registering the same op again with the same signature is allowed (the
    latest test wins); a different one, or a core op's name, raises ValueError.
    """
    if not isinstance(op, str) or not op.isidentifier():
        raise ValueError(f"register_op: an op name is an identifier, got {op!r}")
    if (reference is None) != (inputs is None):
        raise ValueError(f"register_op({op!r}): reference= and inputs= go together")
    for name, fn in (("reference", reference), ("inputs", inputs), ("function", function)):
        if fn is not None and not callable(fn):
            raise TypeError(f"register_op({op!r}): {name}= must be callable, got {fn!r}")
    check = None
    if reference is not None and inputs is not None:
        # unknown dtype names fail here, naming the op, not later in the suite
        try:
            tested = tuple(as_dtype(d) for d in dtypes)
            result = None if out_dtype is None else as_dtype(out_dtype)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"register_op({op!r}): {exc}") from None
        check = OpCheck(reference, inputs, tested, function, result, rtol, atol)
    new = Convention(op, "plugin", signature, returns, summary, check)
    try:
        new.positional  # noqa: B018 - parses the signature
    except SyntaxError as exc:
        raise ValueError(f"register_op: {signature!r} is not a signature: {exc.msg}") from None
    old = _conventions.get(op)
    if old is not None and (old.family != "plugin" or old.signature != signature):
        raise ValueError(
            f"register_op: op {op!r} already exists with the convention {old.op}"
            f"{old.signature} [{old.family}]"
        )
    _conventions[op] = new


def check_kernel(op: str, fn: Callable[..., Any], provider: str = "?") -> None:
    """Raise TypeError if `fn` cannot be called as the convention of `op` says.

    Ops with no convention (unknown names) are not checked here: the registry warns about
    them when the plugin loads.
    """
    conv = _conventions.get(op)
    if conv is None:
        return
    if not callable(fn):
        raise TypeError(f"provider {provider!r}: the kernel for {op!r} is not callable: {fn!r}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: cannot check
        return
    try:
        sig.bind(*conv.positional, **dict.fromkeys(conv.keywords))
    except TypeError as exc:
        raise TypeError(
            f"provider {provider!r}: the kernel for {op!r} has the signature {sig} but is "
            f"called as {op}{conv.signature} ({exc}); see pygpukit.ops_catalog"
        ) from None


__all__ = [
    "Convention", "InputsFn", "OpCheck", "check_kernel", "convention", "conventions",
    "is_known", "register_op",
]  # fmt: skip
