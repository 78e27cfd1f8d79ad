//! Per-stream launch gate: a counting semaphore per stream bounding kernels in flight.
//!
//! Independent of the task context: task pacing (token bucket, fair share) is the
//! scheduler's gate; this one only keeps a stream's queue on the device short.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GateStats {
    pub acquired: u64,
    /// Acquisitions that had to wait for a slot.
    pub waited: u64,
    pub timeouts: u64,
    pub released: u64,
}

#[derive(Debug)]
struct State {
    default_limit: usize,
    limits: HashMap<u64, usize>,
    in_flight: HashMap<u64, usize>,
    stats: GateStats,
}

impl State {
    fn limit(&self, stream: u64) -> usize {
        *self.limits.get(&stream).unwrap_or(&self.default_limit)
    }
    fn has_room(&self, stream: u64) -> bool {
        self.in_flight.get(&stream).copied().unwrap_or(0) < self.limit(stream)
    }
    fn take(&mut self, stream: u64) {
        *self.in_flight.entry(stream).or_insert(0) += 1;
        self.stats.acquired += 1;
    }
}

/// Limits kernels in flight per stream id.
#[derive(Debug)]
pub struct StreamGate {
    state: Mutex<State>,
    cv: Condvar,
}

impl StreamGate {
    /// A gate allowing `limit` (>= 1) kernels in flight on every stream unless overridden.
    pub fn new(limit: usize) -> Result<Self, String> {
        if limit == 0 {
            return Err("a launch gate limit must be at least 1".into());
        }
        Ok(StreamGate {
            state: Mutex::new(State {
                default_limit: limit,
                limits: HashMap::new(),
                in_flight: HashMap::new(),
                stats: GateStats::default(),
            }),
            cv: Condvar::new(),
        })
    }

    /// Override the limit of one stream (>= 1). Raising it wakes waiters.
    pub fn set_limit(&self, stream: u64, limit: usize) -> Result<(), String> {
        if limit == 0 {
            return Err("a launch gate limit must be at least 1".into());
        }
        self.state.lock().limits.insert(stream, limit);
        self.cv.notify_all();
        Ok(())
    }

    pub fn limit(&self, stream: u64) -> usize {
        self.state.lock().limit(stream)
    }

    pub fn in_flight(&self, stream: u64) -> usize {
        self.state.lock().in_flight.get(&stream).copied().unwrap_or(0)
    }

    /// Take a slot on `stream`, waiting up to `timeout` (forever if `None`). `false` on timeout.
    pub fn acquire(&self, stream: u64, timeout: Option<Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = self.state.lock();
        if !st.has_room(stream) {
            st.stats.waited += 1;
            while !st.has_room(stream) {
                match deadline {
                    Some(d) => {
                        if self.cv.wait_until(&mut st, d).timed_out() && !st.has_room(stream) {
                            st.stats.timeouts += 1;
                            return false;
                        }
                    }
                    None => self.cv.wait(&mut st),
                }
            }
        }
        st.take(stream);
        true
    }

    /// Take a slot only if one is free now.
    pub fn try_acquire(&self, stream: u64) -> bool {
        let mut st = self.state.lock();
        if !st.has_room(stream) {
            return false;
        }
        st.take(stream);
        true
    }

    /// Give back a slot (the kernel finished). `Err` if the stream had none in flight.
    pub fn release(&self, stream: u64) -> Result<(), String> {
        let mut st = self.state.lock();
        match st.in_flight.get_mut(&stream) {
            Some(n) if *n > 0 => {
                *n -= 1;
                if *n == 0 {
                    st.in_flight.remove(&stream);
                }
            }
            _ => return Err(format!("stream {stream} has no launch in flight to release")),
        }
        st.stats.released += 1;
        drop(st);
        // All waiters: they may wait on different streams.
        self.cv.notify_all();
        Ok(())
    }

    pub fn stats(&self) -> GateStats {
        self.state.lock().stats
    }
}
