//! The event queue's heap: a min-heap of packed event keys with eight children a node.
//!
//! Each level of a sift is a wait on memory once the heap outgrows the nearest cache (10,000
//! events), so the layout is chosen for the memory: with 8-byte keys a node's eight children
//! are one cache line's worth (two lines at most), and 10,000 events are five levels deep
//! instead of fourteen. Which child is smallest is a coin toss the CPU cannot predict, so it is
//! found with selects, not branches. The variants of this heap measured and not kept are in
//! docs/engine-notes.md.

use super::Key;

/// Children a node: those of `i` are `ARITY × i + 1 ..= ARITY × i + ARITY`.
const ARITY: usize = 8;

pub struct Heap<K: Key> {
    nodes: Vec<K>,
}

impl<K: Key> Heap<K> {
    pub fn with_capacity(capacity: usize) -> Self {
        Heap {
            nodes: Vec::with_capacity(capacity),
        }
    }

    #[inline]
    pub fn first(&self) -> Option<&K> {
        self.nodes.first()
    }

    #[inline]
    pub fn push(&mut self, k: K) {
        self.nodes.push(k);
        let last = self.nodes.len() - 1;
        sift_up(&mut self.nodes, last, k);
    }

    /// Remove the smallest key. The hole it leaves goes down to a leaf along the smallest
    /// children (no comparison with the key that fills it), and the last key fills it from
    /// there: in the engine that key is among the latest, so it rarely climbs.
    #[inline]
    pub fn pop(&mut self) {
        let Some(last) = self.nodes.pop() else { return };
        let h = &mut self.nodes;
        if h.is_empty() {
            return;
        }
        let mut i = 0;
        while let Some(c) = min_child(h, i) {
            h[i] = h[c];
            i = c;
        }
        sift_up(h, i, last);
    }
}

/// The smallest of the children of `i`, if it has any.
#[inline(always)]
fn min_child<K: Key>(h: &[K], i: usize) -> Option<usize> {
    let first = ARITY * i + 1;
    match h.get(first..first + ARITY) {
        Some(children) => Some(first + min_of_eight(children)),
        None => {
            let children = h.get(first..)?;
            let (best, _) = children.iter().enumerate().min_by_key(|&(_, k)| k)?;
            Some(first + best)
        }
    }
}

/// The index of the smallest of eight keys, a tournament of independent comparisons.
#[inline(always)]
fn min_of_eight<K: Key>(k: &[K]) -> usize {
    let k: &[K; ARITY] = k.try_into().expect("a full set of children");
    let pick = |a: (usize, K), b: (usize, K)| if b.1 < a.1 { b } else { a };
    let a = pick((0, k[0]), (1, k[1]));
    let b = pick((2, k[2]), (3, k[3]));
    let c = pick((4, k[4]), (5, k[5]));
    let d = pick((6, k[6]), (7, k[7]));
    pick(pick(a, b), pick(c, d)).0
}

/// Put `k` at the hole `i` or above it.
#[inline]
fn sift_up<K: Key>(h: &mut [K], mut i: usize, k: K) {
    while i > 0 {
        let parent = (i - 1) / ARITY;
        if h[parent] <= k {
            break;
        }
        h[i] = h[parent];
        i = parent;
    }
    h[i] = k;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_order() {
        let mut h = Heap::<u64>::with_capacity(3);
        let keys = [
            50u64, 3, 99, 7, 7_000, 12, 1, 64, 65, 66, 2, 8, 9, 10, 11, 13, 40,
        ];
        for k in keys {
            h.push(k);
        }
        let mut sorted = keys.to_vec();
        sorted.sort();
        for k in sorted {
            assert_eq!(h.first(), Some(&k));
            h.pop();
        }
        assert_eq!(h.first(), None);
    }
}
