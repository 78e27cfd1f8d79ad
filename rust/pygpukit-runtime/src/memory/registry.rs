//! The process-wide registry: one pool per device name.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use super::pool::{MemoryPool, PoolConfig};

static POOLS: LazyLock<Mutex<HashMap<String, Arc<MemoryPool>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The pool registered for `device`; the CPU pool ("cpu") is created on first use.
pub fn device_pool(device: &str) -> Option<Arc<MemoryPool>> {
    let mut pools = POOLS.lock();
    if let Some(p) = pools.get(device) {
        return Some(p.clone());
    }
    if device == "cpu" {
        let p = MemoryPool::for_host(PoolConfig::default());
        pools.insert(device.to_string(), p.clone());
        return Some(p);
    }
    None
}

/// Make `pool` the one pool of `device`, replacing any earlier one (which lives on while
/// its blocks do). Returns the replaced pool.
pub fn register_device_pool(device: &str, pool: Arc<MemoryPool>) -> Option<Arc<MemoryPool>> {
    POOLS.lock().insert(device.to_string(), pool)
}

/// Names of the registered devices, sorted.
pub fn registered_devices() -> Vec<String> {
    let mut names: Vec<String> = POOLS.lock().keys().cloned().collect();
    names.sort();
    names
}
