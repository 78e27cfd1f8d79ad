//! Threaded tests of the executor with plain Rust jobs: results, queueing, cancellation,
//! memory limits through the thread's `TaskContext`, and fair sharing on real threads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::executor::{Outcome, SchedulerConfig, Submission, TaskScheduler};
use super::qos::TaskSpec;
use super::task::TaskState;
use super::SchedError;
use crate::context;

fn sched(total_memory: u64, workers: usize) -> TaskScheduler<String> {
    let config = SchedulerConfig { total_memory, workers, launch_rate: 0.0, fair_share_idle_ns: 50_000_000, ..Default::default() };
    TaskScheduler::new(config).expect("valid config")
}

fn sub(spec: TaskSpec) -> Submission {
    Submission { name: "t".into(), spec, partition: None, lane: 0 }
}

fn outcome(s: &TaskScheduler<String>, id: u64) -> String {
    assert_eq!(s.wait(id, Some(Duration::from_secs(10))), Ok(true));
    s.with_outcome(id, |o| match o {
        Outcome::Completed(v) => format!("ok:{v}"),
        Outcome::Failed(e) => format!("err:{e}"),
        Outcome::Cancelled(_) => "cancelled".into(),
        Outcome::Lost(m) => format!("lost:{m}"),
    })
    .expect("known")
    .expect("finished")
}

#[test]
fn runs_jobs_and_reports_failures() {
    let s = sched(1000, 2);
    let spec = TaskSpec::guaranteed(10, 0.1).expect("valid");
    let (a, _) = s.submit(sub(spec.clone()), Box::new(|_| Outcome::Completed("hi".into()))).expect("admitted");
    let (b, _) = s.submit(sub(spec), Box::new(|_| Outcome::Failed("bad".into()))).expect("admitted");
    assert_eq!(outcome(&s, a), "ok:hi");
    assert_eq!(outcome(&s, b), "err:bad");
    assert_eq!(s.task_stats(b).map(|t| t.state), Ok(TaskState::Failed));
    let too_big = TaskSpec::guaranteed(5000, 0.1).expect("valid");
    assert!(matches!(s.submit(sub(too_big), Box::new(|_| Outcome::Lost(String::new()))), Err(SchedError::Rejected(_))));
}

#[test]
fn queued_task_runs_after_release_and_cancel_skips() {
    let s = sched(100, 2);
    let go = Arc::new(AtomicBool::new(false));
    let g = go.clone();
    let full = TaskSpec::guaranteed(100, 0.1).expect("valid");
    let (a, _) = s
        .submit(sub(full.clone()), Box::new(move |_| {
            while !g.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            Outcome::Completed("a".into())
        }))
        .expect("admitted");
    let (b, pos_b) = s.submit(sub(full.clone()), Box::new(|_| Outcome::Completed("b".into()))).expect("queued");
    let (c, pos_c) = s.submit(sub(full), Box::new(|_| Outcome::Completed("c".into()))).expect("queued");
    assert_eq!((pos_b, pos_c), (Some(1), Some(2)));
    assert_eq!(s.cancel(b), Ok(true));
    go.store(true, Ordering::Release);
    assert_eq!(outcome(&s, a), "ok:a");
    assert_eq!(outcome(&s, b), "cancelled");
    assert_eq!(outcome(&s, c), "ok:c");
}

#[test]
fn memory_limit_is_enforced_through_the_thread_context() {
    let s = sched(1000, 1);
    let spec = TaskSpec::burstable(100, 500, 0.1).expect("valid");
    let (id, _) = s
        .submit(sub(spec), Box::new(|_| {
            let ctx = context::current().expect("task context installed");
            let first = ctx.charge(400).is_ok();
            let second = ctx.charge(200);
            ctx.release(400);
            Outcome::Completed(format!("{first} {}", second.err().unwrap_or_default()))
        }))
        .expect("admitted");
    let out = outcome(&s, id);
    assert!(out.starts_with("ok:true ") && out.contains("limit of 500"), "{out}");
    assert!(context::current().is_none(), "context leaks out of the worker");
    let st = s.stats();
    assert_eq!((st.device.reserved_memory, st.device.borrowed_memory), (0, 0));
}

