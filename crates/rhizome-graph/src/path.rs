//! Shortest paths by bidirectional breadth-first search: one search from
//! each end, expanding whichever frontier is smaller, until a level of one
//! meets the nodes the other has visited.
//!
//! Why the first meeting gives the shortest length: while no node is
//! visited by both, with the forward search at depth a and the backward at
//! b, a shortest path of length D has a + b < D (else its node at position
//! a would be visited by both). Expanding forward to a + 1, the path's node
//! at position a + 1 lies at backward distance D - a - 1 <= b, so it is in
//! the meeting and the smallest sum over the meeting is D. For all shortest
//! paths, each level keeps every (node, parent) pair, so every way back to
//! either end is known.

use crate::{Error, LinkFilter, LinkReader, Limits, Result, Source};
use rhizome_rdf::TermId;

/// How many paths, and how long.
#[derive(Clone, Copy, Debug)]
pub struct PathOptions {
    /// Every shortest path (up to `max_paths`), not only one.
    pub all: bool,
    pub max_paths: usize,
    /// No path longer than this many links.
    pub max_depth: Option<u32>,
}

impl Default for PathOptions {
    fn default() -> Self {
        PathOptions { all: false, max_paths: 1, max_depth: None }
    }
}

/// Shortest paths found, each from `from` to `to` both included, in id
/// order; empty when there is none.
#[derive(Clone, Debug, Default)]
pub struct Paths {
    pub paths: Vec<Vec<TermId>>,
    /// More shortest paths exist than `max_paths`.
    pub truncated: bool,
    pub quads_read: u64,
}

/// One end's search.
struct Side<'s> {
    links: LinkReader<'s>,
    /// Every node visited, sorted by id, with its depth.
    visited: Vec<(TermId, u32)>,
    /// `levels[i]`: the (node, parent) pairs of depth i + 1, sorted.
    levels: Vec<Vec<(TermId, TermId)>>,
    frontier: Vec<TermId>,
}

impl<'s> Side<'s> {
    fn new(source: Source<'s>, filter: LinkFilter, root: TermId, limits: Limits) -> Side<'s> {
        Side { links: LinkReader::new(source, filter, limits), visited: vec![(root, 0)], levels: Vec::new(), frontier: vec![root] }
    }

    fn depth(&self) -> u32 {
        self.levels.len() as u32
    }

    fn depth_of(&self, n: TermId) -> Option<u32> {
        self.visited.binary_search_by_key(&n, |e| e.0).ok().map(|i| self.visited[i].1)
    }

    /// The next level; `budget`: nodes it may add.
    fn expand(&mut self, all: bool, budget: usize, max_nodes: usize) -> Result<()> {
        let mut next: Vec<(TermId, TermId)> = Vec::new();
        let boil_at = budget.saturating_mul(2).clamp(1 << 16, 1 << 24);
        let visited = &self.visited;
        for &x in &self.frontier {
            self.links.for_each(x, |n| {
                if visited.binary_search_by_key(&n, |e| e.0).is_err() {
                    next.push((n, x));
                }
            })?;
            if next.len() >= boil_at {
                boil(&mut next, all);
                if distinct(&next) > budget {
                    return Err(Error::NodeLimit(max_nodes));
                }
            }
        }
        boil(&mut next, all);
        if distinct(&next) > budget {
            return Err(Error::NodeLimit(max_nodes));
        }
        self.frontier = next.iter().map(|e| e.0).collect();
        self.frontier.dedup();
        self.levels.push(next);
        Ok(())
    }

    fn add_frontier_to_visited(&mut self) {
        let d = self.depth();
        let (a, b) = (&self.visited, &self.frontier);
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i].0 <= b[j] {
                out.push(a[i]);
                i += 1;
            } else {
                out.push((b[j], d));
                j += 1;
            }
        }
        out.extend_from_slice(&a[i..]);
        out.extend(b[j..].iter().map(|n| (*n, d)));
        self.visited = out;
    }

    /// The ways from `node` (at `depth`) back to this side's root, `node`
    /// first, at most `cap` of them.
    fn chains(&self, node: TermId, depth: u32, cap: usize, out: &mut Vec<Vec<TermId>>, prefix: &mut Vec<TermId>) {
        prefix.push(node);
        if depth == 0 {
            if out.len() < cap {
                out.push(prefix.clone());
            }
        } else {
            let level = &self.levels[depth as usize - 1];
            let start = level.partition_point(|e| e.0 < node);
            for e in level[start..].iter().take_while(|e| e.0 == node) {
                if out.len() >= cap {
                    break;
                }
                self.chains(e.1, depth - 1, cap, out, prefix);
            }
        }
        prefix.pop();
    }
}

