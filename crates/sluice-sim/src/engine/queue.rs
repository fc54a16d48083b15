//! Event queues: a timing wheel ([`WheelQueue`], the engine's queue), a radix heap and a binary heap
//! kept for comparison (the event-queue benchmark runs all three).
//!
//! Simulated time never goes backwards, so the queue only has to be a *monotone* priority queue. A radix
//! heap (Ahuja, Mehlhorn, Orlin and Tarjan, JACM 1990) exploits that: an entry lives in bucket
//! `bit_length(time ^ last_popped)`, and each entry moves down at most 64 times over its life, so push is
//! O(1) and pop O(1) amortized in the number of distinct key bits rather than O(log n). Entries with
//! equal times pop in a deterministic order.
//!
//! The wheel breaks ties by a key its [`TieKey`] reads off each entry, and entries with equal time and
//! key in push order. The engine's key follows the node whose handler made the event, so that the order
//! of simultaneous events does not depend on the order in which different nodes' handlers ran: what a
//! partitioned run, whose parts run side by side, needs to match a run in one piece.

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
    /// The last sequence number given; equal times pop in sequence order.
    seq: u64,
    /// The last sequence number given to an entry pushed to the front.
    front: u64,
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
        HeapQueue { heap: std::collections::BinaryHeap::new(), seq: FIRST_SEQ, front: FIRST_SEQ }
    }
}

/// The sequence number entries count up from, and entries pushed to the front count down from.
const FIRST_SEQ: u64 = u64::MAX / 2;

