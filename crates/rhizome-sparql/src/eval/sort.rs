//! ORDER BY. Keys that are variables stay ids until a comparison needs
//! their values (inlined numbers and dates of one kind compare by id); the
//! others are decoded before the sort compares them n log n times, each
//! distinct id once, in one walk of the dictionary
//! ([`TermSpace::decode_batch`](crate::terms::TermSpace::decode_batch)),
//! and key by key: the rows are sorted by their first key, then a later
//! key is decoded only for the rows whose earlier keys tie, and only
//! those runs are sorted by it. The terms decoded stay with the query
//! ([`TermSpace::pin`](crate::terms::TermSpace::pin)) so the output does
//! not decode them again.
//!
//! Why (m29 of bench/sparql, `ORDER BY ?n ?s` over 617k students at
//! 4.8M triples, 1.04M terms): decoding both keys of every row one by one
//! through the store's term cache, then every output term again, missed
//! the cache (its dense table holds about 600k terms by default, and the
//! sort's 1.2M decodes evicted each other from its shards), so most of
//! 2.4M decodes were RocksDB point reads: 14.5-15 s of CPU, against
//! 3.1-5.1 s this way (a loaded machine; 1M triples: 5.9G -> 3.6G
//! instructions under callgrind for a cold and a warm run).

use super::{rows_bytes, Evaluator};
use crate::error::Result;
use crate::expression::{value, Expr};
use crate::plan::{Plan, Row};
use oxrdf::Term;
use rhizome_rdf::TermId;
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::rc::Rc;

/// An ORDER BY key: a variable's value kept as its id, decoded only when a
/// comparison needs it (inlined numbers and dates of one kind compare by
/// id, equal ids are equal terms), its term once decoded for the sort, or
/// the value of an expression as a term.
#[derive(Clone)]
enum SortKey {
    Id(TermId),
    /// The term of an id, at this place of [`Decoded::terms`].
    Decoded(u32),
    Term(Option<Term>),
}

/// The terms one sort decoded, each id once.
#[derive(Default)]
struct Decoded {
    places: FxHashMap<TermId, u32>,
    ids: Vec<TermId>,
    terms: Vec<Term>,
    /// Per term, for a plain string, its first 8 bytes (zero-padded, big
    /// endian): two strings whose prefixes differ compare without reading
    /// their text (a sort's comparisons reach terms scattered over memory;
    /// following each term's pointer was most of m29's sort).
    prefixes: Vec<Option<u64>>,
}

impl Decoded {
    fn place(&mut self, id: TermId, term: impl FnOnce() -> Term) -> u32 {
        *self.places.entry(id).or_insert_with(|| {
            let term = term();
            self.ids.push(id);
            self.prefixes.push(string_prefix(&term));
            self.terms.push(term);
            (self.terms.len() - 1) as u32
        })
    }
}

type Keyed = Vec<(Vec<SortKey>, Row)>;

