//! Weighted fair sharing of the device (virtual time over measured busy time); pure, so a
//! simulated clock can test it.
//!
//! Each flow (a running task) has a virtual time that grows by `busy_ns / weight` per launch.
//! A free device slot goes to the waiting flow with the smallest virtual time. To keep shares
//! right when a flow is briefly between launches (running host code), a waiter whose virtual
//! time is ahead of such a recently active flow is held back until that flow asks again or
//! has been quiet for `idle_ns`; idle flows then rejoin at the system's virtual time, so no
//! flow can hoard credit while it does not use the device.

use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FlowState {
    /// Between launches (host work); blocks higher-vtime waiters while recently active.
    Thinking,
    /// Sleeping on its token bucket: deliberately off the device, blocks nobody.
    Throttled,
    Waiting { seq: u64 },
    Holding,
}

#[derive(Debug, Clone)]
struct Flow {
    weight: f64,
    band: i32,
    /// Flows in different lanes run on disjoint SMs (green contexts): they never hold each
    /// other back, nor count as contention for each other's GPU budget.
    lane: u32,
    vtime: f64,
    state: FlowState,
    last_active_ns: u64,
    busy_ns: u64,
    grants: u64,
}

/// What the device should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// The slot was given to this flow (it is now holding).
    To(u64),
    /// Nothing can be granted before this time (a thinking flow has precedence until then).
    WaitUntil(u64),
    /// Nothing to grant until some flow asks or releases.
    Idle,
}

#[derive(Debug, Clone)]
pub struct FairShare {
    slots: usize,
    holding: usize,
    idle_ns: u64,
    vclock: f64,
    seq: u64,
    flows: HashMap<u64, Flow>,
}

impl FairShare {
    /// `slots` concurrent grants (1 = exclusive device); `idle_ns` as in the module docs.
    pub fn new(slots: usize, idle_ns: u64) -> Self {
        FairShare { slots: slots.max(1), holding: 0, idle_ns, vclock: 0.0, seq: 0, flows: HashMap::new() }
    }

    fn recently_active(&self, f: &Flow, now: u64) -> bool {
        match f.state {
            FlowState::Thinking => now.saturating_sub(f.last_active_ns) < self.idle_ns,
            FlowState::Throttled => false,
            FlowState::Waiting { .. } | FlowState::Holding => true,
        }
    }

    /// The system virtual time: the smallest vtime of flows that use the device (monotone).
    fn advance_vclock(&mut self, now: u64) {
        let min = self
            .flows
            .values()
            .filter(|f| self.recently_active(f, now))
            .map(|f| f.vtime)
            .fold(f64::INFINITY, f64::min);
        if min.is_finite() && min > self.vclock {
            self.vclock = min;
        }
    }

    /// Register a flow with a positive weight; it starts at the system virtual time.
    pub fn add(&mut self, id: u64, weight: f64, band: i32, now: u64) {
        self.add_in_lane(id, weight, band, 0, now);
    }

    /// `add` for a flow in `lane` (see `Flow::lane`).
    pub fn add_in_lane(&mut self, id: u64, weight: f64, band: i32, lane: u32, now: u64) {
        self.advance_vclock(now);
        let weight = if weight.is_finite() && weight > 0.0 { weight } else { 1e-6 };
        let flow = Flow {
            weight,
            band,
            lane,
            vtime: self.vclock,
            state: FlowState::Thinking,
            last_active_ns: now,
            busy_ns: 0,
            grants: 0,
        };
        if let Some(old) = self.flows.insert(id, flow) {
            if old.state == FlowState::Holding {
                self.holding -= 1;
            }
        }
    }

    /// Forget a flow (task finished); frees its slot if it held one.
    pub fn remove(&mut self, id: u64) {
        if let Some(f) = self.flows.remove(&id) {
            if f.state == FlowState::Holding {
                self.holding -= 1;
            }
        }
    }

