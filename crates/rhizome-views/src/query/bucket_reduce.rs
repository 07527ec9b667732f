//! A built-in reduce (`_count`, `_sum`, `_stats`) over one ascending key
//! range from the rank buckets' summaries (`bucket_summary.rs`): a bucket
//! inside the range whose rows are all in one group gives its stored
//! reduction (`_count`: its rows) instead of its rows, so a reduce over a
//! whole view reads its buckets, and a grouped one reads the buckets that
//! hold a group's edge, as CouchDB's B-tree reads its inner nodes'
//! reductions.

use super::{group_key, row_parts, scan, upper_of, Groups, Range};
use crate::index::{ViewError, VIEW_ROWS};
use crate::js::Sandbox;
use crate::rank::Fences;
use crate::reduce::{Partial, Reducer};
use rhizome_docs::{collate, DocError};
use rhizome_kv::KvRead;
use serde_json::{json, Value};

/// The key of a row of a view (not partitioned) from its `VIEW_ROWS` key.
fn key_of(row: &[u8]) -> Option<Value> {
    collate::decode_prefix(row.get(9..)?).map(|(v, _)| v)
}

pub(super) fn reduce(kv: &dyn KvRead, fences: &Fences, prefix: &[u8], range: &Range, q: &super::ViewQuery, reducer: Reducer, sandbox: &mut Option<Sandbox>) -> Result<Vec<Value>, ViewError> {
    let mut groups = Groups::new(q, reducer);
    if groups.full() || range.lower >= range.upper {
        return Ok(Vec::new());
    }
    let grouping = q.group == Some(true) || q.group_level.is_some();
    let view_end = upper_of(prefix);
    let rows = |groups: &mut Groups, sandbox: &mut Option<Sandbox>, lower: &[u8], upper: &[u8]| -> Result<bool, ViewError> {
        let mut more = true;
        scan(kv, &[Range { lower: lower.to_vec(), upper: upper.to_vec() }], false, |_, bytes| {
            let (key, id, value) = row_parts(bytes)?;
            more = groups.row(0, key, id, value, sandbox)?;
            Ok(more)
        })?;
        Ok(more)
    };
    // The bucket holding the range's first key, then those after it.
    let first = fences.fences.partition_point(|f| f.as_slice() <= range.lower.as_slice()).saturating_sub(1);
    for i in first..fences.fences.len() {
        let start = fences.fences[i].as_slice();
        if start >= range.upper.as_slice() {
            break;
        }
        let end = fences.fences.get(i + 1).map_or(view_end.as_slice(), |f| f.as_slice());
        let bucket = &fences.buckets[i];
        let whole = start >= range.lower.as_slice() && end <= range.upper.as_slice();
        if whole && bucket.rows == 0 {
            continue;
        }
        // The bucket's reduction, when it covers all of the bucket's rows
        // in the range and they are in one group.
        let mut stored: Option<(Partial, Value)> = None;
        if whole {
            if let Some(s) = &bucket.summary {
                let reduction = match reducer {
                    Reducer::Count => Some(json!(bucket.rows)),
                    _ => s.reduction.clone(),
                };
                let group = if grouping {
                    match (key_of(&s.first), key_of(&s.last)) {
                        (Some(a), Some(b)) => {
                            let (ga, gb) = (group_key(&a, q), group_key(&b, q));
                            (collate::encode(&ga) == collate::encode(&gb)).then_some(ga)
                        }
                        _ => None,
                    }
                } else {
                    Some(Value::Null)
                };
                if let (Some(r), Some(g)) = (reduction, group) {
                    stored = Some((Partial::Value(r), g));
                }
            }
        }
        let more = match stored {
            Some((partial, group)) => {
                let gid = (0, collate::encode(&group));
                let first_row = bucket.summary.as_ref().map(|s| s.first.as_slice()).unwrap_or_default();
                // A group that starts here shows its first row's key as
                // emitted (the decoded one may differ in form, `1.0`/`1`).
                let key = || -> Result<Value, ViewError> {
                    if !grouping {
                        return Ok(Value::Null);
                    }
                    let bytes = kv.get(VIEW_ROWS, first_row)?.ok_or_else(|| DocError::Corrupt("a rank bucket's first row is missing".into()))?;
                    Ok(group_key(&row_parts(&bytes)?.0, q))
                };
                groups.partial(gid, key, partial, sandbox)?
            }
            None => {
                let lower = start.max(range.lower.as_slice());
                let upper = end.min(range.upper.as_slice());
                rows(&mut groups, sandbox, lower, upper)?
            }
        };
        if !more {
            break;
        }
    }
    groups.finish(sandbox)
}
