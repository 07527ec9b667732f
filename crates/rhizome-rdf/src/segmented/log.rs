//! Quad changes: taken from a batch's index keys, written as one log
//! record per commit, read back at open; with them, the batch's writes to
//! the carried keyspaces (`carried.rs`).
//!
//! A record of format 3 is the format byte, the number of quad changes
//! (u32), per change a flags byte (bit 0: the quad is there after the
//! commit; bit 1: a subject-graph triple, whose graph is not written) and
//! its ids, little-endian: s, p, o, and g for other quads; then per
//! carried write its keyspace byte, the key's length (u16) and bytes, and
//! the value's length (u32, `u32::MAX`: deleted) and bytes. Format 2 is
//! the same with statistics writes only (the dictionary's were engine
//! keys); format 1 (no count, no carried writes: the quad changes to the
//! end) is read as well. A build that knows format 2 only refuses a
//! record of 3 rather than take its dictionary writes for corruption.

use super::carried::{carries, CarriedWrite};
use super::{columns, quad_of, slot_of, slots_of, ORDERINGS, SLOTS};
use crate::index::layout::{ID2TERM, TERM2ID};
use rhizome_kv::{Keyspace, WriteBatch, WriteOp};
use rustc_hash::FxHashMap;

const RECORD_FORMAT: u8 = 3;
/// Records written before the dictionary was carried: statistics writes
/// only.
const STATISTICS_FORMAT: u8 = 2;
/// Records written before the carried keyspaces: quad changes only.
const QUADS_ONLY_FORMAT: u8 = 1;
const DELETED: u32 = u32::MAX;

/// A quad (`[s, p, o, g]`) there or not after a commit.
pub(crate) type Change = ([u64; 4], bool);

fn corrupt(what: &str) -> rhizome_kv::Error {
    rhizome_kv::Error::Engine(format!("the store is corrupt: quad log: {what}"))
}

/// What a record holds: quad changes and carried writes.
pub(crate) type Record = (Vec<Change>, Vec<CarriedWrite>);

