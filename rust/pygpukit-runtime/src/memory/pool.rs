//! The memory pool: small-block free lists, best-fit segments, quota, eviction and the OOM ladder.
//!
//! Stream-ordered: every block belongs to the stream it was allocated on (a CUstream handle;
//! 0 for the legacy default stream and for pools without streams). Free lists and segments
//! are kept per stream, so a block freed on stream S is reused on S at once (work queued on
//! S later runs after the work that used it) and never handed to another stream while
//! cached. It reaches another stream only after going back to the device: the OOM ladder
//! and `free_all_cached` free cached memory with the device's free call, which waits for
//! the device's queued work first (cuMemFree does), as PyTorch's and CuPy's pools rely on.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
// Fx: the maps are keyed by block ids and stream handles, not by anything an attacker picks,
// and SipHash was ~7% of a tiny op's host time (two lookups per allocate and free).
use rustc_hash::FxHashMap as HashMap;

use super::allocator_table::DeviceAllocator;
use super::block::Block;
use super::error::PoolError;
use super::eviction::{host_buffer, Lru};
use super::segment::{SegmentArena, Slot};
use super::size_class::{class_count, is_small, large_size, segment_size, small_class};
use super::stats::{Counters, PoolStats};
use crate::context;

/// How a pool is limited.
#[derive(Clone, Copy, Debug, Default)]
pub struct PoolConfig {
    /// Upper bound on bytes obtained from the device (`used + cached`); `None` = no bound.
    pub quota: Option<u64>,
    /// Whether the OOM ladder may evict least-recently-used blocks to host memory.
    pub enable_eviction: bool,
    /// A CUDA graph's private pool: captured work replays into its cached blocks, so the
    /// OOM ladder never gives them back (a failed request is an error instead).
    pub keep_cache: bool,
}

/// Where the device memory of a resident block came from, so it can go back there.
#[derive(Clone, Copy, Debug)]
enum Home {
    Small,
    Large(Slot),
}

#[derive(Debug)]
enum Place {
    Resident { ptr: u64, home: Home, tick: u64 },
    Evicted { data: Vec<u8> },
}

#[derive(Debug)]
struct Record {
    nbytes: u64,
    capacity: u64,
    /// The stream the block was allocated on: its memory returns to that stream's cache.
    stream: u64,
    place: Place,
    /// Buffer exports and in-flight copies; a pinned block is never evicted or freed.
    pins: u32,
}

#[derive(Debug)]
struct State {
    blocks: HashMap<u64, Record>,
    /// Per stream, one free list of device pointers per small size class.
    small_free: HashMap<u64, Vec<Vec<u64>>>,
    small_cached: u64,
    small_reserved: u64,
    /// Per stream, the segments large blocks are carved from.
    arenas: HashMap<u64, SegmentArena>,
    lru: Lru,
    used: u64,
    evicted_bytes: u64,
    counters: Counters,
    next_id: u64,
}

impl State {
    fn reserved(&self) -> u64 {
        self.small_reserved + self.arenas.values().map(SegmentArena::reserved).sum::<u64>()
    }
    fn cached(&self) -> u64 {
        self.small_cached + self.arenas.values().map(SegmentArena::free_bytes).sum::<u64>()
    }
    fn small_list(&mut self, stream: u64, class: usize) -> &mut Vec<u64> {
        &mut self.small_free.entry(stream).or_insert_with(|| vec![Vec::new(); class_count()])[class]
    }
    fn arena(&mut self, stream: u64) -> &mut SegmentArena {
        self.arenas.entry(stream).or_default()
    }
}

/// A per-device memory pool. Share it as `Arc<MemoryPool>`; every method is thread-safe.
pub struct MemoryPool {
    state: Mutex<State>,
    device_alloc: DeviceAllocator,
    config: PoolConfig,
    device: String,
}

impl std::fmt::Debug for MemoryPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MemoryPool({}, {:?})", self.device, self.config)
    }
}

