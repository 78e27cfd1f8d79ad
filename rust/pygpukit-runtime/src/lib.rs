//! PyGPUkit's runtime core: pure Rust, no Python. The bindings crate wraps it.
