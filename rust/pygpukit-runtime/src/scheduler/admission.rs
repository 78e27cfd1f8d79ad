//! Admission control of one resource pool: admit, queue (with position) or reject (with reason).
//!
//! Accounting invariant: `reserved_memory + borrowed_memory <= total_memory` at all times, where
//! reserved is the sum of admitted requests and borrowed is memory in use beyond them (bursts,
//! best effort, allocations that outlive their task). Guaranteed reservations therefore never
//! overlap anything else. Queued tasks are admitted strictly in queue order (priority, then
//! deadline, then FIFO) without backfilling, so a large request cannot be starved by small ones.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use super::error::SchedError;
use super::qos::{QosClass, TaskSpec, PPM};

/// The outcome of one admission decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Admit,
    /// 1-based place in the admission queue (1 = admitted next).
    Queue { position: usize },
    Reject { reason: String },
}

#[derive(Debug, Clone)]
struct Admitted {
    class: QosClass,
    memory: u64,
    bandwidth_ppm: u32,
}

#[derive(Debug, Clone)]
struct Waiting<K> {
    key: K,
    spec: TaskSpec,
    seq: u64,
}

impl<K> Waiting<K> {
    /// Smaller sorts first: higher priority, then earlier deadline, then older.
    fn rank(&self) -> (i64, u64, u64) {
        (-(self.spec.priority as i64), self.spec.deadline_ns.unwrap_or(u64::MAX), self.seq)
    }
}

/// Counters and current accounting of a pool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolStats {
    pub total_memory: u64,
    pub reserved_memory: u64,
    pub guaranteed_memory: u64,
    pub borrowed_memory: u64,
    pub available_memory: u64,
    pub total_bandwidth_ppm: u32,
    pub reserved_bandwidth_ppm: u32,
    pub admitted_tasks: usize,
    pub queued_tasks: usize,
    pub admitted_total: u64,
    pub queued_total: u64,
    pub rejected_total: u64,
    pub completed_total: u64,
}

/// Admission state of one pool (the whole device, or one partition).
#[derive(Debug, Clone)]
pub struct Evaluator<K: Eq + Hash + Clone> {
    total_memory: u64,
    total_bandwidth_ppm: u32,
    reserved_memory: u64,
    guaranteed_memory: u64,
    reserved_bandwidth_ppm: u32,
    borrowed_memory: u64,
    admitted: HashMap<K, Admitted>,
    queue: Vec<Waiting<K>>,
    /// Keys in `queue`, for O(1) duplicate checks.
    queued: HashSet<K>,
    max_queue: usize,
    seq: u64,
    admitted_total: u64,
    queued_total: u64,
    rejected_total: u64,
    completed_total: u64,
}

pub const DEFAULT_MAX_QUEUE: usize = 4096;

impl<K: Eq + Hash + Clone> Evaluator<K> {
    pub fn new(total_memory: u64, total_bandwidth_ppm: u32) -> Self {
        Evaluator {
            total_memory,
            total_bandwidth_ppm: total_bandwidth_ppm.min(PPM),
            reserved_memory: 0,
            guaranteed_memory: 0,
            reserved_bandwidth_ppm: 0,
            borrowed_memory: 0,
            admitted: HashMap::new(),
            queue: Vec::new(),
            queued: HashSet::new(),
            max_queue: DEFAULT_MAX_QUEUE,
            seq: 0,
            admitted_total: 0,
            queued_total: 0,
            rejected_total: 0,
            completed_total: 0,
        }
    }

    pub fn set_max_queue(&mut self, max_queue: usize) {
        self.max_queue = max_queue;
    }

    /// Decide on a new task; an admit reserves its request, a queue keeps it until `drain`.
    pub fn evaluate(&mut self, key: K, spec: &TaskSpec) -> Result<Decision, SchedError> {
        if self.admitted.contains_key(&key) || self.queued.contains(&key) {
            return Err(SchedError::Invalid("a task with this id is already admitted or queued".into()));
        }
        spec.validate()?;
        let decision = self.decide(&key, spec);
        match &decision {
            Decision::Admit => self.admitted_total += 1,
            Decision::Queue { .. } => self.queued_total += 1,
            Decision::Reject { .. } => self.rejected_total += 1,
        }
        Ok(decision)
    }

