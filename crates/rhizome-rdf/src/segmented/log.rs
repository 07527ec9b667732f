//! Quad changes: taken from a batch's index keys, written as one log
//! record per commit, read back at open.
//!
//! A record is a format byte, then per change a flags byte (bit 0: the
//! quad is there after the commit; bit 1: a subject-graph triple, whose
//! graph is not written) and its ids, little-endian: s, p, o, and g for
//! other quads.

use super::{columns, quad_of, slot_of, slots_of, ORDERINGS, SLOTS};
use rhizome_kv::{WriteBatch, WriteOp};
use rustc_hash::FxHashMap;

const RECORD_FORMAT: u8 = 1;

/// A quad (`[s, p, o, g]`) there or not after a commit.
pub(crate) type Change = ([u64; 4], bool);

fn corrupt(what: &str) -> rhizome_kv::Error {
    rhizome_kv::Error::Engine(format!("the store is corrupt: quad log: {what}"))
}

/// Splits a batch into its quad changes and the rest. Every change must
/// come in every ordering of its quad's family, alike: a batch that
/// changes a quad in some orderings only would leave them disagreeing,
/// and is refused.
pub(crate) fn split(batch: WriteBatch) -> rhizome_kv::Result<(Vec<Change>, WriteBatch)> {
    let mut rest = WriteBatch::default();
    // Per quad: its state and the slots that said so.
    let mut quads: FxHashMap<[u64; 4], (bool, u16)> = FxHashMap::default();
    let mut conflict = false;
    for op in batch.ops {
        let (ks, key, there) = match &op {
            WriteOp::Put(ks, key, _) => (*ks, key, true),
            WriteOp::Delete(ks, key) => (*ks, key, false),
        };
        let Some(slot) = slot_of(ks) else {
            rest.ops.push(op);
            continue;
        };
        if key.len() != columns(slot) * 8 {
            return Err(rhizome_kv::Error::Engine(format!("a key of {} bytes in the {} index", key.len(), ORDERINGS[slot].name())));
        }
        let mut words = [0u64; 4];
        for (i, chunk) in key.chunks_exact(8).enumerate() {
            words[i] = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
        }
        let quad = quad_of(slot, &words);
        let entry = quads.entry(quad).or_insert((there, 0));
        conflict |= entry.0 != there || entry.1 & (1 << slot) != 0 || !slots_of(&quad).contains(&slot);
        entry.1 |= 1 << slot;
    }
    let mut changes = Vec::with_capacity(quads.len());
    for (quad, (there, slots)) in quads {
        let family = slots_of(&quad);
        let wanted = family.clone().fold(0u16, |m, s| m | 1 << s);
        if conflict || slots != wanted {
            return Err(rhizome_kv::Error::Engine(format!(
                "a write changed the quad {quad:?} in some of its orderings only (slots {slots:#b} of {wanted:#b}): refused, it would leave the indexes disagreeing"
            )));
        }
        changes.push((quad, there));
    }
    debug_assert!(SLOTS <= 16);
    Ok((changes, rest))
}

pub(crate) fn encode(changes: &[Change]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + changes.len() * 33);
    out.push(RECORD_FORMAT);
    for (quad, there) in changes {
        let triple = quad[0] == quad[3];
        out.push(*there as u8 | (triple as u8) << 1);
        let ids = if triple { &quad[..3] } else { &quad[..] };
        for id in ids {
            out.extend_from_slice(&id.to_le_bytes());
        }
    }
    out
}

pub(crate) fn decode(bytes: &[u8]) -> rhizome_kv::Result<Vec<Change>> {
    let (&format, mut rest) = bytes.split_first().ok_or_else(|| corrupt("an empty record"))?;
    if format != RECORD_FORMAT {
        return Err(corrupt(&format!("a record of format {format}")));
    }
    let mut changes = Vec::new();
    while let Some((&flags, tail)) = rest.split_first() {
        if flags > 3 {
            return Err(corrupt("bad flags"));
        }
        let n = if flags & 2 != 0 { 3 } else { 4 };
        if tail.len() < n * 8 {
            return Err(corrupt("a record cut short"));
        }
        let mut quad = [0u64; 4];
        for (i, chunk) in tail[..n * 8].chunks_exact(8).enumerate() {
            quad[i] = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
        if n == 3 {
            quad[3] = quad[0];
        } else if quad[3] == quad[0] {
            return Err(corrupt("a quad in its subject's graph written as a quad"));
        }
        changes.push((quad, flags & 1 != 0));
        rest = &tail[n * 8..];
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::layout;
    use crate::term::TermId;

    fn put_all(batch: &mut WriteBatch, quad: [u64; 4], orderings: &[layout::Ordering], there: bool) {
        let q = quad.map(TermId);
        let mut key = Vec::new();
        for o in orderings {
            o.encode(&q, &mut key);
            if there {
                batch.put(o.ks, &key, &[]);
            } else {
                batch.delete(o.ks, &key);
            }
        }
    }

    #[test]
    fn a_batch_becomes_one_change_per_quad_and_reads_back() {
        let mut batch = WriteBatch::default();
        put_all(&mut batch, [5, 6, 7, 5], &layout::TRIPLE_ORDERINGS, true);
        put_all(&mut batch, [5, 6, 8, 9], &layout::QUAD_ORDERINGS, false);
        batch.put(layout::META, b"quads", b"x");
        let (mut changes, rest) = split(batch).unwrap();
        changes.sort();
        assert_eq!(changes, vec![([5, 6, 7, 5], true), ([5, 6, 8, 9], false)]);
        assert_eq!(rest.len(), 1);
        assert_eq!(decode(&encode(&changes)).unwrap(), changes);
    }

    #[test]
    fn a_quad_changed_in_some_orderings_only_is_refused() {
        let mut batch = WriteBatch::default();
        put_all(&mut batch, [5, 6, 7, 5], &layout::TRIPLE_ORDERINGS[..2], true);
        assert!(split(batch).is_err());
        let mut batch = WriteBatch::default();
        put_all(&mut batch, [5, 6, 7, 5], &layout::TRIPLE_ORDERINGS[..2], true);
        put_all(&mut batch, [5, 6, 7, 5], &layout::TRIPLE_ORDERINGS[2..], false);
        assert!(split(batch).is_err());
    }

    #[test]
    fn corrupt_records_are_errors() {
        let good = encode(&[([1, 2, 3, 4], true)]);
        for cut in 0..good.len() {
            let r = decode(&good[..cut]);
            assert!(cut == 0 || cut == 1 || r.is_err(), "cut at {cut}");
        }
        assert!(decode(&[2]).is_err());
        assert!(decode(&[1, 9]).is_err());
    }
}
