//! Traversals and shortest paths against a plain breadth-first search (and
//! a plain Dijkstra) on random graphs stored as quads: disconnected pairs,
//! self-loops, hubs, links repeated in two graphs, literal objects (not
//! links), predicate filters, and node limits hit.

use oxrdf::{GraphNameRef, Literal, NamedNode, Quad, Term};
use rhizome_graph::{Source, cheapest_path, neighbours, shortest_paths, Direction, LinkFilter, Limits, PathOptions, WeightOptions};
use rhizome_rdf::{DatasetMode, Store, TermId};
use std::collections::{BinaryHeap, VecDeque};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Fixture {
    store: Store,
    ids: Vec<TermId>,
    preds: Vec<TermId>,
    weight: TermId,
    /// (from, predicate index, to), repeats possible.
    edges: Vec<(usize, usize, usize)>,
    weights: Vec<f64>,
}

fn node(i: usize) -> NamedNode {
    NamedNode::new(format!("http://example.org/n{i}")).unwrap()
}

fn fixture(seed: u64, n: usize, m: usize) -> Fixture {
    let mut rng = Rng(seed | 1);
    let store = Store::memory(DatasetMode::Union);
    let preds: Vec<NamedNode> = (0..3).map(|i| NamedNode::new(format!("http://example.org/p{i}")).unwrap()).collect();
    let weight = NamedNode::new("http://example.org/weight").unwrap();
    let mut edges = Vec::new();
    // The last tenth of the nodes are never linked: disconnected pairs.
    let linked = n - n / 10;
    for _ in 0..m {
        let (a, b) = (rng.below(linked as u64) as usize, rng.below(linked as u64) as usize);
        edges.push((a, rng.below(3) as usize, b));
    }
    // A hub linked with a third of the nodes, both ways for some.
    for b in (0..linked).step_by(3) {
        edges.push((0, 0, b));
        if b % 2 == 0 {
            edges.push((b, 1, 0));
        }
    }
    // Self-loops.
    for a in (1..linked).step_by(7) {
        edges.push((a, 2, a));
    }
    let weights: Vec<f64> = (0..n).map(|i| if i % 5 == 0 { 1.0 } else { (rng.below(10) + 1) as f64 }).collect();
    let mut txn = store.transaction().unwrap();
    let mut insert = |q: Quad| {
        let ids = txn.encode_quad(q.as_ref()).unwrap();
        txn.insert(&ids).unwrap();
    };
    for (i, (a, p, b)) in edges.iter().enumerate() {
        let q = Quad::new(node(*a), preds[*p].clone(), node(*b), GraphNameRef::DefaultGraph);
        insert(q);
        // Some links sit in a second graph as well (the union sees them once).
        if i % 11 == 0 {
            insert(Quad::new(node(*a), preds[*p].clone(), node(*b), node(n + 1)));
        }
    }
    #[allow(clippy::needless_range_loop)]
    for i in 0..n {
        // Literals are values, not links; nodes at multiples of 5 have no weight.
        insert(Quad::new(node(i), preds[0].clone(), Literal::from(i as i64), GraphNameRef::DefaultGraph));
        if i % 5 != 0 {
            insert(Quad::new(node(i), weight.clone(), Literal::from(weights[i] as i64), GraphNameRef::DefaultGraph));
        }
    }
    let ids: Vec<TermId> = (0..n).map(|i| txn.encode(Term::from(node(i)).as_ref()).unwrap()).collect();
    let pred_ids: Vec<TermId> = preds.iter().map(|p| txn.encode(Term::from(p.clone()).as_ref()).unwrap()).collect();
    let weight_id = txn.encode(Term::from(weight).as_ref()).unwrap();
    txn.commit().unwrap();
    Fixture { store, ids, preds: pred_ids, weight: weight_id, edges, weights }
}