impl MemoryPool {
    pub fn new(device_alloc: DeviceAllocator, device: &str, config: PoolConfig) -> Arc<Self> {
        Arc::new(MemoryPool {
            state: Mutex::new(State {
                blocks: HashMap::default(),
                small_free: HashMap::default(),
                small_cached: 0,
                small_reserved: 0,
                arenas: HashMap::default(),
                lru: Lru::default(),
                used: 0,
                evicted_bytes: 0,
                counters: Counters::default(),
                next_id: 1,
            }),
            device_alloc,
            config,
            device: device.to_string(),
        })
    }

    /// A pool over the Rust host allocator (the CPU device).
    pub fn for_host(config: PoolConfig) -> Arc<Self> {
        Self::new(super::host::host_allocator(), "cpu", config)
    }

    pub fn device(&self) -> &str {
        &self.device
    }

    pub fn config(&self) -> PoolConfig {
        self.config
    }

    pub fn allocator(&self) -> &DeviceAllocator {
        &self.device_alloc
    }

    /// Whether block pointers are CPU pointers (so blocks may export buffers).
    pub fn is_host(&self) -> bool {
        self.device_alloc.is_host_addressable()
    }

    /// Allocate a block of `nbytes` (> 0) on stream 0. See `allocate_on`.
    pub fn allocate(self: &Arc<Self>, nbytes: u64) -> Result<Block, PoolError> {
        self.allocate_on(nbytes, 0)
    }

    /// Allocate a block of `nbytes` (> 0) for work on `stream`. Charged to the task context
    /// of this thread, if any.
    pub fn allocate_on(self: &Arc<Self>, nbytes: u64, stream: u64) -> Result<Block, PoolError> {
        if nbytes == 0 {
            return Err(PoolError::InvalidSize("cannot allocate a block of 0 bytes".into()));
        }
        let capacity = rounded(nbytes)?;
        let ctx = context::current();
        if let Some(c) = &ctx {
            c.charge(capacity).map_err(PoolError::ChargeRefused)?;
        }
        let result = self.allocate_uncharged(nbytes, capacity, stream);
        match result {
            Ok(id) => Ok(Block::new(self.clone(), id, nbytes, capacity, ctx)),
            Err(e) => {
                if let Some(c) = &ctx {
                    c.release(capacity);
                }
                Err(e)
            }
        }
    }

    /// Fast path that never waits: serve `nbytes` from the cache if the lock is free now and
    /// a cached block fits. `None` means "use `allocate`" (which may wait). Skipped when a
    /// task context is current, so charging keeps one lock order (context before pool).
    pub fn allocate_nowait(self: &Arc<Self>, nbytes: u64, stream: u64) -> Option<Block> {
        self.allocate_cached(nbytes, stream).map(|(block, _)| block)
    }

    /// `allocate_nowait` with the block's pointer as it stands now (it stays put unless the
    /// pool evicts, so callers that cache it must use a pool without eviction).
    pub fn allocate_cached(self: &Arc<Self>, nbytes: u64, stream: u64) -> Option<(Block, u64)> {
        if nbytes == 0 || context::current().is_some() {
            return None;
        }
        let capacity = rounded(nbytes).ok()?;
        let mut st = self.state.try_lock()?;
        let (ptr, home) = take_cached(&mut st, capacity, stream)?;
        st.counters.reuses += 1;
        let id = self.insert_record(&mut st, nbytes, capacity, ptr, home, stream);
        drop(st);
        Some((Block::new(self.clone(), id, nbytes, capacity, None), ptr))
    }

    fn insert_record(
        &self,
        st: &mut State,
        nbytes: u64,
        capacity: u64,
        ptr: u64,
        home: Home,
        stream: u64,
    ) -> u64 {
        let id = st.next_id;
        st.next_id += 1;
        let tick = st.lru.touch();
        let place = Place::Resident { ptr, home, tick };
        st.blocks.insert(id, Record { nbytes, capacity, stream, place, pins: 0 });
        st.counters.allocations += 1;
        add_used(st, capacity);
        id
    }

