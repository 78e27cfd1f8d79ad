"""Test plugin that fails on purpose; see `import_error` and `hook_error`."""