impl Fixture {
    fn adjacency(&self, dir: Direction, preds: Option<&[usize]>) -> Vec<Vec<usize>> {
        let mut adj = vec![Vec::new(); self.ids.len()];
        for &(a, p, b) in &self.edges {
            if preds.is_some_and(|ps| !ps.contains(&p)) {
                continue;
            }
            if matches!(dir, Direction::Out | Direction::Any) {
                adj[a].push(b);
            }
            if matches!(dir, Direction::In | Direction::Any) {
                adj[b].push(a);
            }
        }
        for l in &mut adj {
            l.sort_unstable();
            l.dedup();
        }
        adj
    }

    fn filter(&self, dir: Direction, preds: Option<&[usize]>) -> LinkFilter {
        LinkFilter::new(dir, preds.map(|ps| ps.iter().map(|p| self.preds[*p]).collect()))
    }

    fn index(&self, id: TermId) -> usize {
        self.ids.iter().position(|x| *x == id).expect("a node of the fixture")
    }
}

fn bfs(adj: &[Vec<usize>], start: usize) -> Vec<Option<u32>> {
    let mut dist = vec![None; adj.len()];
    dist[start] = Some(0);
    let mut queue = VecDeque::from([start]);
    while let Some(x) = queue.pop_front() {
        for &y in &adj[x] {
            if dist[y].is_none() {
                dist[y] = Some(dist[x].unwrap() + 1);
                queue.push_back(y);
            }
        }
    }
    dist
}

/// Number of shortest paths from `start` to each node.
fn path_counts(adj: &[Vec<usize>], start: usize, dist: &[Option<u32>]) -> Vec<u64> {
    let mut order: Vec<usize> = (0..adj.len()).filter(|i| dist[*i].is_some()).collect();
    order.sort_by_key(|i| dist[*i]);
    let mut count = vec![0u64; adj.len()];
    count[start] = 1;
    for x in order {
        for &y in &adj[x] {
            if dist[y] == dist[x].map(|d| d + 1) {
                count[y] = count[y].saturating_add(count[x]);
            }
        }
    }
    count
}

const CASES: &[(Direction, Option<&[usize]>)] =
    &[(Direction::Out, None), (Direction::In, None), (Direction::Any, None), (Direction::Out, Some(&[0])), (Direction::Any, Some(&[1, 2])), (Direction::In, Some(&[0, 1, 2]))];

#[test]
fn neighbours_match_a_plain_bfs() {
    for seed in [1, 2, 3] {
        let f = fixture(seed, 120, 220);
        let snapshot = f.store.snapshot().unwrap();
        let mut rng = Rng(seed * 77 + 5);
        for &(dir, preds) in CASES {
            let adj = f.adjacency(dir, preds);
            for _ in 0..12 {
                let start = rng.below(f.ids.len() as u64) as usize;
                let depth = 1 + rng.below(4) as u32;
                let dist = bfs(&adj, start);
                let mut want: Vec<(u32, usize)> = (0..f.ids.len()).filter(|i| *i != start).filter_map(|i| dist[i].filter(|d| *d <= depth).map(|d| (d, i))).collect();
                want.sort_by_key(|(d, i)| (*d, f.ids[*i]));
                let got = neighbours(Source::of(&snapshot), f.ids[start], depth, &f.filter(dir, preds), Limits::default()).unwrap();
                let got_pairs: Vec<(u32, usize)> = got.nodes.iter().map(|r| (r.depth, f.index(r.id))).collect();
                assert_eq!(got_pairs, want, "seed {seed} {dir:?} {preds:?} from n{start} depth {depth}");
                assert!(!got.truncated);
            }
        }
    }
}

