//! Stream-ordered host<->device copies, chunked through pooled pinned staging.
//!
//! Copies are enqueued on the caller's stream (0 = the legacy default stream), not on a
//! copy stream of our own: stream order then makes an upload visible to every later kernel
//! on that stream and keeps it behind every earlier one (a kernel still reading the
//! destination), with no cross-stream event, as CuPy and PyTorch users expect.
//!
//! Large copies are cut into chunks; up to `threads` host threads each take every T-th
//! chunk with two staging buffers of their own (double buffering), so one chunk's host
//! memcpy overlaps the previous chunk's DMA, and the memcpys of the threads run side by side
//! (one thread alone copies slower than PCIe moves). An upload returns once the caller's
//! memory has been read: its last DMAs may still run, their staging held in `inflight`
//! until their events complete. A download returns once the bytes are in the caller's
//! buffer, having waited only on events recorded on the caller's stream, never on the
//! whole device. Copies below the `*_direct_below` sizes skip staging (the driver's path).

use std::collections::VecDeque;
use std::ffi::c_void;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;

use super::staging::{StagingBuffer, StagingPool, StagingStats, DEFAULT_CACHE_LIMIT};
use crate::memory::{AsyncOps, Block, MemoryPool, PoolError};

/// Staging buffers per host thread: one being filled or drained while the other's DMA runs.
const DEPTH: usize = 2;

/// How copies are cut up. The defaults come from an H100 on PCIe 5 with 16 host cores
/// (scripts/transfer_probe.py): uploads up to 1 MiB are as fast through the driver's own
/// pageable path; downloads are faster staged at every size (the direct path must wait
/// for an event as well); 8 threads beat 4 by a third at 256 MiB.
#[derive(Debug, Clone, Copy)]
pub struct CopyTuning {
    /// Uploads smaller than this go straight from the caller's memory (no staging).
    pub h2d_direct_below: usize,
    /// Downloads smaller than this go straight into the caller's memory.
    pub d2h_direct_below: usize,
    pub chunk_min: usize,
    pub chunk_max: usize,
    /// Most host threads copying into or out of staging for one call.
    pub threads: usize,
    /// Each thread gets at least this much of a copy (one costs ~20 us to start).
    pub bytes_per_thread: usize,
}

impl Default for CopyTuning {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        CopyTuning {
            h2d_direct_below: 2 << 20,
            d2h_direct_below: 0,
            chunk_min: 256 << 10,
            chunk_max: 4 << 20,
            threads: cores.min(8),
            bytes_per_thread: 2 << 20,
        }
    }
}

impl CopyTuning {
    /// The chunk size for an `n`-byte copy: about 16 chunks, a power of two within bounds.
    fn chunk_for(&self, n: usize) -> usize {
        (n / 16).next_power_of_two().clamp(self.chunk_min.max(4096), self.chunk_max.max(self.chunk_min))
    }
}

/// A failed copy: the pool refused the range, or a device call (named) returned `code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyError {
    Pool(PoolError),
    Device { call: &'static str, code: i32 },
}

impl fmt::Display for CopyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CopyError::Pool(e) => write!(f, "{e}"),
            CopyError::Device { call, code } => write!(f, "{call} failed with device error {code}"),
        }
    }
}

impl From<PoolError> for CopyError {
    fn from(e: PoolError) -> Self {
        CopyError::Pool(e)
    }
}

fn rc(call: &'static str, code: i32) -> Result<(), CopyError> {
    if code == 0 {
        Ok(())
    } else {
        Err(CopyError::Device { call, code })
    }
}

/// Counters of a copier (monotonic, except `inflight`).
#[derive(Debug, Default, Clone, Copy)]
pub struct CopierStats {
    pub uploads: u64,
    pub downloads: u64,
    pub bytes_to_device: u64,
    pub bytes_to_host: u64,
    /// Copies (or chunks, when staging ran out) done without staging.
    pub direct_copies: u64,
    pub staged_chunks: u64,
    /// Staging buffers whose DMA may still run (returned once their events complete).
    pub inflight: u64,
    pub pinned_staging: bool,
    pub staging: StagingStats,
}

