//! A hashed timing wheel: the scheduler of every flow's next send (pacing) and timers, O(1) to arm and
//! to fire however many flows wait. Time is cut into ticks; an entry due within the wheel's horizon
//! sits in its tick's slot, a later one in an overflow heap until the wheel comes near. Entries are
//! never removed early: their owner ignores a stale one (each carries a generation), which keeps
//! arming free of searches. Slots keep their capacity, so a steady load allocates nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use sluice_core::Time;

/// Slots of the wheel; with a 1 us tick the horizon is 4.096 ms.
const SLOTS: usize = 4096;

/// A wheel of entries of type `T`.
#[derive(Debug)]
pub struct Wheel<T> {
    tick: Time,
    /// The tick the wheel fires next (entries of earlier ticks have fired).
    current: u64,
    slots: Vec<Vec<(Time, T)>>,
    overflow: BinaryHeap<Reverse<(Time, u64, T)>>,
    /// Tie-breaker of overflow entries, so that equal times keep their arming order.
    armed: u64,
    len: usize,
    /// Of `len`, entries in the slots (the rest wait in the overflow).
    in_wheel: usize,
}

impl<T: Copy + Ord> Wheel<T> {
    /// An empty wheel of `tick` picoseconds per slot, starting at `now`.
    pub fn new(tick: Time, now: Time) -> Wheel<T> {
        let tick = tick.max(1);
        Wheel {
            tick,
            current: now / tick,
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            overflow: BinaryHeap::new(),
            armed: 0,
            len: 0,
            in_wheel: 0,
        }
    }

    /// Entries waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Arms `entry` for `at` (an `at` in the past fires at the next [`Wheel::expire`]).
    pub fn arm(&mut self, at: Time, entry: T) {
        self.len += 1;
        let due_tick = (at / self.tick).max(self.current);
        if due_tick - self.current < SLOTS as u64 {
            self.slots[due_tick as usize % SLOTS].push((at, entry));
            self.in_wheel += 1;
        } else {
            self.armed += 1;
            self.overflow.push(Reverse((at, self.armed, entry)));
        }
    }

    /// Moves every entry due by `now` into `out`, in time order of their ticks (within a tick, in
    /// arming order).
    pub fn expire(&mut self, now: Time, out: &mut Vec<T>) {
        let last = now / self.tick;
        while self.current <= last && self.len > 0 {
            if self.in_wheel == 0 {
                // Only the overflow holds entries: skip the empty ticks up to its earliest.
                let Some(Reverse((at, _, _))) = self.overflow.peek() else { break };
                if at / self.tick > last {
                    break;
                }
                self.current = self.current.max(at / self.tick);
            }
            self.refill();
            let slot = &mut self.slots[self.current as usize % SLOTS];
            let before = slot.len();
            if self.current < last {
                out.extend(slot.drain(..).map(|(_, entry)| entry));
            } else {
                // The tick `now` falls in: only what is due goes; the rest waits in its slot.
                slot.retain(|&(at, entry)| {
                    let due = at <= now;
                    if due {
                        out.push(entry);
                    }
                    !due
                });
            }
            let fired = before - slot.len();
            self.len -= fired;
            self.in_wheel -= fired;
            if self.current == last {
                break;
            }
            self.current += 1;
        }
        self.current = self.current.max(last);
    }

    /// The earliest time an entry waits for; `None` when empty.
    pub fn next_due(&self) -> Option<Time> {
        if self.len == 0 {
            return None;
        }
        let in_wheel = (0..SLOTS as u64 * (self.in_wheel > 0) as u64)
            .map(|k| &self.slots[((self.current + k) as usize) % SLOTS])
            .find(|slot| !slot.is_empty())
            .and_then(|slot| slot.iter().map(|(at, _)| *at).min());
        let overflow = self.overflow.peek().map(|Reverse((at, _, _))| *at);
        match (in_wheel, overflow) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Moves overflow entries that now fall within the horizon into their slots.
    fn refill(&mut self) {
        while let Some(Reverse((at, _, _))) = self.overflow.peek() {
            let due_tick = (at / self.tick).max(self.current);
            if due_tick - self.current >= SLOTS as u64 {
                break;
            }
            let Some(Reverse((at, _, entry))) = self.overflow.pop() else { break };
            self.slots[due_tick as usize % SLOTS].push((at, entry));
            self.in_wheel += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_fire_in_tick_order_and_not_before() {
        let mut w = Wheel::new(10, 0);
        w.arm(35, 3u32);
        w.arm(12, 1);
        w.arm(19, 2);
        w.arm(5, 0);
        let mut out = Vec::new();
        w.expire(9, &mut out);
        assert_eq!(out, [0]);
        w.expire(15, &mut out);
        assert_eq!(out, [0, 1], "19 is in the tick of 15 but not due");
        assert_eq!(w.next_due(), Some(19));
        w.expire(29, &mut out);
        assert_eq!(out, [0, 1, 2]);
        assert_eq!(w.next_due(), Some(35));
        w.expire(40, &mut out);
        assert_eq!(out, [0, 1, 2, 3]);
        assert!(w.is_empty());
        assert_eq!(w.next_due(), None);
    }

    #[test]
    fn far_entries_wait_in_the_overflow_and_past_ones_fire_next() {
        let mut w = Wheel::new(1, 100);
        w.arm(100 + 3 * SLOTS as Time, 7u32);
        w.arm(100 + SLOTS as Time + 1, 6);
        w.arm(50, 5);
        assert_eq!(w.len(), 3);
        assert_eq!(w.next_due(), Some(50), "a past entry: due at once");
        let mut out = Vec::new();
        w.expire(100, &mut out);
        assert_eq!(out, [5]);
        w.expire(100 + 2 * SLOTS as Time, &mut out);
        assert_eq!(out, [5, 6]);
        assert_eq!(w.next_due(), Some(100 + 3 * SLOTS as Time));
        w.expire(100 + 3 * SLOTS as Time, &mut out);
        assert_eq!(out, [5, 6, 7]);
    }

    #[test]
    fn a_long_idle_jump_keeps_every_entry() {
        let mut w = Wheel::new(1_000, 0);
        for k in 0..10_000u32 {
            w.arm(k as Time * 7_919, k);
        }
        let mut out = Vec::new();
        w.expire(50_000_000, &mut out);
        assert_eq!(out.len(), 6314, "every entry due by 50 us, k * 7919 <= 50_000_000, and no other");
        assert!(out.iter().all(|&k| k as Time * 7_919 <= 50_000_000));
        w.expire(80_000_000, &mut out);
        out.sort_unstable();
        assert!(out.iter().copied().eq(0..10_000), "each entry exactly once");
        assert!(w.is_empty());
    }
}