    fn allocate_uncharged(&self, nbytes: u64, capacity: u64, stream: u64) -> Result<u64, PoolError> {
        let mut st = self.state.lock();
        if self.config.quota.is_some_and(|q| capacity > q) {
            return Err(self.oom(&st, nbytes, capacity)); // no ladder can help
        }
        let (ptr, home) = self.obtain(&mut st, nbytes, capacity, stream)?;
        Ok(self.insert_record(&mut st, nbytes, capacity, ptr, home, stream))
    }

    /// The device pointer of `block`, restoring it first if it was evicted. Marks it used.
    pub fn ptr(&self, block: &Block) -> Result<u64, PoolError> {
        self.check_owner(block)?;
        let mut st = self.state.lock();
        self.resident_ptr(&mut st, block.id())
    }

    /// `ptr` without waiting: `None` when the pool lock is taken or the block is evicted
    /// (the caller then takes `ptr`, which may restore it).
    pub fn ptr_nowait(&self, block: &Block) -> Option<Result<u64, PoolError>> {
        if let Err(e) = self.check_owner(block) {
            return Some(Err(e));
        }
        let mut guard = self.state.try_lock()?;
        let st = &mut *guard;
        let Some(rec) = st.blocks.get_mut(&block.id()) else {
            return Some(Err(PoolError::Freed));
        };
        if let Place::Resident { ptr, tick, .. } = &mut rec.place {
            *tick = st.lru.touch();
            return Some(Ok(*ptr));
        }
        None
    }

    /// Like `ptr`, and pins the block until `unpin`: it will not be evicted or freed.
    pub fn pin(&self, block: &Block) -> Result<u64, PoolError> {
        self.check_owner(block)?;
        let mut st = self.state.lock();
        let ptr = self.resident_ptr(&mut st, block.id())?;
        if let Some(r) = st.blocks.get_mut(&block.id()) {
            r.pins += 1;
        }
        Ok(ptr)
    }

    pub fn unpin(&self, block: &Block) {
        if let Some(r) = self.state.lock().blocks.get_mut(&block.id()) {
            r.pins = r.pins.saturating_sub(1);
        }
    }

    /// Mark `block` as just used (moves it to the back of the eviction order).
    pub fn touch(&self, block: &Block) -> Result<(), PoolError> {
        self.check_owner(block)?;
        let mut st = self.state.lock();
        let st = &mut *st;
        let rec = st.blocks.get_mut(&block.id()).ok_or(PoolError::Freed)?;
        if let Place::Resident { tick, .. } = &mut rec.place {
            *tick = st.lru.touch();
        }
        Ok(())
    }

    pub fn is_evicted(&self, block: &Block) -> Result<bool, PoolError> {
        let st = self.state.lock();
        let rec = st.blocks.get(&block.id()).ok_or(PoolError::Freed)?;
        Ok(matches!(rec.place, Place::Evicted { .. }))
    }

    /// Evict `block` to host memory now. `Ok(false)` if it already was.
    pub fn evict(&self, block: &Block) -> Result<bool, PoolError> {
        self.check_owner(block)?;
        let mut st = self.state.lock();
        let rec = st.blocks.get(&block.id()).ok_or(PoolError::Freed)?;
        if matches!(rec.place, Place::Evicted { .. }) {
            return Ok(false);
        }
        if rec.pins > 0 {
            return Err(PoolError::Pinned);
        }
        self.evict_locked(&mut st, block.id())?;
        Ok(true)
    }

