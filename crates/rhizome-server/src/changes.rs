//! `/{db}/_changes` and its feeds
//! (https://docs.couchdb.org/en/stable/api/database/changes.html):
//! `normal` answers at once; `longpoll` waits for the first change;
//! `continuous` streams one JSON line per change; `eventsource` streams
//! server-sent events. Waiting feeds wake on the database's commit
//! notification (a `watch` channel per database), send a newline every
//! `heartbeat` ms, and end after `timeout` ms, at shutdown, or when the
//! client goes away.

use crate::error::HttpError;
use crate::http::{Body, Request};
use crate::router::Reply;
use crate::state::DbHandle;
use bytes::Bytes;
use hyper::{Method, Response};
use rhizome_docs::{ChangesFilter, ChangesOptions};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// CouchDB's default `timeout` for waiting feeds without a heartbeat.
const DEFAULT_TIMEOUT_MS: u64 = 60_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    Longpoll,
    Continuous,
    EventSource,
}

pub struct FeedRequest {
    db: Arc<DbHandle>,
    opts: ChangesOptions,
    feed: Feed,
    heartbeat_ms: Option<u64>,
    timeout_ms: Option<u64>,
}

/// `since`: a number, `now`, or an opaque CouchDB-style `N-...` token whose
/// number we read.
fn parse_since(text: &str, db: &DbHandle) -> Result<u64, HttpError> {
    if text == "now" {
        return Ok(db.db.update_seq()?);
    }
    let text = text.trim_matches('"');
    let number = text.split('-').next().unwrap_or(text);
    number.parse().map_err(|_| HttpError::bad_request(format!("Invalid since: {text:?}")))
}

pub fn request(req: &Request, ctx: &crate::auth::UserCtx, db: Arc<DbHandle>) -> Result<Reply, HttpError> {
    let body = match req.method {
        Method::GET | Method::HEAD => None,
        Method::POST if req.body.is_empty() => None,
        Method::POST => Some(req.json_object()?),
        _ => return Err(HttpError::method_not_allowed("GET,HEAD,POST")),
    };
    let filter = match req.param("filter") {
        None | Some("") => ChangesFilter::None,
        Some("_doc_ids") => {
            let ids = match (body.as_ref().and_then(|b| b.get("doc_ids")).cloned(), req.json_param("doc_ids")?) {
                (Some(v), _) | (None, Some(v)) => v,
                (None, None) => return Err(HttpError::bad_request("filter=_doc_ids needs doc_ids")),
            };
            let ids: HashSet<String> =
                ids.as_array().ok_or_else(|| HttpError::bad_request("doc_ids must be an array"))?.iter().filter_map(Value::as_str).map(str::to_owned).collect();
            ChangesFilter::DocIds(ids)
        }
        Some("_selector") => {
            let selector = body.as_ref().and_then(|b| b.get("selector")).cloned();
            match selector {
                Some(s @ Value::Object(_)) => {
                    // Refused before the feed starts, with Mango's error.
                    if let Err(e) = rhizome_docs::selector::Selector::parse(&s) {
                        return Err(HttpError::new(400, e.error, e.reason));
                    }
                    ChangesFilter::Selector(s)
                }
                _ => return Err(HttpError::bad_request("filter=_selector needs a selector object in the POST body")),
            }
        }
        Some("_design") => ChangesFilter::Design,
        Some(other) => crate::couch::views::changes_filter(req, ctx, &db, other, body.as_ref())?,
    };
    let opts = ChangesOptions {
        since: match req.param("since").or(req.header("last-event-id")) {
            Some(s) => parse_since(s, &db)?,
            None => 0,
        },
        limit: req.number("limit")?.map(|n| n as usize),
        descending: req.flag("descending", false)?,
        all_leaves: req.param("style") == Some("all_docs"),
        include_docs: req.flag("include_docs", false)?,
        conflicts: req.flag("conflicts", false)?,
        attachments: req.flag("attachments", false)?,
        filter,
    };
    let heartbeat_ms = match req.param("heartbeat") {
        None => None,
        Some("true") => Some(60_000),
        Some(_) => req.number("heartbeat")?.map(|n| n.max(100)),
    };
    let feed = match req.param("feed").unwrap_or("normal") {
        "normal" => {
            let changes = db.db.changes(&opts)?;
            return Ok(Reply::Done(crate::http::response(200, "application/json", Bytes::from(normal_body(&changes)))));
        }
        "longpoll" => Feed::Longpoll,
        "continuous" => Feed::Continuous,
        "eventsource" => Feed::EventSource,
        other => return Err(HttpError::bad_request(format!("Invalid feed {other:?}"))),
    };
    Ok(Reply::Feed(FeedRequest { db, opts, feed, heartbeat_ms, timeout_ms: req.number("timeout")? }))
}

