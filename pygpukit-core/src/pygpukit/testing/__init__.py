"""Test helpers for PyGPUkit and its backends (a pytest plugin)."""