#[test]
fn running_cancel_stops_at_launch_gate() {
    let s = sched(1000, 1);
    let spec = TaskSpec::guaranteed(0, 0.5).expect("valid");
    let (id, _) = s
        .submit(sub(spec), Box::new(|task| loop {
            if task.begin_launch().is_err() {
                return Outcome::Cancelled(None);
            }
            task.end_launch(Some(1000));
            std::thread::sleep(Duration::from_millis(1));
        }))
        .expect("admitted");
    while s.task_stats(id).map(|t| t.launches).unwrap_or(0) < 3 {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(s.cancel(id), Ok(true));
    assert_eq!(outcome(&s, id), "cancelled");
}

#[test]
fn threads_share_the_device_by_weight() {
    let s = sched(1000, 2);
    let barrier = Arc::new(Barrier::new(2));
    let stop = Arc::new(AtomicBool::new(false));
    let mut ids = Vec::new();
    for share in [0.75, 0.25] {
        let (b, st) = (barrier.clone(), stop.clone());
        let spec = TaskSpec::guaranteed(0, share).expect("valid");
        let job = Box::new(move |task: &Arc<super::task::Task>| {
            b.wait();
            while !st.load(Ordering::Acquire) {
                if task.begin_launch().is_ok() {
                    task.end_launch(Some(500_000));
                }
            }
            Outcome::Completed(String::new())
        });
        ids.push(s.submit(sub(spec), job).expect("admitted").0);
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Release);
    for id in &ids {
        outcome(&s, *id);
    }
    let busy: Vec<u64> = ids.iter().map(|id| s.task_stats(*id).map(|t| t.busy_ns).unwrap_or(0)).collect();
    let share = busy[0] as f64 / (busy[0] + busy[1]) as f64;
    assert!((share - 0.75).abs() < 0.03, "share {share} from {busy:?}");
}

#[test]
fn taken_outcomes_leave_the_record_and_clear_drops_the_rest() {
    let s = sched(1000, 1);
    let spec = TaskSpec::guaranteed(10, 0.1).expect("valid");
    let (a, _) = s.submit(sub(spec.clone()), Box::new(|_| Outcome::Completed("a".into()))).expect("admitted");
    let (b, _) = s.submit(sub(spec), Box::new(|_| Outcome::Completed("b".into()))).expect("admitted");
    assert_eq!(s.wait(a, Some(Duration::from_secs(10))), Ok(true));
    assert_eq!(s.wait(b, Some(Duration::from_secs(10))), Ok(true));
    assert!(matches!(s.take_outcome(a), Ok(Some(Outcome::Completed(v))) if v == "a"));
    assert!(matches!(s.take_outcome(a), Ok(None)), "an outcome is handed out once");
    assert_eq!(s.task_stats(a).map(|t| t.state), Ok(TaskState::Completed), "the stats stay");
    let mut seen = Vec::new();
    assert!(s.try_for_each_outcome(|v| seen.push(v.clone())));
    assert_eq!(seen, vec!["b".to_string()]);
    s.clear_outcomes();
    let mut left = 0;
    assert!(s.try_for_each_outcome(|_| left += 1));
    assert_eq!(left, 0);
}

/// A device whose launches finish when the test says so, each after running 1 ms.
#[derive(Default)]
struct ManualDevice {
    finished: parking_lot::Mutex<Vec<usize>>,
}

impl super::gpu_time::DeviceEvents for ManualDevice {
    fn poll(&self, pair: super::gpu_time::EventPair) -> super::gpu_time::Poll {
        if self.finished.lock().contains(&pair.start) {
            super::gpu_time::Poll::Done(1_000_000)
        } else {
            super::gpu_time::Poll::Pending
        }
    }

    fn recycle(&self, _pair: super::gpu_time::EventPair) {}
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn best_effort_queue_is_bounded_and_charged_in_gpu_time() {
    use super::gpu_time::{DeviceEvents, EventPair};
    let s = sched(1000, 1);
    let device = Arc::new(ManualDevice::default());
    let events: Arc<dyn DeviceEvents> = device.clone();
    let job_events = events.clone();
    let job = Box::new(move |task: &Arc<super::Task>| {
        for i in 0..3 {
            if task.begin_launch().is_err() {
                return Outcome::Cancelled(None);
            }
            task.end_launch_measured(EventPair { start: i, end: i }, &job_events);
        }
        Outcome::Completed(String::new())
    });
    let (id, _) = s.submit(sub(TaskSpec::best_effort(None, 0.5).expect("valid")), job).expect("admitted");
    // two launches go out; the third waits for the first to finish on the device
    wait_until("two queued launches", || s.task_stats(id).map(|t| t.queued_launches) == Ok(2));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(s.task_stats(id).map(|t| t.launches), Ok(2), "the bound let a third launch through");
    device.finished.lock().push(0);
    assert_eq!(s.wait(id, Some(Duration::from_secs(10))), Ok(true));
    let stats = s.task_stats(id).expect("known");
    assert_eq!(stats.launches, 3);
    assert_eq!(stats.gpu_ns, 1_000_000, "only the finished launch is charged");
    assert_eq!(stats.busy_ns, 1_000_000, "host enqueue time is not charged");
    // the third launch waited at the gate for the 20 ms the device kept the first
    assert!(stats.gate_wait_max_ns >= 20_000_000, "gate wait {} ns", stats.gate_wait_max_ns);
    assert!(stats.gate_wait_ns >= stats.gate_wait_max_ns);
}

#[test]
fn cancel_reaches_a_launch_waiting_for_the_device_queue() {
    use super::gpu_time::{DeviceEvents, EventPair};
    let s = sched(1000, 1);
    let events: Arc<dyn DeviceEvents> = Arc::new(ManualDevice::default());
    let refused = Arc::new(AtomicBool::new(false));
    let flag = refused.clone();
    let job = Box::new(move |task: &Arc<super::Task>| {
        for i in 0..10 {
            if task.begin_launch().is_err() {
                flag.store(true, Ordering::SeqCst);
                return Outcome::Cancelled(None);
            }
            task.end_launch_measured(EventPair { start: i, end: i }, &events);
        }
        Outcome::Completed(String::new())
    });
    let (id, _) = s.submit(sub(TaskSpec::best_effort(None, 0.5).expect("valid")), job).expect("admitted");
    wait_until("a full device queue", || s.task_stats(id).map(|t| t.queued_launches) == Ok(2));
    assert_eq!(s.cancel(id), Ok(true));
    assert_eq!(s.wait(id, Some(Duration::from_secs(5))), Ok(true));
    assert!(refused.load(Ordering::SeqCst), "the waiting launch was not refused");
    assert_eq!(s.task_stats(id).map(|t| t.launches), Ok(2));
}

#[test]
fn best_effort_work_yields_while_a_guaranteed_launch_is_on_the_device() {
    use super::gpu_time::{DeviceEvents, EventPair};
    let s = sched(1000, 2);
    let device = Arc::new(ManualDevice::default());
    let events: Arc<dyn DeviceEvents> = device.clone();
    let launched = Arc::new(AtomicBool::new(false));
    let release = Arc::new(AtomicBool::new(false));
    let (flag, hold) = (launched.clone(), release.clone());
    let urgent_job = Box::new(move |task: &Arc<super::Task>| {
        task.begin_launch().expect("granted");
        task.end_launch_measured(EventPair { start: 100, end: 100 }, &events);
        flag.store(true, Ordering::SeqCst);
        while !hold.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        Outcome::Completed(String::new())
    });
    let (urgent, _) = s.submit(sub(TaskSpec::guaranteed(10, 0.5).expect("valid")), urgent_job).expect("admitted");
    wait_until("the guaranteed launch", || launched.load(Ordering::SeqCst));
    let yield_job = Box::new(|task: &Arc<super::Task>| {
        let started = std::time::Instant::now();
        let waited = task.yield_to_urgent(5_000_000_000).expect("not cancelled");
        let again = task.yield_to_urgent(5_000_000_000).expect("not cancelled");
        Outcome::Completed(format!("{waited} {again} {}", started.elapsed().as_millis()))
    });
    let (polite, _) = s.submit(sub(TaskSpec::best_effort(None, 0.5).expect("valid")), yield_job).expect("admitted");
    std::thread::sleep(Duration::from_millis(40));
    device.finished.lock().push(100);
    let result = outcome(&s, polite);
    let parts: Vec<&str> = result.trim_start_matches("ok:").split(' ').collect();
    assert_eq!(&parts[..2], &["true", "false"], "got {result}");
    assert!(parts[2].parse::<u64>().expect("ms") >= 30, "it did not wait for the launch: {result}");
    release.store(true, Ordering::SeqCst);
    assert_eq!(s.wait(urgent, Some(Duration::from_secs(10))), Ok(true));
}

#[test]
fn the_fast_path_grants_at_once_or_says_it_would_wait() {
    use super::gpu_time::{DeviceEvents, EventPair};
    let s = sched(1000, 1);
    let device = Arc::new(ManualDevice::default());
    let events: Arc<dyn DeviceEvents> = device.clone();
    let job = Box::new(move |task: &Arc<super::Task>| {
        let mut seen = Vec::new();
        for i in 0..3 {
            // measured launches of a best-effort task: the third finds the queue full
            match task.try_begin_launch() {
                Some(Ok(())) => seen.push("now"),
                Some(Err(_)) => seen.push("cancelled"),
                None => {
                    seen.push("wait");
                    break;
                }
            }
            task.end_launch_measured(EventPair { start: i, end: i }, &events);
        }
        Outcome::Completed(seen.join(" "))
    });
    let (id, _) = s.submit(sub(TaskSpec::best_effort(None, 0.5).expect("valid")), job).expect("admitted");
    assert_eq!(outcome(&s, id), "ok:now now wait");
    let stats = s.task_stats(id).expect("known");
    assert_eq!((stats.launches, stats.gate_wait_max_ns), (2, 0), "no wait was counted for the fast path");
}

#[test]
fn the_fast_path_of_an_unmeasured_task_takes_bucket_tokens() {
    // 1 launch/s, burst 2: two launches granted at once, the third would wait (and the
    // refused try leaves the bucket as it was)
    let config = SchedulerConfig { total_memory: 1000, workers: 1, launch_rate: 1.0, launch_burst: 2.0, ..Default::default() };
    let s: TaskScheduler<String> = TaskScheduler::new(config).expect("valid config");
    let job = Box::new(|task: &Arc<super::Task>| {
        let mut seen = Vec::new();
        for _ in 0..4 {
            match task.try_begin_launch() {
                Some(Ok(())) => {
                    seen.push("now");
                    task.end_launch(Some(0));
                }
                Some(Err(_)) => seen.push("cancelled"),
                None => seen.push("wait"),
            }
        }
        Outcome::Completed(seen.join(" "))
    });
    let (id, _) = s.submit(sub(TaskSpec::guaranteed(10, 1.0).expect("valid")), job).expect("admitted");
    assert_eq!(outcome(&s, id), "ok:now now wait wait");
}

/// A task opens a launch, runs an inner one inside it (measured on the device or not), ends
/// the inner one, keeps the outer open 40 ms, then ends it; another task asks for the
/// device right after the inner end and must wait for the outer one.
fn nested_launch_holds_the_device(inner_measured: bool) {
    use super::gpu_time::{DeviceEvents, EventPair};
    let s = sched(1000, 2);
    let events: Arc<dyn DeviceEvents> = Arc::new(ManualDevice::default());
    let inner_done = Arc::new(AtomicBool::new(false));
    let flag = inner_done.clone();
    let outer = Box::new(move |task: &Arc<super::Task>| {
        task.begin_launch().expect("granted");
        task.begin_launch().expect("the inner launch of an op run by the op");
        let depth = task.launch_depth();
        let inner = if inner_measured {
            task.end_launch_measured(EventPair { start: 1, end: 1 }, &events);
            0
        } else {
            task.end_launch(Some(7))
        };
        let after_inner = task.launch_depth();
        flag.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(40));
        let outer = task.end_launch(Some(1000));
        Outcome::Completed(format!("{depth} {inner} {after_inner} {outer} {}", task.launch_depth()))
    });
    let spec = TaskSpec::guaranteed(10, 0.5).expect("valid");
    let (a, _) = s.submit(sub(spec.clone()), outer).expect("admitted");
    wait_until("the inner launch's end", || inner_done.load(Ordering::SeqCst));
    let other = Box::new(|task: &Arc<super::Task>| {
        let asked = std::time::Instant::now();
        task.begin_launch().expect("granted");
        task.end_launch(Some(0));
        Outcome::Completed(asked.elapsed().as_millis().to_string())
    });
    let (b, _) = s.submit(sub(spec), other).expect("admitted");
    // the inner end charged nothing and kept the device; the outer end charged the whole op,
    // or nothing when the inner launch's device time is charged (no double count)
    let charged = if inner_measured { 0 } else { 1000 };
    assert_eq!(outcome(&s, a), format!("ok:2 0 1 {charged} 0"));
    let waited: u64 = outcome(&s, b).trim_start_matches("ok:").parse().expect("ms");
    assert!(waited >= 20, "the other task got the device {waited} ms after asking, before the outer launch ended");
    assert_eq!(s.task_stats(a).map(|t| t.launches), Ok(2));
}

#[test]
fn a_launch_inside_a_launch_keeps_the_device_until_the_outer_one_ends() {
    nested_launch_holds_the_device(false);
}

#[test]
fn a_measured_launch_inside_a_launch_keeps_the_device_until_the_outer_one_ends() {
    nested_launch_holds_the_device(true);
}

#[test]
fn a_cancelled_inner_launch_leaves_the_outer_one_to_end() {
    let s = sched(1000, 1);
    let go = Arc::new(AtomicBool::new(false));
    let wait = go.clone();
    let job = Box::new(move |task: &Arc<super::Task>| {
        task.begin_launch().expect("granted");
        while !wait.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let inner = task.begin_launch().is_err();
        let depth = task.launch_depth();
        task.end_launch(Some(5));
        Outcome::Completed(format!("{inner} {depth} {}", task.launch_depth()))
    });
    let (id, _) = s.submit(sub(TaskSpec::guaranteed(10, 0.5).expect("valid")), job).expect("admitted");
    wait_until("the outer launch", || s.task_stats(id).map(|t| t.launches) == Ok(1));
    assert_eq!(s.cancel(id), Ok(true));
    go.store(true, Ordering::SeqCst);
    // the inner launch was refused, the outer one still open and then closed
    assert_eq!(outcome(&s, id), "ok:true 1 0");
}
