//! Launch ordering: every launch gets a sequence number; pops go by priority, then FIFO.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use parking_lot::Mutex;

struct Entry<T> {
    priority: i32,
    seq: u64,
    item: T,
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority.cmp(&other.priority).then_with(|| other.seq.cmp(&self.seq))
    }
}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}
impl<T> Eq for Entry<T> {}

struct Inner<T> {
    heap: BinaryHeap<Entry<T>>,
    next_seq: u64,
}

/// A thread-safe launch queue: higher priority first, submission order among equals.
pub struct LaunchQueue<T> {
    inner: Mutex<Inner<T>>,
}

impl<T> Default for LaunchQueue<T> {
    fn default() -> Self {
        LaunchQueue { inner: Mutex::new(Inner { heap: BinaryHeap::new(), next_seq: 0 }) }
    }
}

impl<T> LaunchQueue<T> {
    /// Queue `item`; returns its sequence number (strictly increasing per queue).
    pub fn push(&self, priority: i32, item: T) -> u64 {
        let mut q = self.inner.lock();
        let seq = q.next_seq;
        q.next_seq += 1;
        q.heap.push(Entry { priority, seq, item });
        seq
    }

    /// The next launch: `(seq, priority, item)`.
    pub fn pop(&self) -> Option<(u64, i32, T)> {
        self.inner.lock().heap.pop().map(|e| (e.seq, e.priority, e.item))
    }

    /// `(seq, priority)` of the next launch without taking it.
    pub fn peek(&self) -> Option<(u64, i32)> {
        self.inner.lock().heap.peek().map(|e| (e.seq, e.priority))
    }

    pub fn len(&self) -> usize {
        self.inner.lock().heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sequence number the next push will get.
    pub fn next_seq(&self) -> u64 {
        self.inner.lock().next_seq
    }

    /// Take everything, in pop order.
    pub fn drain(&self) -> Vec<(u64, i32, T)> {
        let heap = std::mem::take(&mut self.inner.lock().heap);
        heap.into_sorted_vec().into_iter().rev().map(|e| (e.seq, e.priority, e.item)).collect()
    }
}
