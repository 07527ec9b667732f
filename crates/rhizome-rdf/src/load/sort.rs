//! Sorting a load's keys (N ids each, compared id by id) as packed
//! 128-bit integers where they fit.
//!
//! Across one load's keys, most bits of each id are the same: the tag
//! byte of every subject, the high bits of every sequence number. Only the
//! bits from the highest one that differs between the keys down need
//! sorting, and at 4.8M Faculty triples they are about 21 + 21 + 62 bits,
//! so each key packs into a `u128` whose order is the key's order. Sorting
//! 16-byte integers (one branchless comparison) instead of three-id arrays
//! (a comparison per id, 24 bytes moved) roughly halves the sorts, which
//! were 14% of a load's CPU; the packed keys also take 16 bytes, not 24,
//! while the merge reads them (unpacked one at a time). Keys whose varying
//! bits do not fit are sorted as they are. The packed keys are sorted by
//! `radix`, not by comparisons.

use super::radix::radix_sort;
use crate::index::layout::Ordering;

/// Keys in sorted order, packed or not.
pub(crate) enum SortedKeys<const N: usize> {
    Plain(Vec<[u64; N]>),
    Packed(Vec<u128>, Packing<N>),
}

/// How keys pack: each id keeps its low `widths[c]` bits; the bits above
/// are those of `base[c]` in every key.
#[derive(Clone, Copy)]
pub(crate) struct Packing<const N: usize> {
    widths: [u32; N],
    base: [u64; N],
}

fn low_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

impl<const N: usize> Packing<N> {
    /// The packing of these keys, if their varying bits fit in 128.
    fn of(keys: impl Iterator<Item = [u64; N]> + Clone) -> Option<Self> {
        let mut keys_again = keys.clone();
        let base = keys_again.next()?;
        let mut differ = [0u64; N];
        for k in keys {
            for c in 0..N {
                differ[c] |= k[c] ^ base[c];
            }
        }
        let widths = differ.map(|d| 64 - d.leading_zeros());
        (widths.iter().sum::<u32>() <= 128).then_some(Packing { widths, base })
    }

    /// Bits of a packed key (all above are zero).
    fn bits(&self) -> u32 {
        self.widths.iter().sum()
    }

    fn pack(&self, k: &[u64; N]) -> u128 {
        let mut p = 0u128;
        for c in 0..N {
            debug_assert_eq!(k[c] & !low_mask(self.widths[c]), self.base[c] & !low_mask(self.widths[c]));
            // Two shifts: a width of 0 or 64 must not overflow one.
            p = (p << (self.widths[c] / 2)) << (self.widths[c] - self.widths[c] / 2);
            p |= (k[c] & low_mask(self.widths[c])) as u128;
        }
        p
    }

    fn unpack(&self, mut p: u128) -> [u64; N] {
        let mut k = [0u64; N];
        for c in (0..N).rev() {
            let mask = low_mask(self.widths[c]);
            k[c] = (self.base[c] & !mask) | (p as u64 & mask);
            p = (p >> (self.widths[c] / 2)) >> (self.widths[c] - self.widths[c] / 2);
        }
        k
    }
}

impl<const N: usize> SortedKeys<N> {
    pub fn len(&self) -> usize {
        match self {
            SortedKeys::Plain(keys) => keys.len(),
            SortedKeys::Packed(keys, _) => keys.len(),
        }
    }

    /// The `i`th key.
    #[inline]
    pub fn get(&self, i: usize) -> [u64; N] {
        match self {
            SortedKeys::Plain(keys) => keys[i],
            SortedKeys::Packed(keys, packing) => packing.unpack(keys[i]),
        }
    }
}

fn permute<const N: usize>(q: &[u64; N], ordering: &Ordering) -> [u64; N] {
    let mut k = [0u64; N];
    for (i, c) in ordering.components.iter().enumerate() {
        k[i] = q[*c];
    }
    k
}

/// The sorted keys of the buffer in one ordering.
pub(crate) fn sorted_keys<const N: usize>(buffer: &[[u64; N]], ordering: &Ordering) -> SortedKeys<N> {
    let keys = buffer.iter().map(|q| permute(q, ordering));
    match Packing::of(keys.clone()) {
        Some(packing) => {
            let mut packed: Vec<u128> = keys.map(|k| packing.pack(&k)).collect();
            radix_sort(&mut packed, packing.bits());
            SortedKeys::Packed(packed, packing)
        }
        None => {
            let mut keys: Vec<[u64; N]> = keys.collect();
            keys.sort_unstable();
            SortedKeys::Plain(keys)
        }
    }
}

/// Sorts the keys in place (their own order: id by id) and removes
/// duplicates.
pub(crate) fn sort_dedup<const N: usize>(keys: &mut Vec<[u64; N]>) {
    match Packing::of(keys.iter().copied()) {
        Some(packing) => {
            let mut packed: Vec<u128> = keys.iter().map(|k| packing.pack(k)).collect();
            radix_sort(&mut packed, packing.bits());
            packed.dedup();
            keys.clear();
            keys.extend(packed.into_iter().map(|p| packing.unpack(p)));
        }
        None => {
            keys.sort_unstable();
            keys.dedup();
        }
    }
}

