"""Mix Triton and the built-in kernels in one model step, chosen per op.

    python pygpukit-triton/examples/triton_per_op.py                     # on a GPU
    TRITON_INTERPRET=1 python pygpukit-triton/examples/triton_per_op.py  # CPU, Triton's interpreter

RMSNorm and SwiGLU run as Triton kernels, the matrix products on the default provider;
`gp.explain` shows who serves what and why.
"""

from __future__ import annotations

import numpy as np
import pygpukit as gp
from pygpukit.triton import from_gpuarray, kernels, triton_available


def main() -> None:
    if not triton_available():
        print("Triton is not usable here:", gp.triton.status()[1])
        return
    device = "cpu" if gp.triton.interpret() else "cuda"
    rng = np.random.default_rng(0)
    hidden, inner = 64, 172
    x = gp.asarray(rng.standard_normal((4, hidden)).astype(np.float32), device=device)
    norm_w = gp.asarray(rng.uniform(0.5, 1.5, hidden).astype(np.float32), device=device)
    w_gate = gp.asarray(rng.standard_normal((hidden, inner)).astype(np.float32) / 8, device=device)
    w_up = gp.asarray(rng.standard_normal((hidden, inner)).astype(np.float32) / 8, device=device)

    # the seeds' style: write into an array you made
    h = gp.empty(x.shape, dtype="float32", device=device)
    kernels.rmsnorm(from_gpuarray(x), from_gpuarray(norm_w), from_gpuarray(h), eps=1e-5)

    # the dispatcher's style: pick the provider per op for a block of code
    with gp.config.use(dispatch={"rmsnorm": "triton", "swiglu": "triton"}):
        h2 = gp.rmsnorm(x, norm_w, 1e-5)
        y = gp.triton.swiglu(gp.matmul(h2, w_gate), gp.matmul(h2, w_up))
        print(gp.explain("rmsnorm", x, norm_w))
        print(gp.explain("matmul", h2, w_gate))

    # check against NumPy
    xn = x.to_numpy().astype(np.float64)
    hn = xn / np.sqrt((xn**2).mean(-1, keepdims=True) + 1e-5) * norm_w.to_numpy()
    g, u = hn @ w_gate.to_numpy(), hn @ w_up.to_numpy()
    want = g / (1 + np.exp(-g)) * u
    print("rmsnorm matches:", np.allclose(h.to_numpy(), hn, rtol=1e-4, atol=1e-5))
    print("step matches:", np.allclose(y.to_numpy(), want, rtol=1e-3, atol=1e-4))


if __name__ == "__main__":
    main()