    fn decide(&mut self, key: &K, spec: &TaskSpec) -> Decision {
        let reject = |reason: String| Decision::Reject { reason };
        if spec.class == QosClass::BestEffort {
            // Best effort never waits: it runs on what is left right now or is refused.
            if !self.queue.is_empty() {
                return reject(format!(
                    "best-effort task refused under pressure: {} reserved task(s) are queued",
                    self.queue.len()
                ));
            }
            if self.available_memory() == 0 {
                return reject(format!(
                    "best-effort task refused: no leftover memory ({} of {} bytes reserved, {} borrowed)",
                    self.reserved_memory, self.total_memory, self.borrowed_memory
                ));
            }
            if self.reserved_bandwidth_ppm >= self.total_bandwidth_ppm {
                return reject("best-effort task refused: no leftover bandwidth".into());
            }
            self.reserve(key.clone(), spec);
            return Decision::Admit;
        }
        if spec.memory_request > self.total_memory {
            return reject(format!(
                "memory request of {} bytes exceeds the pool's total of {} bytes",
                spec.memory_request, self.total_memory
            ));
        }
        if spec.bandwidth_ppm > self.total_bandwidth_ppm {
            return reject(format!(
                "bandwidth share {:.6} exceeds the pool's total of {:.6}",
                spec.bandwidth_ppm as f64 / PPM as f64,
                self.total_bandwidth_ppm as f64 / PPM as f64
            ));
        }
        let seq = self.seq;
        self.seq += 1;
        let waiting = Waiting { key: key.clone(), spec: spec.clone(), seq };
        let ahead = self.queue.partition_point(|w| w.rank() < waiting.rank());
        if ahead == 0 && self.fits(spec) {
            self.reserve(key.clone(), spec);
            return Decision::Admit;
        }
        if self.queue.len() >= self.max_queue {
            return reject(format!("admission queue is full ({} tasks)", self.queue.len()));
        }
        self.queued.insert(key.clone());
        self.queue.insert(ahead, waiting);
        Decision::Queue { position: ahead + 1 }
    }

    fn fits(&self, spec: &TaskSpec) -> bool {
        let memory_ok = self
            .reserved_memory
            .checked_add(self.borrowed_memory)
            .and_then(|m| m.checked_add(spec.memory_request))
            .is_some_and(|m| m <= self.total_memory);
        memory_ok && self.reserved_bandwidth_ppm + spec.bandwidth_ppm <= self.total_bandwidth_ppm
    }

    fn reserve(&mut self, key: K, spec: &TaskSpec) {
        let entry = Admitted {
            class: spec.class,
            memory: spec.memory_request,
            bandwidth_ppm: spec.reserved_bandwidth_ppm(),
        };
        self.reserved_memory += entry.memory;
        if entry.class == QosClass::Guaranteed {
            self.guaranteed_memory += entry.memory;
        }
        self.reserved_bandwidth_ppm += entry.bandwidth_ppm;
        self.admitted.insert(key, entry);
    }

    /// Admit queued tasks from the head while they fit; returns them in admission order.
    pub fn drain(&mut self) -> Vec<K> {
        let mut admitted = Vec::new();
        while let Some(head) = self.queue.first() {
            if !self.fits(&head.spec) {
                break;
            }
            let head = self.queue.remove(0);
            self.queued.remove(&head.key);
            self.reserve(head.key.clone(), &head.spec);
            self.admitted_total += 1;
            admitted.push(head.key);
        }
        admitted
    }

