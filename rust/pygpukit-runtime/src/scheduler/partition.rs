//! Partitions: named slices of the device with a memory quota, a compute share and a priority
//! band. Quotas are carved out of the device (never over-committed); tasks outside any
//! partition share the uncarved remainder, the "default" pool.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use super::admission::{Decision, Evaluator, PoolStats};
use super::error::SchedError;
use super::qos::{share_to_ppm, TaskSpec, PPM};

/// Requested limits; `None` takes everything not yet carved out when the partition is created.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartitionLimits {
    pub memory: Option<u64>,
    pub compute_ppm: Option<u32>,
    /// Higher bands start first when tasks wait for a worker.
    pub priority_band: i32,
}

impl PartitionLimits {
    pub fn memory(mut self, bytes: u64) -> Self {
        self.memory = Some(bytes);
        self
    }

    pub fn compute(mut self, share: f64) -> Result<Self, SchedError> {
        self.compute_ppm = Some(share_to_ppm(share, "compute share")?);
        Ok(self)
    }

    pub fn priority_band(mut self, band: i32) -> Self {
        self.priority_band = band;
        self
    }
}

/// A partition's resolved limits and its pool.
#[derive(Debug, Clone)]
pub struct Partition<K: Eq + Hash + Clone> {
    pub id: String,
    pub name: String,
    pub memory_quota: u64,
    pub compute_ppm: u32,
    pub priority_band: i32,
    pub pool: Evaluator<K>,
}

/// The device's pools: the default one plus every partition.
#[derive(Debug, Clone)]
pub struct PartitionManager<K: Eq + Hash + Clone> {
    total_memory: u64,
    total_bandwidth_ppm: u32,
    default_pool: Evaluator<K>,
    partitions: BTreeMap<String, Partition<K>>,
    /// Which partition (None = default) each admitted or queued task belongs to.
    owner: HashMap<K, Option<String>>,
    max_queue: usize,
}

impl<K: Eq + Hash + Clone> PartitionManager<K> {
    pub fn new(total_memory: u64, total_bandwidth_ppm: u32) -> Self {
        PartitionManager {
            total_memory,
            total_bandwidth_ppm,
            default_pool: Evaluator::new(total_memory, total_bandwidth_ppm),
            partitions: BTreeMap::new(),
            owner: HashMap::new(),
            max_queue: super::admission::DEFAULT_MAX_QUEUE,
        }
    }

    pub fn total_memory(&self) -> u64 {
        self.total_memory
    }

    /// Queue bound for the default pool and partitions created afterwards.
    pub fn set_max_queue(&mut self, max_queue: usize) {
        self.max_queue = max_queue;
        self.default_pool.set_max_queue(max_queue);
    }

    pub fn total_bandwidth_ppm(&self) -> u32 {
        self.total_bandwidth_ppm
    }

    pub fn create_partition(&mut self, id: &str, name: &str, limits: &PartitionLimits) -> Result<&Partition<K>, SchedError> {
        if id.is_empty() || id == "default" {
            return Err(SchedError::Invalid(format!("invalid partition id {id:?}")));
        }
        if self.partitions.contains_key(id) {
            return Err(SchedError::Invalid(format!("partition {id:?} already exists")));
        }
        let free_memory = self.default_pool.total_memory();
        let free_compute = self.default_pool.total_bandwidth_ppm();
        let memory = limits.memory.unwrap_or(free_memory);
        let compute = limits.compute_ppm.unwrap_or(free_compute);
        if memory > free_memory || compute > free_compute {
            return Err(SchedError::Invalid(format!(
                "partition {id:?} asks for {memory} bytes and {:.6} compute, but only {free_memory} bytes and {:.6} are not yet partitioned",
                compute as f64 / PPM as f64,
                free_compute as f64 / PPM as f64
            )));
        }
        if memory == 0 && compute == 0 {
            return Err(SchedError::Invalid(format!("partition {id:?} would have no memory and no compute")));
        }
        // Shrinking the default pool fails (without change) when its tasks use the space.
        self.default_pool.resize(free_memory - memory, free_compute - compute)?;
        let mut pool = Evaluator::new(memory, compute);
        pool.set_max_queue(self.max_queue);
        let partition = Partition {
            id: id.to_string(),
            name: name.to_string(),
            memory_quota: memory,
            compute_ppm: compute,
            priority_band: limits.priority_band,
            pool,
        };
        Ok(self.partitions.entry(id.to_string()).or_insert(partition))
    }

