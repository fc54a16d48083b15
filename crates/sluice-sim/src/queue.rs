//! Event queues: a radix heap (the engine's queue) and a binary heap kept for comparison.
//!
//! Simulated time never goes backwards, so the queue only has to be a *monotone* priority queue. A radix
//! heap (Ahuja, Mehlhorn, Orlin and Tarjan, JACM 1990) exploits that: an entry lives in bucket
//! `bit_length(time ^ last_popped)`, and each entry moves down at most 64 times over its life, so push is
//! O(1) and pop O(1) amortized in the number of distinct key bits rather than O(log n). Entries with
//! equal times pop in a deterministic order.

use sluice_core::Time;

/// A monotone priority queue of `(time, item)` pairs.
pub trait EventQueue<T> {
    /// Adds `item` at `time`; `time` must not be earlier than the last popped time.
    fn push(&mut self, time: Time, item: T);
    /// Removes an entry with the smallest time.
    fn pop(&mut self) -> Option<(Time, T)>;
    /// Number of pending entries.
    fn len(&self) -> usize;
    /// Whether no entries are pending.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

const BUCKETS: usize = 65;

/// A radix heap over `u64` times.
#[derive(Debug)]
pub struct RadixQueue<T> {
    buckets: Vec<Vec<(Time, T)>>,
    /// Read position in bucket 0, whose entries all have time `last` and are consumed in order.
    head: usize,
    last: Time,
    len: usize,
}

impl<T> Default for RadixQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> RadixQueue<T> {
    /// An empty queue starting at time 0.
    pub fn new() -> Self {
        RadixQueue { buckets: (0..BUCKETS).map(|_| Vec::new()).collect(), head: 0, last: 0, len: 0 }
    }

    #[inline]
    fn bucket_of(&self, time: Time) -> usize {
        (64 - (time ^ self.last).leading_zeros()) as usize
    }

    /// Refills bucket 0 from the lowest non-empty bucket. Returns false when the queue is empty.
    fn refill(&mut self) -> bool {
        let Some(index) = (1..BUCKETS).find(|&i| !self.buckets[i].is_empty()) else {
            return false;
        };
        let mut moved = std::mem::take(&mut self.buckets[index]);
        self.last = moved.iter().map(|(t, _)| *t).min().expect("bucket is not empty");
        self.buckets[0].clear();
        self.head = 0;
        for (time, item) in moved.drain(..) {
            let b = self.bucket_of(time);
            self.buckets[b].push((time, item));
        }
        // Keep the drained allocation for the next time this bucket fills.
        self.buckets[index] = moved;
        true
    }
}

impl<T: Copy> EventQueue<T> for RadixQueue<T> {
    #[inline]
    fn push(&mut self, time: Time, item: T) {
        debug_assert!(time >= self.last, "event at {time} scheduled before the current time {}", self.last);
        let b = self.bucket_of(time);
        self.buckets[b].push((time, item));
        self.len += 1;
    }

    #[inline]
    fn pop(&mut self) -> Option<(Time, T)> {
        if self.head == self.buckets[0].len() && !self.refill() {
            return None;
        }
        let entry = self.buckets[0][self.head];
        self.head += 1;
        if self.head == self.buckets[0].len() {
            self.buckets[0].clear();
            self.head = 0;
        }
        self.len -= 1;
        Some(entry)
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// A binary-heap queue with FIFO order among equal times; the baseline the radix heap is measured against.
#[derive(Debug)]
pub struct HeapQueue<T> {
    heap: std::collections::BinaryHeap<HeapEntry<T>>,
    seq: u64,
}

#[derive(Debug)]
struct HeapEntry<T> {
    time: Time,
    seq: u64,
    item: T,
}

impl<T> PartialEq for HeapEntry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl<T> Eq for HeapEntry<T> {}
impl<T> PartialOrd for HeapEntry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for HeapEntry<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl<T> Default for HeapQueue<T> {
    fn default() -> Self {
        HeapQueue { heap: std::collections::BinaryHeap::new(), seq: 0 }
    }
}

impl<T> EventQueue<T> for HeapQueue<T> {
    fn push(&mut self, time: Time, item: T) {
        self.seq += 1;
        self.heap.push(HeapEntry { time, seq: self.seq, item });
    }

    fn pop(&mut self) -> Option<(Time, T)> {
        self.heap.pop().map(|e| (e.time, e.item))
    }

    fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::Rng;

    fn drain<Q: EventQueue<u32>>(q: &mut Q) -> Vec<(Time, u32)> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn radix_pops_in_time_order_while_pushing() {
        let mut rng = Rng::new(3, 4);
        let mut radix = RadixQueue::new();
        let mut heap = HeapQueue::default();
        let mut now = 0;
        let mut popped = Vec::new();
        for i in 0..50_000u32 {
            let t = now + rng.below(1 << (i % 40));
            radix.push(t, i);
            heap.push(t, i);
            if i % 3 == 0 {
                let (a, _) = radix.pop().unwrap();
                let (b, _) = heap.pop().unwrap();
                assert_eq!(a, b);
                assert!(a >= now);
                now = a;
                popped.push(a);
            }
        }
        let rest_r: Vec<Time> = drain(&mut radix).into_iter().map(|e| e.0).collect();
        let rest_h: Vec<Time> = drain(&mut heap).into_iter().map(|e| e.0).collect();
        assert_eq!(rest_r, rest_h);
        assert!(rest_r.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(radix.len(), 0);
    }

    #[test]
    fn equal_times_pop_in_push_order_when_pushed_at_the_current_time() {
        let mut q = RadixQueue::new();
        q.push(5, 1);
        q.push(5, 2);
        assert_eq!(q.pop(), Some((5, 1)));
        q.push(5, 3);
        assert_eq!(drain(&mut q), vec![(5, 2), (5, 3)]);
    }
}