    /// Evict least-recently-used unpinned blocks until at least `nbytes` of device memory
    /// went back to the cache (or nothing is left to evict). Returns the bytes evicted.
    pub fn evict_lru(&self, nbytes: u64) -> Result<u64, PoolError> {
        let mut st = self.state.lock();
        let mut done = 0;
        while done < nbytes {
            let Some(victim) = victim(&st) else { break };
            done += self.evict_locked(&mut st, victim)?;
        }
        Ok(done)
    }

    /// Copy `src` into `block` at `offset` through the device's host-to-device copy.
    pub fn write(&self, block: &Block, offset: u64, src: &[u8]) -> Result<(), PoolError> {
        check_range(block, offset, src.len() as u64)?;
        // Pinned for the copy so the lock is not held while bytes move.
        let ptr = self.pin(block)?;
        let r = self.device_alloc.copy_h2d(ptr + offset, src).map_err(PoolError::Device);
        self.unpin(block);
        r
    }

    /// Copy from `block` at `offset` into `dst` through the device-to-host copy.
    pub fn read(&self, block: &Block, offset: u64, dst: &mut [u8]) -> Result<(), PoolError> {
        check_range(block, offset, dst.len() as u64)?;
        let ptr = self.pin(block)?;
        let r = self.device_alloc.copy_d2h(dst, ptr + offset).map_err(PoolError::Device);
        self.unpin(block);
        r
    }

    /// Copy `nbytes` from `src` at `src_offset` to `dst` at `dst_offset` on the device.
    pub fn copy_device(
        &self,
        dst: &Block,
        src: &Block,
        nbytes: u64,
        dst_offset: u64,
        src_offset: u64,
    ) -> Result<(), PoolError> {
        check_range(dst, dst_offset, nbytes)?;
        check_range(src, src_offset, nbytes)?;
        let d = self.pin(dst)?;
        let s = match self.pin(src) {
            Ok(s) => s,
            Err(e) => {
                self.unpin(dst);
                return Err(e);
            }
        };
        let r = self.device_alloc.copy_d2d(d + dst_offset, s + src_offset, nbytes);
        self.unpin(src);
        self.unpin(dst);
        r.map_err(PoolError::Device)
    }

    /// Return every cached byte to the device. Returns how many bytes that was.
    pub fn free_all_cached(&self) -> u64 {
        let mut st = self.state.lock();
        self.release_cached(&mut st)
    }

    pub fn reset_peak(&self) {
        let mut st = self.state.lock();
        st.counters.peak = st.used;
    }

    pub fn stats(&self) -> PoolStats {
        let st = self.state.lock();
        let evicted_blocks =
            st.blocks.values().filter(|r| matches!(r.place, Place::Evicted { .. })).count();
        PoolStats {
            used: st.used,
            cached: st.cached(),
            reserved: st.reserved(),
            peak: st.counters.peak,
            quota: self.config.quota,
            evicted_bytes: st.evicted_bytes,
            fragmentation: st.arenas.values().map(SegmentArena::fragmentation).sum(),
            segments: st.arenas.values().map(|a| a.segment_count() as u64).sum(),
            blocks: st.blocks.len() as u64,
            evicted_blocks: evicted_blocks as u64,
            allocations: st.counters.allocations,
            reuses: st.counters.reuses,
            evictions: st.counters.evictions,
            restores: st.counters.restores,
            device_allocs: st.counters.device_allocs,
            device_frees: st.counters.device_frees,
        }
    }