impl<'a> Evaluator<'a> {
    /// The rows of `inner` in ORDER BY order; with `top`, only that many
    /// first rows, keeping at most twice as many in memory.
    pub(super) fn sorted(self: &Rc<Self>, inner: &'a Plan, keys: &'a [(Expr, bool)], top: Option<usize>) -> Result<Vec<Row>> {
        let directed = |o: Ordering, desc: bool| if desc { o.reverse() } else { o };
        let mut keyed: Keyed = Vec::new();
        let mut decoded = Decoded::default();
        // Under a LIMIT: the first key of the k-th row kept so far. A row
        // whose first key is already worse is dropped before its other keys
        // are computed (they may need decoding from the dictionary).
        let mut threshold: Option<SortKey> = None;
        let mut next_trim = 2 * top.unwrap_or(0).max(512);
        for r in self.eval(inner, self.empty_row()) {
            let r = r?;
            let mut row_keys = Vec::with_capacity(keys.len());
            for (i, (e, desc)) in keys.iter().enumerate() {
                let key = match e {
                    Expr::Var(v) if r[*v].is_some() => SortKey::Id(r[*v].expect("checked")),
                    _ => SortKey::Term(self.expr(e, &r)),
                };
                self.limits.memory_error()?;
                if let (0, Some(t)) = (i, &threshold) {
                    if directed(self.key_order(&key, t, &decoded), *desc) == Ordering::Greater {
                        break;
                    }
                }
                row_keys.push(key);
            }
            if row_keys.len() < keys.len() {
                continue;
            }
            keyed.push((row_keys, r));
            if keyed.len().is_multiple_of(4096) {
                self.check_memory(rows_bytes(keyed.len(), self.width + 4 * keys.len()))?;
            }
            if let Some(k) = top {
                if k > 0 && keyed.len() >= next_trim {
                    // By the first key alone first (ids, usually: no
                    // decoding): keep the rows not worse than the k-th,
                    // ties included, so the other keys are compared
                    // (decoded) only among the few rows that can still
                    // make the top k. A large tie group is cut by every key.
                    let desc = keys[0].1;
                    let every: Vec<usize> = (0..keyed.len()).collect();
                    self.decode_sort_keys(&mut keyed, &mut decoded, 0, &every)?;
                    let first = |a: &(Vec<SortKey>, Row), b: &(Vec<SortKey>, Row)| directed(self.key_order(&a.0[0], &b.0[0], &decoded), desc);
                    keyed.select_nth_unstable_by(k - 1, first);
                    let kth = match &keyed[k - 1].0[0] {
                        SortKey::Decoded(i) => SortKey::Term(Some(decoded.terms[*i as usize].clone())),
                        key => key.clone(),
                    };
                    keyed.retain(|e| directed(self.key_order(&e.0[0], &kth, &decoded), desc) != Ordering::Greater);
                    if keyed.len() > 65536 {
                        let every: Vec<usize> = (0..keyed.len()).collect();
                        for key in 1..keys.len() {
                            self.decode_sort_keys(&mut keyed, &mut decoded, key, &every)?;
                        }
                        keyed.select_nth_unstable_by(k - 1, |a, b| self.rows_order(keys, a, b, &decoded));
                        keyed.truncate(k);
                    }
                    // The terms of the rows dropped are dropped too.
                    decoded = compact(&mut keyed, decoded);
                    threshold = Some(kth);
                    next_trim = (2 * keyed.len()).max(2 * k.max(512));
                }
            }
        }
        let mut order = self.sort_order(&mut keyed, &mut decoded, keys)?;
        if let Some(k) = top {
            order.truncate(k);
        }
        let mut rows: Vec<Option<Row>> = keyed.into_iter().map(|(_, r)| Some(r)).collect();
        let rows: Vec<Row> = order.into_iter().map(|i| rows[i as usize].take().expect("each row once")).collect();
        if top.is_some() {
            // Only the terms of the rows given are worth keeping.
            let wanted: rustc_hash::FxHashSet<TermId> = rows.iter().flat_map(|r| r.iter().flatten().copied()).collect();
            self.space.pin(decoded.ids.into_iter().zip(decoded.terms).filter(|(id, _)| wanted.contains(id)));
        } else {
            self.space.pin(decoded.ids.into_iter().zip(decoded.terms));
        }
        Ok(rows)
    }

    /// The permutation of `keyed` in ORDER BY order (ties keep the order
    /// rows came in): a permutation is sorted, not the rows with their keys
    /// (moving those is most of a large sort). Key by key: the runs of rows
    /// equal on the keys before are sorted by the next, whose values are
    /// decoded only for the rows of those runs.
    fn sort_order(&self, keyed: &mut Keyed, decoded: &mut Decoded, keys: &[(Expr, bool)]) -> Result<Vec<u32>> {
        let mut order: Vec<u32> = (0..keyed.len() as u32).collect();
        let mut runs = vec![0..keyed.len()];
        for (k, (_, desc)) in keys.iter().enumerate() {
            let rows: Vec<usize> = runs.iter().flat_map(|r| order[r.clone()].iter().map(|&i| i as usize)).collect();
            self.decode_sort_keys(keyed, decoded, k, &rows)?;
            let order_k = |i: u32, j: u32| self.key_order(&keyed[i as usize].0[k], &keyed[j as usize].0[k], decoded);
            let mut tied = Vec::new();
            for run in runs {
                let slice = &mut order[run.clone()];
                slice.sort_unstable_by(|&i, &j| (if *desc { order_k(j, i) } else { order_k(i, j) }).then(i.cmp(&j)));
                let mut start = run.start;
                for x in run.start + 1..=run.end {
                    if x == run.end || order_k(order[x - 1], order[x]) != Ordering::Equal {
                        if x - start > 1 {
                            tied.push(start..x);
                        }
                        start = x;
                    }
                }
            }
            runs = tied;
            if runs.is_empty() {
                break;
            }
        }
        Ok(order)
    }

