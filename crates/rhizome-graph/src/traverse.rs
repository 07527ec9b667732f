//! Neighbours to depth k: breadth first, level by level, each node once at
//! its smallest depth, the start excluded.

use crate::idset;
use crate::{LinkFilter, LinkReader, Limits, Result, Source};
use rhizome_rdf::TermId;

/// A node reached, and the fewest links from the start to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reached {
    pub id: TermId,
    pub depth: u32,
}

/// What a traversal found.
#[derive(Clone, Debug, Default)]
pub struct Traversal {
    /// By depth, then by id within a depth.
    pub nodes: Vec<Reached>,
    /// The node limit cut the last depth listed: every node of the depths
    /// before it is listed, and of that depth the ones with the smallest
    /// ids, up to the limit.
    pub truncated: bool,
    /// Quads read (work done).
    pub quads_read: u64,
}

/// Every node within `depth` links of `start` along `filter`.
pub fn neighbours(source: Source<'_>, start: TermId, depth: u32, filter: &LinkFilter, limits: Limits) -> Result<Traversal> {
    let mut links = LinkReader::new(source, filter.clone(), limits);
    let mut visited = vec![start];
    let mut frontier = vec![start];
    let mut out = Traversal::default();
    for d in 1..=depth {
        if frontier.is_empty() {
            break;
        }
        let remaining = limits.max_nodes.saturating_sub(out.nodes.len());
        // The candidates are boiled down (sorted, seen ones and ids past the
        // budget dropped) whenever they grow past this, so a level's memory
        // stays within a few times the budget whatever the degrees.
        let boil_at = remaining.saturating_mul(2).clamp(1 << 16, 1 << 24);
        let mut next: Vec<TermId> = Vec::new();
        let mut cut = false;
        for &x in &frontier {
            links.for_each(x, |n| next.push(n))?;
            if next.len() >= boil_at {
                cut |= boil(&mut next, &visited, remaining);
            }
        }
        cut |= boil(&mut next, &visited, remaining);
        out.nodes.extend(next.iter().map(|&id| Reached { id, depth: d }));
        if cut {
            out.truncated = true;
            break;
        }
        if d < depth {
            visited = idset::merge(&visited, &next);
        }
        frontier = next;
    }
    out.quads_read = links.quads_read;
    Ok(out)
}

/// Sorts `next`, drops repeats and `visited`, keeps the `keep` smallest;
/// whether it dropped any for the budget.
fn boil(next: &mut Vec<TermId>, visited: &[TermId], keep: usize) -> bool {
    idset::normalize(next);
    idset::subtract(next, visited);
    if next.len() > keep {
        next.truncate(keep);
        true
    } else {
        false
    }
}

/// How many quads with predicate `predicate` have each object, in object
/// id order (inlined numbers: by value): "count by a field over all
/// documents". Read from the store's value counts when it keeps them (a
/// predicate with few distinct objects, see `rhizome_rdf::value_counts`),
/// else one scan of the predicate's index range ([`scan_count_by_object`]).
pub fn count_by_object(source: crate::Source<'_>, predicate: TermId, limits: Limits) -> Result<Vec<(TermId, u64)>> {
    match source.value_counts(predicate)? {
        Some(counts) => Ok(counts),
        None => scan_count_by_object(source, predicate, limits),
    }
}

/// [`count_by_object`] by scanning the predicate's quads, with no row,
/// term or group built per quad.
pub fn scan_count_by_object(source: crate::Source<'_>, predicate: TermId, limits: Limits) -> Result<Vec<(TermId, u64)>> {
    let mut out: Vec<(TermId, u64)> = Vec::new();
    let mut scan = source.scan(rhizome_rdf::QuadPattern { p: Some(predicate), ..Default::default() });
    let mut n: u32 = 0;
    while let Some(q) = scan.next_quad()? {
        n = n.wrapping_add(1);
        if n.is_multiple_of(1 << 16) {
            limits.check_time()?;
        }
        match out.last_mut() {
            Some((o, c)) if *o == q[2] => *c += 1,
            _ => out.push((q[2], 1)),
        }
    }
    // Each index family comes out in object order, but the two are merged
    // by the quad family's order (the object first too): runs stay whole.
    debug_assert!(out.windows(2).all(|w| w[0].0 < w[1].0), "a predicate's quads come out by object");
    Ok(out)
}