impl<T> HeapQueue<T> {
    /// The smallest pending time.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    /// Adds `item` at `time` ahead of every entry already pending at that time.
    pub fn push_front(&mut self, time: Time, item: T) {
        self.front -= 1;
        self.heap.push(HeapEntry { time, seq: self.front, item });
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

/// How a queue orders entries of equal time: by the key it returns (smaller first), then in push order.
pub trait TieKey<T> {
    /// The tie-break key of `item`, due at `time`.
    fn key(&self, time: Time, item: &T) -> u64;
}

/// Equal times in push order alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fifo;

impl<T> TieKey<T> for Fifo {
    #[inline(always)]
    fn key(&self, _: Time, _: &T) -> u64 {
        0
    }
}

/// log2 of a wheel slot's width in picoseconds (2.048 ns: close to the mean gap between events of a
/// loaded 100 Gbps fabric, so slots hold a few events each).
pub const SLOT_BITS: u32 = 11;
/// log2 of the number of slots (16384 slots of 2.048 ns: a 33.6 us horizon, beyond which events wait in
/// an overflow heap; only timers and future flow starts go there). The slots' headers take 384 KiB, in
/// every part of a partitioned run: 32768 slots took twice that and were no faster anywhere
/// (BENCHMARKS.md, "What 16 threads can gain at k=32").
pub const WHEEL_BITS: u32 = 14;
/// Slots of the timing wheel.
pub const SLOTS: usize = 1 << WHEEL_BITS;
/// Entries of a slot's first buffer (a small one): a slot of a fabric of a few hundred hosts or a few far
/// timers fit.
pub const SMALL_SLOT: usize = 16;

/// Slots of up to this many entries are sorted by insertion, larger ones by counting their times into
/// buckets first ([`sort_large_by_time`]). Above it the insertion sort's mispredicted comparisons cost
/// more than the buckets' fixed work: fat320, whose busy slots hold 16 entries on average, ran 5% faster
/// than with 32.
const INSERTION_SORT_MAX: usize = 16;

/// Sorts `entries` by time, equal times in their order (stable); returns whether any times are equal.
#[inline]
fn insertion_sort_by_time<T: Copy>(entries: &mut [(Time, T)]) -> bool {
    let mut tie = false;
    for i in 1..entries.len() {
        let entry = entries[i];
        let mut j = i;
        while let Some(&before) = entries[..j].last() {
            if before.0 <= entry.0 {
                // An equal time placed before sits just ahead: equal times keep their order.
                tie |= before.0 == entry.0;
                break;
            }
            entries[j] = before;
            j -= 1;
        }
        if j < i {
            entries[j] = entry;
        }
    }
    tie
}

/// A timing wheel (a calendar queue with fixed slot width; Brown, CACM 1988; Varghese and Lauck, SOSP
/// 1987) with a bitmap of occupied slots and a binary-heap overflow for far events.
///
/// Push is O(1). A slot is sorted once, when the cursor reaches it, and then read in order (slots hold a
/// handful of entries); the next occupied slot is found through the bitmap, 64 slots per word; the
/// overflow heap is consulted only when the wheel turns past a slot. Entries with equal times pop in the
/// order of their [`TieKey`], equal keys in push order.
///
/// A drained slot hands its buffer to a stack of spare buffers, and a slot that receives its first entry
/// takes a small one ([`SMALL_SLOT`] entries), the most recently freed. A slot that outgrows it swaps it
/// for a large spare buffer, one that an earlier busy slot grew. So a slot holding a far timer or two
/// holds a small buffer, not one as large as the busiest slot before it (at 8,192 hosts, where slots hold
/// hundreds of entries, that cost 280 MB), and the large buffers are about as many as the busy slots at
/// once. A burst (every port of an incast freeing in the same nanoseconds) leaves nothing of its size
/// behind in the slots it passed through, and the most recently freed buffer is still in cache.
#[derive(Debug)]
pub struct WheelQueue<T, K = Fifo> {
    /// Fixed-size arrays, so that an index masked to the wheel needs no bounds check.
    slots: Box<[Vec<(Time, T)>; SLOTS]>,
    occupied: Box<[u64; SLOTS / 64]>,
    /// Start time of the current slot.
    base: Time,
    /// Index of the current slot.
    cursor: usize,
    /// Read position in the current slot.
    head: usize,
    /// The current slot is sorted by time (it is sorted once, when the cursor reaches it).
    sorted: bool,
    in_wheel: usize,
    overflow: HeapQueue<T>,
    /// Small buffers of drained slots, for the next slots that receive a first entry.
    spare_small: Vec<Vec<(Time, T)>>,
    /// Large buffers of drained slots, for the next slots that outgrow a small one.
    spare_large: Vec<Vec<(Time, T)>>,
    /// A copy of the slot (or run of equal times) being sorted through ranks or keys.
    scratch: Vec<(Time, T)>,
    /// Each entry's time within the slot and index, for sorting a large slot.
    ranks: Vec<u64>,
    /// A large slot's entries by bucket of their times, for sorting it.
    counts: Box<[u32; 1 << COUNT_BITS]>,
    /// Each entry's tie key and index, for sorting a run of equal times.
    keyed: Vec<(u64, u32)>,
    /// Orders entries of equal time.
    ties: K,
}

impl<T: Copy> Default for WheelQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> WheelQueue<T> {
    /// An empty queue starting at time 0, equal times in push order.
    pub fn new() -> Self {
        Self::with_ties(Fifo)
    }
}

impl<T: Copy, K: TieKey<T>> WheelQueue<T, K> {
    /// An empty queue starting at time 0 whose equal times pop in the order of `ties`.
    pub fn with_ties(ties: K) -> Self {
        WheelQueue {
            slots: (0..SLOTS).map(|_| Vec::new()).collect::<Box<[_]>>().try_into().unwrap_or_else(|_| unreachable!()),
            occupied: Box::new([0; SLOTS / 64]),
            base: 0,
            cursor: 0,
            head: 0,
            sorted: false,
            in_wheel: 0,
            overflow: HeapQueue::default(),
            spare_small: Vec::new(),
            spare_large: Vec::new(),
            scratch: Vec::new(),
            ranks: Vec::new(),
            counts: Box::new([0; 1 << COUNT_BITS]),
            keyed: Vec::new(),
            ties,
        }
    }

    /// The tie-break keys.
    pub fn ties(&self) -> &K {
        &self.ties
    }

    /// The tie-break keys, mutably (to tell them of new flows).
    pub fn ties_mut(&mut self) -> &mut K {
        &mut self.ties
    }

    /// End of the wheel's horizon: entries before it live in slots.
    #[inline]
    fn horizon(&self) -> Time {
        self.base + ((SLOTS as Time) << SLOT_BITS)
    }

    /// Gives a full slot room for one more entry: a new small buffer for its first entry ([`Self::reserve_one`]
    /// found no spare), a large one when its small one is full (a large one grows as any vector).
    #[cold]
    fn make_room(&mut self, slot: usize) {
        let entries = &mut self.slots[slot];
        if entries.capacity() == 0 {
            *entries = Vec::with_capacity(SMALL_SLOT);
        } else if entries.capacity() <= SMALL_SLOT {
            if let Some(mut large) = self.spare_large.pop() {
                large.extend_from_slice(entries);
                let mut small = std::mem::replace(entries, large);
                small.clear();
                self.spare_small.push(small);
            }
        }
    }

    /// Makes room in `slot`'s buffer for one more entry.
    #[inline(always)]
    fn reserve_one(&mut self, slot: usize) {
        let entries = &mut self.slots[slot];
        if entries.len() == entries.capacity() {
            // Most full slots are empty ones taking their first entry (about a fifth of ws128's pushes):
            // a recently freed small buffer, without a call.
            if entries.capacity() == 0 {
                if let Some(small) = self.spare_small.pop() {
                    *entries = small;
                    return;
                }
            }
            self.make_room(slot);
        }
    }

    /// Hands a drained slot's buffer to the spares of its size.
    fn release(&mut self, slot: usize) {
        let mut buffer = std::mem::take(&mut self.slots[slot]);
        buffer.clear();
        if buffer.capacity() <= SMALL_SLOT {
            self.spare_small.push(buffer);
        } else {
            self.spare_large.push(buffer);
        }
    }

    #[inline(always)]
    fn place(&mut self, time: Time, item: T) {
        let slot = ((time >> SLOT_BITS) as usize) & (SLOTS - 1);
        self.reserve_one(slot);
        let entries = &mut self.slots[slot];
        if slot == self.cursor && self.sorted {
            // The slot being consumed stays sorted; equal times and keys go after those already there.
            let head = self.head;
            let mut at = head + entries[head..].partition_point(|e| e.0 <= time);
            if at > head && entries[at - 1].0 == time {
                let key = self.ties.key(time, &item);
                while at > head && entries[at - 1].0 == time && self.ties.key(time, &entries[at - 1].1) > key {
                    at -= 1;
                }
            }
            entries.insert(at, (time, item));
        } else {
            entries.push((time, item));
        }
        self.occupied[slot / 64] |= 1 << (slot % 64);
        self.in_wheel += 1;
    }

    /// Moves overflow entries that now fall inside the horizon into slots.
    #[inline(never)]
    fn migrate(&mut self) {
        let horizon = self.horizon();
        while let Some(time) = self.overflow.peek_time() {
            if time >= horizon {
                break;
            }
            let (time, item) = self.overflow.pop().expect("peeked");
            self.place(time, item);
        }
    }

    /// The next occupied slot at or after the cursor (wrapping), as a distance in slots.
    fn next_occupied(&self) -> Option<usize> {
        let words = SLOTS / 64;
        let start_word = self.cursor / 64;
        let first = self.occupied[start_word] & (!0u64 << (self.cursor % 64));
        if first != 0 {
            return Some(start_word * 64 + first.trailing_zeros() as usize - self.cursor);
        }
        for step in 1..=words {
            let w = (start_word + step) % words;
            let bits = if step == words { self.occupied[w] & !(!0u64 << (self.cursor % 64)) } else { self.occupied[w] };
            if bits != 0 {
                let slot = w * 64 + bits.trailing_zeros() as usize;
                return Some((slot + SLOTS - self.cursor) % SLOTS);
            }
        }
        None
    }

    /// Moves the cursor `distance` slots on, pulling in overflow entries the horizon now covers.
    fn advance(&mut self, distance: usize) {
        if distance == 0 {
            return;
        }
        self.cursor = (self.cursor + distance) % SLOTS;
        self.base += (distance as Time) << SLOT_BITS;
        self.head = 0;
        self.sorted = false;
        // Most turns bring no far event within the horizon: the test stays inline, the move does not.
        if self.overflow.peek_time().is_some_and(|time| time < self.horizon()) {
            self.migrate();
        }
    }

    /// Entries the slots' and the spare buffers can hold without growing.
    #[cfg(test)]
    fn buffered(&self) -> usize {
        self.slots.iter().chain(&self.spare_small).chain(&self.spare_large).map(Vec::capacity).sum()
    }

    /// Jumps an empty wheel to the slot of the earliest overflow entry.
    fn jump_to_overflow(&mut self) -> bool {
        let Some(time) = self.overflow.peek_time() else {
            return false;
        };
        self.base = time >> SLOT_BITS << SLOT_BITS;
        self.cursor = ((time >> SLOT_BITS) as usize) & (SLOTS - 1);
        self.head = 0;
        self.sorted = false;
        self.migrate();
        true
    }
}

impl<T: Copy, K: TieKey<T>> WheelQueue<T, K> {
    /// Adds `item` at `time` ahead of every entry already pending at that time with its key (entries
    /// pushed at that time later still go after it); `time` must not be earlier than the current slot.
    /// Its key should be the smallest there is: the wheel's slot puts it ahead of every equal time.
    pub fn push_front(&mut self, time: Time, item: T) {
        debug_assert!(time >= self.base, "event at {time} scheduled before the current slot {}", self.base);
        if time >= self.horizon() {
            self.overflow.push_front(time, item);
            return;
        }
        let slot = ((time >> SLOT_BITS) as usize) & (SLOTS - 1);
        self.reserve_one(slot);
        let entries = &mut self.slots[slot];
        // The slot being consumed is sorted: go before its equal times. Any other slot is sorted (stably)
        // when the cursor reaches it, so the first place is ahead of them.
        let at = if slot == self.cursor && self.sorted {
            self.head + entries[self.head..].partition_point(|e| e.0 < time)
        } else {
            0
        };
        entries.insert(at, (time, item));
        self.occupied[slot / 64] |= 1 << (slot % 64);
        self.in_wheel += 1;
    }
}

impl<T: Copy, K: TieKey<T>> EventQueue<T> for WheelQueue<T, K> {
    #[inline(always)]
    fn push(&mut self, time: Time, item: T) {
        debug_assert!(time >= self.base, "event at {time} scheduled before the current slot {}", self.base);
        if time < self.horizon() {
            self.place(time, item);
        } else {
            self.overflow.push(time, item);
        }
    }

    // Always inlined: the run loop pops every event, and a call per event saved and restored registers.
    #[inline(always)]
    fn pop(&mut self) -> Option<(Time, T)> {
        self.take::<false>(Time::MAX)
    }

    fn len(&self) -> usize {
        self.in_wheel + self.overflow.len()
    }
}

impl<T: Copy, K: TieKey<T>> WheelQueue<T, K> {
    /// The time of the next entry, without taking it or moving the wheel.
    pub fn peek_time(&self) -> Option<Time> {
        if self.in_wheel == 0 {
            return self.overflow.peek_time();
        }
        let distance = self.next_occupied().expect("the wheel holds entries");
        let from = if distance == 0 { self.head } else { 0 };
        self.slots[(self.cursor + distance) % SLOTS][from..].iter().map(|e| e.0).min()
    }

    /// The entry `ahead` places after the next one to pop, when it lies in the slot being read (the
    /// entries there are in order already); `None` otherwise. For looking ahead to prefetch what an entry
    /// will need.
    #[inline(always)]
    pub fn upcoming(&self, ahead: usize) -> Option<&T> {
        if !self.sorted {
            return None;
        }
        self.slots[self.cursor].get(self.head + ahead).map(|entry| &entry.1)
    }

    /// Takes the next entry if it is due before `until`. The wheel turns no further than `until`'s slot,
    /// so entries pushed afterwards at `until` or later still find their place.
    #[inline]
    pub fn pop_before(&mut self, until: Time) -> Option<(Time, T)> {
        self.take::<true>(until)
    }

    /// [`WheelQueue::pop_before`], its bound checked only when `BOUNDED` (a plain pop has none).
    #[inline(always)]
    fn take<const BOUNDED: bool>(&mut self, until: Time) -> Option<(Time, T)> {
        if self.sorted && self.head < self.slots[self.cursor].len() {
            // The slot being read holds the next entry: no need to look for one.
            return self.take_in_slot::<BOUNDED>(until);
        }
        if self.in_wheel == 0 {
            if BOUNDED && self.overflow.peek_time().is_none_or(|t| t >= until) {
                return None;
            }
            if !self.jump_to_overflow() {
                return None;
            }
        }
        let distance = self.next_occupied().expect("the wheel holds entries");
        if BOUNDED && self.base + ((distance as Time) << SLOT_BITS) >= until {
            return None;
        }
        self.advance(distance);
        if !self.sorted {
            // A slot of one entry is in order: a quarter of ws128's slots, most of a sparse wheel's (a
            // part of a partitioned run), which paid a call for nothing.
            if self.slots[self.cursor].len() > 1 {
                self.sort_slot();
            } else {
                self.sorted = true;
            }
        }
        self.take_in_slot::<BOUNDED>(until)
    }

    /// Takes the next entry of the slot being read (sorted, with entries left), if due before `until`.
    #[inline(always)]
    fn take_in_slot<const BOUNDED: bool>(&mut self, until: Time) -> Option<(Time, T)> {
        let slot = &self.slots[self.cursor];
        let entry = slot[self.head];
        if BOUNDED && entry.0 >= until {
            return None;
        }
        self.head += 1;
        if self.head == slot.len() {
            self.release(self.cursor);
            self.head = 0;
            self.occupied[self.cursor / 64] &= !(1 << (self.cursor % 64));
        }
        self.in_wheel -= 1;
        Some(entry)
    }

    /// Sorts the slot the cursor reached by time, equal times by key, equal keys in push order (stable).
    /// Slots hold a handful of entries, mostly in order: an insertion sort by time, which also finds
    /// whether any times are equal, and keys read only for those. A larger slot (thousands of hosts put
    /// hundreds of entries in one) is sorted through a `u64` per entry counted into buckets instead
    /// ([`sort_large_by_time`]); runs of three or more equal times read each key once
    /// ([`sort_run_by_key`]).
    fn sort_slot(&mut self) {
        self.sorted = true;
        let slot = self.slots[self.cursor].as_mut_slice();
        let tie = if slot.len() <= INSERTION_SORT_MAX {
            insertion_sort_by_time(slot)
        } else {
            sort_large_by_time(slot, self.base, &mut self.ranks, &mut self.counts, &mut self.scratch)
        };
        if tie {
            let ties = &self.ties;
            for run in slot.chunk_by_mut(|a, b| a.0 == b.0).filter(|run| run.len() > 1) {
                if run.len() == 2 {
                    if ties.key(run[0].0, &run[0].1) > ties.key(run[1].0, &run[1].1) {
                        run.swap(0, 1);
                    }
                } else {
                    sort_run_by_key(run, &mut self.keyed, &mut self.scratch, |e| ties.key(e.0, &e.1));
                }
            }
        }
    }
}

/// Sorts `entries` by `key` (read once per entry), equal keys in their order, through `keyed` and
/// `scratch`. Out of line: runs of two never come here.
#[inline(never)]
fn sort_run_by_key<E: Copy>(
    entries: &mut [E],
    keyed: &mut Vec<(u64, u32)>,
    scratch: &mut Vec<E>,
    key: impl Fn(&E) -> u64,
) {
    keyed.clear();
    keyed.extend(entries.iter().enumerate().map(|(i, e)| (key(e), i as u32)));
    // The index makes every pair distinct, so an unstable sort keeps equal keys in their order.
    keyed.sort_unstable();
    place_in_order(entries, scratch, keyed.iter().map(|&(_, i)| i as usize));
}

/// log2 of the buckets a large slot's entries are counted into (16 ps each).
const COUNT_BITS: u32 = 7;

/// Sorts `entries`, whose times lie in `[base, base + slot width)`, by time, equal times in their order
/// (stable), through `ranks`, `counts` and `scratch`; returns whether any times are equal. Each entry's
/// rank is its offset within the slot above its index. The ranks are counted into buckets of 16 ps by
/// their offsets (a pass that keeps each bucket in index order), which leaves them in order but within a
/// bucket; an insertion sort finishes them, moving little and guessing its comparisons right. The
/// entries then move once. Out of line: small slots never come here.
#[inline(never)]
fn sort_large_by_time<T: Copy>(
    entries: &mut [(Time, T)],
    base: Time,
    ranks: &mut Vec<u64>,
    counts: &mut [u32; 1 << COUNT_BITS],
    scratch: &mut Vec<(Time, T)>,
) -> bool {
    const SHIFT: u32 = SLOT_BITS - COUNT_BITS;
    const MASK: usize = (1 << COUNT_BITS) - 1;
    let offset = |e: &(Time, T)| {
        debug_assert!(e.0 - base < 1 << SLOT_BITS, "an entry of the slot being read");
        e.0 - base
    };
    counts.fill(0);
    for e in entries.iter() {
        counts[(offset(e) >> SHIFT) as usize & MASK] += 1;
    }
    let mut start = 0;
    for count in counts.iter_mut() {
        (*count, start) = (start, start + *count);
    }
    ranks.clear();
    ranks.resize(entries.len(), 0);
    for (i, e) in entries.iter().enumerate() {
        let at = offset(e);
        let bucket = &mut counts[(at >> SHIFT) as usize & MASK];
        ranks[*bucket as usize] = at << 32 | i as u64;
        *bucket += 1;
    }
    for i in 1..ranks.len() {
        let rank = ranks[i];
        let mut j = i;
        while j > 0 && ranks[j - 1] > rank {
            ranks[j] = ranks[j - 1];
            j -= 1;
        }
        ranks[j] = rank;
    }
    place_in_order(entries, scratch, ranks.iter().map(|rank| (rank & u32::MAX as u64) as usize));
    ranks.windows(2).any(|w| w[0] >> 32 == w[1] >> 32)
}

/// Rearranges `entries` so that the k-th holds what was at the k-th index `order` gives (a copy of the
/// entries goes through `scratch`).
#[inline]
fn place_in_order<E: Copy>(entries: &mut [E], scratch: &mut Vec<E>, order: impl Iterator<Item = usize>) {
    scratch.clear();
    scratch.extend_from_slice(entries);
    for (entry, from) in entries.iter_mut().zip(order) {
        *entry = scratch[from];
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
    fn wheel_matches_the_heap_across_slots_overflow_and_gaps() {
        let mut rng = Rng::new(5, 6);
        let mut wheel = WheelQueue::new();
        let mut heap = HeapQueue::default();
        let mut now = 0;
        for i in 0..200_000u32 {
            // Mostly short delays, some beyond the horizon, and rare long idle gaps.
            let delay = match i % 10 {
                0 => rng.below(1 << 30),
                1 => rng.below(1 << 40),
                _ => rng.below(1 << 16),
            };
            wheel.push(now + delay, i);
            heap.push(now + delay, i);
            if i % 2 == 0 {
                let a = wheel.pop().unwrap();
                let b = heap.pop().unwrap();
                assert_eq!(a, b, "pop {i}");
                now = a.0;
            }
        }
        assert_eq!(wheel.len(), heap.len());
        assert_eq!(drain(&mut wheel), drain(&mut heap));
        assert!(wheel.is_empty());
    }

    /// An entry pushed to the front pops before the entries already pending at its time; entries pushed
    /// at that time afterwards pop after it. So in a slot not yet reached, in the slot being read, and
    /// beyond the horizon (through the overflow heap).
    #[test]
    fn an_entry_pushed_to_the_front_goes_ahead_of_its_time() {
        let far = (SLOTS as Time + 5) << SLOT_BITS;
        for at in [3 << SLOT_BITS, far] {
            let mut wheel = WheelQueue::new();
            let mut heap = HeapQueue::default();
            for (time, item) in [(at, 1), (at + 1, 2), (at, 3)] {
                wheel.push(time, item);
                heap.push(time, item);
            }
            wheel.push_front(at, 0);
            heap.push_front(at, 0);
            wheel.push(at, 4);
            heap.push(at, 4);
            let order = vec![(at, 0), (at, 1), (at, 3), (at, 4), (at + 1, 2)];
            assert_eq!(drain(&mut wheel), order, "wheel, time {at}");
            assert_eq!(drain(&mut heap), order, "heap, time {at}");
        }
        // The slot being read: its earlier entries are gone, its equal times wait behind the new one.
        let mut wheel = WheelQueue::new();
        for item in 0..4 {
            wheel.push(100 + item as Time / 2, item);
        }
        assert_eq!(wheel.pop(), Some((100, 0)));
        wheel.push_front(100, 9);
        wheel.push_front(101, 8);
        assert_eq!(drain(&mut wheel), vec![(100, 9), (100, 1), (101, 8), (101, 2), (101, 3)]);
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

    /// Items' tens digit as their key.
    struct Tens;

    impl TieKey<u32> for Tens {
        fn key(&self, _: Time, item: &u32) -> u64 {
            (*item / 10) as u64
        }
    }

    /// Equal times pop by key, equal keys in push order, also for entries pushed into the slot being read
    /// (after the entries of their key, before greater keys) and for entries that waited in the overflow.
    #[test]
    fn equal_times_pop_by_key_then_in_push_order() {
        let far = (SLOTS as Time + 5) << SLOT_BITS;
        for at in [100, far] {
            let mut wheel = WheelQueue::with_ties(Tens);
            for item in [25, 12, 11, 30, 13] {
                wheel.push(at, item);
            }
            assert_eq!(wheel.pop(), Some((at, 12)));
            wheel.push(at, 14);
            wheel.push(at, 5);
            let rest: Vec<u32> = drain(&mut wheel).into_iter().map(|e| e.1).collect();
            assert_eq!(rest, [5, 11, 13, 14, 25, 30], "time {at}");
        }
    }

    /// Many equal times, keys and slots of every size, large ones (sorted by the standard library) and
    /// small ones (by insertion), with pushes into the slot being read: the wheel pops in the order of
    /// time, key and push, as a sorted map of the same entries does.
    #[test]
    fn slots_of_every_size_pop_by_time_key_and_push_order() {
        let mut rng = Rng::new(7, 8);
        let mut wheel = WheelQueue::with_ties(Tens);
        let mut reference = std::collections::BTreeMap::new();
        let mut now: Time = 0;
        let mut seq = 0u64;
        for round in 0..2_000u64 {
            // Bursts of up to 80 entries within a few slots, on a coarse grid of times so that they tie.
            let burst = rng.below(if round % 10 == 0 { 80 } else { 12 }) + 1;
            for _ in 0..burst {
                let time = now + rng.below(4) * 700;
                let item = rng.below(50) as u32;
                wheel.push(time, item);
                reference.insert((time, (item / 10) as u64, seq), item);
                seq += 1;
            }
            for _ in 0..rng.below(burst + 4) {
                let expected = reference.pop_first().map(|((time, _, _), item)| (time, item));
                assert_eq!(wheel.pop(), expected, "round {round}");
                if let Some((time, _)) = expected {
                    now = time;
                }
            }
        }
        let rest: Vec<(Time, u32)> = reference.into_iter().map(|((time, _, _), item)| (time, item)).collect();
        assert_eq!(drain(&mut wheel), rest);
    }

    /// Large slots (counted into buckets of 16 ps, then finished by insertion) pop by time, equal times in
    /// push order, whether their times are spread over the slot, crowd a few buckets or tie.
    #[test]
    fn large_slots_pop_in_time_then_push_order() {
        let mut rng = Rng::new(9, 10);
        let mut wheel = WheelQueue::new();
        for (round, size) in [33u64, 64, 200, 1_000, 5_000].into_iter().enumerate() {
            let base = (round as Time + 1) << (SLOT_BITS + 4);
            let spread = [1 << SLOT_BITS, 40, 3][round % 3];
            let mut pushed: Vec<(Time, u32)> = (0..size).map(|i| (base + rng.below(spread), i as u32)).collect();
            for &(time, item) in &pushed {
                wheel.push(time, item);
            }
            pushed.sort_by_key(|&(time, _)| time);
            let popped: Vec<(Time, u32)> = (0..size).map(|_| wheel.pop().expect("pushed")).collect();
            assert_eq!(popped, pushed, "a slot of {size} entries within {spread} ps");
        }
    }

    /// `pop_before` takes only what is due before its bound and turns the wheel no further, so an entry
    /// pushed at the bound afterwards still pops in order; `peek_time` tells the next time and moves
    /// nothing.
    #[test]
    fn pop_before_stops_at_its_bound_and_what_comes_later_still_finds_its_place() {
        let far = (SLOTS as Time + 5) << SLOT_BITS;
        let mut wheel = WheelQueue::new();
        for (time, item) in [(100, 1), (9_000, 3), (far, 4)] {
            wheel.push(time, item);
        }
        assert_eq!(wheel.peek_time(), Some(100));
        assert_eq!(wheel.pop_before(5_000), Some((100, 1)));
        assert_eq!(wheel.pop_before(5_000), None);
        assert_eq!(wheel.peek_time(), Some(9_000));
        wheel.push(5_000, 2);
        assert_eq!(wheel.peek_time(), Some(5_000));
        assert_eq!(wheel.pop_before(9_000), Some((5_000, 2)));
        assert_eq!(wheel.pop_before(9_000), None);
        assert_eq!(wheel.pop_before(far), Some((9_000, 3)));
        assert_eq!(wheel.pop_before(far), None, "the overflow entry is due at the bound, not before");
        assert_eq!(wheel.peek_time(), Some(far));
        wheel.push(far - 1, 9);
        assert_eq!(drain(&mut wheel), [(far - 1, 9), (far, 4)]);
        assert_eq!(wheel.peek_time(), None);
    }

    /// A burst of 1,000 events at one time in one slot after another (every port of an incast freeing
    /// together, slot after slot): the buffers stay about one burst's size in all, where slots that kept
    /// their own buffers would hold 1,000 entries in each of the 2,000 slots passed.
    #[test]
    fn a_burst_passing_through_the_slots_leaves_no_buffer_behind() {
        let mut wheel = WheelQueue::new();
        let mut pushed = 0u32;
        for round in 0..2_000u64 {
            let t = round << SLOT_BITS;
            for i in 0..1_000 {
                wheel.push(t, pushed + i);
            }
            pushed += 1_000;
            for i in 0..1_000 {
                assert_eq!(wheel.pop(), Some((t, pushed - 1_000 + i)), "burst {round} pops in push order");
            }
        }
        assert!(wheel.is_empty());
        assert!(wheel.buffered() <= 2_048, "{} entries still buffered", wheel.buffered());
    }

    /// Busy slots, each drained and then followed by a far timer: the timers wait in small buffers, not
    /// in the large buffers the busy slots freed (with one stack of spares each would take one, 256
    /// entries each).
    #[test]
    fn far_timers_behind_busy_slots_hold_small_buffers() {
        let mut wheel = WheelQueue::new();
        let rounds = 300u64;
        for round in 0..rounds {
            let t = round << SLOT_BITS;
            for i in 0..200 {
                wheel.push(t, i);
            }
            for i in 0..200 {
                assert_eq!(wheel.pop(), Some((t, i)));
            }
            wheel.push(t + (10_000 << SLOT_BITS), 1_000);
        }
        assert_eq!(wheel.len(), rounds as usize);
        let bound = rounds as usize * SMALL_SLOT + 2 * 256;
        assert!(wheel.buffered() <= bound, "{} entries buffered, over {bound}", wheel.buffered());
        let timers = drain(&mut wheel);
        assert!(timers.iter().all(|&(_, i)| i == 1_000) && timers.windows(2).all(|w| w[0].0 < w[1].0));
    }

    /// Looking ahead sees the entries after the next one in the slot being read, in the order they will
    /// pop (ties by key included), and nothing beyond that slot or before the slot is read.
    #[test]
    fn upcoming_shows_what_pops_next_in_the_slot_being_read() {
        let mut wheel = WheelQueue::new();
        for (t, i) in [(3, 30), (1, 10), (2, 20), (2, 21), (5 << SLOT_BITS, 99)] {
            wheel.push(t, i);
        }
        assert_eq!(wheel.upcoming(0), None, "the slot is not sorted before the first pop");
        assert_eq!(wheel.pop(), Some((1, 10)));
        assert_eq!([0, 1, 2, 3].map(|ahead| wheel.upcoming(ahead).copied()), [Some(20), Some(21), Some(30), None]);
        wheel.push(2, 22);
        assert_eq!(wheel.upcoming(2).copied(), Some(22), "a push into the slot being read takes its place");
        let popped: Vec<u32> = std::iter::from_fn(|| wheel.pop()).map(|e| e.1).collect();
        assert_eq!(popped, [20, 21, 22, 30, 99]);
        assert_eq!(wheel.upcoming(0), None);
    }
}
