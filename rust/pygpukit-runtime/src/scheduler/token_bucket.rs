//! Token bucket pacing a task's kernel launches; pure (time is passed in) so it tests exactly.

/// `rate` tokens per second, holding at most `burst`; starts full.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate_per_s: f64,
    burst: f64,
    tokens: f64,
    last_ns: u64,
}

impl TokenBucket {
    /// `rate_per_s` must be finite and > 0; `burst` is at least one token.
    pub fn new(rate_per_s: f64, burst: f64, now_ns: u64) -> Self {
        let burst = if burst.is_finite() { burst.max(1.0) } else { 1.0 };
        TokenBucket { rate_per_s, burst, tokens: burst, last_ns: now_ns }
    }

    pub fn rate_per_s(&self) -> f64 {
        self.rate_per_s
    }

    fn refill(&mut self, now_ns: u64) {
        if now_ns > self.last_ns {
            let earned = (now_ns - self.last_ns) as f64 * self.rate_per_s / 1e9;
            self.tokens = (self.tokens + earned).min(self.burst);
            self.last_ns = now_ns;
        }
    }

    /// Take one token, or say how many nanoseconds until one is available.
    /// Return a token taken with `try_take` for a launch that did not happen then.
    pub fn give_back(&mut self) {
        self.tokens = (self.tokens + 1.0).min(self.burst);
    }

    pub fn try_take(&mut self, now_ns: u64) -> Result<(), u64> {
        self.refill(now_ns);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        let missing = 1.0 - self.tokens;
        // Round up so that waking at the returned time always finds the token.
        Err(((missing * 1e9 / self.rate_per_s).ceil() as u64).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::TokenBucket;
    use proptest::prelude::*;

    #[test]
    fn paces_after_burst() {
        let mut b = TokenBucket::new(1000.0, 2.0, 0);
        assert!(b.try_take(0).is_ok());
        assert!(b.try_take(0).is_ok());
        let wait = b.try_take(0).unwrap_err();
        assert_eq!(wait, 1_000_000);
        assert!(b.try_take(wait).is_ok());
    }

    /// Tokens a greedy taker without jitter gets over `span` ns from a one-token bucket.
    fn greedy(rate: f64, span: u64) -> u64 {
        let mut b = TokenBucket::new(rate, 1.0, 0);
        let (mut now, mut taken) = (0u64, 0u64);
        while now <= span {
            match b.try_take(now) {
                Ok(()) => taken += 1,
                Err(w) => now += w,
            }
        }
        taken
    }

    /// The case a CI run found failing the old `ideal +- 2` bound: 45023 tokens where the
    /// ideal is 45025.14; each of the ~45k waits was rounded up by a fraction of a ns.
    #[test]
    fn rounding_loss_found_by_ci() {
        let (rate, span) = (49_972.4, 901_000_000u64);
        let taken = greedy(rate, span) as f64;
        let period = 1e9 / rate;
        assert!(taken >= span as f64 / (period + 2.0), "took {taken}");
        assert!(taken <= 1.0 + span as f64 / period, "took {taken}");
    }

    proptest! {
        /// A greedy taker gets between rate*T - 1 and burst + rate*T tokens over T.
        #[test]
        fn rate_bounds(rate in 1.0f64..100_000.0, burst in 1.0f64..64.0, span_ms in 1u64..2_000,
                       jitter in proptest::collection::vec(0u64..50_000, 1..64)) {
            let span = span_ms * 1_000_000;
            let mut b = TokenBucket::new(rate, burst, 0);
            let (mut now, mut taken, mut i, mut late) = (0u64, 0u64, 0usize, 0u64);
            while now <= span {
                match b.try_take(now) {
                    Ok(()) => taken += 1,
                    // Wake late by a random jitter, like a real sleeping thread.
                    Err(wait) => {
                        let j = jitter[i % jitter.len()];
                        now += wait + j; late += j; i += 1;
                    }
                }
            }
            let ideal = rate * span as f64 / 1e9;
            prop_assert!(taken as f64 <= burst.floor() + ideal + 1.0, "took {} > {} + {}", taken, burst, ideal);
            // Waking late can only lose the tokens of the late time.
            let lower = rate * span.saturating_sub(late) as f64 / 1e9 - 1.0;
            prop_assert!(taken as f64 >= lower, "took {} < {}", taken, lower);
        }

        /// Without jitter the rate is exact up to the rounding of each wait to whole
        /// nanoseconds: a bucket of one token cannot bank the part of a nanosecond it
        /// waited too long, so one token takes between `period` and `period + 1` ns (plus
        /// 1 ns when the float sum of earned tokens lands just below 1.0 and the taker
        /// waits again). A bound of `ideal +- 2` tokens fails at 50k/s over ~0.9 s, where
        /// the rounding alone loses up to 2.25 tokens.
        #[test]
        fn exact_rate_without_jitter(rate in 10.0f64..50_000.0, span_ms in 100u64..1_000) {
            let span = span_ms * 1_000_000;
            let taken = greedy(rate, span);
            let period = 1e9 / rate;
            // the first token is there at 0, then one per cycle that fits in the span
            let most = 1.0 + span as f64 / period;
            let least = span as f64 / (period + 2.0);
            prop_assert!(taken as f64 <= most + 1e-9 * most, "took {} > {}", taken, most);
            prop_assert!(taken as f64 >= least, "took {} < {}", taken, least);
        }

    }
}
