//! Property tests of admission accounting over random submit / release / borrow sequences.

use proptest::prelude::*;

use super::admission::{Decision, Evaluator};
use super::partition::{PartitionLimits, PartitionManager};
use super::qos::{QosClass, TaskSpec, PPM};

#[derive(Debug, Clone)]
enum Op {
    Submit { class: u8, request: u64, extra: u64, bw: u32, priority: i8 },
    Release { pick: usize, residual: u64 },
    Borrow(u64),
    Unborrow(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..3, 0u64..400, 0u64..200, 1u32..600_000, -3i8..3)
            .prop_map(|(class, request, extra, bw, priority)| Op::Submit { class, request, extra, bw, priority }),
        3 => (0usize..64, 0u64..300).prop_map(|(pick, residual)| Op::Release { pick, residual }),
        1 => (0u64..200).prop_map(Op::Borrow),
        1 => (0u64..200).prop_map(Op::Unborrow),
    ]
}

fn spec(class: u8, request: u64, extra: u64, bw: u32, priority: i8) -> TaskSpec {
    let share = bw as f64 / PPM as f64;
    let s = match class {
        0 => TaskSpec::guaranteed(request, share),
        1 => TaskSpec::burstable(request, request + extra, share),
        _ => TaskSpec::best_effort(Some(extra), share),
    };
    s.map(|s| s.with_priority(priority as i32)).expect("generated specs are valid")
}

/// Shadow model of what the evaluator should hold.
#[derive(Default)]
struct Model {
    admitted: Vec<(u64, TaskSpec)>,
    queued: Vec<(u64, TaskSpec)>,
    borrowed: u64,
}

