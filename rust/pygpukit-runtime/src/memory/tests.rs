//! Tests of the pool through its public API, over the host allocator and a bounded fake device.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::context::{self, TaskContext};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// A "device" of host memory that refuses to hand out more than `capacity` bytes.
struct FakeDevice {
    capacity: u64,
    outstanding: AtomicU64,
    released: AtomicU64,
}

unsafe extern "C" fn fake_alloc(ctx: *mut c_void, n: u64, out: *mut u64) -> i32 {
    let dev = &*(ctx as *const FakeDevice);
    let before = dev.outstanding.fetch_add(n, Ordering::SeqCst);
    if before + n > dev.capacity {
        dev.outstanding.fetch_sub(n, Ordering::SeqCst);
        return 2;
    }
    let mut o = 0;
    let rc = (host_allocator_table().alloc.unwrap())(std::ptr::null_mut(), n, &mut o);
    *out = o;
    rc
}

unsafe extern "C" fn fake_free(ctx: *mut c_void, p: u64, n: u64) {
    let dev = &*(ctx as *const FakeDevice);
    dev.outstanding.fetch_sub(n, Ordering::SeqCst);
    (host_allocator_table().free.unwrap())(std::ptr::null_mut(), p, n)
}

unsafe extern "C" fn fake_release(ctx: *mut c_void) {
    let dev = &*(ctx as *const FakeDevice);
    dev.released.fetch_add(1, Ordering::SeqCst);
}

/// A pool over a fake device; the returned Arc lets the test inspect the device.
fn fake_pool(capacity: u64, config: PoolConfig) -> (Arc<MemoryPool>, Arc<FakeDevice>) {
    let dev = Arc::new(FakeDevice {
        capacity,
        outstanding: AtomicU64::new(0),
        released: AtomicU64::new(0),
    });
    let mut t = host_allocator_table();
    t.flags = 0; // behave like a real device: not host addressable
    t.ctx = Arc::as_ptr(&dev) as *mut c_void;
    t.alloc = Some(fake_alloc);
    t.free = Some(fake_free);
    t.release = Some(fake_release);
    let alloc = DeviceAllocator::new(t, Some(Box::new(dev.clone()))).unwrap();
    (MemoryPool::new(alloc, "fake:0", config), dev)
}

fn host_pool(quota: Option<u64>, enable_eviction: bool) -> Arc<MemoryPool> {
    MemoryPool::for_host(PoolConfig { quota, enable_eviction, keep_cache: false })
}

/// Seed-dependent bytes, cheap to build in a debug build (a memset plus a sparse walk).
fn pattern(n: u64, seed: u8) -> Vec<u8> {
    let mut data = vec![seed; n as usize];
    for (k, byte) in data.iter_mut().enumerate().step_by(251) {
        *byte = (k / 251) as u8 ^ seed.rotate_left(3);
    }
    data
}

fn fill(pool: &MemoryPool, b: &Block, seed: u8) {
    pool.write(b, 0, &pattern(b.nbytes(), seed)).unwrap();
}

fn holds(pool: &MemoryPool, b: &Block, seed: u8) -> bool {
    let mut out = vec![0u8; b.nbytes() as usize];
    pool.read(b, 0, &mut out).unwrap();
    out == pattern(b.nbytes(), seed)
}

#[test]
fn table_validation_rejects_bad_tables() {
    let mut t = host_allocator_table();
    t.copy_d2d = None;
    assert!(DeviceAllocator::new(t, None).unwrap_err().contains("copy_d2d"));
    let mut t = host_allocator_table();
    t.abi_version = 7;
    assert!(DeviceAllocator::new(t, None).unwrap_err().contains("version"));
    let mut t = host_allocator_table();
    t.struct_size = 8;
    assert!(DeviceAllocator::new(t, None).is_err());
    assert!(DeviceAllocator::new(host_allocator_table(), None).unwrap().async_ops().is_none());
}

