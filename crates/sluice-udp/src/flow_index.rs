//! Flow ids to slots. A tester numbers its flows 0, 1, 2, ..., so the index is an array by id while the
//! ids stay dense, and a hash map only for ids far above the flows it holds. Looking up the flow of each
//! ACK then reads one word, and ids visited in order share cache lines; a hash map costs two scattered
//! cache misses a lookup at 65,536 flows (BENCHMARKS.md, "many flows").

use std::collections::HashMap;

/// Marks an id without a slot in the array.
const NONE: u32 = u32::MAX;
/// Ids below this always fit the array, whatever the number of flows.
const DENSE_FLOOR: usize = 4096;
/// The array covers ids up to this many times the flows held (plus [`DENSE_FLOOR`]): at most 16 bytes
/// per flow, however sparse the ids.
const DENSE_SPREAD: usize = 4;

/// A map from flow ids to slots (`u32` each; a slot is never `u32::MAX`).
#[derive(Debug, Default)]
pub struct FlowIndex {
    /// Slot by id, [`NONE`] where there is none.
    dense: Vec<u32>,
    /// Ids at or above `dense.len()`.
    sparse: HashMap<u32, u32>,
    len: usize,
}

impl FlowIndex {
    /// The slot of `id`.
    pub fn get(&self, id: u32) -> Option<u32> {
        match self.dense.get(id as usize) {
            Some(&slot) => (slot != NONE).then_some(slot),
            None => self.sparse.get(&id).copied(),
        }
    }

    /// Ids held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no id is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Gives `id` the slot `slot`; returns false (and changes nothing) when `id` has one already.
    pub fn insert(&mut self, id: u32, slot: u32) -> bool {
        assert_ne!(slot, NONE, "slot u32::MAX is reserved");
        if self.get(id).is_some() {
            return false;
        }
        self.len += 1;
        let index = id as usize;
        let bound = DENSE_FLOOR + DENSE_SPREAD * self.len;
        if index >= self.dense.len() && index < bound {
            self.grow((index + 1).max(self.dense.len() * 2).min(bound));
        }
        match self.dense.get_mut(index) {
            Some(entry) => *entry = slot,
            None => {
                self.sparse.insert(id, slot);
            }
        }
        true
    }

    /// Lengthens the array to `len` ids, moving the ids it now covers out of the hash map.
    fn grow(&mut self, len: usize) {
        self.dense.resize(len, NONE);
        let dense = &mut self.dense;
        self.sparse.retain(|&id, &mut slot| match dense.get_mut(id as usize) {
            Some(entry) => {
                *entry = slot;
                false
            }
            None => true,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dense_ids_live_in_the_array() {
        let mut index = FlowIndex::default();
        for id in 0..100_000u32 {
            assert!(index.insert(id, id + 7));
        }
        assert!(index.sparse.is_empty(), "ids 0..n are dense");
        assert!(index.dense.len() <= DENSE_FLOOR + DENSE_SPREAD * 100_000);
        assert_eq!(index.get(99_999), Some(100_006));
        assert_eq!(index.get(100_000), None);
        assert!(!index.insert(5, 1), "taken");
        assert_eq!(index.get(5), Some(12));
        assert_eq!(index.len(), 100_000);
    }

    #[test]
    fn sparse_ids_cost_no_array() {
        let mut index = FlowIndex::default();
        for k in 0..1000u32 {
            assert!(index.insert(k * 1_000_003, k));
        }
        assert!(index.dense.len() <= DENSE_FLOOR + DENSE_SPREAD * 1000);
        assert_eq!(index.get(999 * 1_000_003), Some(999));
        assert_eq!(index.get(u32::MAX), None);
        assert!(index.insert(u32::MAX, 5), "the largest id is an id like any other");
        assert_eq!(index.get(u32::MAX), Some(5));
    }

    proptest! {
        /// The index answers as a hash map does, whatever the ids and their order, and ids the array
        /// comes to cover after they went to the hash map are found in either.
        #[test]
        fn answers_as_a_hash_map(ids in prop::collection::vec(prop_oneof![0u32..20_000, any::<u32>()], 0..3000)) {
            let mut index = FlowIndex::default();
            let mut model = HashMap::new();
            for (slot, &id) in ids.iter().enumerate() {
                let fresh = !model.contains_key(&id);
                prop_assert_eq!(index.insert(id, slot as u32), fresh);
                model.entry(id).or_insert(slot as u32);
            }
            prop_assert_eq!(index.len(), model.len());
            for &id in &ids {
                prop_assert_eq!(index.get(id), model.get(&id).copied());
            }
            for probe in [0u32, 1, 4095, 4096, 19_999, u32::MAX - 1] {
                prop_assert_eq!(index.get(probe), model.get(&probe).copied());
            }
            prop_assert!(index.sparse.keys().all(|&id| id as usize >= index.dense.len()));
        }
    }
}
