//! Revision trees, as CouchDB's `couch_key_tree` keeps them.
//!
//! A document's history is a forest: each revision has a position (its
//! depth, the `N` of `N-hash`) and a hash, and points to its parent. Leaves
//! are the current revisions: more than one live leaf is a conflict. The
//! winner is the same on every replica without talking to the others: a
//! live leaf before a deleted one, then the deepest, then the greatest hash
//! (https://docs.couchdb.org/en/stable/replication/conflicts.html).
//! Stemming keeps only the last `revs_limit` revisions of every branch, so
//! a tree can end up with several roots; merging still works because
//! revisions are matched by (position, hash), not by where the root is.

use rustc_hash::FxHashMap;
use std::fmt;

/// A revision id: `pos-hash`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rev {
    pub pos: u64,
    pub hash: String,
}

impl Rev {
    pub fn new(pos: u64, hash: impl Into<String>) -> Rev {
        Rev { pos, hash: hash.into() }
    }

    /// Parses `N-hash` (N >= 1, hash non-empty, no further dash needed).
    pub fn parse(text: &str) -> Option<Rev> {
        let (digits, hash) = text.split_once('-')?;
        // Canonical digits only, as `pos` prints (no sign, no leading
        // zero), checked without printing it (a read parses several).
        if hash.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let pos: u64 = digits.parse().ok()?;
        Some(Rev { pos, hash: hash.to_owned() })
    }
}

impl Rev {
    /// Appends `N-hash`, as `to_string` gives it, without the formatting
    /// machinery (a transaction writes some keys and records holding
    /// revisions: `fmt` was a twentieth of a TPC-B transaction).
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(itoa::Buffer::new().format(self.pos).as_bytes());
        out.push(b'-');
        out.extend_from_slice(self.hash.as_bytes());
    }

    /// `N-hash` as `to_string` gives it, without the formatting
    /// machinery (a transaction names a few revisions in its documents).
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.text_len());
        out.push_str(itoa::Buffer::new().format(self.pos));
        out.push('-');
        out.push_str(&self.hash);
        out
    }

    /// The length of `N-hash`.
    pub fn text_len(&self) -> usize {
        self.pos.checked_ilog10().unwrap_or(0) as usize + 2 + self.hash.len()
    }
}

impl fmt::Display for Rev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.pos, self.hash)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Node {
    rev: Rev,
    parent: Option<usize>,
    deleted: bool,
}

/// A leaf of the tree: a current revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    pub rev: Rev,
    pub deleted: bool,
}

/// Why an edit with `new_edits=true` is refused: CouchDB's 409.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("Document update conflict.")]
    Conflict,
}

/// The revision tree of one document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RevTree {
    nodes: Vec<Node>,
    /// FxHash: a hot document's tree (TPC-B's branch row: `_revs_limit`
    /// revisions) is decoded on every write, one insert per revision.
    index: FxHashMap<Rev, usize>,
}

/// A leaf's rank, greatest first: CouchDB's order, live before deleted,
/// deeper first, greater hash first (the winner is the greatest).
fn winning_order(deleted: bool, rev: &Rev) -> (bool, u64, &str) {
    (!deleted, rev.pos, &rev.hash)
}

impl RevTree {
    pub fn new() -> RevTree {
        RevTree::default()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn contains(&self, rev: &Rev) -> bool {
        self.index.contains_key(rev)
    }

    fn push(&mut self, rev: Rev, parent: Option<usize>, deleted: bool) -> usize {
        let i = self.nodes.len();
        self.index.insert(rev.clone(), i);
        self.nodes.push(Node { rev, parent, deleted });
        i
    }

    fn has_children(&self) -> Vec<bool> {
        let mut has = vec![false; self.nodes.len()];
        for n in &self.nodes {
            if let Some(p) = n.parent {
                has[p] = true;
            }
        }
        has
    }

    /// The current revisions, winner first.
    pub fn leaves(&self) -> Vec<Leaf> {
        let has = self.has_children();
        let mut leaves: Vec<Leaf> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| !has[*i])
            .map(|(_, n)| Leaf { rev: n.rev.clone(), deleted: n.deleted })
            .collect();
        leaves.sort_by(|a, b| winning_order(b.deleted, &b.rev).cmp(&winning_order(a.deleted, &a.rev)));
        leaves
    }

