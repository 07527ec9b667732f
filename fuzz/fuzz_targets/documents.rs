//! Untrusted documents through the write path (both `new_edits` modes),
//! then reads, `_changes` with a selector taken from the input, and the
//! revision tree's byte form: nothing may panic, and every tree written
//! must read back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rhizome_docs::{ChangesFilter, ChangesOptions, Database, OpenRevs, ReadOptions, RevTree};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let _ = RevTree::from_bytes(data);
    let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(data) else { return };
    let db = Database::memory();
    let docs: Vec<_> = items.iter().filter_map(|d| d.as_object().cloned()).collect();
    let ids: Vec<String> = docs.iter().filter_map(|d| d.get("_id").and_then(Value::as_str).map(str::to_owned)).collect();
    let _ = db.update_docs(docs.clone(), true);
    let _ = db.update_docs(docs, false);
    for id in &ids {
        let _ = db.get_doc(id, &ReadOptions { revs: true, revs_info: true, conflicts: true, attachments: true, ..Default::default() });
        let _ = db.open_revs(id, &OpenRevs::All, &ReadOptions::default());
    }
    let selector = items.first().cloned().unwrap_or(Value::Null);
    let _ = db.changes(&ChangesOptions { include_docs: true, all_leaves: true, filter: ChangesFilter::Selector(selector), ..Default::default() });
});
