//! See the crate docs: the `transfer` part of the runtime.