    /// Verify every bookkeeping invariant (for tests); `Err` names the first broken one.
    pub fn check_invariants(&self) -> Result<(), String> {
        let st = self.state.lock();
        for arena in st.arenas.values() {
            arena.check()?;
        }
        let mut used = 0;
        let mut evicted = 0;
        let mut ticks = Vec::new();
        for r in st.blocks.values() {
            match r.place {
                Place::Resident { tick, .. } => {
                    used += r.capacity;
                    ticks.push(tick);
                }
                Place::Evicted { .. } => evicted += r.capacity,
            }
        }
        let small_cached: u64 = st
            .small_free
            .values()
            .flat_map(|lists| lists.iter().enumerate())
            .map(|(c, l)| l.len() as u64 * class_size(c))
            .sum();
        if small_cached != st.small_cached {
            return Err(format!("free lists hold {small_cached} but {} counted", st.small_cached));
        }
        if used != st.used || evicted != st.evicted_bytes {
            return Err(format!("used {used} vs {}, evicted {evicted} vs {}", st.used, st.evicted_bytes));
        }
        if st.used + st.cached() != st.reserved() {
            return Err(format!(
                "used {} + cached {} != reserved {}",
                st.used,
                st.cached(),
                st.reserved()
            ));
        }
        let resident = ticks.len();
        ticks.sort_unstable();
        ticks.dedup();
        if ticks.len() != resident {
            return Err(format!("{resident} resident blocks share {} use ticks", ticks.len()));
        }
        if let Some(q) = self.config.quota {
            if st.reserved() > q {
                return Err(format!("reserved {} exceeds quota {q}", st.reserved()));
            }
        }
        if st.counters.peak < st.used {
            return Err("peak below used".into());
        }
        Ok(())
    }

    // ---- internals (all called with the state lock held) ----

    pub(super) fn release_block(&self, block: &Block, force: bool) -> Result<bool, PoolError> {
        let mut st = self.state.lock();
        self.release_locked(&mut st, block, force)
    }

    /// `release_block` if the lock is free now; `None` means "it would wait".
    pub(super) fn release_block_nowait(&self, block: &Block) -> Option<Result<bool, PoolError>> {
        let mut st = self.state.try_lock()?;
        Some(self.release_locked(&mut st, block, false))
    }

    fn release_locked(&self, st: &mut State, block: &Block, force: bool) -> Result<bool, PoolError> {
        if block.freed_flag().load(Ordering::Acquire) {
            return Ok(false);
        }
        let Some(rec) = st.blocks.get(&block.id()) else { return Ok(false) };
        if rec.pins > 0 && !force {
            return Err(PoolError::Pinned);
        }
        let Some(rec) = st.blocks.remove(&block.id()) else { return Ok(false) };
        match rec.place {
            Place::Resident { ptr, home, .. } => {
                put_back(st, ptr, home, rec.capacity, rec.stream);
                st.used -= rec.capacity;
            }
            Place::Evicted { .. } => st.evicted_bytes -= rec.capacity,
        }
        block.freed_flag().store(true, Ordering::Release);
        Ok(true)
    }

    fn check_owner(&self, block: &Block) -> Result<(), PoolError> {
        if !std::ptr::eq(Arc::as_ptr(block.pool()), self) {
            return Err(PoolError::WrongPool);
        }
        Ok(())
    }

    fn resident_ptr(&self, st: &mut State, id: u64) -> Result<u64, PoolError> {
        let rec = st.blocks.get_mut(&id).ok_or(PoolError::Freed)?;
        if let Place::Resident { ptr, tick, .. } = &mut rec.place {
            *tick = st.lru.touch();
            return Ok(*ptr);
        }
        self.restore_locked(st, id)
    }

    /// Memory for a block of `capacity` bytes: from the cache, else fresh, else the OOM ladder.
    fn obtain(
        &self,
        st: &mut State,
        nbytes: u64,
        capacity: u64,
        stream: u64,
    ) -> Result<(u64, Home), PoolError> {
        if let Some(found) = take_cached(st, capacity, stream) {
            st.counters.reuses += 1;
            return Ok(found);
        }
        if let Some(found) = self.take_fresh(st, capacity, stream) {
            return Ok(found);
        }
        if self.config.keep_cache {
            return Err(self.oom(st, nbytes, capacity));
        }
        // Ladder step 1: give cached memory (every stream's) back to the device, then retry.
        if self.release_cached(st) > 0 {
            if let Some(found) = self.take_fresh(st, capacity, stream) {
                return Ok(found);
            }
        }
        // Ladder step 2: evict least-recently-used blocks one at a time, retrying after each.
        if self.config.enable_eviction {
            while let Some(v) = victim(st) {
                self.evict_locked(st, v)?;
                if let Some(found) = take_cached(st, capacity, stream) {
                    st.counters.reuses += 1;
                    return Ok(found);
                }
                self.release_cached(st);
                if let Some(found) = self.take_fresh(st, capacity, stream) {
                    return Ok(found);
                }
            }
        }
        Err(self.oom(st, nbytes, capacity))
    }

