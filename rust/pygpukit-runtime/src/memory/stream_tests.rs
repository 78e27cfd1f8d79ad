//! Tests of the pool's stream ordering: per-stream caches and the graph pool's kept cache.

use std::sync::Arc;

use proptest::prelude::*;

use super::{MemoryPool, PoolConfig};

const MIB: u64 = 1024 * 1024;

fn pool(keep_cache: bool) -> Arc<MemoryPool> {
    MemoryPool::for_host(PoolConfig { quota: None, enable_eviction: false, keep_cache })
}

#[test]
fn a_freed_block_is_reused_on_its_own_stream_only() {
    for size in [4096, 3 * MIB] {
        let pool = pool(false);
        let a = pool.allocate_on(size, 7).unwrap();
        let ptr = a.ptr().unwrap();
        drop(a);
        assert!(pool.allocate_cached(size, 9).is_none(), "stream 9 must not see stream 7's block");
        let other = pool.allocate_on(size, 9).unwrap();
        assert_ne!(other.ptr().unwrap(), ptr, "a fresh block for stream 9");
        let (again, p) = pool.allocate_cached(size, 7).expect("stream 7 reuses its block at once");
        assert_eq!(p, ptr);
        drop((again, other));
        assert_eq!(pool.stats().used, 0);
        pool.check_invariants().unwrap();
    }
}

#[test]
fn free_all_cached_returns_every_streams_cache() {
    let pool = pool(false);
    for stream in 0..5 {
        drop(pool.allocate_on(1000, stream).unwrap());
        drop(pool.allocate_on(2 * MIB, stream).unwrap());
    }
    let s = pool.stats();
    assert_eq!(s.used, 0);
    assert_eq!(pool.free_all_cached(), s.cached);
    assert_eq!(pool.stats().reserved, 0);
    pool.check_invariants().unwrap();
}

#[test]
fn a_kept_cache_is_not_given_back_on_out_of_memory() {
    // A quota makes the second request fail; an ordinary pool frees its cache and succeeds.
    for (keep, expect_ok) in [(false, true), (true, false)] {
        let p = MemoryPool::for_host(PoolConfig {
            quota: Some(10 * MIB),
            enable_eviction: false,
            keep_cache: keep,
        });
        drop(p.allocate_on(8 * MIB, 1).unwrap());
        assert_eq!(p.allocate_on(8 * MIB, 2).is_ok(), expect_ok, "keep_cache={keep}");
        p.check_invariants().unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Random allocate/free traffic over four streams keeps the books exact, and a block is
    /// only ever handed out again on the stream that freed it.
    #[test]
    fn stream_traffic_keeps_the_books(ops in proptest::collection::vec((0u64..4, 1u64..3_000_000, any::<bool>()), 1..60)) {
        let pool = pool(false);
        let mut live: Vec<(super::Block, u64)> = Vec::new();
        let mut freed_on: std::collections::HashMap<u64, u64> = Default::default();
        for (stream, size, free_one) in ops {
            if free_one && !live.is_empty() {
                let (b, s) = live.swap_remove(0);
                freed_on.insert(b.ptr().unwrap(), s);
                drop(b);
            } else {
                let b = pool.allocate_on(size, stream).unwrap();
                let p = b.ptr().unwrap();
                if let Some(&s) = freed_on.get(&p) {
                    // Small blocks reuse exact pointers; large ones may start inside a freed
                    // range of this stream's segments only, so an exact match names its stream.
                    prop_assert_eq!(s, stream, "pointer {:#x} came back on another stream", p);
                }
                freed_on.remove(&p);
                live.push((b, stream));
            }
            pool.check_invariants().map_err(TestCaseError::fail)?;
        }
        live.clear();
        let s = pool.stats();
        prop_assert_eq!(s.used, 0);
        prop_assert_eq!(pool.free_all_cached(), s.cached);
    }
}
