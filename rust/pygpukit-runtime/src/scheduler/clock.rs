//! Monotonic nanosecond clock shared by the scheduler's parts, with a wall-clock anchor.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

struct Epoch {
    instant: Instant,
    unix_s: f64,
}

static EPOCH: OnceLock<Epoch> = OnceLock::new();

fn epoch() -> &'static Epoch {
    EPOCH.get_or_init(|| Epoch {
        instant: Instant::now(),
        unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
    })
}

/// Nanoseconds since the scheduler's epoch (first use in the process).
pub fn now_ns() -> u64 {
    epoch().instant.elapsed().as_nanos() as u64
}

/// The `Instant` at `ns` on this clock, for timed condvar waits.
pub fn instant_at(ns: u64) -> Instant {
    epoch().instant + std::time::Duration::from_nanos(ns)
}

/// Unix time in seconds of a clock reading (timestamps reported to users).
pub fn to_unix_s(ns: u64) -> f64 {
    epoch().unix_s + ns as f64 / 1e9
}
