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
}
