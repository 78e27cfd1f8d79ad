//! Size classes for small blocks and the rounding rules for large ones.
//!
//! Small requests (up to `SMALL_LIMIT`) are rounded to one of four classes per power of two,
//! which bounds the internal waste at 25% while keeping few free lists. Larger requests are
//! rounded to `LARGE_GRANULE` and carved out of segments.

/// Largest request served by the small-block free lists.
pub const SMALL_LIMIT: u64 = 1 << 20;
/// Smallest class: every block is at least this big (and this aligned relative to the device).
pub const MIN_CLASS: u64 = 512;
/// Large blocks are rounded to this many bytes, which keeps split remainders aligned.
pub const LARGE_GRANULE: u64 = 512;
/// Segments are multiples of this.
pub const SEGMENT_GRANULE: u64 = 2 << 20;
/// Smallest segment; small large requests share one so they can reuse its free space.
pub const MIN_SEGMENT: u64 = 8 << 20;

const STEPS_PER_DOUBLING: u64 = 4;

/// Round `n` up to a multiple of `to` (a power of two); `None` on overflow.
pub fn round_up(n: u64, to: u64) -> Option<u64> {
    Some(n.checked_add(to - 1)? & !(to - 1))
}

/// Whether a request of `n` bytes is served by the small-block lists.
pub fn is_small(n: u64) -> bool {
    n <= SMALL_LIMIT
}

/// The class index and class size of a small request of `n` bytes (`0 < n <= SMALL_LIMIT`).
pub fn small_class(n: u64) -> (usize, u64) {
    let n = n.max(MIN_CLASS);
    // The power of two just below `n` (or equal), and a quarter of it as the step.
    let base = 1u64 << (63 - (n - 1).leading_zeros().min(63));
    let base = if base >= n { base / 2 } else { base }.max(MIN_CLASS / 2);
    let step = (base / STEPS_PER_DOUBLING).max(1);
    let size = round_up(n, step).unwrap_or(n);
    (class_index(size), size)
}

/// Number of distinct small classes.
pub fn class_count() -> usize {
    class_index(SMALL_LIMIT) + 1
}

fn class_index(size: u64) -> usize {
    // MIN_CLASS is class 0; each doubling above it has STEPS_PER_DOUBLING classes.
    if size <= MIN_CLASS {
        return 0;
    }
    let doublings = 63 - (size - 1).leading_zeros() as u64; // floor(log2(size - 1))
    let base = 1u64 << doublings;
    let step = base / STEPS_PER_DOUBLING;
    let within = (size - base).div_ceil(step); // 1..=STEPS_PER_DOUBLING
    let min_log = MIN_CLASS.trailing_zeros() as u64;
    ((doublings - min_log) * STEPS_PER_DOUBLING + within) as usize
}

/// Rounded size of a large block.
pub fn large_size(n: u64) -> Option<u64> {
    round_up(n, LARGE_GRANULE)
}

/// Size of a new segment for a large block of `size` bytes.
pub fn segment_size(size: u64) -> Option<u64> {
    Some(round_up(size, SEGMENT_GRANULE)?.max(MIN_SEGMENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_monotonic_and_tight() {
        let mut last = (0usize, 0u64);
        for n in 1..=SMALL_LIMIT {
            if n % 97 != 0 && n & (n - 1) != 0 && n != SMALL_LIMIT && n > 4096 {
                continue; // sample to keep the test fast
            }
            let (i, s) = small_class(n);
            assert!(s >= n, "class {s} smaller than request {n}");
            assert!(s <= (n.max(MIN_CLASS) * 5) / 4 + 1, "class {s} wastes too much for {n}");
            assert!(i < class_count());
            assert!(i >= last.0 && s >= last.1);
            if s == last.1 {
                assert_eq!(i, last.0, "same size, different class");
            } else if last.1 != 0 {
                assert!(i > last.0, "different sizes share class {i}");
            }
            last = (i, s);
        }
        assert_eq!(small_class(SMALL_LIMIT).1, SMALL_LIMIT);
        assert_eq!(small_class(1), (0, MIN_CLASS));
        assert_eq!(small_class(513).1, 640);
    }

    #[test]
    fn large_rounding() {
        assert_eq!(large_size(SMALL_LIMIT + 1), Some(SMALL_LIMIT + 512));
        assert_eq!(segment_size(3 << 20), Some(MIN_SEGMENT));
        assert_eq!(segment_size(9 << 20), Some(10 << 20));
        assert_eq!(large_size(u64::MAX), None);
    }
}
