//! See the crate docs: the `memory` part of the runtime.
