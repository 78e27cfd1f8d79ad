//! See the crate docs: the `scheduler` part of the runtime.
