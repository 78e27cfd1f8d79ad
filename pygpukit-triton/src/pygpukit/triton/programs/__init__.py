"""The Triton programs (``@triton.jit`` functions) behind the provider's kernels."""