    /// Remove an idle partition and give its quota back to the default pool.
    pub fn delete_partition(&mut self, id: &str) -> Result<Vec<K>, SchedError> {
        let partition = self
            .partitions
            .get(id)
            .ok_or_else(|| SchedError::NotFound(format!("no partition {id:?}")))?;
        if !partition.pool.is_idle() || partition.pool.stats().borrowed_memory > 0 {
            return Err(SchedError::Invalid(format!("partition {id:?} still has tasks or memory in use")));
        }
        let (memory, compute) = (partition.memory_quota, partition.compute_ppm);
        self.partitions.remove(id);
        let total = self.default_pool.total_memory() + memory;
        let bandwidth = self.default_pool.total_bandwidth_ppm() + compute;
        self.default_pool.resize(total, bandwidth)
    }

    pub fn partition(&self, id: &str) -> Option<&Partition<K>> {
        self.partitions.get(id)
    }

    pub fn partitions(&self) -> impl Iterator<Item = &Partition<K>> {
        self.partitions.values()
    }

    fn pool_mut(&mut self, partition: Option<&str>) -> Result<&mut Evaluator<K>, SchedError> {
        match partition {
            None => Ok(&mut self.default_pool),
            Some(id) => self
                .partitions
                .get_mut(id)
                .map(|p| &mut p.pool)
                .ok_or_else(|| SchedError::NotFound(format!("no partition {id:?}"))),
        }
    }

    pub fn pool(&self, partition: Option<&str>) -> Option<&Evaluator<K>> {
        match partition {
            None => Some(&self.default_pool),
            Some(id) => self.partitions.get(id).map(|p| &p.pool),
        }
    }

    /// Priority band of a partition (0 for the default pool).
    pub fn band(&self, partition: Option<&str>) -> i32 {
        partition.and_then(|id| self.partitions.get(id)).map_or(0, |p| p.priority_band)
    }

    /// Admission against the task's pool (the partition's quota/share, or the default pool).
    pub fn evaluate(&mut self, key: K, spec: &TaskSpec, partition: Option<&str>) -> Result<Decision, SchedError> {
        if self.owner.contains_key(&key) {
            return Err(SchedError::Invalid("a task with this id is already admitted or queued".into()));
        }
        let decision = self.pool_mut(partition)?.evaluate(key.clone(), spec)?;
        if !matches!(decision, Decision::Reject { .. }) {
            self.owner.insert(key, partition.map(str::to_string));
        }
        Ok(decision)
    }

    fn owner_of(&self, key: &K) -> Result<Option<String>, SchedError> {
        self.owner
            .get(key)
            .cloned()
            .ok_or_else(|| SchedError::NotFound("no admitted or queued task with this id".into()))
    }

    /// Free the task's reservation (see `Evaluator::release`); returns newly admitted tasks.
    pub fn release(&mut self, key: &K, residual: u64, completed: bool) -> Result<Vec<K>, SchedError> {
        let partition = self.owner_of(key)?;
        let pool = self.pool_mut(partition.as_deref())?;
        let out = if completed { pool.complete(key, residual)? } else { pool.release(key, residual)? };
        self.owner.remove(key);
        Ok(out)
    }

    pub fn borrow(&mut self, partition: Option<&str>, bytes: u64) -> Result<(), u64> {
        match self.pool_mut(partition) {
            Ok(pool) => pool.borrow(bytes),
            Err(_) => Err(0),
        }
    }

    pub fn unborrow(&mut self, partition: Option<&str>, bytes: u64) -> Vec<K> {
        self.pool_mut(partition).map(|p| p.unborrow(bytes)).unwrap_or_default()
    }

    pub fn queue_position(&self, key: &K) -> Option<usize> {
        let partition = self.owner.get(key)?;
        self.pool(partition.as_deref())?.queue_position(key)
    }

    pub fn partition_of(&self, key: &K) -> Option<Option<String>> {
        self.owner.get(key).cloned()
    }

    pub fn default_stats(&self) -> PoolStats {
        self.default_pool.stats()
    }

    /// Device-wide totals over every pool.
    pub fn device_stats(&self) -> PoolStats {
        let mut all = self.default_pool.stats();
        for p in self.partitions.values() {
            let s = p.pool.stats();
            all.total_memory += s.total_memory;
            all.reserved_memory += s.reserved_memory;
            all.guaranteed_memory += s.guaranteed_memory;
            all.borrowed_memory += s.borrowed_memory;
            all.available_memory += s.available_memory;
            all.total_bandwidth_ppm += s.total_bandwidth_ppm;
            all.reserved_bandwidth_ppm += s.reserved_bandwidth_ppm;
            all.admitted_tasks += s.admitted_tasks;
            all.queued_tasks += s.queued_tasks;
            all.admitted_total += s.admitted_total;
            all.queued_total += s.queued_total;
            all.rejected_total += s.rejected_total;
            all.completed_total += s.completed_total;
        }
        all
    }
}