#[test]
fn host_blocks_are_aligned_and_reused() {
    let pool = host_pool(None, false);
    let a = pool.allocate(4096).unwrap();
    assert_eq!(a.ptr().unwrap() % 64, 0);
    let first = a.ptr().unwrap();
    drop(a);
    let b = pool.allocate(4000).unwrap(); // same class as 4096
    assert_eq!(b.ptr().unwrap(), first);
    let s = pool.stats();
    assert_eq!((s.allocations, s.reuses, s.device_allocs), (2, 1, 1));
    assert_eq!(s.used, 4096);
    b.free().unwrap();
    b.free().unwrap(); // idempotent
    assert_eq!(pool.stats().used, 0);
    assert_eq!(b.ptr(), Err(PoolError::Freed));
    assert_eq!(pool.free_all_cached(), 4096);
    pool.check_invariants().unwrap();
}

#[test]
fn zero_and_huge_sizes_are_rejected() {
    let pool = host_pool(None, false);
    assert!(matches!(pool.allocate(0), Err(PoolError::InvalidSize(_))));
    assert!(matches!(pool.allocate(u64::MAX), Err(PoolError::InvalidSize(_))));
    let (fake, _) = fake_pool(MIB, PoolConfig::default());
    assert!(matches!(fake.allocate(1 << 40), Err(PoolError::OutOfMemory { .. })));
}

#[test]
fn quota_error_states_the_byte_counts() {
    let pool = host_pool(Some(64 * KIB), false);
    let _a = pool.allocate(48 * KIB).unwrap();
    let err = pool.allocate(32 * KIB).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("requested 32768 bytes"), "{msg}");
    assert!(msg.contains("in use 49152 bytes"), "{msg}");
    assert!(msg.contains("cached 0 bytes"), "{msg}");
    assert!(msg.contains("quota 65536 bytes"), "{msg}");
    assert!(pool.allocate(65 * KIB).is_err(), "bigger than the quota");
}

#[test]
fn ladder_releases_the_cache_before_failing() {
    let pool = host_pool(Some(64 * KIB), false);
    drop(pool.allocate(32 * KIB).unwrap());
    assert_eq!(pool.stats().cached, 32 * KIB);
    let b = pool.allocate(48 * KIB).unwrap();
    let s = pool.stats();
    assert_eq!((s.cached, s.used, s.device_frees), (0, 48 * KIB, 1));
    drop(b);
}

#[test]
fn ladder_evicts_lru_and_restore_keeps_data() {
    let pool = host_pool(Some(96 * KIB), true);
    let a = pool.allocate(40_000).unwrap();
    let b = pool.allocate(40_000).unwrap();
    fill(&pool, &a, 1);
    fill(&pool, &b, 2);
    pool.touch(&a).unwrap(); // b is now the least recently used
    let c = pool.allocate(40_000).unwrap();
    assert!(b.is_evicted().unwrap() && !a.is_evicted().unwrap());
    fill(&pool, &c, 3);
    assert!(holds(&pool, &b, 2), "restore must bring the data back");
    let s = pool.stats();
    assert_eq!((s.evictions, s.restores), (2, 1), "restoring b evicted the LRU block a");
    assert!(holds(&pool, &a, 1) && holds(&pool, &c, 3));
    pool.check_invariants().unwrap();
}

#[test]
fn pinned_blocks_are_never_evicted() {
    let pool = host_pool(Some(64 * KIB), true);
    let a = pool.allocate(40_000).unwrap();
    pool.pin(&a).unwrap();
    assert!(matches!(pool.allocate(40_000), Err(PoolError::OutOfMemory { .. })));
    assert_eq!(pool.evict(&a), Err(PoolError::Pinned));
    assert_eq!(a.free(), Err(PoolError::Pinned));
    pool.unpin(&a);
    assert_eq!(pool.evict(&a), Ok(true));
    assert_eq!(pool.evict(&a), Ok(false));
    a.free().unwrap();
    assert_eq!(pool.stats().evicted_bytes, 0);
}

#[test]
fn eviction_disabled_means_oom() {
    let pool = host_pool(Some(64 * KIB), false);
    let _a = pool.allocate(40_000).unwrap();
    assert!(matches!(pool.allocate(40_000), Err(PoolError::OutOfMemory { .. })));
    assert_eq!(pool.stats().evictions, 0);
}

