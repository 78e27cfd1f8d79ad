//! Pooled staging buffers: pinned host memory from the device, or page-aligned host memory.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::memory::host::{aligned_alloc, aligned_free, PAGE_ALIGN};
use crate::memory::DeviceAllocator;

/// Smallest staging class; classes are powers of two from here.
const MIN_STAGING: u64 = 4096;
/// Cached bytes beyond this are returned at once instead of kept.
pub const DEFAULT_CACHE_LIMIT: u64 = 64 << 20;

#[derive(Debug, Default, Clone, Copy)]
pub struct StagingStats {
    pub allocs: u64,
    pub reuses: u64,
    pub cached_bytes: u64,
}

struct Inner {
    /// Free buffers per power-of-two class (index = log2(size / MIN_STAGING)).
    free: Vec<Vec<usize>>,
    stats: StagingStats,
}

/// A size-classed cache of staging buffers shared by an engine's submitters and worker.
pub struct StagingPool {
    device: Arc<crate::memory::MemoryPool>,
    inner: Mutex<Inner>,
    cache_limit: u64,
}

/// One staging buffer; goes back to its pool's cache when dropped.
pub struct StagingBuffer {
    pool: Arc<StagingPool>,
    ptr: *mut u8,
    class_size: u64,
    len: usize,
}

// The buffer is exclusively owned; the raw pointer is just its address.
unsafe impl Send for StagingBuffer {}
unsafe impl Sync for StagingBuffer {}

impl StagingPool {
    pub fn new(device: Arc<crate::memory::MemoryPool>, cache_limit: u64) -> Arc<Self> {
        Arc::new(StagingPool {
            device,
            inner: Mutex::new(Inner { free: vec![Vec::new(); 48], stats: StagingStats::default() }),
            cache_limit,
        })
    }

    fn alloc_raw(&self, size: u64) -> *mut u8 {
        let dev: &DeviceAllocator = self.device.allocator();
        if dev.has_pinned() {
            dev.pinned_alloc(size).unwrap_or(std::ptr::null_mut())
        } else {
            aligned_alloc(size, PAGE_ALIGN)
        }
    }

    fn free_raw(&self, ptr: *mut u8, size: u64) {
        let dev = self.device.allocator();
        if dev.has_pinned() {
            dev.pinned_free(ptr, size)
        } else {
            // SAFETY: allocated by `aligned_alloc(size, PAGE_ALIGN)` above.
            unsafe { aligned_free(ptr, size, PAGE_ALIGN) }
        }
    }

    /// A buffer of at least `len` bytes; `None` if host memory ran out.
    pub fn get(self: &Arc<Self>, len: usize) -> Option<StagingBuffer> {
        let class_size = (len as u64).max(MIN_STAGING).checked_next_power_of_two()?;
        let class = (class_size / MIN_STAGING).trailing_zeros() as usize;
        let cached = {
            let mut inner = self.inner.lock();
            let p = inner.free.get_mut(class).and_then(|l| l.pop());
            if p.is_some() {
                inner.stats.reuses += 1;
                inner.stats.cached_bytes -= class_size;
            } else {
                inner.stats.allocs += 1;
            }
            p
        };
        let ptr = match cached {
            Some(p) => p as *mut u8,
            None => self.alloc_raw(class_size),
        };
        (!ptr.is_null()).then(|| StagingBuffer { pool: self.clone(), ptr, class_size, len })
    }

    fn put(&self, ptr: *mut u8, class_size: u64) {
        let class = (class_size / MIN_STAGING).trailing_zeros() as usize;
        {
            let mut inner = self.inner.lock();
            if inner.stats.cached_bytes + class_size <= self.cache_limit && class < inner.free.len() {
                inner.free[class].push(ptr as usize);
                inner.stats.cached_bytes += class_size;
                return;
            }
        }
        self.free_raw(ptr, class_size);
    }

    pub fn stats(&self) -> StagingStats {
        self.inner.lock().stats
    }

    /// Return every cached buffer to the host; returns the bytes released.
    pub fn trim(&self) -> u64 {
        let drained: Vec<(usize, u64)> = {
            let mut inner = self.inner.lock();
            inner.stats.cached_bytes = 0;
            let mut out = Vec::new();
            for (class, list) in inner.free.iter_mut().enumerate() {
                out.extend(list.drain(..).map(|p| (p, MIN_STAGING << class)));
            }
            out
        };
        drained.iter().map(|&(p, size)| {
            self.free_raw(p as *mut u8, size);
            size
        }).sum()
    }
}

impl Drop for StagingPool {
    fn drop(&mut self) {
        self.trim();
    }
}

impl StagingBuffer {
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` holds at least `class_size >= len` bytes owned by this buffer.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for StagingBuffer {
    fn drop(&mut self) {
        self.pool.put(self.ptr, self.class_size);
    }
}