/// Starts the feed's task; the response streams what it sends.
pub fn run(feed: FeedRequest, shutdown: watch::Receiver<bool>) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let content_type = if feed.feed == Feed::EventSource { "text/event-stream" } else { "application/json" };
    tokio::spawn(async move {
        // Ends quietly when the client is gone (a failed send).
        let _ = stream(feed, tx, shutdown).await;
    });
    let mut r = Response::new(Body::Stream(rx));
    crate::http::set_header(&mut r, "content-type", content_type);
    crate::http::set_header(&mut r, "cache-control", "must-revalidate");
    r
}

async fn changes(db: &Arc<DbHandle>, opts: &ChangesOptions) -> Result<rhizome_docs::Changes, HttpError> {
    let db = db.clone();
    let opts = opts.clone();
    tokio::task::spawn_blocking(move || db.db.changes(&opts).map_err(HttpError::from))
        .await
        .map_err(|e| HttpError::internal(format!("changes task: {e}")))?
}

struct Closed;

async fn send(tx: &mpsc::Sender<Bytes>, bytes: Vec<u8>) -> Result<(), Closed> {
    tx.send(Bytes::from(bytes)).await.map_err(|_| Closed)
}

fn line(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap_or_default();
    b.push(b'\n');
    b
}

async fn stream(mut f: FeedRequest, tx: mpsc::Sender<Bytes>, mut shutdown: watch::Receiver<bool>) -> Result<(), Closed> {
    let mut seq_rx = f.db.seq.subscribe();
    let timeout_ms = f.timeout_ms.unwrap_or(if f.heartbeat_ms.is_some() { u64::MAX / 4 } else { DEFAULT_TIMEOUT_MS });
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    loop {
        seq_rx.mark_unchanged();
        let changes = match changes(&f.db, &f.opts).await {
            Ok(c) => c,
            Err(e) => return send(&tx, line(&json!({ "error": e.error, "reason": e.reason }))).await,
        };
        match f.feed {
            Feed::Longpoll => {
                if !changes.rows.is_empty() || f.opts.descending {
                    return send(&tx, normal_body(&changes)).await;
                }
            }
            Feed::Continuous | Feed::EventSource => {
                for row in &changes.rows {
                    let bytes = if f.feed == Feed::EventSource {
                        format!("data: {}\nid: {}\n\n", row, row["seq"]).into_bytes()
                    } else {
                        line(row)
                    };
                    send(&tx, bytes).await?;
                }
                if let Some(limit) = f.opts.limit {
                    let left = limit.saturating_sub(changes.rows.len());
                    if left == 0 {
                        // Cut by `limit`: what is left after the last row sent.
                        return end(&f, &tx, changes.last_seq, changes.pending).await;
                    }
                    f.opts.limit = Some(left);
                }
            }
        }
        f.opts.since = changes.last_seq;
        // Wait for a commit, a heartbeat, the timeout or shutdown.
        loop {
            let heartbeat = f.heartbeat_ms.map(|ms| Instant::now() + Duration::from_millis(ms)).unwrap_or(deadline).min(deadline);
            tokio::select! {
                changed = seq_rx.changed() => {
                    if changed.is_err() { return end(&f, &tx, f.opts.since, 0).await; }
                    break;
                }
                _ = tokio::time::sleep_until(heartbeat) => {
                    if Instant::now() >= deadline {
                        return end(&f, &tx, f.opts.since, 0).await;
                    }
                    send(&tx, b"\n".to_vec()).await?;
                }
                _ = shutdown.changed() => return end(&f, &tx, f.opts.since, 0).await,
                // On a shared store other servers commit too, unseen by
                // this one's commit signal: look again every so often.
                _ = shared_store_poll() => break,
            }
        }
    }
}

/// How often a waiting feed reads a shared store (`--store`) again.
const SHARED_STORE_POLL: Duration = Duration::from_millis(200);

async fn shared_store_poll() {
    if rhizome_kv::remote::is_shared() {
        tokio::time::sleep(SHARED_STORE_POLL).await
    } else {
        std::future::pending().await
    }
}

/// A `normal` (or `longpoll`) answer written as CouchDB writes it: one
/// change per line, so clients that split the body on lines (nano's
/// `changesReader`) see one change per line.
fn normal_body(changes: &rhizome_docs::Changes) -> Vec<u8> {
    let mut out = b"{\"results\":[\n".to_vec();
    for (i, row) in changes.rows.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b",\n");
        }
        out.extend_from_slice(&serde_json::to_vec(row).unwrap_or_default());
    }
    if !changes.rows.is_empty() {
        out.push(b'\n');
    }
    out.extend_from_slice(format!("],\n\"last_seq\":{},\"pending\":{}}}\n", changes.last_seq, changes.pending).as_bytes());
    out
}

/// The end of a feed: `pending` is what the feed did not send (only a
/// feed cut by `limit` leaves any).
async fn end(f: &FeedRequest, tx: &mpsc::Sender<Bytes>, last_seq: u64, pending: u64) -> Result<(), Closed> {
    match f.feed {
        Feed::Longpoll => send(tx, line(&json!({ "results": [], "last_seq": last_seq, "pending": pending }))).await,
        Feed::Continuous => send(tx, line(&json!({ "last_seq": last_seq, "pending": pending }))).await,
        Feed::EventSource => Ok(()),
    }
}