    /// The winning revision, the same on every replica.
    pub fn winner(&self) -> Option<Leaf> {
        // The first of `leaves`' order, without collecting and sorting
        // them (a write asks for the winner several times).
        let has = self.has_children();
        self.nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| !has[*i])
            .map(|(_, n)| n)
            .max_by(|a, b| winning_order(a.deleted, &a.rev).cmp(&winning_order(b.deleted, &b.rev)))
            .map(|n| Leaf { rev: n.rev.clone(), deleted: n.deleted })
    }

    /// Live leaves other than the winner (`_conflicts`).
    pub fn conflicts(&self) -> Vec<Rev> {
        self.leaves().into_iter().skip(1).filter(|l| !l.deleted).map(|l| l.rev).collect()
    }

    /// Deleted leaves other than the winner (`_deleted_conflicts`).
    pub fn deleted_conflicts(&self) -> Vec<Rev> {
        self.leaves().into_iter().skip(1).filter(|l| l.deleted).map(|l| l.rev).collect()
    }

    pub fn is_leaf(&self, rev: &Rev) -> bool {
        match self.index.get(rev) {
            Some(&i) => !self.nodes.iter().any(|n| n.parent == Some(i)),
            None => false,
        }
    }

    pub fn is_deleted(&self, rev: &Rev) -> Option<bool> {
        self.index.get(rev).map(|&i| self.nodes[i].deleted)
    }

    /// The revisions from `rev` back to the oldest one kept, newest first
    /// (the `_revisions` of `revs=true`).
    pub fn path(&self, rev: &Rev) -> Vec<Rev> {
        let mut out = Vec::new();
        let mut at = self.index.get(rev).copied();
        while let Some(i) = at {
            out.push(self.nodes[i].rev.clone());
            at = self.nodes[i].parent;
        }
        out
    }

    /// A new revision by a client (`new_edits=true`). `base` is the `_rev`
    /// the client edited; it must be a leaf. Without a base the document
    /// must be new or its winner deleted (then the new revision continues
    /// the deleted branch, as CouchDB does when a deleted id is reused).
    pub fn edit(&mut self, base: Option<&Rev>, hash: &str, deleted: bool) -> Result<Rev, EditError> {
        let parent = match base {
            Some(b) => {
                if !self.is_leaf(b) {
                    return Err(EditError::Conflict);
                }
                Some(self.index[b])
            }
            None => match self.winner() {
                None => None,
                Some(w) if w.deleted => Some(self.index[&w.rev]),
                Some(_) => return Err(EditError::Conflict),
            },
        };
        let pos = parent.map_or(1, |p| self.nodes[p].rev.pos + 1);
        let rev = Rev::new(pos, hash);
        if self.contains(&rev) {
            // The same edit twice (same parent and content): nothing new.
            return Ok(rev);
        }
        self.push(rev.clone(), parent, deleted);
        Ok(rev)
    }

    /// Merges a revision path sent by replication (`new_edits=false`):
    /// `path` is newest first, each the parent of the one before; the newest
    /// is a leaf with `deleted`. Revisions already known are matched, the
    /// rest are added under the oldest known one (or as a new root).
    /// Returns whether anything was added.
    pub fn merge_path(&mut self, path: &[Rev], deleted: bool) -> bool {
        debug_assert!(path.windows(2).all(|w| w[0].pos == w[1].pos + 1), "a path goes back one position at a time");
        let Some(first_known) = path.iter().position(|r| self.contains(r)) else {
            let mut parent = None;
            for (k, rev) in path.iter().enumerate().rev() {
                parent = Some(self.push(rev.clone(), parent, k == 0 && deleted));
            }
            return !path.is_empty();
        };
        if first_known == 0 {
            return false;
        }
        let mut parent = Some(self.index[&path[first_known]]);
        for (k, rev) in path[..first_known].iter().enumerate().rev() {
            parent = Some(self.push(rev.clone(), parent, k == 0 && deleted));
        }
        true
    }

    /// Keeps only the last `limit` revisions of every branch.
    pub fn stem(&mut self, limit: usize) {
        if limit == 0 {
            return;
        }
        let has = self.has_children();
        let mut keep = vec![false; self.nodes.len()];
        for (i, _) in self.nodes.iter().enumerate().filter(|(i, _)| !has[*i]) {
            let mut at = Some(i);
            let mut n = 0;
            while let Some(j) = at {
                if n == limit {
                    break;
                }
                keep[j] = true;
                n += 1;
                at = self.nodes[j].parent;
            }
        }
        self.retain(&keep);
    }

    /// Removes the leaves `revs` names, each with the revisions above it
    /// that lead to it alone (up to where its branch joins another), as
    /// CouchDB's purge: returns the leaves removed, in the order given.
    /// Revisions that are not leaves are left alone.
    pub fn purge(&mut self, revs: &[Rev]) -> Vec<Rev> {
        let mut purged = Vec::new();
        for rev in revs {
            if !self.is_leaf(rev) || purged.contains(rev) {
                continue;
            }
            let mut keep = vec![true; self.nodes.len()];
            let mut at = self.index.get(rev).copied();
            while let Some(i) = at {
                keep[i] = false;
                at = self.nodes[i].parent.filter(|&p| !self.nodes.iter().enumerate().any(|(j, n)| keep[j] && n.parent == Some(p)));
            }
            self.retain(&keep);
            purged.push(rev.clone());
        }
        purged
    }

    /// Keeps the nodes `keep` marks (a kept node's parent is kept or
    /// becomes none: it is then a root).
    fn retain(&mut self, keep: &[bool]) {
        if keep.iter().all(|k| *k) {
            return;
        }
        let mut new_index = vec![None; self.nodes.len()];
        let mut nodes = Vec::with_capacity(self.nodes.len());
        // Moved, not copied, and the index renumbered in place (stemming
        // a hot document drops one revision per write).
        for (i, node) in std::mem::take(&mut self.nodes).into_iter().enumerate() {
            if keep[i] {
                new_index[i] = Some(nodes.len());
                nodes.push(node);
            } else if self.index.get(&node.rev) == Some(&i) {
                self.index.remove(&node.rev);
            }
        }
        for node in &mut nodes {
            // Parents come before children (every node is pushed after its
            // parent), so kept parents are already renumbered.
            node.parent = node.parent.and_then(|p| new_index[p]);
        }
        for at in self.index.values_mut() {
            *at = new_index[*at].expect("an indexed revision is a kept node");
        }
        self.nodes = nodes;
    }

    /// The leaves descending from `rev` (itself when it is a leaf), winner
    /// first: what `latest=true` answers for a revision that was edited.
    pub fn leaves_under(&self, rev: &Rev) -> Vec<Leaf> {
        self.leaves().into_iter().filter(|l| self.path(&l.rev).contains(rev)).collect()
    }

    /// Every revision of the tree.
    pub fn revs(&self) -> impl Iterator<Item = &Rev> {
        self.nodes.iter().map(|n| &n.rev)
    }

    /// Of `revs`, those this tree does not have (`_revs_diff`).
    pub fn missing<'a>(&self, revs: impl IntoIterator<Item = &'a Rev>) -> Vec<Rev> {
        revs.into_iter().filter(|r| !self.contains(r)).cloned().collect()
    }

    /// A compact, versioned byte form for storage.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![REVTREE_FORMAT];
        for n in &self.nodes {
            out.extend_from_slice(&n.rev.pos.to_be_bytes());
            out.extend_from_slice(&(n.parent.map_or(0, |p| p as u32 + 1)).to_be_bytes());
            out.push(n.deleted as u8);
            out.extend_from_slice(&(n.rev.hash.len() as u16).to_be_bytes());
            out.extend_from_slice(n.rev.hash.as_bytes());
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<RevTree> {
        let (&version, mut rest) = bytes.split_first()?;
        if version != REVTREE_FORMAT {
            return None;
        }
        let mut tree = RevTree::new();
        // Each node is at least 15 bytes.
        tree.nodes.reserve(rest.len() / 48 + 1);
        tree.index.reserve(rest.len() / 48 + 1);
        while !rest.is_empty() {
            let pos = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
            let parent = u32::from_be_bytes(rest.get(8..12)?.try_into().ok()?);
            let deleted = *rest.get(12)? != 0;
            let len = u16::from_be_bytes(rest.get(13..15)?.try_into().ok()?) as usize;
            let hash = std::str::from_utf8(rest.get(15..15 + len)?).ok()?.to_owned();
            let parent = match parent {
                0 => None,
                p if (p as usize) <= tree.nodes.len() => Some(p as usize - 1),
                _ => return None,
            };
            tree.push(Rev { pos, hash }, parent, deleted);
            rest = &rest[15 + len..];
        }
        Some(tree)
    }
}

