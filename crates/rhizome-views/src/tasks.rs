//! Index builds in progress, for `GET /_active_tasks` (CouchDB's
//! `indexer` tasks: database, design document, changes done of total,
//! progress in percent).

use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

struct Task {
    id: u64,
    database: String,
    design_document: String,
    first_seq: u64,
    total_seq: u64,
    done_seq: u64,
    started_on: u64,
    updated_on: u64,
}

static TASKS: Mutex<Vec<Task>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A running index build; removed from the list when dropped.
pub struct IndexerTask {
    id: u64,
}

impl IndexerTask {
    /// An update from sequence `from` to `to`.
    pub fn start(database: &str, design_document: &str, from: u64, to: u64) -> IndexerTask {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let t = now();
        let task = Task {
            id,
            database: database.to_owned(),
            design_document: design_document.to_owned(),
            first_seq: from,
            total_seq: to,
            done_seq: from,
            started_on: t,
            updated_on: t,
        };
        TASKS.lock().unwrap_or_else(|e| e.into_inner()).push(task);
        IndexerTask { id }
    }

    pub fn progress(&self, seq: u64) {
        let mut tasks = TASKS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = tasks.iter_mut().find(|t| t.id == self.id) {
            t.done_seq = seq.min(t.total_seq);
            t.updated_on = now();
        }
    }
}

impl Drop for IndexerTask {
    fn drop(&mut self) {
        TASKS.lock().unwrap_or_else(|e| e.into_inner()).retain(|t| t.id != self.id);
    }
}

/// The `_active_tasks` entries of index builds now running.
pub fn active_tasks() -> Vec<Value> {
    TASKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|t| {
            let total = t.total_seq.saturating_sub(t.first_seq);
            let done = t.done_seq.saturating_sub(t.first_seq);
            json!({
                "type": "indexer",
                "node": "rhizome@localhost",
                "pid": format!("<0.{}.0>", t.id),
                "database": t.database,
                "design_document": t.design_document,
                "changes_done": done,
                "total_changes": total,
                "progress": if total == 0 { 100 } else { done * 100 / total },
                "started_on": t.started_on,
                "updated_on": t.updated_on,
            })
        })
        .collect()
}
