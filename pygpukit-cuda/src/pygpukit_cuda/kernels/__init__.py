"""CUDA C source generators for the built-in kernels (copy, fill, elementwise, where)."""
