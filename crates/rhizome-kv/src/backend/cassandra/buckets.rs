//! Which partition a key lives in.
//!
//! Cassandra keeps keys in order only inside a partition, so a keyspace is
//! split into buckets by a prefix of its keys: the bucket of a key is its
//! first `bucket_len` bytes (the key itself when shorter). Truncation keeps
//! order (`a < b` implies `bucket(a) <= bucket(b)`), so a scan reads the
//! buckets in order and each bucket's keys in order, and a key range maps
//! to a range of buckets. The lengths follow each keyspace's key layout
//! (see `rhizome-rdf`'s `index/layout.rs` and `rhizome-docs`' `keys.rs`):
//! a term id is 8 bytes whose top byte is its kind and whose low bytes a
//! sequence, so dropping an id's last byte groups 256 consecutive ids.

/// The bucket prefix length of keyspace `ks`.
pub(crate) fn bucket_len(ks: u8) -> usize {
    match ks {
        // Store counters and settings (META), per-database metadata,
        // index states: a few keys each.
        0 | 35 | 38 | 42 => 0,
        // Dictionary by id (ID2TERM), graphs, statistics per predicate or
        // class: 256 consecutive ids per bucket.
        1 | 3 | 4 | 5 => 7,
        // Dictionary by term (TERM2ID): kind byte and the term's first
        // 15 bytes (an IRI's namespace is one bucket; see ARCHITECTURE.md
        // for why that is the layout's known hot spot).
        2 => 16,
        // Value counts: predicate id, then the object.
        6 => 8,
        // Subject-first orderings: 256 consecutive subjects per bucket.
        10 | 23 => 7,
        // Predicate-, object- and graph-first orderings: the first id and
        // the second without its last byte, so that a predicate or class
        // with millions of quads spreads over many buckets.
        11 | 12 | 20 | 21 | 22 | 24 | 25 => 15,
        // Documents by id and `_local` documents: two bytes of the id.
        30 => 2,
        34 => 9,
        // By-sequence index: 65,536 sequences per bucket.
        31 => 6,
        // Bodies (id length, id, rev) and attachments (`md5-` digest).
        32 => 6,
        33 => 6,
        // Mango and view rows: the index id and a byte of the row key.
        36 | 37 | 40 | 41 | 43 => 9,
        _ => 8,
    }
}

pub(crate) fn bucket_of(ks: u8, key: &[u8]) -> &[u8] {
    &key[..key.len().min(bucket_len(ks))]
}

/// The length of every key of keyspace `ks`, where the layout fixes one:
/// ID2TERM's keys are term ids, 8 bytes (`rhizome-rdf`'s `index/layout.rs`).
pub(crate) fn fixed_key_len(ks: u8) -> Option<usize> {
    match ks {
        1 => Some(8),
        _ => None,
    }
}

/// The most buckets [`from_bounds`] names; a wider range asks the bucket
/// directory which of its buckets exist.
const MAX_FROM_BOUNDS: u64 = 64;

/// The buckets that can hold keys in `lower..upper`, named from the bounds
/// alone (no read of the bucket directory), for a keyspace whose keys all
/// have one length of at most 8 bytes: they are then numbers, and its
/// buckets the numbers' prefixes between the bounds'. Buckets without
/// keys are named too (reading one costs nothing more in the same wait).
/// `None` where the keyspace's keys have no fixed length, the bounds are
/// not keys of that length, or the range spans more than a few buckets.
pub(crate) fn from_bounds(ks: u8, lower: &[u8], upper: &[u8]) -> Option<Vec<Vec<u8>>> {
    let key_len = fixed_key_len(ks)?;
    let len = bucket_len(ks);
    if key_len > 8 || len == 0 || len > key_len || lower.len() != key_len || upper.len() != key_len {
        return None;
    }
    let number = |key: &[u8]| key.iter().fold(0u64, |n, &b| n << 8 | u64::from(b));
    let (lower, upper) = (number(lower), number(upper));
    if lower >= upper {
        return Some(Vec::new());
    }
    // The last key in the range is `upper - 1`; a bucket is a key without
    // its last `key_len - len` bytes.
    let shift = 8 * (key_len - len) as u32;
    let (first, last) = (lower >> shift, (upper - 1) >> shift);
    if last - first >= MAX_FROM_BOUNDS {
        return None;
    }
    Some((first..=last).map(|b| b.to_be_bytes()[8 - len..].to_vec()).collect())
}

/// The smallest key greater than `key` (`key` followed by a zero byte):
/// `< successor(k)` is `<= k`.
pub(crate) fn successor(key: &[u8]) -> Vec<u8> {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_keep_key_order() {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for a in [0u8, 1, 7, 255] {
            for len in 0..20 {
                keys.push((0..len).map(|i| a.wrapping_add(i as u8 * 37)).collect());
            }
        }
        keys.sort();
        for ks in [0u8, 2, 10, 11, 30, 31] {
            for pair in keys.windows(2) {
                assert!(bucket_of(ks, &pair[0]) <= bucket_of(ks, &pair[1]), "keyspace {ks}: {:?} {:?}", pair[0], pair[1]);
            }
        }
    }

    /// The buckets named from a range's bounds are those of the keys in it:
    /// every 8-byte key in or near a few ranges, against the buckets named.
    #[test]
    fn buckets_from_bounds_are_the_buckets_of_the_keys_in_range() {
        let ks = 1;
        let key = |n: u64| n.to_be_bytes().to_vec();
        for (lower, upper) in [(0x0100, 0x0500), (0x0100, 0x0101), (0x01ff, 0x0201), (0x0234, 0x0235), (0x0200, 0x0200), (0x0300, 0x0100), (0x0600, 0x0600 + 64 * 256)] {
            let named = from_bounds(ks, &key(lower), &key(upper)).unwrap();
            let mut wanted: Vec<Vec<u8>> = (lower..upper).map(|n| bucket_of(ks, &key(n)).to_vec()).collect();
            wanted.dedup();
            assert_eq!(named, wanted, "{lower:#x}..{upper:#x}");
        }
        // Too wide, bounds that are not keys, keyspaces without fixed keys.
        assert_eq!(from_bounds(ks, &key(0), &key(65 * 256)), None);
        assert_eq!(from_bounds(ks, &key(0)[..7], &key(256)), None);
        assert_eq!(from_bounds(10, &key(0), &key(256)), None);
    }
}