/// The order of byte strings, `key(i)` for `i` in `0..n`: their indices
/// sorted by the strings' bytes. A load's `term2id` keys (a million at
/// 4.8M triples) share long prefixes (a namespace), so comparing them
/// whole reads both strings from a scattered buffer at each comparison;
/// here each pass copies eight bytes of every string of a group into the
/// item that is sorted (a multikey radix on 64-bit digits): the sorts
/// compare integers in cache, and only strings equal so far go on to
/// their next eight bytes.
pub(crate) fn sort_by_bytes<'a>(n: usize, key: impl Fn(usize) -> &'a [u8]) -> Vec<u32> {
    #[derive(Clone, Copy)]
    struct Item {
        word: u64,
        /// The string's bytes from this word on, 9 for more than eight:
        /// a shorter string whose word is equal (zero-padded) comes first.
        tail: u8,
        index: u32,
    }
    fn pass<'a>(items: &mut [Item], depth: usize, key: &impl Fn(usize) -> &'a [u8]) {
        for it in items.iter_mut() {
            let k = key(it.index as usize);
            let rest = &k[depth.min(k.len())..];
            let mut word = [0u8; 8];
            let take = rest.len().min(8);
            word[..take].copy_from_slice(&rest[..take]);
            it.word = u64::from_be_bytes(word);
            it.tail = rest.len().min(9) as u8;
        }
        items.sort_unstable_by_key(|it| (it.word, it.tail));
        let mut i = 0;
        while i < items.len() {
            let mut j = i + 1;
            while j < items.len() && items[j].word == items[i].word && items[j].tail == items[i].tail {
                j += 1;
            }
            // Equal so far and longer: their next eight bytes decide.
            if items[i].tail == 9 && j - i > 1 {
                pass(&mut items[i..j], depth + 8, key);
            }
            i = j;
        }
    }
    let mut items: Vec<Item> = (0..n).map(|i| Item { word: 0, tail: 0, index: i as u32 }).collect();
    pass(&mut items, 0, &key);
    items.into_iter().map(|it| it.index).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys from a little generator, with ids drawn from `pick`.
    fn keys<const N: usize>(n: usize, pick: impl Fn(u64) -> u64) -> Vec<[u64; N]> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            pick(x)
        };
        (0..n).map(|_| std::array::from_fn(|_| next())).collect()
    }

    fn check<const N: usize>(mut input: Vec<[u64; N]>, packs: bool) {
        assert_eq!(Packing::of(input.iter().copied()).is_some(), packs);
        let mut expected = input.clone();
        expected.sort_unstable();
        expected.dedup();
        sort_dedup(&mut input);
        assert_eq!(input, expected);
    }

    #[test]
    fn keys_sort_the_same_packed_or_not() {
        // Ids of one tag and small sequences (the usual load), with
        // duplicates; objects of several tags; every bit varying (no
        // packing); one key; widths of 0 (a constant column) and of 64.
        check::<3>(keys(5000, |x| (0x02 << 56) | (x % 300)), true);
        let iri = |x: u64, bits: u32| (0x02 << 56) | (x >> (64 - bits));
        let mixed = keys(5000, |x| x).into_iter().map(|[s, p, o]| [iri(s, 16), iri(p, 4), ((0x02 + (o & 0x22)) << 56) | (o >> 40)]);
        check::<3>(mixed.collect(), true);
        check::<4>(keys(5000, |x| iri(x, 6)), true);
        check::<3>(keys(5000, |x| x), false);
        check::<3>(vec![[7, 8, 9]], true);
        check::<2>(keys(5000, |x| x).into_iter().map(|[a, _]| [a, 5]).collect(), true);
        check::<2>(keys(5000, |x| x).into_iter().enumerate().map(|(i, [a, _])| [a, i as u64 % 3]).collect(), true);
    }

    #[test]
    fn byte_strings_sort_as_slices_do() {
        // Shared prefixes, NUL bytes (a literal's separator), strings that
        // are prefixes of others, equal strings, lengths around eight.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut strings: Vec<Vec<u8>> = Vec::new();
        for i in 0..4000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut s = if i % 3 == 0 { b"http://example.org/ns#".to_vec() } else { Vec::new() };
            for k in 0..(x % 19) as usize {
                s.push(b"a\0z\xff"[((x >> (8 + 2 * k)) & 3) as usize]);
            }
            strings.push(s);
        }
        strings.push(Vec::new());
        strings.push(strings[10].clone());
        let order = sort_by_bytes(strings.len(), |i| &strings[i]);
        let sorted: Vec<&[u8]> = order.iter().map(|i| strings[*i as usize].as_slice()).collect();
        let mut expected: Vec<&[u8]> = strings.iter().map(|s| s.as_slice()).collect();
        expected.sort_unstable();
        assert_eq!(sorted, expected);
    }

    #[test]
    fn an_ordering_s_keys_come_back_permuted_and_sorted() {
        let buffer: Vec<[u64; 3]> = keys(3000, |x| (0x02 << 56) | (x % 1000));
        for ordering in crate::index::layout::TRIPLE_ORDERINGS.iter() {
            let mut expected: Vec<[u64; 3]> = buffer.iter().map(|q| permute(q, ordering)).collect();
            expected.sort_unstable();
            let sorted = sorted_keys(&buffer, ordering);
            assert!(matches!(sorted, SortedKeys::Packed(..)));
            assert_eq!((0..sorted.len()).map(|i| sorted.get(i)).collect::<Vec<_>>(), expected);
        }
    }
}