impl Model {
    /// Move tasks the evaluator admitted from its queue into the admitted set.
    fn drained(&mut self, keys: &[u64]) -> Result<(), TestCaseError> {
        for k in keys {
            let i = self.queued.iter().position(|(q, _)| q == k);
            prop_assert!(i.is_some(), "drained a task that was not queued");
            if let Some(i) = i {
                let entry = self.queued.remove(i);
                self.admitted.push(entry);
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn admission_never_overcommits(total in 100u64..1_000, ops in proptest::collection::vec(op(), 1..120)) {
        let mut ev: Evaluator<u64> = Evaluator::new(total, PPM);
        let mut m = Model::default();
        let mut next = 0u64;
        for op in ops {
            match op {
                Op::Submit { class, request, extra, bw, priority } => {
                    let s = spec(class, request, extra, bw, priority);
                    let before = ev.stats();
                    let fits = before.reserved_memory + before.borrowed_memory + s.memory_request <= total
                        && before.reserved_bandwidth_ppm + s.reserved_bandwidth_ppm() <= PPM;
                    next += 1;
                    let d = ev.evaluate(next, &s).expect("fresh id");
                    match &d {
                        Decision::Admit => {
                            prop_assert!(fits || s.class == QosClass::BestEffort, "admitted without room");
                            if s.class == QosClass::BestEffort {
                                prop_assert!(before.available_memory > 0 && before.queued_tasks == 0);
                            }
                            m.admitted.push((next, s.clone()));
                        }
                        Decision::Queue { position } => {
                            prop_assert!(s.class != QosClass::BestEffort, "best effort is never queued");
                            prop_assert!(*position >= 1 && *position <= before.queued_tasks + 1);
                            prop_assert_eq!(ev.queue_position(&next), Some(*position));
                            m.queued.push((next, s.clone()));
                        }
                        Decision::Reject { reason } => {
                            prop_assert!(!reason.is_empty());
                            // Reserved classes are only rejected when they can never fit.
                            if s.class != QosClass::BestEffort {
                                prop_assert!(s.memory_request > total || before.queued_tasks >= 4096);
                            }
                        }
                    }
                }
                Op::Release { pick, residual } => {
                    let keys: Vec<u64> = m.admitted.iter().map(|(k, _)| *k).chain(m.queued.iter().map(|(k, _)| *k)).collect();
                    if keys.is_empty() { continue; }
                    let key = keys[pick % keys.len()];
                    let was_admitted = ev.is_admitted(&key);
                    let request = m.admitted.iter().find(|(k, _)| *k == key).map_or(0, |(_, s)| s.memory_request);
                    let before = ev.stats();
                    let newly = ev.release(&key, residual).expect("known id");
                    m.admitted.retain(|(k, _)| *k != key);
                    m.queued.retain(|(k, _)| *k != key);
                    if was_admitted { m.borrowed += residual.min(request); }
                    let added = if was_admitted { residual.min(request) } else { 0 };
                    prop_assert_eq!(ev.stats().borrowed_memory, before.borrowed_memory + added);
                    m.drained(&newly)?;
                }
                Op::Borrow(bytes) => {
                    let avail = ev.available_memory();
                    let r = ev.borrow(bytes);
                    prop_assert_eq!(r.is_ok(), bytes <= avail);
                    if r.is_ok() { m.borrowed += bytes; }
                }
                Op::Unborrow(bytes) => {
                    let b = bytes.min(m.borrowed);
                    m.borrowed -= b;
                    let newly = ev.unborrow(b);
                    m.drained(&newly)?;
                }
            }
            let st = ev.stats();
            // The core invariants.
            prop_assert!(st.guaranteed_memory <= st.reserved_memory);
            prop_assert!(st.reserved_memory + st.borrowed_memory <= total, "over-committed: {:?}", st);
            prop_assert!(st.reserved_bandwidth_ppm <= PPM);
            prop_assert_eq!(st.borrowed_memory, m.borrowed);
            prop_assert_eq!(st.queued_tasks, m.queued.len());
            prop_assert_eq!(st.admitted_tasks, m.admitted.len());
            let reserved: u64 = m.admitted.iter().map(|(_, s)| s.memory_request).sum();
            prop_assert_eq!(st.reserved_memory, reserved);
            // Strict order: the queue head does not fit, or it would have been drained.
            if let Some((_, head)) = m.queued.iter().find(|(k, _)| ev.queue_position(k) == Some(1)) {
                let fits = st.reserved_memory + st.borrowed_memory + head.memory_request <= total
                    && st.reserved_bandwidth_ppm + head.bandwidth_ppm <= PPM;
                prop_assert!(!fits, "queue head fits but was left waiting");
            }
        }
    }

    #[test]
    fn partitions_never_exceed_device(quotas in proptest::collection::vec((1u64..500, 1u32..500_000), 1..6),
                                      tasks in proptest::collection::vec((0usize..6, 0u64..300, 1u32..300_000), 0..40)) {
        let total = 1_000u64;
        let mut pm: PartitionManager<u64> = PartitionManager::new(total, PPM);
        let mut made = Vec::new();
        for (i, (mem, cpu)) in quotas.iter().enumerate() {
            let limits = PartitionLimits::default().memory(*mem).compute(*cpu as f64 / PPM as f64).expect("valid share");
            if pm.create_partition(&format!("p{i}"), "p", &limits).is_ok() {
                made.push(format!("p{i}"));
            }
        }
        let sum: u64 = pm.partitions().map(|p| p.memory_quota).sum();
        let cpu: u32 = pm.partitions().map(|p| p.compute_ppm).sum();
        prop_assert!(sum <= total && cpu <= PPM);
        prop_assert_eq!(sum + pm.default_stats().total_memory, total);
        for (k, (pi, req, bw)) in tasks.into_iter().enumerate() {
            let part = made.get(pi).map(String::as_str);
            let s = TaskSpec::guaranteed(req, bw as f64 / PPM as f64).expect("valid");
            let d = pm.evaluate(k as u64, &s, part).expect("known partition");
            let pool = pm.pool(part).expect("pool").stats();
            prop_assert!(pool.reserved_memory <= pool.total_memory);
            prop_assert!(pool.reserved_bandwidth_ppm <= pool.total_bandwidth_ppm);
            if d == Decision::Admit {
                prop_assert!(req <= pool.total_memory);
            }
        }
        let dev = pm.device_stats();
        prop_assert!(dev.reserved_memory + dev.borrowed_memory <= total);
    }
}
