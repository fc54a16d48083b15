//! Packet storage: a fixed pool of frame slots allocated once, with per-slot metadata and intrusive
//! FIFO lists through it (priority queues, delay lines and the free list all link slots by index), so
//! forwarding a packet allocates nothing.

use sluice_core::Time;

/// Bytes per slot: a 1500-byte IP MTU frame (1514 B) with room to spare; larger frames are refused.
pub const SLOT_BYTES: usize = 2048;
/// The end of a list.
pub const NIL: u32 = u32::MAX;

/// What the fabric knows about a stored packet.
#[derive(Debug, Clone, Copy, Default)]
pub struct Meta {
    /// Frame bytes in the slot.
    pub len: u32,
    /// Next slot of the list this one is on.
    pub next: u32,
    /// Arrival time at the peer, ps, while on a delay line.
    pub due: Time,
    /// Priority queue (0 first).
    pub queue: u8,
    /// ECN-capable (ECT(0) or ECT(1)) and not yet marked.
    pub ect: bool,
    /// A data packet (not a pure ACK or sluice control packet).
    pub data: bool,
    /// A sluice packet asking for INT records.
    pub int: bool,
    /// A sluice token (receiver-driven transports).
    pub token: bool,
    /// Destination host index.
    pub dst: u32,
    /// Hash of the 5-tuple, for ECMP.
    pub hash: u64,
    /// The impairment rule whose flow this packet belongs to, if any.
    pub impair: Option<u16>,
}

/// A FIFO of slots linked through [`Meta::next`].
#[derive(Debug, Clone, Copy)]
pub struct List {
    head: u32,
    tail: u32,
}

impl Default for List {
    fn default() -> Self {
        List { head: NIL, tail: NIL }
    }
}

impl List {
    /// Whether the list is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// The first slot, if any.
    #[inline]
    pub fn head(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }
}

/// The slots and their metadata.
#[derive(Debug)]
pub struct Pool {
    data: Vec<u8>,
    meta: Vec<Meta>,
    free: List,
    in_use: usize,
}

impl Pool {
    /// A pool of `slots` slots (memory is touched only as slots are used).
    pub fn new(slots: usize) -> Pool {
        let slots = slots.clamp(1, NIL as usize - 1);
        let mut pool = Pool {
            data: vec![0; slots * SLOT_BYTES],
            meta: vec![Meta::default(); slots],
            free: List::default(),
            in_use: 0,
        };
        let mut free = List::default();
        for id in 0..slots as u32 {
            pool.push(&mut free, id);
        }
        pool.free = free;
        pool
    }

    /// Takes a free slot holding a copy of `frame`, or `None` when the pool is exhausted or the frame
    /// does not fit a slot.
    pub fn store(&mut self, frame: &[u8]) -> Option<u32> {
        if frame.len() > SLOT_BYTES {
            return None;
        }
        let mut free = self.free;
        let id = self.pop(&mut free)?;
        self.free = free;
        self.in_use += 1;
        self.bytes_mut(id)[..frame.len()].copy_from_slice(frame);
        self.meta[id as usize] = Meta { len: frame.len() as u32, next: NIL, ..Meta::default() };
        Some(id)
    }

    /// Returns slot `id` to the free list.
    pub fn release(&mut self, id: u32) {
        self.in_use -= 1;
        let mut free = self.free;
        self.push(&mut free, id);
        self.free = free;
    }

    /// Slots in use.
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// The metadata of slot `id`.
    #[inline]
    pub fn meta(&self, id: u32) -> &Meta {
        &self.meta[id as usize]
    }

    /// The metadata of slot `id`, to change.
    #[inline]
    pub fn meta_mut(&mut self, id: u32) -> &mut Meta {
        &mut self.meta[id as usize]
    }

    /// The frame in slot `id`.
    #[inline]
    pub fn frame(&self, id: u32) -> &[u8] {
        let at = id as usize * SLOT_BYTES;
        &self.data[at..at + self.meta[id as usize].len as usize]
    }

    /// The whole slot `id` (the frame and the room after it), to change.
    #[inline]
    pub fn bytes_mut(&mut self, id: u32) -> &mut [u8] {
        let at = id as usize * SLOT_BYTES;
        &mut self.data[at..at + SLOT_BYTES]
    }

    /// Appends slot `id` to `list`.
    #[inline]
    pub fn push(&mut self, list: &mut List, id: u32) {
        self.meta[id as usize].next = NIL;
        if list.tail == NIL {
            list.head = id;
        } else {
            self.meta[list.tail as usize].next = id;
        }
        list.tail = id;
    }

    /// Removes and returns the first slot of `list`.
    #[inline]
    pub fn pop(&mut self, list: &mut List) -> Option<u32> {
        let id = list.head()?;
        list.head = self.meta[id as usize].next;
        if list.head == NIL {
            list.tail = NIL;
        }
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_until_full_and_reuses_released_slots() {
        let mut pool = Pool::new(2);
        let a = pool.store(b"abc").unwrap();
        let b = pool.store(b"de").unwrap();
        assert_eq!(pool.store(b"f"), None);
        assert_eq!(pool.frame(a), b"abc");
        assert_eq!(pool.frame(b), b"de");
        pool.release(a);
        let c = pool.store(b"ghij").unwrap();
        assert_eq!(c, a);
        assert_eq!(pool.frame(c), b"ghij");
        assert_eq!(pool.in_use(), 2);
        assert_eq!(pool.store(&[0; SLOT_BYTES + 1]), None);
    }

    #[test]
    fn lists_are_fifo() {
        let mut pool = Pool::new(4);
        let ids: Vec<u32> = (0..3).map(|i| pool.store(&[i]).unwrap()).collect();
        let mut list = List::default();
        for &id in &ids {
            pool.push(&mut list, id);
        }
        let popped: Vec<u32> = std::iter::from_fn(|| pool.pop(&mut list)).collect();
        assert_eq!(popped, ids);
        assert!(list.is_empty());
    }
}
