//! The device arbiter: blocks launching threads until fair sharing grants them the device.
//! Callers must not hold the GIL (the bindings detach first); all waiting happens here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::clock;
use super::fair_share::{FairShare, Grant};
use super::gpu_time::{DeviceEvents, EventPair, Poll};

/// The latest launch of a guaranteed task in a lane: (task id, its events, who polls them).
type UrgentLaunch = (u64, EventPair, Arc<dyn DeviceEvents>);

/// Upper bound of one condvar sleep, so cancellation and clock edge cases are re-checked.
const MAX_SLEEP: Duration = Duration::from_millis(50);

pub struct Arbiter {
    state: Mutex<FairShare>,
    cv: Condvar,
    /// Per lane, the newest launch of a guaranteed task, while its task has not retired it:
    /// best-effort work yields between slices until it finishes.
    urgent: Mutex<HashMap<u32, UrgentLaunch>>,
}

impl Arbiter {
    pub fn new(slots: usize, idle_ns: u64) -> Self {
        Arbiter { state: Mutex::new(FairShare::new(slots, idle_ns)), cv: Condvar::new(), urgent: Mutex::new(HashMap::new()) }
    }

    /// A guaranteed task enqueued a launch bracketed by `pair` in `lane`.
    pub fn note_urgent(&self, lane: u32, task: u64, pair: EventPair, events: &Arc<dyn DeviceEvents>) {
        self.urgent.lock().insert(lane, (task, pair, events.clone()));
    }

    /// `task` retired its launches (their events may be reused): forget its latest one.
    pub fn clear_urgent(&self, lane: u32, task: u64) {
        let mut urgent = self.urgent.lock();
        if urgent.get(&lane).is_some_and(|(owner, _, _)| *owner == task) {
            urgent.remove(&lane);
        }
    }

    /// Whether a guaranteed task's newest launch in `lane` is still on the device.
    pub fn urgent_in_flight(&self, lane: u32) -> bool {
        let urgent = self.urgent.lock();
        match urgent.get(&lane) {
            Some((_, pair, events)) => events.poll(*pair) == Poll::Pending,
            None => false,
        }
    }

    /// Register a running task; `lane` says which SMs it runs on (see `FairShare`).
    pub fn add(&self, id: u64, weight: f64, band: i32, lane: u32) {
        self.state.lock().add_in_lane(id, weight, band, lane, clock::now_ns());
    }

    /// Forget a finished task, handing its slot (if still held) to the next waiter.
    pub fn remove(&self, id: u64) {
        let mut st = self.state.lock();
        st.remove(id);
        Self::pump(&mut st, clock::now_ns());
        drop(st);
        self.cv.notify_all();
    }

    pub fn throttle(&self, id: u64) {
        self.state.lock().throttle(id);
        // A throttled flow may have been holding others back.
        self.cv.notify_all();
    }

    /// Grant every slot fair sharing allows now; returns whether anything was granted and
    /// when to look again, if timed.
    fn pump(st: &mut FairShare, now: u64) -> (bool, Option<u64>) {
        let mut granted = false;
        loop {
            match st.next_grant(now) {
                Grant::To(_) => granted = true,
                Grant::WaitUntil(t) => return (granted, Some(t)),
                Grant::Idle => return (granted, None),
            }
        }
    }

    /// Block until `id` holds a device slot (true) or `cancelled` is set (false).
    pub fn acquire(&self, id: u64, cancelled: &AtomicBool) -> bool {
        let mut st = self.state.lock();
        st.request(id, clock::now_ns());
        loop {
            let now = clock::now_ns();
            let (granted, recheck) = Self::pump(&mut st, now);
            if st.is_holding(id) {
                // Grants made for others on the way must wake them.
                drop(st);
                self.cv.notify_all();
                return true;
            }
            if cancelled.load(Ordering::Acquire) {
                st.withdraw(id, now);
                Self::pump(&mut st, now);
                drop(st);
                self.cv.notify_all();
                return false;
            }
            if granted {
                self.cv.notify_all();
            }
            let limit = clock::instant_at(now) + MAX_SLEEP;
            let until = recheck.map_or(limit, |t| clock::instant_at(t).min(limit));
            self.cv.wait_until(&mut st, until);
        }
    }

    /// Take a device slot for `id` only if fair sharing grants it at once (true); else
    /// leave everything as it was (false) and let the caller block in `acquire`.
    pub fn try_acquire(&self, id: u64) -> bool {
        let mut st = self.state.lock();
        let now = clock::now_ns();
        st.request(id, now);
        let (granted, _) = Self::pump(&mut st, now);
        if st.is_holding(id) {
            drop(st);
            self.cv.notify_all();
            return true;
        }
        st.withdraw(id, now);
        Self::pump(&mut st, now);
        drop(st);
        if granted {
            self.cv.notify_all();
        }
        false
    }

    /// End a launch that kept the device busy for `busy_ns`; false if `id` held no slot.
    pub fn release(&self, id: u64, busy_ns: u64) -> bool {
        let mut st = self.state.lock();
        let now = clock::now_ns();
        let held = st.release(id, busy_ns, now);
        Self::pump(&mut st, now);
        drop(st);
        self.cv.notify_all();
        held
    }

    /// Charge device time measured after the launch ended (see `FairShare::charge`).
    pub fn charge(&self, id: u64, busy_ns: u64) {
        self.state.lock().charge(id, busy_ns);
    }

    /// Whether another task uses the device or wants it now.
    pub fn contended(&self, id: u64) -> bool {
        self.state.lock().contended(id, clock::now_ns())
    }

    /// Wake all waiters (a task was cancelled and must notice).
    pub fn wake_all(&self) {
        let _st = self.state.lock();
        self.cv.notify_all();
    }
}
