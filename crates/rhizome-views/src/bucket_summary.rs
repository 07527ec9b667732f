//! What a rank bucket (`rank.rs`) keeps beside its row count, so that a
//! reduce reads buckets instead of rows, as CouchDB's B-tree keeps
//! reductions in its inner nodes: a `_sum` over a 50,000-row view read
//! every row (21 ms) where CouchDB reads its root's reduction.
//!
//! A bucket's value, version 2 (version 1 is the count alone):
//!
//! | bytes | what |
//! |---|---|
//! | 8 | rows, u64 BE |
//! | 1 | 2: this format |
//! | 4 + n | the first row's `VIEW_ROWS` key, length-prefixed (u32 BE); empty when the bucket has no rows |
//! | 4 + n | the last row's key, likewise |
//! | rest | the reduction of the bucket's rows as JSON text, for `_sum` and `_stats` views (empty: none) |
//!
//! `_count`'s reduction is the bucket's rows. The first and last keys tell
//! a grouped reduce whether every row of a bucket is in one group.
//! Invariant: a summary is written in the transaction that changes the
//! bucket's rows, from the rows it adds (a new bucket, or one only added
//! to: the stored reduction re-reduced with the added rows') or from the
//! bucket's rows as the transaction has them (rows removed, buckets cut or
//! joined). A bucket without a summary (version 1, written before them) is
//! given one when its view is next updated; a reduce reads its rows until
//! then, so it is never read wrong.

use crate::index::{ViewError, VIEW_ROWS};
use crate::reduce::{Partial, Reducer};
use rhizome_docs::DocError;
use rhizome_kv::KvRead;
use serde_json::value::RawValue;
use serde_json::Value;

const FORMAT: u8 = 2;

/// A bucket's value in `VIEW_RANKS`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BucketValue {
    pub rows: u64,
    pub summary: Option<Summary>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Summary {
    /// The first and last rows' keys; empty when the bucket has no rows.
    pub first: Vec<u8>,
    pub last: Vec<u8>,
    /// For `_sum` and `_stats` views: the reduction of the bucket's rows
    /// (`None` when it failed, as `_stats` of a string does: a query then
    /// reduces the rows, and reports the error).
    pub reduction: Option<Value>,
}

/// Whether a view's buckets keep the reduction of their rows.
pub(crate) fn stores_reduction(reducer: Option<Reducer>) -> bool {
    matches!(reducer, Some(Reducer::Sum | Reducer::Stats))
}

fn corrupt(what: &str) -> ViewError {
    DocError::Corrupt(format!("view rank bucket: {what}")).into()
}

fn take_key<'a>(bytes: &mut &'a [u8]) -> Result<&'a [u8], ViewError> {
    let len = u32::from_be_bytes(bytes.get(..4).and_then(|b| b.try_into().ok()).ok_or_else(|| corrupt("truncated key length"))?) as usize;
    let key = bytes.get(4..4 + len).ok_or_else(|| corrupt("truncated key"))?;
    *bytes = &bytes[4 + len..];
    Ok(key)
}

impl BucketValue {
    pub fn decode(bytes: &[u8]) -> Result<BucketValue, ViewError> {
        let rows = u64::from_be_bytes(bytes.get(..8).and_then(|b| b.try_into().ok()).ok_or_else(|| corrupt("shorter than 8 bytes"))?);
        let mut rest = &bytes[8..];
        let Some((&format, after)) = rest.split_first() else { return Ok(BucketValue { rows, summary: None }) };
        if format != FORMAT {
            return Err(corrupt(&format!("unknown format {format}")));
        }
        rest = after;
        let first = take_key(&mut rest)?.to_vec();
        let last = take_key(&mut rest)?.to_vec();
        let reduction = if rest.is_empty() { None } else { Some(serde_json::from_slice(rest).map_err(|e| corrupt(&format!("reduction: {e}")))?) };
        Ok(BucketValue { rows, summary: Some(Summary { first, last, reduction }) })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.rows.to_be_bytes().to_vec();
        if let Some(s) = &self.summary {
            out.push(FORMAT);
            for key in [&s.first, &s.last] {
                out.extend_from_slice(&(key.len() as u32).to_be_bytes());
                out.extend_from_slice(key);
            }
            if let Some(r) = &s.reduction {
                out.extend_from_slice(r.to_string().as_bytes());
            }
        }
        out
    }
}

/// A row's value (the third member of its stored `[key, id, value]`).
fn row_value(bytes: &[u8]) -> Result<Value, ViewError> {
    let (_, _, value): (&RawValue, &RawValue, Value) = serde_json::from_slice(bytes).map_err(|e| DocError::Corrupt(format!("view row: {e}")))?;
    Ok(value)
}