/// Splits a batch into its quad changes, its carried writes and the rest.
/// Every change must come in every ordering of its quad's family, alike:
/// a batch that changes a quad in some orderings only would leave them
/// disagreeing, and is refused. Quads the batch holds as tuples
/// (`WriteBatch::tuples`, a transaction's writes) are changes as they
/// are; a quad both there and as keys is refused too.
pub(crate) fn split(mut batch: WriteBatch) -> rhizome_kv::Result<(Vec<Change>, Vec<CarriedWrite>, WriteBatch)> {
    let tuples = std::mem::take(&mut batch.tuples);
    let mut rest = WriteBatch::default();
    let mut carried = Vec::new();
    // Per quad: its state and the slots that said so.
    let mut quads: FxHashMap<[u64; 4], (bool, u16)> = FxHashMap::default();
    let mut conflict = false;
    for op in batch.ops {
        let (ks, key, there) = match &op {
            WriteOp::Put(ks, key, _) => (*ks, key, true),
            WriteOp::Delete(ks, key) => (*ks, key, false),
        };
        let Some(slot) = slot_of(ks) else {
            if carries(ks, key) {
                match op {
                    WriteOp::Put(ks, key, value) => carried.push((ks, key, Some(value))),
                    WriteOp::Delete(ks, key) => carried.push((ks, key, None)),
                }
            } else {
                rest.ops.push(op);
            }
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
    if quads.is_empty() {
        return Ok((tuples, carried, rest));
    }
    let mut changes = Vec::with_capacity(quads.len() + tuples.len());
    for (quad, there) in tuples {
        let family = slots_of(&quad).fold(0u16, |m, s| m | 1 << s);
        let entry = quads.entry(quad).or_insert((there, 0));
        conflict |= entry.1 != 0;
        entry.1 = family;
    }
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
    Ok((changes, carried, rest))
}

pub(crate) fn encode(changes: &[Change], carried: &[CarriedWrite]) -> rhizome_kv::Result<Vec<u8>> {
    let carried_bytes: usize = carried.iter().map(|(_, k, v)| 7 + k.len() + v.as_ref().map_or(0, Vec::len)).sum();
    let mut out = Vec::with_capacity(5 + changes.len() * 33 + carried_bytes);
    out.push(RECORD_FORMAT);
    let count = u32::try_from(changes.len()).map_err(|_| rhizome_kv::Error::Engine("a commit of more than 2^32 quad changes".into()))?;
    out.extend_from_slice(&count.to_le_bytes());
    encode_changes(changes, &mut out);
    for (ks, key, value) in carried {
        let too_long = || rhizome_kv::Error::Engine(format!("a key or value too long for the quad log in keyspace {}", ks.0));
        out.push(ks.0);
        out.extend_from_slice(&u16::try_from(key.len()).map_err(|_| too_long())?.to_le_bytes());
        out.extend_from_slice(key);
        match value {
            Some(v) => {
                let n = u32::try_from(v.len()).ok().filter(|n| *n != DELETED).ok_or_else(too_long)?;
                out.extend_from_slice(&n.to_le_bytes());
                out.extend_from_slice(v);
            }
            None => out.extend_from_slice(&DELETED.to_le_bytes()),
        }
    }
    Ok(out)
}

fn encode_changes(changes: &[Change], out: &mut Vec<u8>) {
    for (quad, there) in changes {
        let triple = quad[0] == quad[3];
        out.push(*there as u8 | (triple as u8) << 1);
        let ids = if triple { &quad[..3] } else { &quad[..] };
        for id in ids {
            out.extend_from_slice(&id.to_le_bytes());
        }
    }
}

fn take<'b>(rest: &mut &'b [u8], n: usize) -> rhizome_kv::Result<&'b [u8]> {
    if rest.len() < n {
        return Err(corrupt("a record cut short"));
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

pub(crate) fn decode(bytes: &[u8]) -> rhizome_kv::Result<Record> {
    let (&format, mut rest) = bytes.split_first().ok_or_else(|| corrupt("an empty record"))?;
    match format {
        QUADS_ONLY_FORMAT => Ok((decode_changes(rest, None)?.0, Vec::new())),
        STATISTICS_FORMAT | RECORD_FORMAT => {
            let count = u32::from_le_bytes(take(&mut rest, 4)?.try_into().expect("4 bytes"));
            let (changes, mut rest) = decode_changes(rest, Some(count as usize))?;
            let mut carried = Vec::new();
            while let Some((&ks, tail)) = rest.split_first() {
                rest = tail;
                let key_len = u16::from_le_bytes(take(&mut rest, 2)?.try_into().expect("2 bytes")) as usize;
                let key = take(&mut rest, key_len)?.to_vec();
                let dictionary = ks == ID2TERM.0 || ks == TERM2ID.0;
                if !carries(Keyspace(ks), &key) || (dictionary && format == STATISTICS_FORMAT) {
                    return Err(corrupt(&format!("a carried write of {key_len} bytes to keyspace {ks}")));
                }
                let value_len = u32::from_le_bytes(take(&mut rest, 4)?.try_into().expect("4 bytes"));
                let value = if value_len == DELETED { None } else { Some(take(&mut rest, value_len as usize)?.to_vec()) };
                carried.push((Keyspace(ks), key, value));
            }
            Ok((changes, carried))
        }
        _ => Err(corrupt(&format!("a record of format {format}"))),
    }
}

/// Reads `count` quad changes (or to the end), and returns what follows.
fn decode_changes(mut rest: &[u8], count: Option<usize>) -> rhizome_kv::Result<(Vec<Change>, &[u8])> {
    let mut changes = Vec::with_capacity(count.unwrap_or(0).min(rest.len() / 25));
    while count.is_none_or(|n| changes.len() < n) {
        let Some((&flags, tail)) = rest.split_first() else {
            if count.is_some() {
                return Err(corrupt("a record cut short"));
            }
            break;
        };
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
    Ok((changes, rest))
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
        batch.put(layout::PREDICATE_STATS, &6u64.to_be_bytes(), &[1; 24]);
        batch.delete(layout::VALUE_COUNTS, &[7; 16]);
        let (mut changes, carried, rest) = split(batch).unwrap();
        changes.sort();
        assert_eq!(changes, vec![([5, 6, 7, 5], true), ([5, 6, 8, 9], false)]);
        assert_eq!(carried, vec![(layout::PREDICATE_STATS, 6u64.to_be_bytes().to_vec(), Some(vec![1; 24])), (layout::VALUE_COUNTS, vec![7; 16], None)]);
        assert_eq!(rest.len(), 1);
        assert_eq!(decode(&encode(&changes, &carried).unwrap()).unwrap(), (changes.clone(), carried));
        assert_eq!(decode(&encode(&[], &[]).unwrap()).unwrap(), (vec![], vec![]));
    }

    #[test]
    fn a_record_of_the_first_format_reads_as_quad_changes_alone() {
        // Format 1, as written before the carried keyspaces: one triple
        // (flags 3: there, subject-graph) and one quad removed.
        let mut old = vec![1, 3];
        for id in [5u64, 6, 7] {
            old.extend_from_slice(&id.to_le_bytes());
        }
        old.push(0);
        for id in [5u64, 6, 8, 9] {
            old.extend_from_slice(&id.to_le_bytes());
        }
        assert_eq!(decode(&old).unwrap(), (vec![([5, 6, 7, 5], true), ([5, 6, 8, 9], false)], vec![]));
    }

    #[test]
    fn a_record_carries_new_terms_and_one_of_the_second_format_reads_as_it_is() {
        let term2id = |bytes: &[u8]| {
            let mut key = vec![crate::term::tag::STRING];
            key.extend_from_slice(bytes);
            key
        };
        let long = vec![b'x'; 200];
        let carried = vec![
            (layout::ID2TERM, 9u64.to_be_bytes().to_vec(), Some(long.clone())),
            (layout::TERM2ID, term2id(&long), Some(9u64.to_be_bytes().to_vec())),
            (layout::TERM2ID, term2id(b"gone"), None),
            (layout::PREDICATE_STATS, 6u64.to_be_bytes().to_vec(), Some(vec![1; 24])),
        ];
        let record = encode(&[([1, 2, 3, 1], true)], &carried).unwrap();
        assert_eq!(record[0], RECORD_FORMAT);
        assert_eq!(decode(&record).unwrap(), (vec![([1, 2, 3, 1], true)], carried.clone()));
        // Format 2, as the build before wrote it: statistics only.
        let mut old = vec![STATISTICS_FORMAT];
        old.extend_from_slice(&1u32.to_le_bytes());
        old.push(3);
        for id in [1u64, 2, 3] {
            old.extend_from_slice(&id.to_le_bytes());
        }
        old.push(layout::PREDICATE_STATS.0);
        old.extend_from_slice(&8u16.to_le_bytes());
        old.extend_from_slice(&6u64.to_be_bytes());
        old.extend_from_slice(&24u32.to_le_bytes());
        old.extend_from_slice(&[1; 24]);
        assert_eq!(decode(&old).unwrap(), (vec![([1, 2, 3, 1], true)], vec![carried[3].clone()]));
        // A dictionary write in a record of format 2 was never written.
        let mut bad = record.clone();
        bad[0] = STATISTICS_FORMAT;
        assert!(decode(&bad).is_err());
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
        let good = encode(&[([1, 2, 3, 4], true)], &[(layout::CLASS_STATS, vec![1; 16], Some(vec![2; 8]))]).unwrap();
        let quads_end = 1 + 4 + 33;
        for cut in 0..good.len() {
            let r = decode(&good[..cut]);
            // Cut right after the quads, a record is whole (no carried writes).
            assert!(cut == quads_end || r.is_err(), "cut at {cut}");
        }
        assert!(decode(&[3]).is_err());
        assert!(decode(&[1, 9]).is_err());
        let mut other_keyspace = encode(&[], &[]).unwrap();
        other_keyspace.extend_from_slice(&[layout::META.0, 1, 0, b'x', 0, 0, 0, 0]);
        assert!(decode(&other_keyspace).is_err());
    }
}
