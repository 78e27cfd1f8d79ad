//! See the crate docs: the `dispatch` part of the runtime.
