//! The transfer engine: a priority queue of copies drained by one Rust worker thread.

use std::collections::BinaryHeap;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::job::{Completion, HostSink, Job, Status, TransferHandle, Work};
use super::staging::{StagingPool, StagingStats, DEFAULT_CACHE_LIMIT};
use crate::memory::{AsyncOps, Block, MemoryPool, PoolError};

#[derive(Debug, Default, Clone, Copy)]
pub struct EngineStats {
    pub submitted: u64,
    pub completed: u64,
    pub failed: u64,
    pub bytes_to_device: u64,
    pub bytes_to_host: u64,
    pub queued: u64,
    /// Whether copies go through the device's async slot (streams + events).
    pub async_copies: bool,
    pub staging: StagingStats,
}

struct Queue {
    heap: BinaryHeap<Job>,
    paused: bool,
    shutdown: bool,
    /// Jobs submitted and not yet finished (queued or running).
    outstanding: u64,
    next_seq: u64,
    finished: u64,
    stats: EngineStats,
}

struct Shared {
    queue: Mutex<Queue>,
    /// Signals the worker (work or state change) and `synchronize` waiters (progress).
    cv: Condvar,
    pool: Arc<MemoryPool>,
    staging: Arc<StagingPool>,
}

/// Queues host<->device copies for one pool and runs them on a worker thread.
pub struct TransferEngine {
    shared: Arc<Shared>,
}

impl TransferEngine {
    /// Start an engine (and its worker) for `pool`. A paused engine queues but runs nothing.
    pub fn new(pool: Arc<MemoryPool>, paused: bool) -> std::io::Result<Self> {
        let staging = StagingPool::new(pool.clone(), DEFAULT_CACHE_LIMIT);
        let async_copies = pool.allocator().async_ops().is_some();
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                heap: BinaryHeap::new(),
                paused,
                shutdown: false,
                outstanding: 0,
                next_seq: 0,
                finished: 0,
                stats: EngineStats { async_copies, ..EngineStats::default() },
            }),
            cv: Condvar::new(),
            pool,
            staging,
        });
        let worker = shared.clone();
        std::thread::Builder::new()
            .name("pygpukit-transfer".into())
            .spawn(move || run_worker(&worker))?;
        Ok(TransferEngine { shared })
    }

    pub fn pool(&self) -> &Arc<MemoryPool> {
        &self.shared.pool
    }

    /// Queue a copy of `data` into `block` at `offset`. `data` is staged at once, so the
    /// caller may reuse it as soon as this returns.
    pub fn copy_to_device(
        &self,
        block: Arc<Block>,
        data: &[u8],
        offset: u64,
        priority: i32,
    ) -> Result<TransferHandle, PoolError> {
        self.check(&block, offset, data.len() as u64)?;
        let mut staged = self
            .shared
            .staging
            .get(data.len())
            .ok_or(PoolError::HostOutOfMemory(data.len() as u64))?;
        staged.as_mut_slice().copy_from_slice(data);
        Ok(self.submit(block, offset, priority, data.len() as u64, Work::ToDevice { staged }))
    }

    /// Queue a copy of `sink.len()` bytes of `block` at `offset` into `sink`.
    pub fn copy_to_host(
        &self,
        block: Arc<Block>,
        sink: Box<dyn HostSink>,
        offset: u64,
        priority: i32,
    ) -> Result<TransferHandle, PoolError> {
        let n = sink.len() as u64;
        self.check(&block, offset, n)?;
        Ok(self.submit(block, offset, priority, n, Work::ToHost { sink }))
    }

    fn check(&self, block: &Block, offset: u64, len: u64) -> Result<(), PoolError> {
        if !Arc::ptr_eq(block.pool(), &self.shared.pool) {
            return Err(PoolError::WrongPool);
        }
        if block.is_freed() {
            return Err(PoolError::Freed);
        }
        match offset.checked_add(len) {
            Some(end) if end <= block.nbytes() => Ok(()),
            _ => Err(PoolError::InvalidSize(format!(
                "range {offset}..{offset}+{len} is outside the block of {} bytes",
                block.nbytes()
            ))),
        }
    }

    fn submit(&self, block: Arc<Block>, offset: u64, priority: i32, n: u64, work: Work) -> TransferHandle {
        let completion = Completion::new();
        let mut q = self.shared.queue.lock();
        let seq = q.next_seq;
        q.next_seq += 1;
        q.outstanding += 1;
        q.stats.submitted += 1;
        q.heap.push(Job { priority, seq, block, offset, work, completion: completion.clone() });
        drop(q);
        self.shared.cv.notify_all();
        TransferHandle { completion, seq, priority, nbytes: n }
    }

    /// Stop starting new jobs (the running one finishes). For tests and for batching.
    pub fn pause(&self) {
        self.shared.queue.lock().paused = true;
    }

    pub fn resume(&self) {
        self.shared.queue.lock().paused = false;
        self.shared.cv.notify_all();
    }

    /// Wait until no job is queued or running (jobs submitted meanwhile count too). `false` if the timeout passed first.
    pub fn synchronize(&self, timeout: Option<std::time::Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut q = self.shared.queue.lock();
        while q.outstanding > 0 {
            match deadline {
                Some(d) => {
                    if self.shared.cv.wait_until(&mut q, d).timed_out() {
                        return q.outstanding == 0;
                    }
                }
                None => self.shared.cv.wait(&mut q),
            }
        }
        true
    }

    pub fn pending(&self) -> u64 {
        self.shared.queue.lock().heap.len() as u64
    }

    pub fn stats(&self) -> EngineStats {
        let q = self.shared.queue.lock();
        let mut s = q.stats;
        s.queued = q.heap.len() as u64;
        s.staging = self.shared.staging.stats();
        s
    }
}