    /// The flow wants the device.
    pub fn request(&mut self, id: u64, now: u64) {
        self.advance_vclock(now);
        let vclock = self.vclock;
        let idle_ns = self.idle_ns;
        self.seq += 1;
        let seq = self.seq;
        if let Some(f) = self.flows.get_mut(&id) {
            let was_idle = match f.state {
                FlowState::Thinking => now.saturating_sub(f.last_active_ns) >= idle_ns,
                FlowState::Throttled => true,
                FlowState::Waiting { .. } | FlowState::Holding => return,
            };
            if was_idle && f.vtime < vclock {
                f.vtime = vclock;
            }
            f.state = FlowState::Waiting { seq };
        }
    }

    /// The flow stops waiting without a grant (cancelled).
    pub fn withdraw(&mut self, id: u64, now: u64) {
        if let Some(f) = self.flows.get_mut(&id) {
            if matches!(f.state, FlowState::Waiting { .. }) {
                f.state = FlowState::Thinking;
                f.last_active_ns = now;
            }
        }
    }

    /// The flow sleeps on its token bucket and must not hold others back.
    pub fn throttle(&mut self, id: u64) {
        if let Some(f) = self.flows.get_mut(&id) {
            if f.state == FlowState::Thinking {
                f.state = FlowState::Throttled;
            }
        }
    }

    /// The flow's launch finished after keeping the device busy for `busy_ns`.
    pub fn release(&mut self, id: u64, busy_ns: u64, now: u64) -> bool {
        match self.flows.get_mut(&id) {
            Some(f) if f.state == FlowState::Holding => {
                f.vtime += busy_ns as f64 / f.weight;
                f.busy_ns += busy_ns;
                f.state = FlowState::Thinking;
                f.last_active_ns = now;
                self.holding -= 1;
                true
            }
            _ => false,
        }
    }

    /// Charge device time measured after the launch ended (GPU events retire late).
    pub fn charge(&mut self, id: u64, busy_ns: u64) {
        if let Some(f) = self.flows.get_mut(&id) {
            f.vtime += busy_ns as f64 / f.weight;
            f.busy_ns += busy_ns;
        }
    }

    /// Whether another flow uses the device or wants it (one idle between launches for
    /// longer than `idle_ns` does not count).
    pub fn contended(&self, id: u64, now: u64) -> bool {
        let Some(lane) = self.flows.get(&id).map(|f| f.lane) else { return false };
        self.flows.iter().any(|(&other, f)| {
            other != id && f.lane == lane && (f.state == FlowState::Throttled || self.recently_active(f, now))
        })
    }

    pub fn is_holding(&self, id: u64) -> bool {
        self.flows.get(&id).is_some_and(|f| f.state == FlowState::Holding)
    }

    /// Total busy time granted to a flow so far.
    pub fn busy_ns(&self, id: u64) -> u64 {
        self.flows.get(&id).map_or(0, |f| f.busy_ns)
    }