#[derive(Default)]
struct Counters {
    uploads: AtomicU64,
    downloads: AtomicU64,
    bytes_to_device: AtomicU64,
    bytes_to_host: AtomicU64,
    direct_copies: AtomicU64,
    staged_chunks: AtomicU64,
}

/// An event handle of the table (an address; the table's functions are thread-safe).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Ev(usize);

/// Stream-ordered copies for one pool whose table has the async slot.
pub struct StreamCopier {
    pool: Arc<MemoryPool>,
    ops: AsyncOps,
    ctx: usize,
    staging: Arc<StagingPool>,
    free_events: Mutex<Vec<Ev>>,
    inflight: Mutex<Vec<(StagingBuffer, Ev)>>,
    tuning: CopyTuning,
    counters: Counters,
}

impl StreamCopier {
    /// A copier for `pool`; an error when its device table has no async slot.
    pub fn new(pool: Arc<MemoryPool>, tuning: CopyTuning) -> Result<Self, String> {
        let ops = pool.allocator().async_ops().ok_or_else(|| {
            format!("the device table of {} has no async copy functions", pool.device())
        })?;
        let ctx = pool.allocator().ctx() as usize;
        // Room for one call's buffers plus the uploads still in flight from the last one:
        // a pinned buffer freed beyond the limit costs cuMemFreeHost, which may wait for
        // the whole device.
        let one_call = (tuning.threads.max(1) * DEPTH * staging_len(&tuning)) as u64;
        let limit = DEFAULT_CACHE_LIMIT.max(2 * one_call);
        let staging = StagingPool::new(pool.clone(), limit);
        Ok(StreamCopier {
            pool,
            ops,
            ctx,
            staging,
            free_events: Mutex::new(Vec::new()),
            inflight: Mutex::new(Vec::new()),
            tuning,
            counters: Counters::default(),
        })
    }

    pub fn pool(&self) -> &Arc<MemoryPool> {
        &self.pool
    }

    pub fn tuning(&self) -> CopyTuning {
        self.tuning
    }

    /// The device context the copies run in (its handle, for the caller's own timing).
    pub fn context_handle(&self) -> usize {
        self.ctx
    }

    fn c(&self) -> *mut c_void {
        self.ctx as *mut c_void
    }

    /// The device address of `block[offset..offset+len]`, after checking the range.
    fn device_range(&self, block: &Block, offset: u64, len: usize) -> Result<u64, CopyError> {
        if !Arc::ptr_eq(block.pool(), &self.pool) {
            return Err(PoolError::WrongPool.into());
        }
        if block.is_freed() {
            return Err(PoolError::Freed.into());
        }
        match offset.checked_add(len as u64) {
            Some(end) if end <= block.nbytes() => Ok(self.pool.ptr(block)? + offset),
            _ => Err(PoolError::InvalidSize(format!(
                "range {offset}..{offset}+{len} is outside the block of {} bytes",
                block.nbytes()
            ))
            .into()),
        }
    }

    fn event(&self) -> Result<Ev, CopyError> {
        if let Some(e) = self.free_events.lock().pop() {
            return Ok(e);
        }
        let mut e: *mut c_void = std::ptr::null_mut();
        // SAFETY: a validated table's function, called as documented.
        rc("event_create", unsafe { (self.ops.event_create)(self.c(), &mut e) })?;
        Ok(Ev(e as usize))
    }

    fn wait(&self, e: Ev) -> Result<(), CopyError> {
        // SAFETY: `e` came from `event_create` of this table.
        rc("event_synchronize", unsafe { (self.ops.event_synchronize)(self.c(), e.0 as *mut c_void) })
    }

    /// Staging back to its pool and the event to the free list (its copy has completed).
    fn recycle(&self, buf: StagingBuffer, e: Ev) {
        drop(buf);
        self.free_events.lock().push(e);
    }