/// The reduction of values, in their rows' order (`None` when it fails).
fn reduce_values(reducer: Option<Reducer>, values: Vec<Value>) -> Option<Value> {
    let reducer = reducer.filter(|r| stores_reduction(Some(*r)))?;
    if values.is_empty() {
        return None;
    }
    let rows: Vec<(Value, String, Value)> = values.into_iter().map(|v| (Value::Null, String::new(), v)).collect();
    match reducer.reduce(None, &rows) {
        Ok(Partial::Value(v)) => Some(v),
        _ => None,
    }
}

/// Summarizes rows given in key order.
#[derive(Default)]
pub(crate) struct SummaryBuilder {
    rows: u64,
    first: Vec<u8>,
    last: Vec<u8>,
    values: Vec<Value>,
}

impl SummaryBuilder {
    pub fn push(&mut self, reducer: Option<Reducer>, key: &[u8], value: &[u8]) -> Result<(), ViewError> {
        if self.rows == 0 {
            self.first = key.to_vec();
        }
        self.last.clear();
        self.last.extend_from_slice(key);
        self.rows += 1;
        if stores_reduction(reducer) {
            self.values.push(row_value(value)?);
        }
        Ok(())
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn finish(self, reducer: Option<Reducer>) -> BucketValue {
        let reduction = reduce_values(reducer, self.values);
        BucketValue { rows: self.rows, summary: Some(Summary { first: self.first, last: self.last, reduction }) }
    }
}

/// The summary of the rows of `VIEW_ROWS` in `[fence, next)` as `kv` has them.
pub(crate) fn summarize(kv: &dyn KvRead, reducer: Option<Reducer>, fence: &[u8], next: &[u8]) -> Result<BucketValue, ViewError> {
    let mut builder = SummaryBuilder::default();
    let mut cursor = kv.cursor(VIEW_ROWS, fence, Some(next));
    cursor.seek_first();
    while cursor.valid() {
        builder.push(reducer, cursor.key(), cursor.value())?;
        cursor.next();
    }
    cursor.status()?;
    Ok(builder.finish(reducer))
}

/// A summary with rows added (`added`: whole `VIEW_ROWS` keys and values,
/// in key order) and none removed; `None` when it cannot be had from
/// `base` alone (a reduction is missing) and the rows must be read.
pub(crate) fn with_added(base: &Summary, base_rows: u64, reducer: Option<Reducer>, added: &[(Vec<u8>, Vec<u8>)]) -> Result<Option<Summary>, ViewError> {
    let (Some((first, _)), Some((last, _))) = (added.first(), added.last()) else { return Ok(Some(base.clone())) };
    let stores = stores_reduction(reducer);
    if stores && base_rows > 0 && base.reduction.is_none() {
        return Ok(None);
    }
    let first = if base_rows > 0 && base.first < *first { base.first.clone() } else { first.clone() };
    let last = if base_rows > 0 && base.last > *last { base.last.clone() } else { last.clone() };
    let mut reduction = None;
    if stores {
        let values = added.iter().map(|(_, v)| row_value(v)).collect::<Result<Vec<_>, _>>()?;
        let Some(new) = reduce_values(reducer, values) else { return Ok(None) };
        reduction = match (&base.reduction, reducer) {
            (Some(old), Some(r)) if base_rows > 0 => match r.rereduce(None, vec![Partial::Value(old.clone()), Partial::Value(new)]) {
                Ok(Partial::Value(v)) => Some(v),
                _ => return Ok(None),
            },
            _ => Some(new),
        };
    }
    Ok(Some(Summary { first, last, reduction }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bucket_value_reads_back_and_the_first_format_is_a_count() {
        let v = BucketValue { rows: 3, summary: Some(Summary { first: b"ab".to_vec(), last: b"xyz".to_vec(), reduction: Some(json!({"sum": 1.5})) }) };
        assert_eq!(BucketValue::decode(&v.encode()).unwrap(), v);
        let none = BucketValue { rows: 0, summary: Some(Summary::default()) };
        assert_eq!(BucketValue::decode(&none.encode()).unwrap(), none);
        assert_eq!(BucketValue::decode(&7u64.to_be_bytes()).unwrap(), BucketValue { rows: 7, summary: None });
        assert!(BucketValue::decode(&[0, 0, 0, 0, 0, 0, 0, 1, 9]).is_err());
        assert!(BucketValue::decode(&[0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 9]).is_err());
    }
}
