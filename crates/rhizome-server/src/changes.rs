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
        // CouchDB answers an unknown style with a 500 (badarg); a 400 says why.
        all_leaves: match req.param("style") {
            None | Some("main_only") => false,
            Some("all_docs") => true,
            Some(other) => return Err(HttpError::bad_request(format!("Invalid style {other:?}: main_only or all_docs"))),
        },
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
        "normal" => return Ok(Reply::Done(normal(req, &db, &opts)?)),
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

/// A `normal` feed, each change written as it is read (`crate::stream`),
/// one per line as CouchDB writes them (nano's `changesReader` splits the
/// body on lines).
fn normal(req: &Request, db: &DbHandle, opts: &ChangesOptions) -> Result<Response<Body>, HttpError> {
    use std::io::Write;
    let mut out = crate::stream::BodyWriter::new(req, crate::http::response(200, "application/json", Bytes::new()));
    let _ = out.write_all(b"{\"results\":[\n");
    let mut first = true;
    let changes = db.db.changes_each(opts, &mut |row| {
        if !std::mem::take(&mut first) {
            out.write_all(b",\n").map_err(crate::couch::bulk::gone)?;
        }
        out.write_all(&serde_json::to_vec(&row).unwrap_or_default()).map_err(crate::couch::bulk::gone)
    });
    let changes = match changes {
        Ok(c) => c,
        Err(e) => return out.fail(e.into()),
    };
    if !first {
        let _ = out.write_all(b"\n");
    }
    let _ = write!(out, "],\n\"last_seq\":{},\"pending\":{}}}\n", changes.last_seq, changes.pending);
    out.finish()
}

/// What one pass over the changes of a waiting feed sent.
struct Pass {
    sent: usize,
    last_seq: u64,
    pending: u64,
}

/// Sends the changes after `opts.since` to the feed's client as they are
/// read, on a blocking thread: the feed's channel bounds what is held (a
/// feed from sequence 0 with `include_docs` over a large database never
/// holds more than the channel's rows). A longpoll's opening goes with its
/// first row, so that a pass with none sends nothing.
async fn send_changes(f: &FeedRequest, tx: &mpsc::Sender<Bytes>) -> Result<Result<Pass, HttpError>, Closed> {
    let (db, opts, feed, tx) = (f.db.clone(), f.opts.clone(), f.feed, tx.clone());
    let pass = tokio::task::spawn_blocking(move || {
        let mut sent = 0;
        let mut closed = false;
        let changes = db.db.changes_each(&opts, &mut |row| {
            let mut bytes = Vec::new();
            match feed {
                Feed::EventSource => bytes.extend_from_slice(format!("data: {}\nid: {}\n\n", row, row["seq"]).as_bytes()),
                Feed::Continuous => bytes = line(&row),
                Feed::Longpoll => {
                    bytes.extend_from_slice(if sent == 0 { b"{\"results\":[\n" } else { b",\n" });
                    bytes.extend_from_slice(&serde_json::to_vec(&row).unwrap_or_default());
                }
            }
            sent += 1;
            if tx.blocking_send(Bytes::from(bytes)).is_err() {
                closed = true;
                return Err(rhizome_docs::DocError::Coded { status: 499, error: "client_closed_request", reason: "the client went away".into() });
            }
            Ok(())
        });
        match changes {
            _ if closed => Err(None),
            Ok(c) => Ok(Pass { sent, last_seq: c.last_seq, pending: c.pending }),
            // A failure once rows went out cannot be a status.
            Err(e) => Err(Some((HttpError::from(e), sent))),
        }
    })
    .await;
    match pass {
        Ok(Ok(pass)) => Ok(Ok(pass)),
        Ok(Err(None)) => Err(Closed),
        Ok(Err(Some((e, 0)))) => Ok(Err(e)),
        Ok(Err(Some((e, _)))) => {
            eprintln!("rhizome: a _changes feed of {} stopped: {}", f.db.name, e.reason);
            Err(Closed)
        }
        Err(e) => Ok(Err(HttpError::internal(format!("changes task: {e}")))),
    }
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
        let pass = match send_changes(&f, &tx).await? {
            Ok(p) => p,
            Err(e) => return send(&tx, line(&json!({ "error": e.error, "reason": e.reason }))).await,
        };
        match f.feed {
            Feed::Longpoll => {
                if pass.sent > 0 {
                    return send(&tx, format!("\n],\n\"last_seq\":{},\"pending\":{}}}\n", pass.last_seq, pass.pending).into_bytes()).await;
                }
                if f.opts.descending {
                    return send(&tx, format!("{{\"results\":[\n],\n\"last_seq\":{},\"pending\":{}}}\n", pass.last_seq, pass.pending).into_bytes()).await;
                }
            }
            Feed::Continuous | Feed::EventSource => {
                if let Some(limit) = f.opts.limit {
                    let left = limit.saturating_sub(pass.sent);
                    if left == 0 {
                        // Cut by `limit`: what is left after the last row sent.
                        return end(&f, &tx, pass.last_seq, pass.pending).await;
                    }
                    f.opts.limit = Some(left);
                }
            }
        }
        f.opts.since = pass.last_seq;
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

/// The end of a feed: `pending` is what the feed did not send (only a
/// feed cut by `limit` leaves any).
async fn end(f: &FeedRequest, tx: &mpsc::Sender<Bytes>, last_seq: u64, pending: u64) -> Result<(), Closed> {
    match f.feed {
        Feed::Longpoll => send(tx, line(&json!({ "results": [], "last_seq": last_seq, "pending": pending }))).await,
        Feed::Continuous => send(tx, line(&json!({ "last_seq": last_seq, "pending": pending }))).await,
        Feed::EventSource => Ok(()),
    }
}