    /// New device memory within the quota; `None` when the quota or the device says no.
    fn take_fresh(&self, st: &mut State, capacity: u64, stream: u64) -> Option<(u64, Home)> {
        let headroom = self.config.quota.map_or(u64::MAX, |q| q.saturating_sub(st.reserved()));
        if capacity > headroom {
            return None;
        }
        if is_small(capacity) {
            let ptr = self.device_alloc.alloc(capacity)?;
            st.counters.device_allocs += 1;
            st.small_reserved += capacity;
            return Some((ptr, Home::Small));
        }
        // A roomy segment lets later large blocks share it; fall back to an exact one.
        let roomy = segment_size(capacity).filter(|&s| s <= headroom);
        let (base, size) = roomy
            .and_then(|s| self.device_alloc.alloc(s).map(|p| (p, s)))
            .or_else(|| self.device_alloc.alloc(capacity).map(|p| (p, capacity)))?;
        st.counters.device_allocs += 1;
        let arena = st.arena(stream);
        arena.add_segment(base, size);
        let (ptr, slot) = arena.take_best_fit(capacity)?;
        Some((ptr, Home::Large(slot)))
    }

    fn release_cached(&self, st: &mut State) -> u64 {
        let mut released = 0;
        let mut frees = 0;
        for lists in st.small_free.values_mut() {
            for (class, list) in lists.iter_mut().enumerate() {
                let size = class_size(class);
                for ptr in list.drain(..) {
                    self.device_alloc.free(ptr, size);
                    frees += 1;
                    released += size;
                }
            }
        }
        st.small_cached -= released;
        st.small_reserved -= released;
        for arena in st.arenas.values_mut() {
            for (base, size) in arena.take_empty_segments() {
                self.device_alloc.free(base, size);
                frees += 1;
                released += size;
            }
        }
        // Streams that hold nothing any more (destroyed ones, say) leave no empty maps behind.
        st.arenas.retain(|_, a| a.segment_count() > 0);
        st.counters.device_frees += frees;
        released
    }

    /// Copy block `id` to host memory and put its device memory in the cache.
    /// Returns the device bytes freed.
    fn evict_locked(&self, st: &mut State, id: u64) -> Result<u64, PoolError> {
        let (nbytes, capacity, stream, ptr, home) = match st.blocks.get(&id) {
            Some(Record { nbytes, capacity, stream, place: Place::Resident { ptr, home, .. }, .. }) => {
                (*nbytes, *capacity, *stream, *ptr, *home)
            }
            Some(_) => return Ok(0),
            None => return Err(PoolError::Freed),
        };
        let mut data = host_buffer(nbytes)?;
        self.device_alloc.copy_d2h(&mut data, ptr).map_err(PoolError::Device)?;
        put_back(st, ptr, home, capacity, stream);
        st.used -= capacity;
        st.evicted_bytes += capacity;
        st.counters.evictions += 1;
        if let Some(r) = st.blocks.get_mut(&id) {
            r.place = Place::Evicted { data };
        }
        Ok(capacity)
    }

