//! StreamCopier tests over a fake device whose "stream" runs copies only when an event is
//! waited for, so a staging buffer reused before its DMA ran would show as corrupt data.

use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::sync::Arc;

use parking_lot::Mutex;

use super::*;
use crate::memory::{host_allocator_table, DeviceAllocator, MemoryPool, PoolConfig, PoolError};

enum Op {
    Copy { dst: usize, src: usize, n: usize },
    Record(usize),
}

/// One in-order queue for every stream (stricter than a GPU: nothing runs early).
#[derive(Default)]
struct FakeDevice {
    queue: Mutex<(VecDeque<Op>, HashMap<usize, u32>)>,
    fail_h2d_code: i32,
}

impl FakeDevice {
    fn run_until(&self, event: Option<usize>) {
        let mut q = self.queue.lock();
        while let Some(op) = q.0.pop_front() {
            match op {
                // SAFETY: the copier promised both ranges stay valid until the event completes.
                Op::Copy { dst, src, n } => unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, n) },
                Op::Record(e) => {
                    *q.1.get_mut(&e).unwrap() -= 1;
                    if Some(e) == event && q.1[&e] == 0 {
                        return;
                    }
                }
            }
        }
    }
}

fn dev<'a>(c: *mut c_void) -> &'a FakeDevice {
    // SAFETY: the tests set `ctx` to a FakeDevice that outlives the pool.
    unsafe { &*(c as *const FakeDevice) }
}

unsafe extern "C" fn f_create(_c: *mut c_void, out: *mut *mut c_void) -> i32 {
    *out = Box::into_raw(Box::new(0u64)).cast();
    0
}
unsafe extern "C" fn f_destroy(_c: *mut c_void, p: *mut c_void) {
    drop(Box::from_raw(p.cast::<u64>()));
}
unsafe extern "C" fn f_h2d(c: *mut c_void, dst: u64, src: *const c_void, n: u64, _s: *mut c_void) -> i32 {
    let d = dev(c);
    if d.fail_h2d_code != 0 {
        return d.fail_h2d_code;
    }
    d.queue.lock().0.push_back(Op::Copy { dst: dst as usize, src: src as usize, n: n as usize });
    0
}
unsafe extern "C" fn f_d2h(c: *mut c_void, dst: *mut c_void, src: u64, n: u64, _s: *mut c_void) -> i32 {
    dev(c).queue.lock().0.push_back(Op::Copy { dst: dst as usize, src: src as usize, n: n as usize });
    0
}
unsafe extern "C" fn f_record(c: *mut c_void, e: *mut c_void, _s: *mut c_void) -> i32 {
    let mut q = dev(c).queue.lock();
    *q.1.entry(e as usize).or_insert(0) += 1;
    q.0.push_back(Op::Record(e as usize));
    0
}
unsafe extern "C" fn f_query(c: *mut c_void, e: *mut c_void) -> i32 {
    i32::from(dev(c).queue.lock().1.get(&(e as usize)).is_some_and(|&n| n > 0))
}
unsafe extern "C" fn f_sync(c: *mut c_void, e: *mut c_void) -> i32 {
    let d = dev(c);
    if d.queue.lock().1.get(&(e as usize)).is_some_and(|&n| n > 0) {
        d.run_until(Some(e as usize));
    }
    0
}

fn fake_pool(device: &FakeDevice) -> Arc<MemoryPool> {
    let mut t = host_allocator_table();
    t.ctx = device as *const FakeDevice as *mut c_void;
    t.stream_create = Some(f_create);
    t.stream_destroy = Some(f_destroy);
    t.event_create = Some(f_create);
    t.event_destroy = Some(f_destroy);
    t.copy_h2d_async = Some(f_h2d);
    t.copy_d2h_async = Some(f_d2h);
    t.event_record = Some(f_record);
    t.event_query = Some(f_query);
    t.event_synchronize = Some(f_sync);
    MemoryPool::new(DeviceAllocator::new(t, None).unwrap(), "fake-stream", PoolConfig::default())
}

/// Small chunks and three threads, so even small copies take many pipelined chunks.
fn tuning() -> CopyTuning {
    CopyTuning { h2d_direct_below: 1000, d2h_direct_below: 1000, chunk_min: 4096, chunk_max: 64 << 10, threads: 3, bytes_per_thread: 1 }
}

fn data(n: usize, seed: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 131 + seed * 7) % 251) as u8).collect()
}

#[test]
fn round_trips_are_exact_at_every_size_and_offset() {
    let device = FakeDevice::default();
    let pool = fake_pool(&device);
    let copier = StreamCopier::new(pool.clone(), tuning()).unwrap();
    for (k, &(n, offset)) in
        [(1usize, 0u64), (999, 3), (1000, 0), (4097, 100), (65_536, 0), ((1 << 20) + 13, 256), (3 << 20, 4096)]
            .iter()
            .enumerate()
    {
        let block = pool.allocate(n as u64 + offset + 8).unwrap();
        let src = data(n, k);
        copier.upload(&block, offset, &src, 7).unwrap();
        let mut out = vec![0xEEu8; n]; // poison
        copier.download(&block, offset, &mut out, 7).unwrap();
        assert!(out == src, "n={n} offset={offset}");
    }
    let s = copier.stats();
    assert!(s.staged_chunks > 100 && s.direct_copies == 4, "{s:?}");
    assert!(s.staging.reuses > 0, "staging buffers are reused: {s:?}");
}