    /// Decodes key `key` of rows `rows` where it compares by value (not by
    /// id), each distinct id once and together, before a sort compares
    /// them n log n times.
    fn decode_sort_keys(&self, keyed: &mut Keyed, decoded: &mut Decoded, key: usize, rows: &[usize]) -> Result<()> {
        let mut ids: Vec<TermId> = rows
            .iter()
            .filter_map(|&i| match keyed[i].0[key] {
                SortKey::Id(id) if !inlined_value(id) && !decoded.places.contains_key(&id) => Some(id),
                _ => None,
            })
            .collect();
        self.space.decode_batch(&mut ids, |id, term| {
            decoded.place(id, || term);
        })?;
        for &i in rows {
            if let SortKey::Id(id) = keyed[i].0[key] {
                if let Some(&place) = decoded.places.get(&id) {
                    keyed[i].0[key] = SortKey::Decoded(place);
                }
            }
        }
        Ok(())
    }

    fn rows_order(&self, keys: &[(Expr, bool)], a: &(Vec<SortKey>, Row), b: &(Vec<SortKey>, Row), decoded: &Decoded) -> Ordering {
        for (i, (_, desc)) in keys.iter().enumerate() {
            let o = self.key_order(&a.0[i], &b.0[i], decoded);
            let o = if *desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    fn key_order(&self, a: &SortKey, b: &SortKey, decoded: &Decoded) -> Ordering {
        match (a, b) {
            (SortKey::Id(x), SortKey::Id(y)) if x == y => Ordering::Equal,
            (SortKey::Decoded(x), SortKey::Decoded(y)) if x == y => Ordering::Equal,
            (SortKey::Decoded(x), SortKey::Decoded(y))
                if matches!((decoded.prefixes[*x as usize], decoded.prefixes[*y as usize]), (Some(a), Some(b)) if a != b) =>
            {
                decoded.prefixes[*x as usize].cmp(&decoded.prefixes[*y as usize])
            }
            (SortKey::Id(x), SortKey::Id(y)) if ordered_by_id(*x, *y) => x.cmp(y),
            _ => {
                let (x, y) = (self.key_term(a, decoded), self.key_term(b, decoded));
                match (x.as_deref(), y.as_deref()) {
                    // Two plain strings (the commonest sort key after ids):
                    // their text, as `value::order` would decide it.
                    (Some(Term::Literal(x)), Some(Term::Literal(y)))
                        if x.datatype() == oxrdf::vocab::xsd::STRING && y.datatype() == oxrdf::vocab::xsd::STRING =>
                    {
                        x.value().cmp(y.value())
                    }
                    (x, y) => value::order(x, y),
                }
            }
        }
    }

    fn key_term<'t>(&self, key: &'t SortKey, decoded: &'t Decoded) -> Option<Cow<'t, Term>> {
        match key {
            SortKey::Id(id) => self.space.decode(*id).ok().map(Cow::Owned),
            SortKey::Decoded(place) => Some(Cow::Borrowed(&decoded.terms[*place as usize])),
            SortKey::Term(t) => t.as_ref().map(Cow::Borrowed),
        }
    }
}

/// The terms of `decoded` that the keys of `keyed` still name, their keys
/// renumbered.
fn compact(keyed: &mut Keyed, decoded: Decoded) -> Decoded {
    let mut kept = Decoded::default();
    for (keys, _) in keyed.iter_mut() {
        for key in keys.iter_mut() {
            if let SortKey::Decoded(place) = key {
                let i = *place as usize;
                *place = kept.place(decoded.ids[i], || decoded.terms[i].clone());
            }
        }
    }
    kept
}

/// The first 8 bytes of a plain string's text as a number that orders as
/// the text does (bytes, so code points, as `str`'s order): shorter text
/// is padded with zeros, so equal prefixes leave the order to the text.
fn string_prefix(term: &Term) -> Option<u64> {
    match term {
        Term::Literal(l) if l.datatype() == oxrdf::vocab::xsd::STRING => {
            let mut bytes = [0u8; 8];
            let text = l.value().as_bytes();
            let n = text.len().min(8);
            bytes[..n].copy_from_slice(&text[..n]);
            Some(u64::from_be_bytes(bytes))
        }
        _ => None,
    }
}

fn inlined_value(id: TermId) -> bool {
    use rhizome_rdf::term::tag;
    matches!(id.tag(), tag::INTEGER | tag::DECIMAL | tag::DATE | tag::DATE_TIME)
}

/// Whether two inlined ids compare by value as ids: same kind, and for
/// dates and date-times the same timezone field (the low 12 bits), since
/// values in different timezones do not sort by their local fields.
fn ordered_by_id(a: TermId, b: TermId) -> bool {
    use rhizome_rdf::term::tag;
    inlined_value(a)
        && a.tag() == b.tag()
        && (!matches!(a.tag(), tag::DATE | tag::DATE_TIME) || a.payload() & 0xFFF == b.payload() & 0xFFF)
}