    /// Grant a free slot if fair sharing allows it now.
    pub fn next_grant(&mut self, now: u64) -> Grant {
        // Slots are per lane: a hog enqueueing on the rest of the SMs must not make a
        // guaranteed task on its reserved SMs wait for the device slot.
        let full = |lane: u32| {
            self.flows.values().filter(|f| f.lane == lane && f.state == FlowState::Holding).count() >= self.slots
        };
        let mut waiting: Vec<(u64, f64, i32, u64, u32)> = self
            .flows
            .iter()
            .filter_map(|(&id, f)| match f.state {
                FlowState::Waiting { seq } if !full(f.lane) => Some((id, f.vtime, f.band, seq, f.lane)),
                _ => None,
            })
            .collect();
        if waiting.is_empty() {
            return Grant::Idle;
        }
        waiting.sort_by(|a, b| a.1.total_cmp(&b.1).then(b.2.cmp(&a.2)).then(a.3.cmp(&b.3)));
        // The first waiter, by virtual time, that no flow of its lane holds back: a recently
        // active flow of the same lane that is behind in virtual time keeps its turn a while.
        let mut earliest: Option<u64> = None;
        let mut chosen = None;
        for &(id, vtime, _, _, lane) in &waiting {
            let hold_until = self
                .flows
                .values()
                .filter(|f| {
                    f.lane == lane && f.state == FlowState::Thinking && f.vtime < vtime && self.recently_active(f, now)
                })
                .map(|f| f.last_active_ns + self.idle_ns)
                .min();
            match hold_until {
                None => {
                    chosen = Some(id);
                    break;
                }
                Some(t) => earliest = Some(earliest.map_or(t, |e| e.min(t))),
            }
        }
        let Some(id) = chosen else {
            return earliest.map_or(Grant::Idle, Grant::WaitUntil);
        };
        if let Some(f) = self.flows.get_mut(&id) {
            f.state = FlowState::Holding;
            f.grants += 1;
        }
        self.holding += 1;
        Grant::To(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Simulate backlogged flows that each think for `think_ns` between launches of `busy_ns`.
    fn simulate(weights: &[f64], busy: &[u64], think: &[u64], span_ns: u64) -> Vec<u64> {
        let mut fs = FairShare::new(1, 5_000_000);
        let n = weights.len();
        for (i, &w) in weights.iter().enumerate() {
            fs.add(i as u64, w, 0, 0);
        }
        // Per flow: the time it next asks (None while waiting/holding).
        let mut asks_at: Vec<Option<u64>> = vec![Some(0); n];
        let mut now = 0u64;
        let mut holder: Option<(u64, u64)> = None; // (flow, finishes at)
        while now < span_ns {
            for (i, a) in asks_at.iter_mut().enumerate() {
                if a.is_some_and(|t| t <= now) {
                    fs.request(i as u64, now);
                    *a = None;
                }
            }
            let mut next = u64::MAX;
            if holder.is_none() {
                match fs.next_grant(now) {
                    Grant::To(id) => holder = Some((id, now + busy[id as usize])),
                    Grant::WaitUntil(t) => next = t,
                    Grant::Idle => {}
                }
            }
            // Advance to the next event.
            if let Some((_, end)) = holder { next = next.min(end); }
            for t in asks_at.iter().flatten() { next = next.min(*t); }
            if next == u64::MAX { break; }
            now = next.max(now);
            if let Some((id, end)) = holder {
                if end <= now {
                    fs.release(id, busy[id as usize], now);
                    asks_at[id as usize] = Some(now + think[id as usize]);
                    holder = None;
                }
            }
        }
        (0..n as u64).map(|i| fs.busy_ns(i)).collect()
    }

    #[test]
    fn seventy_thirty() {
        let got = simulate(&[0.7, 0.3], &[1_000_000, 1_000_000], &[20_000, 20_000], 2_000_000_000);
        let share = got[0] as f64 / (got[0] + got[1]) as f64;
        assert!((share - 0.7).abs() < 0.01, "share {share}");
    }

    #[test]
    fn idle_flow_does_not_block_forever() {
        let mut fs = FairShare::new(1, 1_000);
        fs.add(1, 0.5, 0, 0);
        fs.add(2, 0.5, 0, 0);
        fs.request(1, 0);
        assert_eq!(fs.next_grant(0), Grant::To(1));
        fs.release(1, 10_000, 10);
        // Flow 2 never asks; flow 1 (ahead) asks again and gets the device at once:
        // flow 2 has the lower vtime but only blocks while recently active.
        fs.request(1, 2_000);
        assert_eq!(fs.next_grant(2_000), Grant::To(1));
        fs.release(1, 10_000, 2_010);
        fs.request(1, 2_020);
        assert_eq!(fs.next_grant(2_020), Grant::To(1));
    }

    #[test]
    fn flows_on_other_sms_neither_hold_back_nor_contend() {
        // flow 1 (lane 1: reserved SMs) thinks between launches with a low virtual time;
        // flow 2 in lane 0 is not held back by it and runs uncontended, while flow 3, in
        // flow 1's lane, waits its turn
        let mut fs = FairShare::new(1, 1_000_000);
        fs.add_in_lane(1, 0.5, 0, 1, 0);
        fs.add_in_lane(2, 0.1, 0, 0, 0);
        fs.add_in_lane(3, 0.1, 0, 1, 0);
        fs.request(1, 0);
        assert_eq!(fs.next_grant(0), Grant::To(1));
        fs.release(1, 10, 10);
        fs.charge(2, 5_000_000);
        fs.charge(3, 5_000_000);
        fs.request(3, 20);
        assert_eq!(fs.next_grant(20), Grant::WaitUntil(1_000_010), "same lane: held back");
        fs.request(2, 30);
        assert_eq!(fs.next_grant(30), Grant::To(2), "other lane: granted");
        assert!(!fs.contended(2, 30));
        assert!(fs.contended(3, 30));
    }

    #[test]
    fn each_lane_has_its_own_slots() {
        // one slot: flow 2 (lane 0) holds it while it enqueues; flow 1 on reserved SMs
        // (lane 1) is granted at once, flow 3 in lane 0 waits for flow 2's release
        let mut fs = FairShare::new(1, 1_000_000);
        fs.add_in_lane(1, 0.5, 0, 1, 0);
        fs.add_in_lane(2, 0.1, 0, 0, 0);
        fs.add_in_lane(3, 0.1, 0, 0, 0);
        fs.request(2, 0);
        assert_eq!(fs.next_grant(0), Grant::To(2));
        fs.request(3, 1);
        fs.request(1, 1);
        assert_eq!(fs.next_grant(1), Grant::To(1), "another lane: not behind lane 0's slot");
        assert_eq!(fs.next_grant(1), Grant::Idle, "lane 0's slot is taken");
        fs.release(2, 10, 10);
        assert_eq!(fs.next_grant(10), Grant::To(3));
    }

    #[test]
    fn thinking_flow_behind_holds_its_turn() {
        let mut fs = FairShare::new(1, 1_000_000);
        fs.add(1, 0.5, 0, 0);
        fs.add(2, 0.5, 0, 0);
        fs.request(1, 0);
        assert_eq!(fs.next_grant(0), Grant::To(1));
        fs.request(2, 1);
        fs.release(1, 100, 100);
        assert_eq!(fs.next_grant(100), Grant::To(2));
        fs.release(2, 1_000, 1_100);
        fs.request(2, 1_200);
        // Flow 1 (vtime 200) thinks; flow 2 (vtime 2000) waits until flow 1 asks or idles.
        assert_eq!(fs.next_grant(1_200), Grant::WaitUntil(100 + 1_000_000));
        fs.request(1, 1_300);
        assert_eq!(fs.next_grant(1_300), Grant::To(1));
    }

    proptest! {
        /// Backlogged flows get busy-time shares within 2% of their weights.
        #[test]
        fn wfq_shares(weights in proptest::collection::vec(0.05f64..1.0, 2..5),
                      busy_us in proptest::collection::vec(200u64..3_000, 5),
                      think_us in proptest::collection::vec(0u64..300, 5)) {
            let n = weights.len();
            let busy: Vec<u64> = busy_us[..n].iter().map(|b| b * 1_000).collect();
            let think: Vec<u64> = think_us[..n].iter().map(|t| t * 1_000).collect();
            let got = simulate(&weights, &busy, &think, 3_000_000_000);
            let total: u64 = got.iter().sum();
            let wsum: f64 = weights.iter().sum();
            for i in 0..n {
                let share = got[i] as f64 / total as f64;
                let want = weights[i] / wsum;
                prop_assert!((share - want).abs() < 0.02, "flow {} got {} want {} ({:?})", i, share, want, got);
            }
        }
    }
}