const REVTREE_FORMAT: u8 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> Rev {
        Rev::parse(text).unwrap()
    }

    #[test]
    fn revisions_append_the_text_they_display() {
        for pos in [1, 9, 10, 99, 100, 12_345, u64::MAX] {
            for hash in ["a", "0123456789abcdef0123456789abcdef"] {
                let rev = Rev::new(pos, hash);
                let mut out = b"x".to_vec();
                rev.append_to(&mut out);
                assert_eq!(out, format!("x{rev}").into_bytes());
                assert_eq!(rev.text_len(), rev.to_string().len());
                assert_eq!(rev.text(), rev.to_string());
            }
        }
    }

    #[test]
    fn revision_ids_parse_and_print() {
        assert_eq!(r("3-abc"), Rev::new(3, "abc"));
        assert_eq!(r("12-a-b").hash, "a-b");
        for bad in ["", "abc", "0-abc", "-abc", "1-", "01-abc", "x-abc", "+1-abc", "1 -abc", "99999999999999999999-abc"] {
            assert_eq!(Rev::parse(bad), None, "{bad}");
        }
        assert_eq!(Rev::new(2, "ff").to_string(), "2-ff");
    }

    #[test]
    fn purge_removes_a_leaf_and_the_branch_that_led_to_it_alone() {
        let mut t = RevTree::new();
        t.merge_path(&[r("3-c"), r("2-b"), r("1-a")], false);
        t.merge_path(&[r("3-y"), r("2-x"), r("1-a")], false);
        assert_eq!(t.winner().unwrap().rev, r("3-y"));
        // Not leaves, or unknown: nothing purged.
        assert_eq!(t.purge(&[r("2-x"), r("1-a"), r("9-z")]), Vec::<Rev>::new());
        assert_eq!(t.purge(&[r("3-y"), r("3-y")]), vec![r("3-y")]);
        assert_eq!(t.revs().cloned().collect::<Vec<_>>(), vec![r("1-a"), r("2-b"), r("3-c")], "2-x went with 3-y; 1-a stays under 3-c");
        assert_eq!(t.winner().unwrap().rev, r("3-c"));
        assert_eq!(t.path(&r("3-c")), vec![r("3-c"), r("2-b"), r("1-a")]);
        assert_eq!(t.purge(&[r("3-c")]), vec![r("3-c")]);
        assert!(t.is_empty());
    }

    #[test]
    fn edits_chain_and_stale_bases_conflict() {
        let mut t = RevTree::new();
        let r1 = t.edit(None, "a", false).unwrap();
        assert_eq!(r1, r("1-a"));
        assert_eq!(t.edit(None, "x", false), Err(EditError::Conflict), "no _rev on an existing live doc");
        let r2 = t.edit(Some(&r1), "b", false).unwrap();
        assert_eq!(r2, r("2-b"));
        assert_eq!(t.edit(Some(&r1), "c", false), Err(EditError::Conflict), "1-a is no longer a leaf");
        assert_eq!(t.edit(Some(&r("9-zz")), "c", false), Err(EditError::Conflict));
        assert_eq!(t.winner().unwrap().rev, r2);
        assert_eq!(t.path(&r2), vec![r("2-b"), r("1-a")]);
    }

    #[test]
    fn a_deleted_document_is_recreated_on_its_deleted_branch() {
        let mut t = RevTree::new();
        let r1 = t.edit(None, "a", false).unwrap();
        let r2 = t.edit(Some(&r1), "del", true).unwrap();
        assert!(t.winner().unwrap().deleted);
        let r3 = t.edit(None, "again", false).unwrap();
        assert_eq!(r3, r("3-again"));
        assert_eq!(t.path(&r3), vec![r3.clone(), r2, r1]);
        assert!(!t.winner().unwrap().deleted);
    }

    #[test]
    fn the_winner_is_live_then_deepest_then_greatest_hash() {
        let mut t = RevTree::new();
        t.merge_path(&[r("2-aaa"), r("1-x")], false);
        t.merge_path(&[r("2-bbb"), r("1-x")], false);
        assert_eq!(t.winner().unwrap().rev, r("2-bbb"));
        assert_eq!(t.conflicts(), vec![r("2-aaa")]);
        // A deeper branch wins over a greater hash.
        t.merge_path(&[r("3-000"), r("2-aaa"), r("1-x")], false);
        assert_eq!(t.winner().unwrap().rev, r("3-000"));
        assert_eq!(t.conflicts(), vec![r("2-bbb")]);
        // A deleted leaf never wins over a live one, however deep.
        t.merge_path(&[r("9-zzz"), r("8-y"), r("7-y"), r("6-y"), r("5-y"), r("4-y"), r("3-000")], true);
        assert_eq!(t.winner().unwrap().rev, r("2-bbb"));
        assert_eq!(t.deleted_conflicts(), vec![r("9-zzz")]);
        assert!(t.conflicts().is_empty());
    }

    #[test]
    fn replicas_agree_on_the_winner_whatever_the_merge_order() {
        let paths: Vec<(Vec<Rev>, bool)> = vec![
            (vec![r("2-b"), r("1-a")], false),
            (vec![r("2-c"), r("1-a")], false),
            (vec![r("3-d"), r("2-b"), r("1-a")], true),
            (vec![r("1-z")], false),
        ];
        let mut winners = std::collections::BTreeSet::new();
        let orders = [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]];
        for order in orders {
            let mut t = RevTree::new();
            for i in order {
                t.merge_path(&paths[i].0, paths[i].1);
            }
            winners.insert(t.winner().unwrap().rev);
            assert_eq!(t.leaves().len(), 3);
        }
        assert_eq!(winners.into_iter().collect::<Vec<_>>(), vec![r("2-c")]);
    }

    #[test]
    fn merging_known_paths_adds_nothing_and_new_tails_attach_to_known_revisions() {
        let mut t = RevTree::new();
        assert!(t.merge_path(&[r("2-b"), r("1-a")], false));
        assert!(!t.merge_path(&[r("2-b"), r("1-a")], false));
        assert!(!t.merge_path(&[r("1-a")], false));
        assert!(t.merge_path(&[r("4-d"), r("3-c"), r("2-b")], false));
        assert_eq!(t.path(&r("4-d")), vec![r("4-d"), r("3-c"), r("2-b"), r("1-a")]);
        assert_eq!(t.leaves().len(), 1);
        assert_eq!(t.missing(&[r("3-c"), r("5-e")]), vec![r("5-e")]);
    }

    #[test]
    fn stemming_keeps_the_last_revisions_of_every_branch() {
        let mut t = RevTree::new();
        let mut base = None;
        for i in 1..=6 {
            base = Some(t.edit(base.as_ref(), &format!("h{i}"), false).unwrap());
        }
        t.merge_path(&[r("3-branch"), r("2-h2"), r("1-h1")], false);
        t.stem(3);
        // Its index renumbered as decoding the stemmed tree numbers it.
        assert_eq!(RevTree::from_bytes(&t.to_bytes()).unwrap(), t);
        assert_eq!(t.path(&r("6-h6")), vec![r("6-h6"), r("5-h5"), r("4-h4")]);
        assert_eq!(t.path(&r("3-branch")), vec![r("3-branch"), r("2-h2"), r("1-h1")]);
        assert!(!t.contains(&r("3-h3")));
        // A stemmed tree still merges a path that reaches a kept revision.
        assert!(t.merge_path(&[r("7-h7"), r("6-h6"), r("5-h5")], false));
        assert_eq!(t.winner().unwrap().rev, r("7-h7"));
    }

    #[test]
    fn the_byte_form_round_trips_and_rejects_garbage() {
        let mut t = RevTree::new();
        t.merge_path(&[r("3-c"), r("2-b"), r("1-a")], false);
        t.merge_path(&[r("2-x"), r("1-a")], true);
        let back = RevTree::from_bytes(&t.to_bytes()).unwrap();
        assert_eq!(back.leaves(), t.leaves());
        assert_eq!(back.path(&r("3-c")), t.path(&r("3-c")));
        assert_eq!(RevTree::from_bytes(&[]), None);
        assert_eq!(RevTree::from_bytes(&[9]), None);
        assert_eq!(RevTree::from_bytes(&t.to_bytes()[..10]), None);
    }
}