#[test]
fn a_node_limit_cuts_the_deepest_level_by_id() {
    let f = fixture(9, 150, 300);
    let snapshot = f.store.snapshot().unwrap();
    let adj = f.adjacency(Direction::Any, None);
    // From the hub (node 0) and from ordinary nodes, with limits below and above what is reached.
    for start in [0, 1, 2, 40] {
        let dist = bfs(&adj, start);
        let mut all: Vec<(u32, TermId)> = (0..f.ids.len()).filter(|i| *i != start).filter_map(|i| dist[i].filter(|d| *d <= 3).map(|d| (d, f.ids[i]))).collect();
        all.sort();
        for limit in [0, 1, 5, 17, 60, all.len(), all.len() + 3] {
            let got = neighbours(Source::of(&snapshot), f.ids[start], 3, &f.filter(Direction::Any, None), Limits { max_nodes: limit, deadline: None }).unwrap();
            let got: Vec<(u32, TermId)> = got.nodes.iter().map(|r| (r.depth, r.id)).collect();
            let mut want = all.clone();
            want.truncate(limit);
            assert_eq!(got, want, "from n{start} limit {limit}");
        }
        let cut = neighbours(Source::of(&snapshot), f.ids[start], 3, &f.filter(Direction::Any, None), Limits { max_nodes: all.len().saturating_sub(1), deadline: None }).unwrap();
        assert_eq!(cut.truncated, !all.is_empty());
    }
}

fn assert_is_path(f: &Fixture, adj: &[Vec<usize>], path: &[TermId], from: usize, to: usize) {
    let idx: Vec<usize> = path.iter().map(|id| f.index(*id)).collect();
    assert_eq!(idx.first(), Some(&from));
    assert_eq!(idx.last(), Some(&to));
    for w in idx.windows(2) {
        assert!(adj[w[0]].contains(&w[1]), "n{} -> n{} is not a link", w[0], w[1]);
    }
}

#[test]
fn shortest_paths_match_a_plain_bfs() {
    for seed in [4, 5, 6] {
        let f = fixture(seed, 100, 150);
        let snapshot = f.store.snapshot().unwrap();
        let mut rng = Rng(seed * 31 + 7);
        for &(dir, preds) in CASES {
            let adj = f.adjacency(dir, preds);
            for _ in 0..25 {
                let (a, b) = (rng.below(f.ids.len() as u64) as usize, rng.below(f.ids.len() as u64) as usize);
                let dist = bfs(&adj, a);
                let filter = f.filter(dir, preds);
                let one = shortest_paths(Source::of(&snapshot), f.ids[a], f.ids[b], &filter, PathOptions::default(), Limits::default()).unwrap();
                match dist[b] {
                    None => assert!(one.paths.is_empty(), "seed {seed} {dir:?} n{a} -> n{b}: no path expected"),
                    Some(d) => {
                        assert_eq!(one.paths.len(), 1);
                        assert_eq!(one.paths[0].len() as u32, d + 1, "seed {seed} {dir:?} {preds:?} n{a} -> n{b}");
                        assert_is_path(&f, &adj, &one.paths[0], a, b);
                    }
                }
                let all = shortest_paths(Source::of(&snapshot), f.ids[a], f.ids[b], &filter, PathOptions { all: true, max_paths: 1000, max_depth: None }, Limits::default()).unwrap();
                let count = path_counts(&adj, a, &dist)[b];
                if count <= 1000 {
                    assert_eq!(all.paths.len() as u64, count, "seed {seed} {dir:?} {preds:?} n{a} -> n{b}: all shortest paths");
                    assert!(!all.truncated);
                } else {
                    assert_eq!(all.paths.len(), 1000);
                    assert!(all.truncated);
                }
                let mut distinct = all.paths.clone();
                distinct.dedup();
                assert_eq!(distinct.len(), all.paths.len());
                for p in &all.paths {
                    assert_eq!(p.len() as u32, dist[b].unwrap() + 1);
                    assert_is_path(&f, &adj, p, a, b);
                }
                // A depth bound below the distance finds nothing.
                if let Some(d) = dist[b].filter(|d| *d >= 1) {
                    let bounded = shortest_paths(Source::of(&snapshot), f.ids[a], f.ids[b], &filter, PathOptions { max_depth: Some(d - 1), ..Default::default() }, Limits::default()).unwrap();
                    assert!(bounded.paths.is_empty());
                    let exact = shortest_paths(Source::of(&snapshot), f.ids[a], f.ids[b], &filter, PathOptions { max_depth: Some(d), ..Default::default() }, Limits::default()).unwrap();
                    assert_eq!(exact.paths.len(), 1);
                }
            }
        }
    }
}

