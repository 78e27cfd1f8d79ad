//! GPU-time accounting of one task: the event pairs of its launches still on the device,
//! retired (and charged) once they complete, a GPU-time budget, and the bound on how many of
//! its launches may wait in the device's queue at once. Pure apart from the `DeviceEvents`
//! it is given, so fake devices and a fake clock test it exactly.

use std::collections::VecDeque;
use std::sync::Arc;

/// The start and end events recorded around one launch on its stream. The handles are
/// opaque here: the device layer (the CUDA extension) owns the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventPair {
    pub start: usize,
    pub end: usize,
}

/// Where a launch stands on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll {
    /// Finished after running this many nanoseconds.
    Done(u64),
    /// Still queued or running.
    Pending,
    /// The events cannot tell (an error): retire the pair uncharged.
    Failed,
}

/// What the device layer does with event pairs (the CUDA extension passes C functions).
pub trait DeviceEvents: Send + Sync {
    fn poll(&self, pair: EventPair) -> Poll;
    /// The pair is retired: the device layer may reuse or destroy its events.
    fn recycle(&self, pair: EventPair);
}

/// A task's launches still on the device, oldest first.
#[derive(Default)]
pub struct InFlight {
    pairs: VecDeque<EventPair>,
    events: Option<Arc<dyn DeviceEvents>>,
    /// Recent device time per launch (see `next_estimate`), once one has finished.
    avg_ns: Option<f64>,
    /// Since when (on the caller's clock) the front launch can have been running: its
    /// enqueue or the moment its predecessor was seen finished, whichever is later.
    front_since: u64,
}

/// Launches a task may always have queued, whatever their expected length.
pub const MIN_QUEUED: usize = 2;

/// The time per launch after one that ran `t` ns: up to a longer launch at once, down
/// slowly (weight 1/8 on the newest). A task mixing long kernels with short ones (GEMM slices
/// and a copy or fill between them) is then bounded by its long ones: an average pulled down
/// by the short ones let 2 ms of budget queue 9 slices on the H100.
fn next_estimate(a: f64, t: f64) -> f64 {
    if t >= a {
        t
    } else {
        0.875 * a + 0.125 * t
    }
}

impl InFlight {
    pub fn push(&mut self, pair: EventPair, events: &Arc<dyn DeviceEvents>) {
        self.push_at(pair, events, 0);
    }

    /// `push` of a launch enqueued at `now_ns` (the clock `limit_at` and `retire_at` use).
    pub fn push_at(&mut self, pair: EventPair, events: &Arc<dyn DeviceEvents>, now_ns: u64) {
        if self.events.is_none() {
            self.events = Some(events.clone());
        }
        if self.pairs.is_empty() {
            self.front_since = now_ns;
        }
        self.pairs.push_back(pair);
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// How many launches may be queued so that about `budget_ns` of device work waits: the
    /// budget over the recent time per launch, at least `MIN_QUEUED` (and just that until a
    /// launch has been timed).
    pub fn limit(&self, budget_ns: u64) -> usize {
        self.limit_at(budget_ns, 0)
    }

    /// `limit` at `now_ns`: a front launch still running for longer than the estimate per
    /// launch raises it to that time. The estimate comes from launches that finished, so
    /// after short ones (a task's casts and copies before its GEMMs) it would let a burst
    /// of long launches queue until the first of them finished; the front's running time
    /// (a lower bound on its length) catches that while it runs.
    pub fn limit_at(&self, budget_ns: u64, now_ns: u64) -> usize {
        let running = if self.pairs.is_empty() { 0.0 } else { now_ns.saturating_sub(self.front_since) as f64 };
        match self.avg_ns.map(|a| a.max(running)) {
            Some(avg) if avg >= 1.0 => ((budget_ns as f64 / avg) as usize).max(MIN_QUEUED),
            Some(_) => usize::MAX,
            None => MIN_QUEUED,
        }
    }

    /// Whether this task's launches are measured on the device (it has recorded a pair).
    pub fn measured(&self) -> bool {
        self.events.is_some()
    }

    /// Retire the finished launches at the front and return the GPU nanoseconds they ran.
    /// Only the front is polled: a task's launches run in order on its stream, and one poll
    /// per launch keeps the gate cheap.
    pub fn retire(&mut self) -> u64 {
        self.retire_at(0)
    }

    /// `retire`, seen at `now_ns`: the next launch can have started running no earlier.
    pub fn retire_at(&mut self, now_ns: u64) -> u64 {
        let Some(events) = &self.events else { return 0 };
        let mut ns = 0u64;
        while let Some(&pair) = self.pairs.front() {
            match events.poll(pair) {
                Poll::Pending => break,
                Poll::Done(t) => {
                    ns = ns.saturating_add(t);
                    self.avg_ns = Some(self.avg_ns.map_or(t as f64, |a| next_estimate(a, t as f64)));
                }
                Poll::Failed => {}
            }
            self.pairs.pop_front();
            events.recycle(pair);
            self.front_since = self.front_since.max(now_ns);
        }
        ns
    }

    /// The task ended: retire what finished and hand the rest back uncharged.
    pub fn drain(&mut self) -> u64 {
        let ns = self.retire();
        if let Some(events) = &self.events {
            for pair in self.pairs.drain(..) {
                events.recycle(pair);
            }
        }
        ns
    }
}

/// A task's GPU-time allowance: `share` of the device's time, with `burst_ns` of credit. It
/// is charged after the fact (a launch's time is known once it finished), so it may go into
/// debt; a task in debt waits at the gate until the debt is repaid.
#[derive(Debug, Clone)]
pub struct GpuBudget {
    share: f64,
    burst_ns: f64,
    credit_ns: f64,
    last_ns: u64,
}

impl GpuBudget {
    /// `share` in (0, 1] of the device's time; starts with the full burst of credit.
    pub fn new(share: f64, burst_ns: u64, now_ns: u64) -> Self {
        let share = if share.is_finite() && share > 0.0 { share.min(1.0) } else { 1e-6 };
        GpuBudget { share, burst_ns: burst_ns as f64, credit_ns: burst_ns as f64, last_ns: now_ns }
    }

