//! Plain snapshots of task, partition and scheduler state, for the bindings to turn into dicts.

use std::hash::Hash;

use super::admission::PoolStats;
use super::partition::Partition;
use super::qos::QosClass;
use super::task::{TaskId, TaskState};

#[derive(Debug, Clone)]
pub struct TaskStats {
    pub id: TaskId,
    pub name: String,
    pub state: TaskState,
    pub class: QosClass,
    pub partition: Option<String>,
    pub priority: i32,
    pub submitted_ns: u64,
    pub admitted_ns: Option<u64>,
    pub started_ns: Option<u64>,
    pub finished_ns: Option<u64>,
    /// From submission to start (or to the end, if it never started; or to now).
    pub wait_ns: u64,
    pub run_ns: Option<u64>,
    pub memory_request: u64,
    pub memory_limit: u64,
    pub memory_used: u64,
    pub memory_peak: u64,
    pub bandwidth_ppm: u32,
    pub launches: u64,
    /// Device busy time granted to the task by the arbiter.
    pub busy_ns: u64,
    /// Device time of its finished launches, measured with events.
    pub gpu_ns: u64,
    /// Its launches on the device not yet seen to finish.
    pub queued_launches: usize,
    pub throttle_events: u64,
    /// Time its launches waited at the gate before their grant: total and longest.
    pub gate_wait_ns: u64,
    pub gate_wait_max_ns: u64,
    pub queue_position: Option<usize>,
    pub cancel_requested: bool,
    pub deadline_ns: Option<u64>,
    pub deadline_missed: bool,
}

#[derive(Debug, Clone)]
pub struct PartitionInfo {
    pub id: String,
    pub name: String,
    pub memory_quota: u64,
    pub compute_ppm: u32,
    pub priority_band: i32,
    pub pool: PoolStats,
}

impl PartitionInfo {
    pub fn of<K: Eq + Hash + Clone>(p: &Partition<K>) -> Self {
        PartitionInfo {
            id: p.id.clone(),
            name: p.name.clone(),
            memory_quota: p.memory_quota,
            compute_ppm: p.compute_ppm,
            priority_band: p.priority_band,
            pool: p.pool.stats(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct SchedulerStats {
    pub workers: usize,
    pub running: usize,
    pub pending: usize,
    pub queued: usize,
    pub submitted: u64,
    pub rejected: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Totals over the default pool and every partition.
    pub device: PoolStats,
    pub default_pool: PoolStats,
    pub partitions: Vec<PartitionInfo>,
    pub shut_down: bool,
}