#[test]
fn a_path_search_past_its_node_limit_fails() {
    let f = fixture(12, 200, 200);
    let snapshot = f.store.snapshot().unwrap();
    // From an unlinked node to the hub: its frontier empties first, so no
    // path, within any limit.
    let err = shortest_paths(Source::of(&snapshot), f.ids[199], f.ids[0], &f.filter(Direction::Any, None), PathOptions::default(), Limits { max_nodes: 10, deadline: None });
    assert!(err.unwrap().paths.is_empty());
    let adj = f.adjacency(Direction::Any, None);
    let dist = bfs(&adj, 3);
    let far = (0..150).filter(|i| dist[*i].is_some_and(|d| d >= 2)).max_by_key(|i| dist[*i]).expect("a node 2 links away");
    let err = shortest_paths(Source::of(&snapshot), f.ids[3], f.ids[far], &f.filter(Direction::Any, None), PathOptions::default(), Limits { max_nodes: 1, deadline: None });
    assert!(matches!(err, Err(rhizome_graph::Error::NodeLimit(1))), "{err:?}");
}

fn dijkstra(adj: &[Vec<usize>], w: &[f64], a: usize, b: usize) -> Option<f64> {
    let mut best = vec![f64::INFINITY; adj.len()];
    best[a] = 0.0;
    let mut heap = BinaryHeap::new();
    heap.push((std::cmp::Reverse(0u64), a));
    // Weights are integers here: costs are exact in u64.
    while let Some((std::cmp::Reverse(c), x)) = heap.pop() {
        if c as f64 > best[x] {
            continue;
        }
        for &y in &adj[x] {
            let n = c + w[y] as u64;
            if (n as f64) < best[y] {
                best[y] = n as f64;
                heap.push((std::cmp::Reverse(n), y));
            }
        }
    }
    best[b].is_finite().then_some(best[b])
}

#[test]
fn cheapest_paths_match_a_plain_dijkstra() {
    let f = fixture(21, 90, 200);
    let snapshot = f.store.snapshot().unwrap();
    let mut rng = Rng(99);
    let weights = WeightOptions { weight: f.weight, default_weight: 1.0 };
    for &(dir, preds) in CASES {
        let adj = f.adjacency(dir, preds);
        for _ in 0..20 {
            let (a, b) = (rng.below(90) as usize, rng.below(90) as usize);
            let got = cheapest_path(Source::of(&snapshot), f.ids[a], f.ids[b], &f.filter(dir, preds), weights, Limits::default()).unwrap();
            match dijkstra(&adj, &f.weights, a, b) {
                None => assert!(got.is_none()),
                Some(cost) => {
                    let got = got.expect("a path");
                    assert_eq!(got.cost, cost, "{dir:?} n{a} -> n{b}");
                    assert_is_path(&f, &adj, &got.path, a, b);
                    let sum: f64 = got.path[1..].iter().map(|id| f.weights[f.index(*id)]).sum();
                    assert_eq!(sum, cost);
                }
            }
        }
    }
}

#[test]
fn a_path_from_a_node_to_itself_is_that_node() {
    let f = fixture(3, 30, 40);
    let snapshot = f.store.snapshot().unwrap();
    let p = shortest_paths(Source::of(&snapshot), f.ids[5], f.ids[5], &f.filter(Direction::Out, None), PathOptions::default(), Limits::default()).unwrap();
    assert_eq!(p.paths, vec![vec![f.ids[5]]]);
}
