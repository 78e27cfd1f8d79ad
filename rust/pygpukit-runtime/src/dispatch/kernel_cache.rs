//! The compiled-kernel cache: LRU over (source hash, options, arch, compiler version),
//! bounded by total image bytes and by entry count.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

/// What identifies a compiled module: change any part and the image is a different one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelKey {
    pub source_hash: String,
    pub options: String,
    pub arch: String,
    pub compiler_version: String,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub insertions: u64,
    /// Images refused because they alone exceed the byte capacity.
    pub rejected: u64,
    pub entries: u64,
    pub bytes: u64,
}

struct Entry<H> {
    image: Arc<Vec<u8>>,
    handle: Option<H>,
    tick: u64,
}

struct Inner<H> {
    map: HashMap<KernelKey, Entry<H>>,
    by_tick: BTreeMap<u64, KernelKey>,
    clock: u64,
    stats: CacheStats,
}

/// LRU cache of module images (e.g. CUBIN) plus an optional loaded-module handle `H`.
pub struct KernelCache<H> {
    inner: Mutex<Inner<H>>,
    capacity_bytes: u64,
    max_entries: usize,
}

impl<H: Clone> KernelCache<H> {
    pub fn new(capacity_bytes: u64, max_entries: usize) -> Result<Self, String> {
        if capacity_bytes == 0 || max_entries == 0 {
            return Err("a kernel cache needs capacity_bytes > 0 and max_entries > 0".into());
        }
        Ok(KernelCache {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                by_tick: BTreeMap::new(),
                clock: 0,
                stats: CacheStats::default(),
            }),
            capacity_bytes,
            max_entries,
        })
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// The image and handle for `key`, marking it most recently used.
    pub fn get(&self, key: &KernelKey) -> Option<(Arc<Vec<u8>>, Option<H>)> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        inner.clock += 1;
        let now = inner.clock;
        match inner.map.get_mut(key) {
            Some(e) => {
                inner.by_tick.remove(&e.tick);
                e.tick = now;
                inner.by_tick.insert(now, key.clone());
                inner.stats.hits += 1;
                Some((e.image.clone(), e.handle.clone()))
            }
            None => {
                inner.stats.misses += 1;
                None
            }
        }
    }

    pub fn contains(&self, key: &KernelKey) -> bool {
        self.inner.lock().map.contains_key(key)
    }

    /// Insert or replace; evicts least-recently-used entries to fit. Returns what was
    /// evicted (handles included, so the caller can unload modules), or `Err` if the image
    /// alone is larger than the capacity (nothing changes then).
    pub fn put(&self, key: KernelKey, image: Vec<u8>, handle: Option<H>) -> Result<Vec<(KernelKey, Option<H>)>, String> {
        let size = image.len() as u64;
        let mut inner = self.inner.lock();
        if size > self.capacity_bytes {
            inner.stats.rejected += 1;
            return Err(format!(
                "an image of {size} bytes does not fit a cache of {} bytes",
                self.capacity_bytes
            ));
        }
        let mut evicted = Vec::new();
        if let Some(old) = inner.map.remove(&key) {
            inner.by_tick.remove(&old.tick);
            inner.stats.bytes -= old.image.len() as u64;
        }
        while inner.map.len() + 1 > self.max_entries || inner.stats.bytes + size > self.capacity_bytes {
            let Some((_, victim)) = inner.by_tick.pop_first() else { break };
            if let Some(e) = inner.map.remove(&victim) {
                inner.stats.bytes -= e.image.len() as u64;
                inner.stats.evictions += 1;
                evicted.push((victim, e.handle));
            }
        }
        inner.clock += 1;
        let tick = inner.clock;
        inner.by_tick.insert(tick, key.clone());
        inner.map.insert(key, Entry { image: Arc::new(image), handle, tick });
        inner.stats.bytes += size;
        inner.stats.insertions += 1;
        Ok(evicted)
    }

    pub fn remove(&self, key: &KernelKey) -> bool {
        let mut inner = self.inner.lock();
        match inner.map.remove(key) {
            Some(e) => {
                inner.by_tick.remove(&e.tick);
                inner.stats.bytes -= e.image.len() as u64;
                true
            }
            None => false,
        }
    }

    pub fn clear(&self) {
        let mut inner = self.inner.lock();
        inner.map.clear();
        inner.by_tick.clear();
        inner.stats.bytes = 0;
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys from least to most recently used.
    pub fn keys_lru_first(&self) -> Vec<KernelKey> {
        self.inner.lock().by_tick.values().cloned().collect()
    }

    pub fn stats(&self) -> CacheStats {
        let inner = self.inner.lock();
        CacheStats { entries: inner.map.len() as u64, ..inner.stats }
    }

    /// Check the bookkeeping (for tests).
    pub fn check(&self) -> Result<(), String> {
        let inner = self.inner.lock();
        let bytes: u64 = inner.map.values().map(|e| e.image.len() as u64).sum();
        if bytes != inner.stats.bytes || bytes > self.capacity_bytes {
            return Err(format!("bytes {bytes} vs counted {} (cap {})", inner.stats.bytes, self.capacity_bytes));
        }
        if inner.map.len() != inner.by_tick.len() || inner.map.len() > self.max_entries {
            return Err("entry count and LRU order disagree or exceed the limit".into());
        }
        for (tick, key) in &inner.by_tick {
            if inner.map.get(key).map(|e| e.tick) != Some(*tick) {
                return Err(format!("LRU entry {tick} points at a stale key"));
            }
        }
        Ok(())
    }
}

/// A 128-bit FNV-1a hash of kernel source, as 32 hex digits: stable across runs and
/// platforms (unlike `std`'s hasher), so it can key an on-disk cache too.
pub fn hash_source(source: &[u8]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let h = source.iter().fold(OFFSET, |h, &b| (h ^ b as u128).wrapping_mul(PRIME));
    format!("{h:032x}")
}