fn boil(next: &mut Vec<(TermId, TermId)>, all: bool) {
    next.sort_unstable();
    if all {
        next.dedup();
    } else {
        next.dedup_by_key(|e| e.0);
    }
}

fn distinct(next: &[(TermId, TermId)]) -> usize {
    next.windows(2).filter(|w| w[0].0 != w[1].0).count() + usize::from(!next.is_empty())
}

/// The shortest paths from `from` to `to` along `filter` (the backward
/// search follows it reversed).
pub fn shortest_paths(source: Source<'_>, from: TermId, to: TermId, filter: &LinkFilter, options: PathOptions, limits: Limits) -> Result<Paths> {
    if from == to {
        return Ok(Paths { paths: vec![vec![from]], truncated: false, quads_read: 0 });
    }
    let cap = if options.all { options.max_paths.max(1) } else { 1 };
    let mut forward = Side::new(source, filter.clone(), from, limits);
    let mut backward = Side::new(source, filter.reversed(), to, limits);
    let work = |f: &Side, b: &Side| f.links.quads_read + b.links.quads_read;
    loop {
        if forward.frontier.is_empty() || backward.frontier.is_empty() {
            return Ok(Paths { quads_read: work(&forward, &backward), ..Default::default() });
        }
        if options.max_depth.is_some_and(|m| forward.depth() + backward.depth() + 1 > m) {
            return Ok(Paths { quads_read: work(&forward, &backward), ..Default::default() });
        }
        let seen = forward.visited.len() + backward.visited.len() - 2;
        let budget = limits.max_nodes.saturating_sub(seen);
        let forward_turn = forward.frontier.len() <= backward.frontier.len();
        let (side, other) = if forward_turn { (&mut forward, &backward) } else { (&mut backward, &forward) };
        side.expand(options.all, budget, limits.max_nodes)?;
        let mut meets: Vec<(TermId, u32)> = side.frontier.iter().filter_map(|n| other.depth_of(*n).map(|d| (*n, d))).collect();
        if meets.is_empty() {
            side.add_frontier_to_visited();
            continue;
        }
        let best = meets.iter().map(|m| m.1).min().expect("meets is not empty");
        meets.retain(|m| m.1 == best);
        let side_depth = side.depth();
        let mut paths = Vec::new();
        let mut truncated = false;
        'meets: for (m, other_depth) in meets {
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            side.chains(m, side_depth, cap + 1, &mut ours, &mut Vec::new());
            other.chains(m, other_depth, cap + 1, &mut theirs, &mut Vec::new());
            for a in &ours {
                for b in &theirs {
                    if paths.len() >= cap {
                        truncated = true;
                        break 'meets;
                    }
                    // `a` runs from the meeting to this side's root, `b` to the other's.
                    let (to_from, to_to) = if forward_turn { (a, b) } else { (b, a) };
                    let mut path: Vec<TermId> = to_from.iter().rev().copied().collect();
                    path.extend_from_slice(&to_to[1..]);
                    paths.push(path);
                }
            }
        }
        paths.sort_unstable();
        return Ok(Paths { paths, truncated: truncated && options.all, quads_read: work(&forward, &backward) });
    }
}