#[test]
fn large_blocks_split_and_coalesce_in_segments() {
    let pool = host_pool(None, false);
    let blocks: Vec<Block> = (0..3).map(|_| pool.allocate(2 * MIB).unwrap()).collect();
    let s = pool.stats();
    assert_eq!((s.segments, s.used, s.fragmentation), (1, 6 * MIB, 2 * MIB));
    let p0 = blocks[0].ptr().unwrap();
    assert_eq!(blocks[1].ptr().unwrap(), p0 + 2 * MIB, "carved contiguously");
    let mut blocks = blocks.into_iter();
    let (b0, b1, b2) = (blocks.next().unwrap(), blocks.next().unwrap(), blocks.next().unwrap());
    drop(b1);
    assert_eq!(pool.stats().fragmentation, 4 * MIB);
    // A 3 MiB request does not fit the 2 MiB hole, but fits the merged hole once b2 goes.
    drop(b2);
    let big = pool.allocate(5 * MIB).unwrap();
    assert_eq!(big.ptr().unwrap(), p0 + 2 * MIB, "the freed ranges coalesced");
    assert_eq!(pool.stats().segments, 1);
    drop((b0, big));
    let s = pool.stats();
    assert_eq!((s.fragmentation, s.cached, s.used), (0, 8 * MIB, 0));
    assert_eq!(pool.free_all_cached(), 8 * MIB);
    assert_eq!(pool.stats().segments, 0);
}

#[test]
fn device_refusal_walks_the_ladder() {
    let (pool, dev) = fake_pool(10 * MIB, PoolConfig { quota: None, enable_eviction: true, keep_cache: false });
    let a = pool.allocate(6 * MIB).unwrap(); // an 8 MiB segment: fits the 10 MiB device
    fill(&pool, &a, 9);
    let b = pool.allocate(6 * MIB).unwrap(); // device full: a must be evicted
    assert!(a.is_evicted().unwrap());
    assert!(holds(&pool, &a, 9));
    assert!(b.is_evicted().unwrap());
    drop((a, b));
    pool.free_all_cached();
    assert_eq!(dev.outstanding.load(Ordering::SeqCst), 0);
    drop(pool);
    assert_eq!(dev.released.load(Ordering::SeqCst), 1, "release called once on drop");
}

#[test]
fn copy_device_and_bounds() {
    let pool = host_pool(None, false);
    let a = pool.allocate(1000).unwrap();
    let b = pool.allocate(1000).unwrap();
    pool.write(&a, 0, &[7u8; 1000]).unwrap();
    pool.copy_device(&b, &a, 500, 100, 0).unwrap();
    let mut out = vec![0u8; 1000];
    pool.read(&b, 0, &mut out).unwrap();
    assert!(out[100..600].iter().all(|&v| v == 7));
    assert!(matches!(pool.write(&a, 999, &[1, 2]), Err(PoolError::InvalidSize(_))));
    assert!(matches!(pool.copy_device(&b, &a, 1, u64::MAX, 0), Err(PoolError::InvalidSize(_))));
    let other = host_pool(None, false);
    assert_eq!(other.ptr(&a), Err(PoolError::WrongPool));
}

struct Budget {
    limit: u64,
    charged: AtomicU64,
}

impl TaskContext for Budget {
    fn charge(&self, bytes: u64) -> Result<(), String> {
        let now = self.charged.fetch_add(bytes, Ordering::SeqCst) + bytes;
        if now > self.limit {
            self.charged.fetch_sub(bytes, Ordering::SeqCst);
            return Err(format!("task limit {} exceeded", self.limit));
        }
        Ok(())
    }
    fn release(&self, bytes: u64) {
        self.charged.fetch_sub(bytes, Ordering::SeqCst);
    }
    fn before_launch(&self) {}
    fn after_launch(&self, _busy_ns: u64) {}
}