    fn refill(&mut self, now_ns: u64) {
        if now_ns > self.last_ns {
            let earned = (now_ns - self.last_ns) as f64 * self.share;
            self.credit_ns = (self.credit_ns + earned).min(self.burst_ns);
            self.last_ns = now_ns;
        }
    }

    /// Charge `gpu_ns` of device time used.
    pub fn charge(&mut self, gpu_ns: u64, now_ns: u64) {
        self.refill(now_ns);
        self.credit_ns -= gpu_ns as f64;
    }

    /// Ok when the task may launch now, else how many ns until its debt is repaid.
    pub fn check(&mut self, now_ns: u64) -> Result<(), u64> {
        self.refill(now_ns);
        if self.credit_ns >= 0.0 {
            return Ok(());
        }
        Err(((-self.credit_ns / self.share).ceil() as u64).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::collections::HashMap;

    /// A fake device: launch `i` runs `run_ns[i]` nanoseconds and finishes at `finish_at[i]`
    /// on a clock the test moves by hand.
    #[derive(Default)]
    struct FakeDevice {
        now: Mutex<u64>,
        launches: Mutex<HashMap<usize, (u64, u64)>>,
        recycled: Mutex<Vec<usize>>,
    }

    impl FakeDevice {
        fn launch(&self, id: usize, run_ns: u64, finish_at: u64) -> EventPair {
            self.launches.lock().insert(id, (run_ns, finish_at));
            EventPair { start: id, end: id + 1_000_000 }
        }
    }

    impl DeviceEvents for FakeDevice {
        fn poll(&self, pair: EventPair) -> Poll {
            match self.launches.lock().get(&pair.start) {
                Some(&(run, at)) if at <= *self.now.lock() => Poll::Done(run),
                Some(_) => Poll::Pending,
                None => Poll::Failed,
            }
        }

        fn recycle(&self, pair: EventPair) {
            self.recycled.lock().push(pair.start);
        }
    }

    #[test]
    fn retires_finished_launches_in_order_and_charges_their_gpu_time() {
        let device = Arc::new(FakeDevice::default());
        let events: Arc<dyn DeviceEvents> = device.clone();
        let mut inflight = InFlight::default();
        assert!(!inflight.measured());
        inflight.push(device.launch(1, 300, 10), &events);
        inflight.push(device.launch(2, 500, 20), &events);
        inflight.push(device.launch(3, 700, 30), &events);
        assert_eq!(inflight.retire(), 0, "nothing finished yet");
        *device.now.lock() = 25;
        assert_eq!(inflight.retire(), 800);
        assert_eq!(inflight.len(), 1);
        assert_eq!(*device.recycled.lock(), vec![1, 2]);
        *device.now.lock() = 30;
        assert_eq!(inflight.retire(), 700);
        assert!(inflight.is_empty());
    }

    #[test]
    fn the_queue_limit_follows_the_time_per_launch() {
        let device = Arc::new(FakeDevice::default());
        let events: Arc<dyn DeviceEvents> = device.clone();
        let mut inflight = InFlight::default();
        assert_eq!(inflight.limit(2_000_000), MIN_QUEUED, "untimed: the minimum");
        // tiny kernels of 5 us: 400 of them make 2 ms of queued work
        for i in 0..8 {
            inflight.push(device.launch(i, 5_000, 0), &events);
        }
        inflight.retire();
        assert_eq!(inflight.limit(2_000_000), 400);
        // then 1.5 ms GEMMs: the limit falls to the minimum within a few launches
        for i in 8..16 {
            inflight.push(device.launch(i, 1_500_000, 0), &events);
        }
        inflight.retire();
        assert_eq!(inflight.limit(2_000_000), MIN_QUEUED);
    }

    #[test]
    fn short_launches_between_long_ones_do_not_loosen_the_bound() {
        // 400 us GEMM slices with a 5 us launch after each: 2 ms of budget is about 5 slices
        let device = Arc::new(FakeDevice::default());
        let events: Arc<dyn DeviceEvents> = device.clone();
        let mut inflight = InFlight::default();
        for i in 0..16 {
            let run = if i % 2 == 0 { 400_000 } else { 5_000 };
            inflight.push(device.launch(i, run, 0), &events);
            inflight.retire();
            if i > 0 {
                let limit = inflight.limit(2_000_000);
                assert!((MIN_QUEUED..=6).contains(&limit), "launch {i}: limit {limit}");
            }
        }
        // and once the long kernels stop, the estimate comes down within a few dozen launches
        for i in 16..64 {
            inflight.push(device.launch(i, 5_000, 0), &events);
        }
        inflight.retire();
        assert!(inflight.limit(2_000_000) > 20, "limit {}", inflight.limit(2_000_000));
    }

    #[test]
    fn a_long_launch_still_running_tightens_the_bound() {
        // 5 us casts finish first; then a 400 us slice runs: before it finishes, its running
        // time already caps how many more may queue behind it
        let device = Arc::new(FakeDevice::default());
        let events: Arc<dyn DeviceEvents> = device.clone();
        let mut inflight = InFlight::default();
        for i in 0..4 {
            inflight.push_at(device.launch(i, 5_000, 0), &events, 0);
        }
        *device.now.lock() = 10;
        inflight.retire_at(20_000);
        assert_eq!(inflight.limit_at(2_000_000, 20_000), 400, "short launches only");
        inflight.push_at(device.launch(10, 400_000, 1_000_000), &events, 30_000);
        assert_eq!(inflight.limit_at(2_000_000, 40_000), 200, "10 us into the slice");
        assert_eq!(inflight.limit_at(2_000_000, 430_000), 5, "400 us into it");
        assert_eq!(inflight.limit_at(2_000_000, 2_030_000), MIN_QUEUED, "longer than the budget");
        // behind a launch that was seen to finish at t, the next one runs from t at the earliest
        inflight.push_at(device.launch(11, 400_000, 1_000_000), &events, 40_000);
        *device.now.lock() = 1_000_000;
        inflight.retire_at(3_000_000);
        assert!(inflight.is_empty());
        inflight.push_at(device.launch(12, 400_000, 9_000_000), &events, 3_000_000);
        assert_eq!(inflight.limit_at(2_000_000, 3_000_000), 5, "the estimate: 400 us a launch");
    }

    #[test]
    fn drain_hands_back_unfinished_pairs_uncharged() {
        let device = Arc::new(FakeDevice::default());
        let events: Arc<dyn DeviceEvents> = device.clone();
        let mut inflight = InFlight::default();
        inflight.push(device.launch(1, 300, 0), &events);
        inflight.push(device.launch(2, 500, 99), &events);
        inflight.push(EventPair { start: 77, end: 78 }, &events); // unknown: Failed
        assert_eq!(inflight.drain(), 300);
        assert!(inflight.is_empty());
        assert_eq!(*device.recycled.lock(), vec![1, 2, 77]);
    }

    #[test]
    fn budget_goes_into_debt_and_waits_it_off_at_its_share() {
        // a 20% share with 1 ms of credit: a 3 ms launch leaves 2 ms of debt, repaid in 10 ms
        let mut budget = GpuBudget::new(0.2, 1_000_000, 0);
        assert_eq!(budget.check(0), Ok(()));
        budget.charge(3_000_000, 0);
        assert_eq!(budget.check(0), Err(10_000_000));
        assert_eq!(budget.check(5_000_000), Err(5_000_000));
        assert_eq!(budget.check(10_000_000), Ok(()));
        // credit never grows past the burst
        assert_eq!(budget.check(1_000_000_000), Ok(()));
        budget.charge(1_000_001, 1_000_000_000);
        assert_eq!(budget.check(1_000_000_000), Err(5));
    }

    #[test]
    fn a_busy_task_gets_its_share_of_device_time() {
        // launches of 1 ms each, started whenever the budget allows, for one second
        let mut budget = GpuBudget::new(0.25, 2_000_000, 0);
        let (mut now, mut used) = (0u64, 0u64);
        while now < 1_000_000_000 {
            match budget.check(now) {
                Ok(()) => {
                    budget.charge(1_000_000, now + 1_000_000);
                    used += 1_000_000;
                    now += 1_000_000;
                }
                Err(wait) => now += wait,
            }
        }
        let share = used as f64 / now as f64;
        assert!((share - 0.25).abs() < 0.01, "got {share}");
    }
}