    fn restore_locked(&self, st: &mut State, id: u64) -> Result<u64, PoolError> {
        let (nbytes, capacity, stream) = match st.blocks.get(&id) {
            Some(r) => (r.nbytes, r.capacity, r.stream),
            None => return Err(PoolError::Freed),
        };
        let (ptr, home) = self.obtain(st, nbytes, capacity, stream)?;
        let Some(rec) = st.blocks.get_mut(&id) else {
            put_back(st, ptr, home, capacity, stream);
            return Err(PoolError::Freed);
        };
        if let Place::Evicted { data } = &rec.place {
            if let Err(e) = self.device_alloc.copy_h2d(ptr, data) {
                put_back(st, ptr, home, capacity, stream);
                return Err(PoolError::Device(e));
            }
        }
        let tick = st.lru.touch();
        rec.place = Place::Resident { ptr, home, tick };
        st.evicted_bytes -= capacity;
        st.counters.restores += 1;
        add_used(st, capacity);
        Ok(ptr)
    }

    fn oom(&self, st: &State, requested: u64, rounded: u64) -> PoolError {
        PoolError::OutOfMemory {
            device: self.device.clone(),
            requested,
            rounded,
            in_use: st.used,
            cached: st.cached(),
            quota: self.config.quota,
        }
    }
}

impl Drop for MemoryPool {
    fn drop(&mut self) {
        // Live blocks hold an Arc to the pool, so only cached memory can be left here.
        let mut st = self.state.lock();
        self.release_cached(&mut st);
    }
}

/// Rounded size of a request of `nbytes`.
fn rounded(nbytes: u64) -> Result<u64, PoolError> {
    if is_small(nbytes) {
        return Ok(small_class(nbytes).1);
    }
    large_size(nbytes).ok_or_else(|| PoolError::InvalidSize(format!("{nbytes} bytes is too large")))
}

fn class_size(class: usize) -> u64 {
    CLASS_SIZES.get_or_init(|| {
        let mut sizes = vec![0; class_count()];
        let mut n = 1;
        while n <= super::size_class::SMALL_LIMIT {
            let (i, s) = small_class(n);
            sizes[i] = s;
            n = s + 1;
        }
        sizes
    })[class]
}

static CLASS_SIZES: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();

/// A cached block of `capacity` bytes of `stream`'s cache (never another stream's).
fn take_cached(st: &mut State, capacity: u64, stream: u64) -> Option<(u64, Home)> {
    if is_small(capacity) {
        let ptr = st.small_free.get_mut(&stream)?[small_class(capacity).0].pop()?;
        st.small_cached -= capacity;
        return Some((ptr, Home::Small));
    }
    let (ptr, slot) = st.arenas.get_mut(&stream)?.take_best_fit(capacity)?;
    Some((ptr, Home::Large(slot)))
}

fn put_back(st: &mut State, ptr: u64, home: Home, capacity: u64, stream: u64) {
    match home {
        Home::Small => {
            st.small_list(stream, small_class(capacity).0).push(ptr);
            st.small_cached += capacity;
        }
        Home::Large(slot) => {
            st.arena(stream).give_back(slot);
        }
    }
}

fn add_used(st: &mut State, capacity: u64) {
    st.used += capacity;
    st.counters.peak = st.counters.peak.max(st.used);
}

/// The least-recently-used resident block that is not pinned.
fn victim(st: &State) -> Option<u64> {
    let resident = st.blocks.iter().filter(|(_, r)| r.pins == 0);
    let ticked = resident.filter_map(|(id, r)| match r.place {
        Place::Resident { tick, .. } => Some((tick, *id)),
        Place::Evicted { .. } => None,
    });
    ticked.min().map(|(_, id)| id)
}

fn check_range(block: &Block, offset: u64, len: u64) -> Result<(), PoolError> {
    match offset.checked_add(len) {
        Some(end) if end <= block.nbytes() => Ok(()),
        _ => Err(PoolError::InvalidSize(format!(
            "range {offset}..{offset}+{len} is outside the block of {} bytes",
            block.nbytes()
        ))),
    }
}
