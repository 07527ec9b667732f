//! `Store::check`: what `rhizome check` verifies. Every block of every
//! segment (checksum, encodings, key order); every other keyspace read
//! whole (the engine checks its blocks' checksums as it reads); every
//! ordering of a family holding the same quads (a count and a sum of a
//! hash of each quad, the same whatever the order they come in: equal
//! sums of 64-bit hashes over differing sets are as unlikely as a hash
//! collision); the quad counter against what the orderings hold; every
//! dictionary id in a quad below the next id to be handed out; and the
//! dictionary's two maps agreeing (each term's `term2id` entry names its
//! id, and they hold as many ids as `id2term` has terms), which a rename
//! of terms (`rhizome rebase`) must keep. The report also says where the
//! bytes are: each segment's per column and encoding, and the engine's
//! estimate per keyspace (the dictionary's two maps, the statistics).

use crate::index::layout::{self, meta, Ordering};
use crate::store::{read_u64, Store};
use crate::term::TermId;
use crate::Result;
use rhizome_kv::{Keyspace, KvRead};

/// What a check found.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// Per ordering: its name and the quads it holds.
    pub orderings: Vec<(String, u64)>,
    /// Segment files checked: ordering, rows, bytes.
    pub segments: Vec<(String, u64, u64)>,
    /// Where each segment's bytes are: ordering, column, encoding kind,
    /// blocks and bytes (what an encoding change must shrink).
    pub segment_columns: Vec<(String, usize, &'static str, usize, u64)>,
    /// The engine's estimate of each keyspace's bytes on disk (those it
    /// has any for): the dictionary, statistics and the rest.
    pub keyspace_bytes: Vec<(u8, u64)>,
    /// Quad changes waiting in the delta.
    pub delta_quads: u64,
    /// Keys read in the other keyspaces.
    pub other_keys: u64,
    /// What is wrong; empty when the store is sound.
    pub problems: Vec<String>,
}

impl CheckReport {
    pub fn is_sound(&self) -> bool {
        self.problems.is_empty()
    }
}