#[test]
fn uploads_return_before_their_dma_and_staging_waits_for_it() {
    let device = FakeDevice::default();
    let pool = fake_pool(&device);
    // One thread: its last two chunks are still queued when the upload returns.
    let copier = StreamCopier::new(pool.clone(), CopyTuning { threads: 1, ..tuning() }).unwrap();
    let block = pool.allocate(1 << 20).unwrap();
    let src = data(1 << 20, 1);
    copier.upload(&block, 0, &src, 0).unwrap();
    let inflight = copier.stats().inflight;
    assert_eq!((inflight, copier.reap()), (2, 2), "their DMA has not run: staging held");
    device.run_until(None); // the stream catches up (a kernel or a sync would)
    assert_eq!(copier.reap(), 0);
    let mut out = vec![0u8; 1 << 20];
    pool.read(&block, 0, &mut out).unwrap();
    assert!(out == src);
    let cached = copier.stats().staging.cached_bytes;
    assert!(cached > 0);
    assert_eq!(copier.trim(), cached);
    assert_eq!(copier.stats().staging.cached_bytes, 0, "back to baseline");
}

#[test]
fn many_back_to_back_uploads_keep_their_own_staging() {
    let device = FakeDevice::default();
    let pool = fake_pool(&device);
    let copier = StreamCopier::new(pool.clone(), tuning()).unwrap();
    let blocks: Vec<_> = (0..6).map(|_| pool.allocate(300_000).unwrap()).collect();
    let srcs: Vec<_> = (0..6).map(|k| data(300_000, k + 10)).collect();
    for (b, s) in blocks.iter().zip(&srcs) {
        copier.upload(b, 0, s, 0).unwrap(); // no stream progress in between
    }
    copier.synchronize().unwrap();
    for (b, s) in blocks.iter().zip(&srcs) {
        let mut out = vec![0u8; s.len()];
        pool.read(b, 0, &mut out).unwrap();
        assert!(&out == s);
    }
}

#[test]
fn bad_ranges_and_device_errors_are_reported() {
    let device = FakeDevice { fail_h2d_code: 700, ..FakeDevice::default() };
    let pool = fake_pool(&device);
    let copier = StreamCopier::new(pool.clone(), tuning()).unwrap();
    let block = pool.allocate(4096).unwrap();
    let err = copier.upload(&block, 0, &[1u8; 5000], 0).unwrap_err();
    assert!(matches!(err, CopyError::Pool(PoolError::InvalidSize(_))), "{err}");
    let err = copier.download(&block, 4000, &mut [0u8; 100], 0).unwrap_err();
    assert!(err.to_string().contains("outside the block"), "{err}");
    for n in [10usize, 4096] {
        let err = copier.upload(&block, 0, &vec![1u8; n], 0).unwrap_err();
        assert_eq!(err, CopyError::Device { call: "copy_h2d_async", code: 700 });
        assert_eq!(err.to_string(), "copy_h2d_async failed with device error 700");
    }
    let other = MemoryPool::for_host(PoolConfig::default()).allocate(16).unwrap();
    assert_eq!(copier.upload(&other, 0, &[1], 0).unwrap_err(), CopyError::Pool(PoolError::WrongPool));
    block.free().unwrap();
    assert_eq!(copier.download(&block, 0, &mut [0u8; 8], 0).unwrap_err(), CopyError::Pool(PoolError::Freed));
}

#[test]
fn a_table_without_the_async_slot_is_refused() {
    let pool = MemoryPool::for_host(PoolConfig::default());
    let err = StreamCopier::new(pool, CopyTuning::default()).err().unwrap();
    assert!(err.contains("no async copy functions"), "{err}");
}

#[test]
fn default_tuning_sends_small_uploads_direct_and_stages_downloads() {
    let device = FakeDevice::default();
    let pool = fake_pool(&device);
    let copier = StreamCopier::new(pool.clone(), CopyTuning::default()).unwrap();
    let block = pool.allocate(8 << 20).unwrap();
    let src = data(1 << 20, 3);
    copier.upload(&block, 0, &src, 0).unwrap();
    assert_eq!(copier.stats().direct_copies, 1, "1 MiB uploads go direct");
    let mut out = vec![0u8; 1 << 20];
    copier.download(&block, 0, &mut out, 0).unwrap();
    assert!(out == src);
    let big = data(8 << 20, 4);
    copier.upload(&block, 0, &big, 0).unwrap();
    let mut out = vec![0u8; 8 << 20];
    copier.download(&block, 0, &mut out, 0).unwrap();
    assert!(out == big);
    let s = copier.stats();
    assert_eq!(s.direct_copies, 1, "downloads and 8 MiB uploads are staged: {s:?}");
    assert!(s.staged_chunks >= 16 + 16, "{s:?}");
}
