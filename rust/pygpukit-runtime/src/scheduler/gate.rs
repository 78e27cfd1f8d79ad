//! The launch gate seen from the thread running a task: which task (if any) this thread
//! runs, so the op dispatcher can pace launches and the pool can charge allocations.

use std::cell::RefCell;
use std::sync::Arc;

use super::task::Task;
use crate::context::{self, ContextGuard, TaskContext};

thread_local! {
    static CURRENT_TASK: RefCell<Option<Arc<Task>>> = const { RefCell::new(None) };
}

/// The scheduler task running on this thread (cheap when there is none).
pub fn current_task() -> Option<Arc<Task>> {
    CURRENT_TASK.with(|c| c.borrow().clone())
}

/// Install `task` on this thread, for the gate and as the pool's `TaskContext`, until dropped.
pub fn enter(task: Arc<Task>) -> TaskGuard {
    let previous = CURRENT_TASK.with(|c| c.borrow_mut().replace(task.clone()));
    let context = context::enter(task as Arc<dyn TaskContext>);
    TaskGuard { previous, _context: context }
}

pub struct TaskGuard {
    previous: Option<Arc<Task>>,
    _context: ContextGuard,
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT_TASK.with(|c| *c.borrow_mut() = previous);
    }
}
