//! A source's `_changes` answer read row by row, within bounds whatever
//! the source sends (issue 44): a source that ignores `limit` and never
//! ends its answer grew a server past 4 GB in 11 s, and one change with
//! 1M revisions did the same. The answer is parsed as it arrives; reading
//! stops after `limit` rows (the page ends at the last one's `seq`), a
//! row's revisions are kept up to [`MAX_CHANGE_REVS`] (a row with more is
//! reported, never copied in part), and the whole answer is cut at
//! [`crate::MAX_ANSWER_BYTES`] by the reader that feeds it.

use crate::endpoint::{ChangesBatch, WriteFailure};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Value};
use std::fmt;

/// Revisions (leaves) one `_changes` row may list: a document with more
/// conflicts than this is not replicated (it is reported as a failure).
pub const MAX_CHANGE_REVS: usize = 10_000;

/// What a `_changes` answer gave, read up to `limit` rows.
#[derive(Default)]
pub(crate) struct ChangesPage {
    rows: Vec<Value>,
    skipped: Vec<WriteFailure>,
    last_seq: Value,
    /// The `seq` of the last row read, kept or skipped.
    last_row_seq: Value,
    /// The answer had more rows than asked for: reading stopped there.
    pub cut: bool,
}

impl ChangesPage {
    /// Reads an answer from `reader`, at most `limit` rows.
    pub fn read(reader: impl std::io::Read, limit: usize) -> Result<ChangesPage, String> {
        let mut page = ChangesPage::default();
        let mut de = serde_json::Deserializer::from_reader(reader);
        let read = PageSeed { page: &mut page, limit }.deserialize(&mut de);
        match read {
            Ok(()) => {}
            // `limit` rows are in (the rest of the answer is not read), or
            // the answer failed past some whole rows (cut at the answer
            // limit, or the connection lost): a page up to the last row.
            Err(_) if page.rows.len() + page.skipped.len() > 0 => page.cut = true,
            Err(e) => return Err(e.to_string()),
        }
        if page.cut || page.last_seq.is_null() {
            page.last_seq = std::mem::take(&mut page.last_row_seq);
        }
        Ok(page)
    }

    pub fn into_batch(self) -> ChangesBatch {
        ChangesBatch { rows: self.rows, last_seq: self.last_seq, skipped: self.skipped, cut: self.cut }
    }
}

struct PageSeed<'a> {
    page: &'a mut ChangesPage,
    limit: usize,
}

impl<'de> DeserializeSeed<'de> for PageSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PageSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a _changes answer: {\"results\": [...], \"last_seq\": ...}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "results" => map.next_value_seed(RowsSeed { page: &mut *self.page, limit: self.limit })?,
                "last_seq" => self.page.last_seq = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct RowsSeed<'a> {
    page: &'a mut ChangesPage,
    limit: usize,
}

impl<'de> DeserializeSeed<'de> for RowsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of changes")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        // Returning before the array's end leaves the rest unread (the
        // parser then reports it, and `read` takes the page as cut).
        while self.page.rows.len() + self.page.skipped.len() < self.limit.max(1) {
            let Some(row) = seq.next_element::<Row>()? else { return Ok(()) };
            let Some(id) = row.id else {
                return Err(serde::de::Error::custom("a _changes row without an id"));
            };
            self.page.last_row_seq = row.seq.clone();
            if row.revs_total > MAX_CHANGE_REVS {
                self.page.skipped.push(WriteFailure {
                    id,
                    error: "too_many_revisions".into(),
                    reason: format!("the source lists {} leaf revisions for this document; a replication copies at most {MAX_CHANGE_REVS}", row.revs_total),
                });
                continue;
            }
            let changes: Vec<Value> = row.revs.into_iter().map(|rev| json!({ "rev": rev })).collect();
            let mut out = json!({ "seq": row.seq, "id": id, "changes": changes });
            if row.deleted {
                out["deleted"] = json!(true);
            }
            self.page.rows.push(out);
        }
        Ok(())
    }
}

