//! Sorted, repeat-free vectors of term ids: the frontiers and visited sets
//! of every walk.

use rhizome_rdf::TermId;

/// Sorts and removes repeats.
pub fn normalize(v: &mut Vec<TermId>) {
    v.sort_unstable();
    v.dedup();
}

/// Removes from `v` (sorted, no repeats) every id of `seen` (sorted).
pub fn subtract(v: &mut Vec<TermId>, seen: &[TermId]) {
    let mut j = 0;
    v.retain(|x| {
        while j < seen.len() && seen[j] < *x {
            j += 1;
        }
        !(j < seen.len() && seen[j] == *x)
    });
}

/// `a` and `b` merged (both sorted, disjoint).
pub fn merge(a: &[TermId], b: &[TermId]) -> Vec<TermId> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[u64]) -> Vec<TermId> {
        v.iter().map(|x| TermId::new(1, *x)).collect()
    }

    #[test]
    fn subtract_and_merge_keep_order() {
        let mut v = ids(&[1, 3, 5, 7, 9]);
        subtract(&mut v, &ids(&[0, 3, 4, 9, 10]));
        assert_eq!(v, ids(&[1, 5, 7]));
        assert_eq!(merge(&v, &ids(&[2, 8])), ids(&[1, 2, 5, 7, 8]));
    }
}
