//! Dispatch tests: the kernel cache against a model.

use proptest::prelude::*;

use super::*;

fn key(i: u8) -> KernelKey {
    KernelKey {
        source_hash: hash_source(&[i]),
        options: "-O3".into(),
        arch: "sm_90".into(),
        compiler_version: "12.4".into(),
    }
}

#[test]
fn cache_evicts_least_recently_used() {
    let cache: KernelCache<u32> = KernelCache::new(300, 10).unwrap();
    cache.put(key(1), vec![0; 100], Some(1)).unwrap();
    cache.put(key(2), vec![0; 100], Some(2)).unwrap();
    cache.put(key(3), vec![0; 100], None).unwrap();
    assert!(cache.get(&key(1)).is_some()); // 2 is now the oldest
    let evicted = cache.put(key(4), vec![0; 50], None).unwrap();
    assert_eq!(evicted, vec![(key(2), Some(2))]);
    assert!(cache.get(&key(2)).is_none());
    let mut k = key(1);
    k.arch = "sm_80".into();
    assert!(cache.get(&k).is_none(), "another arch is another module");
    assert!(cache.put(key(9), vec![0; 301], None).is_err());
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.evictions, s.rejected, s.entries, s.bytes), (1, 2, 1, 1, 3, 250));
    assert_eq!(hash_source(b""), "6c62272e07bb014262b821756295c58d");
    assert_ne!(hash_source(b"a"), hash_source(b"b"));
}

#[derive(Debug, Clone)]
enum CacheOp {
    Put(u8, u16),
    Get(u8),
    Remove(u8),
}

fn cache_op() -> impl Strategy<Value = CacheOp> {
    prop_oneof![
        3 => (0u8..12, 1u16..400).prop_map(|(k, n)| CacheOp::Put(k, n)),
        3 => (0u8..12).prop_map(CacheOp::Get),
        1 => (0u8..12).prop_map(CacheOp::Remove),
    ]
}

proptest! {
    /// The cache behaves exactly like a simple recency list with the same limits.
    #[test]
    fn cache_matches_a_model(ops in proptest::collection::vec(cache_op(), 1..200),
                             cap in 200u64..2000, max in 1usize..8) {
        let cache: KernelCache<u8> = KernelCache::new(cap, max).unwrap();
        let mut model: Vec<(u8, u64)> = Vec::new(); // least recent first
        let (mut hits, mut misses, mut evictions) = (0u64, 0u64, 0u64);
        for op in ops {
            match op {
                CacheOp::Put(k, n) => {
                    let n = n as u64;
                    let r = cache.put(key(k), vec![k; n as usize], Some(k));
                    if n > cap {
                        prop_assert!(r.is_err());
                        continue;
                    }
                    model.retain(|e| e.0 != k);
                    let mut expect_evicted = Vec::new();
                    while model.len() + 1 > max || model.iter().map(|e| e.1).sum::<u64>() + n > cap {
                        expect_evicted.push(model.remove(0).0);
                    }
                    evictions += expect_evicted.len() as u64;
                    model.push((k, n));
                    let got: Vec<u8> = r.unwrap().into_iter().map(|(_, h)| h.unwrap()).collect();
                    prop_assert_eq!(got, expect_evicted);
                }
                CacheOp::Get(k) => {
                    let got = cache.get(&key(k));
                    match model.iter().position(|e| e.0 == k) {
                        Some(i) => {
                            hits += 1;
                            let e = model.remove(i);
                            model.push(e);
                            let (image, handle) = got.unwrap();
                            prop_assert_eq!(image.len() as u64, e.1);
                            prop_assert!(image.iter().all(|&b| b == k));
                            prop_assert_eq!(handle, Some(k));
                        }
                        None => {
                            misses += 1;
                            prop_assert!(got.is_none());
                        }
                    }
                }
                CacheOp::Remove(k) => {
                    let had = model.iter().any(|e| e.0 == k);
                    model.retain(|e| e.0 != k);
                    prop_assert_eq!(cache.remove(&key(k)), had);
                }
            }
            cache.check().map_err(TestCaseError::fail)?;
            let s = cache.stats();
            prop_assert_eq!((s.hits, s.misses, s.evictions), (hits, misses, evictions));
            prop_assert_eq!(s.bytes, model.iter().map(|e| e.1).sum::<u64>());
            let keys: Vec<KernelKey> = model.iter().map(|e| key(e.0)).collect();
            prop_assert_eq!(cache.keys_lru_first(), keys);
        }
    }
}