/// One row, with at most [`MAX_CHANGE_REVS`] revisions kept (the rest
/// counted); members other than these are skipped unread.
#[derive(Default)]
struct Row {
    seq: Value,
    id: Option<String>,
    revs: Vec<String>,
    revs_total: usize,
    deleted: bool,
}

impl<'de> serde::Deserialize<'de> for Row {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Row, D::Error> {
        d.deserialize_map(RowVisitor)
    }
}

struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = Row;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a _changes row: {\"seq\", \"id\", \"changes\": [{\"rev\"}]}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row, A::Error> {
        let mut row = Row::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "seq" => row.seq = map.next_value()?,
                "id" => row.id = Some(map.next_value()?),
                "deleted" => row.deleted = map.next_value::<Value>()? == Value::Bool(true),
                "changes" => map.next_value_seed(RevsSeed { row: &mut row })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(row)
    }
}

struct RevsSeed<'a> {
    row: &'a mut Row,
}

impl<'de> DeserializeSeed<'de> for RevsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RevsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of {\"rev\": ...}")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            if self.row.revs.len() < MAX_CHANGE_REVS {
                let Some(change) = seq.next_element::<Value>()? else { break };
                self.row.revs_total += 1;
                if let Some(rev) = change.get("rev").and_then(Value::as_str) {
                    self.row.revs.push(rev.to_owned());
                }
            } else {
                // Past the bound: counted, not kept.
                let Some(IgnoredAny) = seq.next_element::<IgnoredAny>()? else { break };
                self.row.revs_total += 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_stops_at_its_limit_whatever_follows() {
        // An answer that goes on past `limit` (and would never end).
        let text = r#"{"results":[{"seq":1,"id":"a","changes":[{"rev":"1-a"}]},{"seq":2,"id":"b","changes":[{"rev":"1-b"}],"deleted":true},{"seq":3,"id":"c","changes":[{"rev":"1-c"}]},"#;
        let endless = std::io::Read::chain(text.as_bytes(), std::io::repeat(b' '));
        let page = ChangesPage::read(std::io::Read::take(endless, 10 << 20), 2).unwrap();
        assert!(page.cut);
        let batch = page.into_batch();
        assert_eq!(batch.rows, vec![json!({"seq":1,"id":"a","changes":[{"rev":"1-a"}]}), json!({"seq":2,"id":"b","changes":[{"rev":"1-b"}],"deleted":true})]);
        assert_eq!(batch.last_seq, json!(2));
    }

    #[test]
    fn a_whole_answer_keeps_its_last_seq_and_skips_other_members() {
        let text = r#"{"results":[{"seq":"7-x","id":"a","changes":[{"rev":"1-a"}],"doc":{"big":[1,2,3]}}],"last_seq":"9-y","pending":0}"#;
        let page = ChangesPage::read(text.as_bytes(), 10).unwrap();
        assert!(!page.cut);
        let batch = page.into_batch();
        assert_eq!(batch.rows, vec![json!({"seq":"7-x","id":"a","changes":[{"rev":"1-a"}]})]);
        assert_eq!(batch.last_seq, json!("9-y"));
        assert!(ChangesPage::read(&b"{\"results\":[{\"seq\":1}]}"[..], 10).is_err(), "a row without an id is refused");
        assert!(ChangesPage::read(&b"[1,2]"[..], 10).is_err());
    }

    #[test]
    fn a_row_with_too_many_revisions_is_reported_not_kept() {
        let revs: Vec<String> = (0..MAX_CHANGE_REVS + 5).map(|i| format!("{{\"rev\":\"1-{i}\"}}")).collect();
        let text = format!(r#"{{"results":[{{"seq":1,"id":"many","changes":[{}]}},{{"seq":2,"id":"b","changes":[{{"rev":"1-b"}}]}}],"last_seq":2}}"#, revs.join(","));
        let batch = ChangesPage::read(text.as_bytes(), 10).unwrap().into_batch();
        assert_eq!(batch.rows.len(), 1);
        assert_eq!(batch.skipped.len(), 1);
        assert_eq!(batch.skipped[0].id, "many");
        assert_eq!(batch.last_seq, json!(2));
    }
}