    /// Release the staging of finished uploads; returns how many are still in flight.
    pub fn reap(&self) -> usize {
        let done: Vec<(StagingBuffer, Ev)> = {
            let mut list = self.inflight.lock();
            let (done, busy): (Vec<_>, Vec<_>) = std::mem::take(&mut *list).into_iter().partition(|(_, e)| {
                // SAFETY: as in `wait`. An error (a broken context) counts as finished:
                // nothing will run on that context again.
                unsafe { (self.ops.event_query)(self.c(), e.0 as *mut c_void) != 1 }
            });
            *list = busy;
            done
        };
        for (b, e) in done {
            self.recycle(b, e);
        }
        self.inflight.lock().len()
    }

    /// Wait for every upload still in flight and release its staging. Returns the first error.
    pub fn synchronize(&self) -> Result<(), CopyError> {
        let all = std::mem::take(&mut *self.inflight.lock());
        let mut first = Ok(());
        for (b, e) in all {
            let r = self.wait(e);
            if first.is_ok() {
                first = r;
            }
            self.recycle(b, e);
        }
        first
    }

    /// Wait for in-flight copies, then free the cached staging buffers; the bytes freed.
    pub fn trim(&self) -> u64 {
        let _ = self.synchronize();
        self.staging.trim()
    }

    pub fn stats(&self) -> CopierStats {
        let c = &self.counters;
        CopierStats {
            uploads: c.uploads.load(Relaxed),
            downloads: c.downloads.load(Relaxed),
            bytes_to_device: c.bytes_to_device.load(Relaxed),
            bytes_to_host: c.bytes_to_host.load(Relaxed),
            direct_copies: c.direct_copies.load(Relaxed),
            staged_chunks: c.staged_chunks.load(Relaxed),
            inflight: self.inflight.lock().len() as u64,
            pinned_staging: self.pool.allocator().has_pinned(),
            staging: self.staging.stats(),
        }
    }

    /// Copy `src` into `block` at `offset`, enqueued on `stream`. Returns once `src` has
    /// been read (it may be reused at once); later work on `stream` sees the data.
    pub fn upload(&self, block: &Block, offset: u64, src: &[u8], stream: u64) -> Result<(), CopyError> {
        let dst = self.device_range(block, offset, src.len())?;
        self.upload_to(dst, src, stream)
    }

    /// `upload` to the device address `dst`, which the caller vouches for: inside a live
    /// block of this copier's pool, the range checked (blocks held outside a `Block` handle).
    pub fn upload_to(&self, dst: u64, src: &[u8], stream: u64) -> Result<(), CopyError> {
        if src.is_empty() {
            return Ok(());
        }
        self.reap();
        let c = &self.counters;
        c.uploads.fetch_add(1, Relaxed);
        let result = if src.len() < self.tuning.h2d_direct_below {
            self.direct_h2d(dst, src, stream as *mut c_void)
        } else {
            let chunk = self.tuning.chunk_for(src.len());
            let stripes = stripes(src.chunks(chunk).enumerate(), self.threads_for(src.len(), chunk));
            self.run_stripes(stripes, |stripe| self.upload_stripe(dst, chunk, stripe, stream))
        };
        if result.is_ok() {
            c.bytes_to_device.fetch_add(src.len() as u64, Relaxed);
        }
        result
    }

    /// Fill `dst` from `block` at `offset`, ordered after earlier work on `stream`. Returns
    /// once the bytes are in `dst`.
    pub fn download(&self, block: &Block, offset: u64, dst: &mut [u8], stream: u64) -> Result<(), CopyError> {
        let src = self.device_range(block, offset, dst.len())?;
        self.download_from(src, dst, stream)
    }

    /// `download` from the device address `src`, vouched for as in `upload_to`.
    pub fn download_from(&self, src: u64, dst: &mut [u8], stream: u64) -> Result<(), CopyError> {
        if dst.is_empty() {
            return Ok(());
        }
        self.reap();
        let c = &self.counters;
        c.downloads.fetch_add(1, Relaxed);
        let n = dst.len();
        let result = if n < self.tuning.d2h_direct_below {
            self.direct_d2h(dst, src, stream as *mut c_void)
        } else {
            let chunk = self.tuning.chunk_for(n);
            let threads = self.threads_for(n, chunk);
            let stripes = stripes(dst.chunks_mut(chunk).enumerate(), threads);
            self.run_stripes(stripes, |stripe| self.download_stripe(src, chunk, stripe, stream))
        };
        if result.is_ok() {
            c.bytes_to_host.fetch_add(n as u64, Relaxed);
        }
        result
    }