    /// Free a task's reservation (or drop it from the queue). `residual` bytes of its
    /// reservation are still allocated and become borrowed memory until `unborrow`ed.
    /// Returns the tasks admitted from the queue as a consequence.
    pub fn release(&mut self, key: &K, residual: u64) -> Result<Vec<K>, SchedError> {
        if let Some(entry) = self.admitted.remove(key) {
            self.reserved_memory -= entry.memory;
            if entry.class == QosClass::Guaranteed {
                self.guaranteed_memory -= entry.memory;
            }
            self.reserved_bandwidth_ppm -= entry.bandwidth_ppm;
            self.borrowed_memory += residual.min(entry.memory);
        } else if let Some(i) = self.queue.iter().position(|w| &w.key == key) {
            self.queue.remove(i);
            self.queued.remove(key);
        } else {
            return Err(SchedError::NotFound("no admitted or queued task with this id".into()));
        }
        Ok(self.drain())
    }

    /// `release` that also counts the task as completed.
    pub fn complete(&mut self, key: &K, residual: u64) -> Result<Vec<K>, SchedError> {
        let was_admitted = self.admitted.contains_key(key);
        let out = self.release(key, residual)?;
        if was_admitted {
            self.completed_total += 1;
        }
        Ok(out)
    }

    /// Take `bytes` of unreserved memory (a burst, or best-effort use); `Err` gives what is free.
    pub fn borrow(&mut self, bytes: u64) -> Result<(), u64> {
        let available = self.available_memory();
        if bytes > available {
            return Err(available);
        }
        self.borrowed_memory += bytes;
        Ok(())
    }

    /// Give back borrowed memory; returns tasks admitted from the queue as a consequence.
    pub fn unborrow(&mut self, bytes: u64) -> Vec<K> {
        self.borrowed_memory -= bytes.min(self.borrowed_memory);
        self.drain()
    }

    /// Change the pool's totals (partitions carving from the device). Fails without change if
    /// current reservations would no longer fit.
    pub fn resize(&mut self, total_memory: u64, total_bandwidth_ppm: u32) -> Result<Vec<K>, SchedError> {
        if self.reserved_memory + self.borrowed_memory > total_memory
            || self.reserved_bandwidth_ppm > total_bandwidth_ppm
        {
            return Err(SchedError::Invalid(format!(
                "pool is using {} bytes and {:.6} bandwidth; cannot shrink it to {} bytes and {:.6}",
                self.reserved_memory + self.borrowed_memory,
                self.reserved_bandwidth_ppm as f64 / PPM as f64,
                total_memory,
                total_bandwidth_ppm as f64 / PPM as f64
            )));
        }
        self.total_memory = total_memory;
        self.total_bandwidth_ppm = total_bandwidth_ppm.min(PPM);
        Ok(self.drain())
    }

    pub fn available_memory(&self) -> u64 {
        self.total_memory.saturating_sub(self.reserved_memory + self.borrowed_memory)
    }

    pub fn total_memory(&self) -> u64 {
        self.total_memory
    }

    pub fn total_bandwidth_ppm(&self) -> u32 {
        self.total_bandwidth_ppm
    }

    pub fn is_admitted(&self, key: &K) -> bool {
        self.admitted.contains_key(key)
    }

    /// 1-based queue position of a waiting task.
    pub fn queue_position(&self, key: &K) -> Option<usize> {
        if !self.queued.contains(key) {
            return None;
        }
        self.queue.iter().position(|w| &w.key == key).map(|i| i + 1)
    }

    pub fn queued_keys(&self) -> Vec<K> {
        self.queue.iter().map(|w| w.key.clone()).collect()
    }

    pub fn is_idle(&self) -> bool {
        self.admitted.is_empty() && self.queue.is_empty()
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            total_memory: self.total_memory,
            reserved_memory: self.reserved_memory,
            guaranteed_memory: self.guaranteed_memory,
            borrowed_memory: self.borrowed_memory,
            available_memory: self.available_memory(),
            total_bandwidth_ppm: self.total_bandwidth_ppm,
            reserved_bandwidth_ppm: self.reserved_bandwidth_ppm,
            admitted_tasks: self.admitted.len(),
            queued_tasks: self.queue.len(),
            admitted_total: self.admitted_total,
            queued_total: self.queued_total,
            rejected_total: self.rejected_total,
            completed_total: self.completed_total,
        }
    }
}
