//! Segments of device memory carved into large blocks by best fit, with split and coalesce.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap; // keyed by segment base addresses (see pool.rs)

/// One device allocation, cut into contiguous ranges that are each free or in use.
#[derive(Debug)]
struct Segment {
    base: u64,
    size: u64,
    used: u64,
    /// offset -> (length, free). The ranges tile `0..size` exactly.
    ranges: BTreeMap<u64, (u64, bool)>,
}

/// Where a large block lives: (segment id, offset in it).
pub type Slot = (u64, u64);

/// All segments of a pool plus a best-fit index over their free ranges.
#[derive(Debug, Default)]
pub struct SegmentArena {
    segments: HashMap<u64, Segment>,
    /// (length, segment id, offset) of every free range: the first entry >= a size is the best fit.
    free_index: BTreeSet<(u64, u64, u64)>,
    next_id: u64,
    reserved: u64,
    free_bytes: u64,
}

impl SegmentArena {
    /// Adopt a fresh device allocation of `size` bytes at `base`; returns its id.
    pub fn add_segment(&mut self, base: u64, size: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut ranges = BTreeMap::new();
        ranges.insert(0, (size, true));
        self.segments.insert(id, Segment { base, size, used: 0, ranges });
        self.free_index.insert((size, id, 0));
        self.reserved += size;
        self.free_bytes += size;
        id
    }

    /// Take `size` bytes from the smallest free range that holds them; returns (ptr, slot).
    pub fn take_best_fit(&mut self, size: u64) -> Option<(u64, Slot)> {
        let &(len, seg_id, off) = self.free_index.range((size, 0, 0)..).next()?;
        self.free_index.remove(&(len, seg_id, off));
        let seg = self.segments.get_mut(&seg_id)?;
        seg.ranges.insert(off, (size, false));
        if len > size {
            // Split: the tail stays free.
            seg.ranges.insert(off + size, (len - size, true));
            self.free_index.insert((len - size, seg_id, off + size));
        }
        seg.used += size;
        self.free_bytes -= size;
        Some((seg.base + off, (seg_id, off)))
    }

    /// Give back the range at `slot`, merging it with free neighbours. Returns its length.
    pub fn give_back(&mut self, (seg_id, off): Slot) -> Option<u64> {
        let seg = self.segments.get_mut(&seg_id)?;
        let (len, free) = *seg.ranges.get(&off)?;
        if free {
            return None; // double free: refuse rather than corrupt the index
        }
        seg.used -= len;
        self.free_bytes += len;
        let (mut start, mut end) = (off, off + len);
        seg.ranges.remove(&off);
        // Coalesce with the following range.
        if let Some(&(next_len, true)) = seg.ranges.get(&end) {
            seg.ranges.remove(&end);
            self.free_index.remove(&(next_len, seg_id, end));
            end += next_len;
        }
        // Coalesce with the preceding range.
        if let Some((&prev_off, &(prev_len, true))) = seg.ranges.range(..start).next_back() {
            seg.ranges.remove(&prev_off);
            self.free_index.remove(&(prev_len, seg_id, prev_off));
            start = prev_off;
        }
        seg.ranges.insert(start, (end - start, true));
        self.free_index.insert((end - start, seg_id, start));
        Some(len)
    }

    /// Remove every segment with nothing in use; returns their (base, size) for freeing.
    pub fn take_empty_segments(&mut self) -> Vec<(u64, u64)> {
        let empty: Vec<u64> =
            self.segments.iter().filter(|(_, s)| s.used == 0).map(|(&id, _)| id).collect();
        let mut out = Vec::with_capacity(empty.len());
        for id in empty {
            if let Some(seg) = self.segments.remove(&id) {
                self.free_index.remove(&(seg.size, id, 0));
                self.reserved -= seg.size;
                self.free_bytes -= seg.size;
                out.push((seg.base, seg.size));
            }
        }
        out
    }

    /// Bytes obtained from the device for segments.
    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// Free bytes inside segments (cached for reuse).
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Free bytes stranded in segments that also hold live blocks: they cannot go back to
    /// the device until every block of the segment is freed.
    pub fn fragmentation(&self) -> u64 {
        self.segments.values().filter(|s| s.used > 0).map(|s| s.size - s.used).sum()
    }

    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// Largest free range (0 when none).
    pub fn largest_free(&self) -> u64 {
        self.free_index.iter().next_back().map_or(0, |e| e.0)
    }

    /// Check the internal bookkeeping; `Err` describes the first inconsistency.
    pub fn check(&self) -> Result<(), String> {
        let mut reserved = 0;
        let mut free = 0;
        let mut indexed = 0;
        for (&id, s) in &self.segments {
            let mut at = 0;
            let mut used = 0;
            let mut prev_free = false;
            for (&off, &(len, is_free)) in &s.ranges {
                if off != at {
                    return Err(format!("segment {id}: gap or overlap at {off} (expected {at})"));
                }
                if len == 0 {
                    return Err(format!("segment {id}: empty range at {off}"));
                }
                if is_free && prev_free {
                    return Err(format!("segment {id}: adjacent free ranges not merged at {off}"));
                }
                if is_free {
                    free += len;
                    if !self.free_index.contains(&(len, id, off)) {
                        return Err(format!("segment {id}: free range {off}+{len} not indexed"));
                    }
                    indexed += 1;
                } else {
                    used += len;
                }
                prev_free = is_free;
                at = off + len;
            }
            if at != s.size || used != s.used {
                return Err(format!("segment {id}: ranges cover {at}/{} used {used}/{}", s.size, s.used));
            }
            reserved += s.size;
        }
        if indexed != self.free_index.len() {
            return Err("free index holds stale entries".into());
        }
        if reserved != self.reserved || free != self.free_bytes {
            return Err(format!(
                "totals drifted: reserved {reserved} vs {}, free {free} vs {}",
                self.reserved, self.free_bytes
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_coalesce() {
        let mut a = SegmentArena::default();
        a.add_segment(1000, 100);
        let (p1, s1) = a.take_best_fit(30).unwrap();
        let (p2, s2) = a.take_best_fit(30).unwrap();
        let (p3, s3) = a.take_best_fit(40).unwrap();
        assert_eq!((p1, p2, p3), (1000, 1030, 1060));
        assert!(a.take_best_fit(1).is_none());
        assert_eq!(a.fragmentation(), 0);
        a.give_back(s1).unwrap();
        a.give_back(s3).unwrap();
        assert_eq!(a.fragmentation(), 70);
        assert_eq!(a.largest_free(), 40);
        assert!(a.give_back(s3).is_none(), "double free must be refused");
        a.give_back(s2).unwrap();
        a.check().unwrap();
        assert_eq!(a.largest_free(), 100, "all three ranges must merge");
        assert_eq!(a.take_empty_segments(), vec![(1000, 100)]);
        assert_eq!(a.reserved(), 0);
    }

    #[test]
    fn best_fit_prefers_smallest_hole() {
        let mut a = SegmentArena::default();
        a.add_segment(0, 100);
        a.add_segment(1000, 50);
        let (p, _) = a.take_best_fit(40).unwrap();
        assert_eq!(p, 1000, "the 50-byte segment fits better than the 100-byte one");
        a.check().unwrap();
    }
}