    /// Threads for a staged copy: two chunks each at least, so each double-buffers, and
    /// enough bytes each to pay for starting it.
    fn threads_for(&self, n: usize, chunk: usize) -> usize {
        (n.div_ceil(chunk) / DEPTH).min(n / self.tuning.bytes_per_thread.max(1)).clamp(1, self.tuning.threads.max(1))
    }

    /// Run `work` on each stripe, the first on this thread; the first error wins.
    fn run_stripes<T: Send>(
        &self,
        mut stripes: Vec<Vec<T>>,
        work: impl Fn(Vec<T>) -> Result<(), CopyError> + Sync,
    ) -> Result<(), CopyError> {
        let first = stripes.remove(0);
        if stripes.is_empty() {
            return work(first);
        }
        std::thread::scope(|scope| {
            let work = &work;
            let handles: Vec<_> = stripes.into_iter().map(|st| scope.spawn(move || work(st))).collect();
            let mut result = work(first);
            for h in handles {
                let r = h.join().unwrap_or(Err(CopyError::Device { call: "copy thread", code: -1 }));
                if result.is_ok() {
                    result = r;
                }
            }
            result
        })
    }

    fn direct_h2d(&self, dst: u64, src: &[u8], s: *mut c_void) -> Result<(), CopyError> {
        self.counters.direct_copies.fetch_add(1, Relaxed);
        // SAFETY: `dst..+len` lies in a live block; from pageable memory the driver has
        // read `src` before returning (it stages it itself).
        rc("copy_h2d_async", unsafe {
            (self.ops.copy_h2d_async)(self.c(), dst, src.as_ptr().cast(), src.len() as u64, s)
        })
    }

    fn direct_d2h(&self, dst: &mut [u8], src: u64, s: *mut c_void) -> Result<(), CopyError> {
        self.counters.direct_copies.fetch_add(1, Relaxed);
        // SAFETY: as above. Into pinned memory the copy is fully asynchronous, so an event
        // on the stream tells when `dst` holds the bytes.
        rc("copy_d2h_async", unsafe {
            (self.ops.copy_d2h_async)(self.c(), dst.as_mut_ptr().cast(), src, dst.len() as u64, s)
        })?;
        let e = self.event()?;
        // SAFETY: as in `wait`.
        rc("event_record", unsafe { (self.ops.event_record)(self.c(), e.0 as *mut c_void, s) })?;
        let r = self.wait(e);
        self.free_events.lock().push(e);
        r
    }

    /// One thread's share of an upload: memcpy into staging, DMA, event, two buffers deep.
    fn upload_stripe(&self, dst: u64, chunk: usize, pieces: Vec<(usize, &[u8])>, stream: u64) -> Result<(), CopyError> {
        let s = stream as *mut c_void;
        let mut ring: VecDeque<(StagingBuffer, Ev)> = VecDeque::with_capacity(DEPTH);
        let mut result = Ok(());
        for (i, piece) in pieces {
            let d = dst + (i * chunk) as u64;
            let slot = if ring.len() == DEPTH {
                let (b, e) = ring.pop_front().expect("a full ring");
                if let Err(err) = self.wait(e) {
                    self.recycle(b, e);
                    result = Err(err);
                    break;
                }
                Some((b, e))
            } else {
                match self.staging.get(staging_len(&self.tuning)) {
                    Some(b) => match self.event() {
                        Ok(e) => Some((b, e)),
                        Err(err) => {
                            result = Err(err);
                            break;
                        }
                    },
                    None => None, // no pinned memory left: this chunk goes direct
                }
            };
            let Some((mut b, e)) = slot else {
                if let Err(err) = self.direct_h2d(d, piece, s) {
                    result = Err(err);
                    break;
                }
                continue;
            };
            b.as_mut_slice()[..piece.len()].copy_from_slice(piece);
            // SAFETY: `d..+len` lies in the block (checked by the caller); `b` stays alive
            // (in the ring, then `inflight`) until the event recorded after the copy completes.
            let code = unsafe { (self.ops.copy_h2d_async)(self.c(), d, b.as_ptr().cast(), piece.len() as u64, s) };
            if let Err(err) = rc("copy_h2d_async", code) {
                self.recycle(b, e); // nothing was enqueued from it
                result = Err(err);
                break;
            }
            // SAFETY: as in `wait`.
            let code = unsafe { (self.ops.event_record)(self.c(), e.0 as *mut c_void, s) };
            if let Err(err) = rc("event_record", code) {
                // The DMA may still read `b` and nothing can tell when it is done: leak it.
                std::mem::forget(b);
                result = Err(err);
                break;
            }
            self.counters.staged_chunks.fetch_add(1, Relaxed);
            ring.push_back((b, e));
        }
        self.inflight.lock().extend(ring);
        result
    }