fn quad_hash(quad: &[TermId; 4]) -> u64 {
    let mut bytes = [0u8; 32];
    for (i, id) in quad.iter().enumerate() {
        bytes[i * 8..i * 8 + 8].copy_from_slice(&id.to_be_bytes());
    }
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// Count, hash sum and the highest dictionary sequence of an ordering.
fn summarize(reader: &dyn KvRead, ordering: &Ordering) -> Result<(u64, u64, u64)> {
    let mut cursor = reader.cursor(ordering.ks, &[], None);
    cursor.seek_first();
    let (mut n, mut sum, mut highest) = (0u64, 0u64, 0u64);
    while cursor.valid() {
        let quad = ordering.decode(cursor.key());
        n += 1;
        sum = sum.wrapping_add(quad_hash(&quad));
        for id in quad {
            if id.is_in_dictionary() || id.is_blank() {
                highest = highest.max(id.sequence());
            }
        }
        cursor.next();
    }
    cursor.status()?;
    Ok((n, sum, highest))
}

/// Problems past this many of one kind are counted, not listed.
const LISTED_PROBLEMS: usize = 10;

/// `id2term` and `term2id` describe the same terms.
fn check_dictionary(reader: &dyn KvRead, report: &mut CheckReport) {
    use crate::index::layout::{ID2TERM, TERM2ID};
    let mut run = || -> Result<()> {
        let (mut terms, mut wrong) = (0u64, 0usize);
        let mut cursor = reader.cursor(ID2TERM, &[], None);
        cursor.seek_first();
        while cursor.valid() {
            let id = TermId::from_be_slice(cursor.key());
            terms += 1;
            if crate::term::Dictionary::lookup_key(reader, id.tag(), cursor.value())? != Some(id) {
                wrong += 1;
                if wrong <= LISTED_PROBLEMS {
                    report.problems.push(format!("term id {:#x} ({}) is not found by its term in term2id", id.0, String::from_utf8_lossy(cursor.value())));
                }
            }
            cursor.next();
        }
        cursor.status()?;
        if wrong > LISTED_PROBLEMS {
            report.problems.push(format!("{} more terms are not found by their term", wrong - LISTED_PROBLEMS));
        }
        let mut ids = 0u64;
        let mut cursor = reader.cursor(TERM2ID, &[], None);
        cursor.seek_first();
        while cursor.valid() {
            // A hashed key (long terms) lists every id with its hash.
            ids += if cursor.key().first() == Some(&0xFF) { cursor.value().len() as u64 / 8 } else { 1 };
            cursor.next();
        }
        cursor.status()?;
        if ids != terms {
            report.problems.push(format!("term2id holds {ids} ids, id2term {terms} terms"));
        }
        Ok(())
    };
    if let Err(e) = run() {
        report.problems.push(format!("the dictionary: {e}"));
    }
}

impl Store {
    /// Verifies the store (see the module's documentation); a corrupt
    /// block is a problem reported, not an error, so that the check goes on.
    pub fn check(&self) -> Result<CheckReport> {
        let mut report = CheckReport::default();
        if let Some(segments) = self.segments() {
            for (name, _, rows, bytes) in segments.segment_files() {
                report.segments.push((name, rows, bytes));
            }
            if let Err(e) = segments.verify_segments() {
                report.problems.push(e.to_string());
            } else {
                report.segment_columns = segments.segment_columns()?;
            }
            report.delta_quads = segments.delta_quads();
        }
        let snapshot = self.snapshot()?;
        let reader = snapshot.kv();
        let next_id = read_u64(reader, meta::NEXT_ID)?;
        let mut total = 0;
        for family in [&layout::TRIPLE_ORDERINGS[..], &layout::QUAD_ORDERINGS[..]] {
            let mut first: Option<(String, u64, u64)> = None;
            for ordering in family {
                let (n, sum, highest) = match summarize(reader, ordering) {
                    Ok(s) => s,
                    Err(e) => {
                        report.problems.push(format!("{}: {e}", ordering.name()));
                        continue;
                    }
                };
                report.orderings.push((ordering.name(), n));
                if highest >= next_id.max(1) {
                    report.problems.push(format!("{} holds an id numbered {highest}, past the dictionary's next id {next_id}", ordering.name()));
                }
                match &first {
                    None => {
                        first = Some((ordering.name(), n, sum));
                        total += n;
                    }
                    Some((name, n0, sum0)) => {
                        if (n, sum) != (*n0, *sum0) {
                            report.problems.push(format!("{} and {name} hold different quads ({n} and {n0})", ordering.name()));
                        }
                    }
                }
            }
        }
        check_dictionary(reader, &mut report);
        let counted = read_u64(reader, meta::QUADS)?;
        if counted != total {
            report.problems.push(format!("the quad counter says {counted}, the orderings hold {total}"));
        }
        // Keyspace 255 is never used (its upper bound would be 256).
        for ks in 0..u8::MAX {
            let ks = Keyspace(ks);
            if crate::segmented::is_index(ks) {
                continue;
            }
            if let Some(bytes) = reader.approximate_bytes(ks, &[], None).filter(|b| *b > 0) {
                report.keyspace_bytes.push((ks.0, bytes));
            }
            let mut cursor = reader.cursor(ks, &[], None);
            cursor.seek_first();
            while cursor.valid() {
                report.other_keys += 1;
                cursor.next();
            }
            if let Err(e) = cursor.status() {
                report.problems.push(format!("keyspace {}: {e}", ks.0));
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use crate::index::layout::TERM2ID;
    use crate::{DatasetMode, Store};
    use oxrdf::{GraphNameRef, Literal, NamedNode, QuadRef};

    #[test]
    fn a_term_its_term2id_entry_does_not_name_is_reported() {
        let store = Store::memory(DatasetMode::Union);
        let s = NamedNode::new_unchecked("http://e/s");
        let o = Literal::new_simple_literal("a long enough string literal");
        let mut txn = store.transaction().unwrap();
        let q = txn.encode_quad(QuadRef::new(&s, &s, &o, GraphNameRef::NamedNode(s.as_ref()))).unwrap();
        txn.insert(&q).unwrap();
        txn.commit().unwrap();
        assert!(store.check().unwrap().is_sound(), "{:?}", store.check().unwrap().problems);
        let mut txn = store.transaction().unwrap();
        let (key, _) = crate::term::term2id_key(crate::term::tag::IRI, b"http://e/s");
        txn.kv_mut().delete(TERM2ID, &key);
        txn.kv_mut().put(TERM2ID, b"\x02http://e/renamed", &q[0].to_be_bytes());
        txn.commit().unwrap();
        let problems = store.check().unwrap().problems;
        assert!(problems.iter().any(|p| p.contains("is not found by its term")), "{problems:?}");
    }
}
