//! Transfer engine tests: round trips, priority order, error propagation, the async slot.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::*;
use crate::memory::{host_allocator_table, DeviceAllocator, MemoryPool, PoolConfig};

/// A sink the test can read after the job is done.
struct Shared(Arc<Mutex<Vec<u8>>>);

impl HostSink for Shared {
    fn len(&self) -> usize {
        self.0.lock().len()
    }
    fn write(&mut self, data: &[u8]) {
        self.0.lock().copy_from_slice(data);
    }
}

fn host_pool() -> Arc<MemoryPool> {
    MemoryPool::for_host(PoolConfig { quota: Some(64 << 20), enable_eviction: true, keep_cache: false })
}

#[test]
fn round_trip_through_staging() {
    let pool = host_pool();
    let engine = TransferEngine::new(pool.clone(), false).unwrap();
    let block = Arc::new(pool.allocate(100_000).unwrap());
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
    let h = engine.copy_to_device(block.clone(), &data, 0, 0).unwrap();
    assert_eq!(h.wait(None), Ok(true));
    assert!(h.done() && h.elapsed_ns().is_some());
    pool.evict(&block).unwrap(); // the worker must restore it transparently
    let out = Arc::new(Mutex::new(vec![0u8; 50_000]));
    let h = engine.copy_to_host(block.clone(), Box::new(Shared(out.clone())), 50_000, 0).unwrap();
    assert_eq!(h.wait(Some(Duration::from_secs(10))), Ok(true));
    assert_eq!(&out.lock()[..], &data[50_000..]);
    let s = engine.stats();
    assert_eq!((s.completed, s.bytes_to_device, s.bytes_to_host), (2, 100_000, 50_000));
    assert!(!s.async_copies);
}

#[test]
fn higher_priority_overtakes_queued_jobs() {
    let pool = host_pool();
    let engine = TransferEngine::new(pool.clone(), true).unwrap();
    let block = Arc::new(pool.allocate(64).unwrap());
    let prios = [0, 5, -3, 5, 10, 0];
    let handles: Vec<_> =
        prios.iter().map(|&p| engine.copy_to_device(block.clone(), &[p as u8], 0, p).unwrap()).collect();
    assert_eq!(handles[0].wait(Some(Duration::from_millis(50))), Ok(false), "paused");
    assert_eq!(engine.pending(), 6);
    engine.resume();
    assert!(engine.synchronize(Some(Duration::from_secs(10))));
    let order: Vec<u64> = handles.iter().map(|h| h.completion_order().unwrap()).collect();
    // 10 first, then the two 5s in submission order, then the 0s in order, then -3.
    assert_eq!(order, vec![3, 1, 5, 2, 0, 4]);
    let mut last = [0u8];
    pool.read(&block, 0, &mut last).unwrap();
    assert_eq!(last[0], (-3i32) as u8, "the lowest priority ran last");
}

#[test]
fn errors_reach_the_waiter() {
    let pool = host_pool();
    let engine = TransferEngine::new(pool.clone(), true).unwrap();
    let block = Arc::new(pool.allocate(64).unwrap());
    let h = engine.copy_to_device(block.clone(), &[1; 64], 0, 0).unwrap();
    block.free().unwrap();
    engine.resume();
    assert!(h.wait(None).unwrap_err().contains("freed"));
    assert!(engine.copy_to_device(block.clone(), &[1], 0, 0).is_err(), "rejected at submit");
    let live = Arc::new(pool.allocate(8).unwrap());
    assert!(engine.copy_to_device(live, &[0; 9], 0, 0).is_err(), "out of bounds");
    assert_eq!(engine.stats().failed, 1);
}

#[test]
fn dropping_the_engine_fails_queued_jobs() {
    let pool = host_pool();
    let engine = TransferEngine::new(pool.clone(), true).unwrap();
    let block = Arc::new(pool.allocate(64).unwrap());
    let h = engine.copy_to_device(block, &[1; 64], 0, 0).unwrap();
    drop(engine);
    assert!(h.wait(Some(Duration::from_secs(10))).unwrap_err().contains("shut down"));
}

