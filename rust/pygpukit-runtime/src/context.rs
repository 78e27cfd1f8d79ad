//! The task context of the current thread.
//!
//! The scheduler installs a context on the worker thread that runs a task; the memory pool
//! charges every allocation made on that thread to it, and the launch gate paces the
//! task's kernel launches through it. Code outside a task sees no context and pays nothing.

use std::cell::RefCell;
use std::sync::Arc;

/// What a running task exposes to the pool and to the launch gate.
pub trait TaskContext: Send + Sync {
    /// Charge `bytes` of new allocation to the task. An `Err` carries the message of the
    /// `MemoryError` the allocating call must raise (the task went past its limit).
    fn charge(&self, bytes: u64) -> Result<(), String>;
    /// Give back `bytes` previously charged (the block was freed).
    fn release(&self, bytes: u64);
    /// Called before each kernel launch of the task; may block (without the GIL) to pace it.
    fn before_launch(&self);
    /// Called after the launch returns, with how long it kept the device busy, in nanoseconds.
    fn after_launch(&self, busy_ns: u64);
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<dyn TaskContext>>> = const { RefCell::new(None) };
}

/// The context of the task running on this thread, if any.
pub fn current() -> Option<Arc<dyn TaskContext>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Install `ctx` on this thread until the returned guard is dropped.
pub fn enter(ctx: Arc<dyn TaskContext>) -> ContextGuard {
    let previous = CURRENT.with(|c| c.borrow_mut().replace(ctx));
    ContextGuard { previous }
}

/// Restores the previous context when dropped.
pub struct ContextGuard {
    previous: Option<Arc<dyn TaskContext>>,
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}
