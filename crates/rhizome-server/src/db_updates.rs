//! `GET /_db_updates`: which databases were created, updated or deleted
//! (https://docs.couchdb.org/en/stable/api/server/common.html#db-updates),
//! one row per database with its latest event, in the order of those
//! events after `since`, as CouchDB's feed (which reads its database of
//! databases) answers.
//!
//! Events are kept in memory: a restart starts the feed again, with
//! sequence numbers that still grow (they start from the clock, in
//! microseconds), so a client's `since` from before a restart reads every
//! event after the restart. `feed=normal` answers at once; `longpoll`
//! waits (on its request's blocking thread) until an event or `timeout`
//! (ms, default 60 s); `continuous` answers as `longpoll` does, one row per
//! line and the last sequence last.

use crate::error::HttpError;
use crate::http::{json, Body, Request};
use hyper::{Method, Response};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The latest event of every database, and a sequence for each.
pub struct DbUpdates {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    seq: u64,
    /// Database name -> (its latest event's sequence, its type).
    latest: HashMap<String, (u64, &'static str)>,
}

impl Default for DbUpdates {
    fn default() -> DbUpdates {
        let start = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0);
        DbUpdates { state: Mutex::new(State { seq: start, latest: HashMap::new() }), changed: Condvar::new() }
    }
}

impl DbUpdates {
    /// Records an event (`created`, `updated`, `deleted`) of `db`.
    pub fn record(&self, db: &str, kind: &'static str) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.seq += 1;
        let seq = state.seq;
        state.latest.insert(db.to_owned(), (seq, kind));
        drop(state);
        self.changed.notify_all();
    }

    /// Rows after `since`, in sequence order, and the last sequence.
    fn since(&self, since: u64, wait_until: Option<Instant>) -> (Vec<Value>, u64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let mut rows: Vec<(u64, &String, &'static str)> = state.latest.iter().filter(|(_, (s, _))| *s > since).map(|(db, (s, k))| (*s, db, *k)).collect();
            let now = Instant::now();
            if !rows.is_empty() || wait_until.is_none_or(|t| now >= t) {
                rows.sort();
                let last = rows.last().map_or(state.seq.max(since), |r| r.0);
                return (rows.into_iter().map(|(s, db, k)| json!({ "db_name": db, "type": k, "seq": s.to_string() })).collect(), last);
            }
            let left = wait_until.map_or(Duration::ZERO, |t| t - now);
            state = self.changed.wait_timeout(state, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

pub fn handle(updates: &DbUpdates, req: &Request) -> Result<Response<Body>, HttpError> {
    if !matches!(req.method, Method::GET | Method::HEAD | Method::POST) {
        return Err(HttpError::method_not_allowed("GET,HEAD,POST"));
    }
    let since = match req.param("since") {
        None | Some("0") => 0,
        Some("now") => updates.state.lock().unwrap_or_else(|p| p.into_inner()).seq,
        Some(s) => s.parse::<u64>().map_err(|_| HttpError::bad_request(format!("since must be a sequence this feed gave, or now: {s:?}")))?,
    };
    let timeout = Duration::from_millis(req.number("timeout")?.unwrap_or(60_000));
    let feed = req.param("feed").unwrap_or("normal");
    let wait_until = match feed {
        "normal" => None,
        "longpoll" | "continuous" => Some(Instant::now() + timeout),
        other => return Err(HttpError::bad_request(format!("Invalid feed {other:?} (normal, longpoll, continuous)"))),
    };
    let (mut rows, last) = updates.since(since, wait_until);
    if let Some(limit) = req.number("limit")? {
        rows.truncate(limit as usize);
    }
    let last = rows.last().and_then(|r| r["seq"].as_str()).map_or(last.to_string(), str::to_owned);
    if feed == "continuous" {
        let mut text = String::new();
        for row in &rows {
            text.push_str(&row.to_string());
            text.push('\n');
        }
        text.push_str(&json!({ "last_seq": last }).to_string());
        text.push('\n');
        return Ok(crate::http::response(200, "application/json", text.into_bytes().into()));
    }
    Ok(json(200, &json!({ "results": rows, "last_seq": last })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_database_appears_once_with_its_latest_event_after_since() {
        let u = DbUpdates::default();
        u.record("a", "created");
        let (_, after_a) = u.since(0, None);
        u.record("b", "created");
        u.record("a", "updated");
        u.record("b", "deleted");
        let (rows, last) = u.since(0, None);
        let seen: Vec<(&str, &str)> = rows.iter().map(|r| (r["db_name"].as_str().unwrap(), r["type"].as_str().unwrap())).collect();
        assert_eq!(seen, [("a", "updated"), ("b", "deleted")]);
        assert_eq!(rows.last().unwrap()["seq"], last.to_string());
        assert_eq!(u.since(last, None).0.len(), 0);
        assert_eq!(u.since(after_a, None).0.len(), 2);
        let t = Instant::now();
        assert!(u.since(last, Some(t + Duration::from_millis(50))).0.is_empty());
    }
}