static ASYNC_CALLS: AtomicU64 = AtomicU64::new(0);
static EVENT_SYNCS: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn fake_stream(_c: *mut c_void, out: *mut *mut c_void) -> i32 {
    *out = Box::into_raw(Box::new(0u64)).cast();
    0
}
unsafe extern "C" fn fake_destroy(_c: *mut c_void, p: *mut c_void) {
    drop(Box::from_raw(p.cast::<u64>()));
}
unsafe extern "C" fn fake_h2d(_c: *mut c_void, dst: u64, src: *const c_void, n: u64, _s: *mut c_void) -> i32 {
    ASYNC_CALLS.fetch_add(1, Ordering::SeqCst);
    std::ptr::copy(src.cast::<u8>(), dst as *mut u8, n as usize);
    0
}
unsafe extern "C" fn fake_d2h(_c: *mut c_void, dst: *mut c_void, src: u64, n: u64, _s: *mut c_void) -> i32 {
    ASYNC_CALLS.fetch_add(1, Ordering::SeqCst);
    std::ptr::copy(src as *const u8, dst.cast::<u8>(), n as usize);
    0
}
unsafe extern "C" fn fake_record(_c: *mut c_void, _e: *mut c_void, _s: *mut c_void) -> i32 {
    0
}
unsafe extern "C" fn fake_query(_c: *mut c_void, _e: *mut c_void) -> i32 {
    0
}
unsafe extern "C" fn fake_sync(_c: *mut c_void, _e: *mut c_void) -> i32 {
    EVENT_SYNCS.fetch_add(1, Ordering::SeqCst);
    0
}

#[test]
fn async_slot_is_used_when_filled() {
    let mut t = host_allocator_table();
    t.stream_create = Some(fake_stream);
    t.stream_destroy = Some(fake_destroy);
    t.event_create = Some(fake_stream);
    t.event_destroy = Some(fake_destroy);
    t.copy_h2d_async = Some(fake_h2d);
    t.copy_d2h_async = Some(fake_d2h);
    t.event_record = Some(fake_record);
    t.event_query = Some(fake_query);
    t.event_synchronize = Some(fake_sync);
    let pool = MemoryPool::new(DeviceAllocator::new(t, None).unwrap(), "fake-async", PoolConfig::default());
    let engine = TransferEngine::new(pool.clone(), false).unwrap();
    assert!(engine.stats().async_copies);
    let block = Arc::new(pool.allocate(4096).unwrap());
    engine.copy_to_device(block.clone(), &[42; 4096], 0, 0).unwrap().wait(None).unwrap();
    let out = Arc::new(Mutex::new(vec![0u8; 4096]));
    engine.copy_to_host(block, Box::new(Shared(out.clone())), 0, 0).unwrap().wait(None).unwrap();
    assert!(out.lock().iter().all(|&b| b == 42));
    assert_eq!(ASYNC_CALLS.load(Ordering::SeqCst), 2);
    assert_eq!(EVENT_SYNCS.load(Ordering::SeqCst), 2);
}

#[test]
fn staging_buffers_are_reused_by_class() {
    let pool = host_pool();
    let staging = StagingPool::new(pool, 1 << 20);
    let a = staging.get(5000).unwrap();
    assert_eq!(a.as_ptr() as usize % 4096, 0, "page aligned");
    let p = a.as_ptr();
    drop(a);
    let b = staging.get(8000).unwrap(); // same 8 KiB class
    assert_eq!(b.as_ptr(), p);
    let s = staging.stats();
    assert_eq!((s.allocs, s.reuses, s.cached_bytes), (1, 1, 0));
    drop(b);
    assert_eq!(staging.trim(), 8192);
    let big = staging.get(2 << 20).unwrap();
    drop(big); // over the cache limit: freed, not cached
    assert_eq!(staging.stats().cached_bytes, 0);
}