    /// One thread's share of a download: DMA into staging, wait its event, memcpy out.
    fn download_stripe(&self, src: u64, chunk: usize, mut pieces: Vec<(usize, &mut [u8])>, stream: u64) -> Result<(), CopyError> {
        let s = stream as *mut c_void;
        let mut ring: VecDeque<(StagingBuffer, Ev, usize)> = VecDeque::with_capacity(DEPTH);
        let mut next = 0;
        let result = loop {
            // Keep up to DEPTH chunks in flight.
            let mut failed = None;
            while ring.len() < DEPTH && next < pieces.len() {
                let (i, piece) = &mut pieces[next];
                let from = src + (*i * chunk) as u64;
                next += 1;
                let Some(b) = self.staging.get(staging_len(&self.tuning)) else {
                    if let Err(err) = self.direct_d2h(piece, from, s) {
                        failed = Some(err);
                        break;
                    }
                    continue;
                };
                let e = match self.event() {
                    Ok(e) => e,
                    Err(err) => {
                        failed = Some(err);
                        break;
                    }
                };
                // SAFETY: as in `upload_stripe`; `b` is kept until its event completed.
                let code = unsafe { (self.ops.copy_d2h_async)(self.c(), b.as_ptr().cast(), from, piece.len() as u64, s) };
                if let Err(err) = rc("copy_d2h_async", code) {
                    self.recycle(b, e);
                    failed = Some(err);
                    break;
                }
                // SAFETY: as in `wait`.
                let code = unsafe { (self.ops.event_record)(self.c(), e.0 as *mut c_void, s) };
                if let Err(err) = rc("event_record", code) {
                    std::mem::forget(b); // the DMA may still write it
                    failed = Some(err);
                    break;
                }
                self.counters.staged_chunks.fetch_add(1, Relaxed);
                ring.push_back((b, e, next - 1));
            }
            if let Some(err) = failed {
                break Err(err);
            }
            let Some((b, e, k)) = ring.pop_front() else { break Ok(()) };
            if let Err(err) = self.wait(e) {
                self.recycle(b, e);
                break Err(err);
            }
            let piece = &mut pieces[k].1;
            let len = piece.len();
            piece.copy_from_slice(&b.as_slice()[..len]);
            self.recycle(b, e);
        };
        // On an error, the chunks still in flight must land before their staging is reused.
        for (b, e, _) in ring {
            let _ = self.wait(e);
            self.recycle(b, e);
        }
        result
    }
}

/// Every staging buffer has the largest chunk's size: one size class, so the cache never
/// holds buffers of the wrong size while a call needs another (and frees pinned memory).
fn staging_len(t: &CopyTuning) -> usize {
    t.chunk_max.max(t.chunk_min).max(4096)
}

/// Deal `items` round-robin into `n` stripes (chunk i to stripe i % n).
fn stripes<T>(items: impl Iterator<Item = T>, n: usize) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = (0..n.max(1)).map(|_| Vec::new()).collect();
    let len = out.len();
    for (i, item) in items.enumerate() {
        out[i % len].push(item);
    }
    out
}

impl Drop for StreamCopier {
    fn drop(&mut self) {
        let _ = self.synchronize();
        for e in self.free_events.get_mut().drain(..) {
            // SAFETY: created by this table's `event_create`, destroyed once.
            unsafe { (self.ops.event_destroy)(self.ctx as *mut c_void, e.0 as *mut c_void) }
        }
    }
}
