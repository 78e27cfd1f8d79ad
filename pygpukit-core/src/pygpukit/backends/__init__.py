"""Backends that ship inside pygpukit-core (found through entry points like any other)."""