#[test]
fn allocations_are_charged_to_the_task_context() {
    let pool = host_pool(None, false);
    let budget = Arc::new(Budget { limit: 8 * KIB, charged: AtomicU64::new(0) });
    let block = {
        let _g = context::enter(budget.clone());
        let b = pool.allocate(4 * KIB).unwrap();
        assert_eq!(budget.charged.load(Ordering::SeqCst), 4 * KIB);
        let err = pool.allocate(6 * KIB).unwrap_err();
        assert_eq!(err, PoolError::ChargeRefused("task limit 8192 exceeded".into()));
        b
    };
    // Freed outside the context (another thread, later): still credited to the task.
    std::thread::spawn(move || drop(block)).join().unwrap();
    assert_eq!(budget.charged.load(Ordering::SeqCst), 0);
    assert!(pool.allocate(4 * KIB).is_ok(), "no context, no charge");
}

#[test]
fn many_threads_leave_the_pool_empty() {
    let pool = host_pool(Some(64 * MIB), true);
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let pool = pool.clone();
            std::thread::spawn(move || {
                for i in 0..300u64 {
                    let size = 16 + (i * 7919 + t * 104_729) % (3 * MIB);
                    if let Ok(b) = pool.allocate(size) {
                        pool.write(&b, 0, &[t as u8; 16]).unwrap();
                        if i % 5 == 0 {
                            let _ = pool.evict(&b);
                        }
                        let mut out = [0u8; 16];
                        pool.read(&b, 0, &mut out).unwrap();
                        assert_eq!(out, [t as u8; 16]);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let s = pool.stats();
    assert_eq!((s.used, s.blocks, s.evicted_bytes), (0, 0, 0));
    pool.check_invariants().unwrap();
}

#[test]
fn registry_creates_cpu_and_keeps_registered_pools() {
    let cpu = device_pool("cpu").unwrap();
    assert!(Arc::ptr_eq(&cpu, &device_pool("cpu").unwrap()));
    assert!(device_pool("nope:3").is_none());
    let p = host_pool(None, false);
    register_device_pool("test:registry", p.clone());
    assert!(Arc::ptr_eq(&p, &device_pool("test:registry").unwrap()));
    assert!(registered_devices().contains(&"test:registry".to_string()));
}

#[derive(Clone, Debug)]
enum Op {
    Alloc(u64),
    Free(usize),
    Evict(usize),
    Touch(usize),
    Check(usize),
    EvictLru(u64),
    FreeCached,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop_oneof![1u64..4096, 4096u64..MIB + 1, MIB + 1..5 * MIB].prop_map(Op::Alloc),
        2 => any::<usize>().prop_map(Op::Free),
        2 => any::<usize>().prop_map(Op::Evict),
        1 => any::<usize>().prop_map(Op::Touch),
        2 => any::<usize>().prop_map(Op::Check),
        1 => (0u64..4 * MIB).prop_map(Op::EvictLru),
        1 => Just(Op::FreeCached),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random sequences never lose or double-count a byte and never corrupt data.
    #[test]
    fn random_sequences_keep_the_books(ops in proptest::collection::vec(op(), 1..60),
                                       bounded_device in any::<bool>()) {
        let config = PoolConfig { quota: Some(24 * MIB), enable_eviction: true, keep_cache: false };
        let (pool, dev) = if bounded_device {
            let (p, d) = fake_pool(20 * MIB, config);
            (p, Some(d))
        } else {
            (MemoryPool::for_host(config), None)
        };
        let mut live: Vec<(Block, u8)> = Vec::new();
        let mut seed = 0u8;
        for op in ops {
            let pick = |i: usize| i % live.len().max(1);
            match op {
                Op::Alloc(n) => match pool.allocate(n) {
                    Ok(b) => {
                        seed = seed.wrapping_add(1);
                        fill(&pool, &b, seed);
                        live.push((b, seed));
                    }
                    Err(PoolError::OutOfMemory { .. }) => {}
                    Err(e) => prop_assert!(false, "unexpected error {e}"),
                },
                Op::Free(i) if !live.is_empty() => { live.swap_remove(pick(i)); }
                Op::Evict(i) if !live.is_empty() => { pool.evict(&live[pick(i)].0).unwrap(); }
                Op::Touch(i) if !live.is_empty() => pool.touch(&live[pick(i)].0).unwrap(),
                Op::Check(i) if !live.is_empty() => {
                    let (b, s) = &live[pick(i)];
                    match pool.read(b, 0, &mut vec![0u8; b.nbytes() as usize]) {
                        // Restoring may legitimately fail when everything else is pinned
                        // or the device is full of unevictable blocks; the data must survive.
                        Ok(()) => prop_assert!(holds(&pool, b, *s)),
                        Err(PoolError::OutOfMemory { .. }) => prop_assert!(b.is_evicted().unwrap()),
                        Err(e) => prop_assert!(false, "unexpected error {e}"),
                    }
                }
                Op::EvictLru(n) => { pool.evict_lru(n).unwrap(); }
                Op::FreeCached => { pool.free_all_cached(); }
                _ => {}
            }
            pool.check_invariants().map_err(TestCaseError::fail)?;
            let s = pool.stats();
            prop_assert_eq!(s.used + s.cached, s.reserved);
            prop_assert_eq!(s.blocks as usize, live.len());
            let capacity: u64 = live.iter().map(|(b, _)| b.capacity()).sum();
            prop_assert_eq!(s.used + s.evicted_bytes, capacity);
        }
        for (b, s) in &live {
            if pool.read(b, 0, &mut []).is_ok() {
                prop_assert!(holds(&pool, b, *s));
            }
        }
        live.clear();
        let s = pool.stats();
        prop_assert_eq!((s.used, s.evicted_bytes, s.blocks), (0, 0, 0));
        prop_assert_eq!(pool.free_all_cached(), s.cached);
        prop_assert_eq!(pool.stats().reserved, 0);
        if let Some(d) = dev {
            prop_assert_eq!(d.outstanding.load(Ordering::SeqCst), 0);
        }
    }
}

#[test]
fn nowait_paths_only_serve_the_cache() {
    let pool = host_pool(None, false);
    assert!(pool.allocate_nowait(4096, 0).is_none(), "empty cache: must take the slow path");
    let a = pool.allocate(4096).unwrap();
    assert_eq!(a.free_nowait(), Some(Ok(())));
    let b = pool.allocate_nowait(4000, 0).expect("cached block of the same class");
    assert_eq!((pool.stats().reuses, pool.stats().used), (1, 4096));
    let budget = Arc::new(Budget { limit: 1 << 20, charged: AtomicU64::new(0) });
    drop(b);
    let _g = context::enter(budget);
    assert!(pool.allocate_nowait(4096, 0).is_none(), "a task context takes the charging path");
}

#[test]
fn allocate_cached_reports_the_blocks_pointer() {
    let pool = host_pool(None, false);
    assert!(pool.allocate_cached(100, 0).is_none(), "empty cache: must take the slow path");
    let a = pool.allocate(100).unwrap();
    let first = a.ptr().unwrap();
    drop(a);
    let (b, ptr) = pool.allocate_cached(90, 0).expect("cached block of the same class");
    assert_eq!((ptr, b.ptr().unwrap(), b.nbytes()), (first, first, 90));
    assert_eq!(pool.stats().reuses, 1);
    drop(b);
    assert_eq!(pool.stats().used, 0);
}

#[test]
fn ptr_nowait_serves_resident_blocks_only() {
    let pool = host_pool(None, true);
    let a = pool.allocate(4096).unwrap();
    assert_eq!(a.ptr_nowait(), Some(Ok(a.ptr().unwrap())));
    assert!(pool.evict(&a).unwrap());
    assert_eq!(a.ptr_nowait(), None, "evicted: the slow path restores it");
    let restored = a.ptr().unwrap();
    assert_eq!(a.ptr_nowait(), Some(Ok(restored)));
    a.free().unwrap();
    assert_eq!(a.ptr_nowait(), Some(Err(PoolError::Freed)));
}