impl Drop for TransferEngine {
    fn drop(&mut self) {
        // No join: the worker may need the GIL to drop a Python buffer, and whoever drops
        // the engine may hold it. The worker fails what is left and exits on its own.
        self.shared.queue.lock().shutdown = true;
        self.shared.cv.notify_all();
    }
}

/// Streams and events of the async slot, created on the worker thread.
struct AsyncState {
    ops: AsyncOps,
    ctx: *mut c_void,
    stream: *mut c_void,
    event: *mut c_void,
}

impl AsyncState {
    fn new(pool: &MemoryPool) -> Option<Self> {
        let ops = pool.allocator().async_ops()?;
        let ctx = pool.allocator().ctx();
        let (mut stream, mut event) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: functions of a validated table, used as documented in allocator_table.
        unsafe {
            if (ops.stream_create)(ctx, &mut stream) != 0 {
                return None;
            }
            if (ops.event_create)(ctx, &mut event) != 0 {
                (ops.stream_destroy)(ctx, stream);
                return None;
            }
        }
        Some(AsyncState { ops, ctx, stream, event })
    }

    /// Record the event on the copy stream and wait for it.
    fn complete(&self, rc: i32) -> Result<(), String> {
        // SAFETY: as in `new`.
        let rc = if rc != 0 { rc } else { unsafe { (self.ops.event_record)(self.ctx, self.event, self.stream) } };
        let rc = if rc != 0 { rc } else { unsafe { (self.ops.event_synchronize)(self.ctx, self.event) } };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("async copy failed with device error {rc}"))
        }
    }
}

impl Drop for AsyncState {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe {
            (self.ops.event_destroy)(self.ctx, self.event);
            (self.ops.stream_destroy)(self.ctx, self.stream);
        }
    }
}

fn run_worker(shared: &Shared) {
    let async_state = AsyncState::new(&shared.pool);
    loop {
        let job = {
            let mut q = shared.queue.lock();
            loop {
                if q.shutdown {
                    break None;
                }
                if !q.paused {
                    if let Some(job) = q.heap.pop() {
                        break Some(job);
                    }
                }
                shared.cv.wait(&mut q);
            }
        };
        let Some(mut job) = job else { break };
        job.completion.set(Status::Running);
        let start = Instant::now();
        let result = execute(shared, async_state.as_ref(), &mut job);
        let elapsed_ns = start.elapsed().as_nanos() as u64;
        finish(shared, job, result, elapsed_ns);
    }
    // Shut down: fail whatever is still queued.
    let left: Vec<Job> = std::mem::take(&mut shared.queue.lock().heap).into_vec();
    for job in left {
        finish(shared, job, Err("the transfer engine was shut down".into()), 0);
    }
}

fn finish(shared: &Shared, job: Job, result: Result<(), String>, elapsed_ns: u64) {
    let (to_device, nbytes) = match &job.work {
        Work::ToDevice { staged } => (true, staged.len() as u64),
        Work::ToHost { sink } => (false, sink.len() as u64),
    };
    let Job { work, block, completion, .. } = job;
    // Dropped before the waiter wakes, so a returned `wait()` means the caller's buffer is
    // released; outside every lock, as a Python sink takes the GIL to release its buffer.
    drop((work, block));
    let mut q = shared.queue.lock();
    let order = q.finished;
    q.finished += 1;
    q.outstanding -= 1;
    match result {
        Ok(()) => {
            q.stats.completed += 1;
            if to_device {
                q.stats.bytes_to_device += nbytes;
            } else {
                q.stats.bytes_to_host += nbytes;
            }
            completion.set(Status::Done { elapsed_ns, order });
        }
        Err(message) => {
            q.stats.failed += 1;
            completion.set(Status::Failed { message, order });
        }
    }
    drop(q);
    shared.cv.notify_all();
}

fn execute(shared: &Shared, async_state: Option<&AsyncState>, job: &mut Job) -> Result<(), String> {
    let pool = &shared.pool;
    let block = &job.block;
    match (&mut job.work, async_state) {
        (Work::ToDevice { staged }, None) => {
            pool.write(block, job.offset, staged.as_slice()).map_err(|e| e.to_string())
        }
        (Work::ToHost { sink }, None) => {
            let mut staged = shared
                .staging
                .get(sink.len())
                .ok_or_else(|| PoolError::HostOutOfMemory(sink.len() as u64).to_string())?;
            pool.read(block, job.offset, staged.as_mut_slice()).map_err(|e| e.to_string())?;
            sink.write(staged.as_slice());
            Ok(())
        }
        (work, Some(a)) => {
            // Pinned for the copy so the block cannot move while the stream reads or writes it.
            let ptr = pool.pin(block).map_err(|e| e.to_string())? + job.offset;
            let result = match work {
                Work::ToDevice { staged } => {
                    // SAFETY: `ptr..+len` lies in the pinned block; `staged` outlives the sync.
                    let rc = unsafe {
                        (a.ops.copy_h2d_async)(a.ctx, ptr, staged.as_ptr().cast(), staged.len() as u64, a.stream)
                    };
                    a.complete(rc)
                }
                Work::ToHost { sink } => match shared.staging.get(sink.len()) {
                    None => Err(PoolError::HostOutOfMemory(sink.len() as u64).to_string()),
                    Some(staged) => {
                        // SAFETY: as above.
                        let rc = unsafe {
                            (a.ops.copy_d2h_async)(a.ctx, staged.as_ptr().cast(), ptr, staged.len() as u64, a.stream)
                        };
                        a.complete(rc).map(|()| sink.write(staged.as_slice()))
                    }
                },
            };
            pool.unpin(block);
            result
        }
    }
}
