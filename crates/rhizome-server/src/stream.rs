//! Responses written as they are produced (issue 44): a handler on a
//! blocking thread writes its body into a [`BodyWriter`], which keeps the
//! first [`CHUNK_BYTES`] and, once it has more, sends the response head to
//! the async side and the body after it in chunks through a channel of
//! [`CHUNKS_IN_FLIGHT`]. A body that fits in one chunk is answered whole,
//! as before, so a failure there is still a status; a longer one holds at
//! most a few chunks in memory whatever its length, and the handler waits
//! while the client reads (a client that stops reading is disconnected by
//! the write timeout, `connections.rs`, and the handler's next write
//! fails).
//!
//! A failure once the head is sent cannot change the status: the body is
//! cut with an error, which hyper turns into an aborted chunked body (the
//! client sees a transfer error, never a complete-looking answer).

use crate::error::HttpError;
use crate::http::{Body, Request};
use bytes::Bytes;
use hyper::Response;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Bytes a streamed body gathers before it sends them.
pub const CHUNK_BYTES: usize = 64 << 10;
/// Chunks a streamed body may have sent and the client not yet taken.
pub const CHUNKS_IN_FLIGHT: usize = 4;

/// A chunk of a streamed body, or the error that cuts it.
pub type Chunk = Result<Bytes, std::io::Error>;

/// Where a handler sends its response head early, to stream the body
/// after it. A request handled without one (on an async thread) answers
/// whole.
#[derive(Default)]
pub struct Responder {
    head: Mutex<Option<oneshot::Sender<Response<Body>>>>,
}

impl Responder {
    pub fn new(head: oneshot::Sender<Response<Body>>) -> Responder {
        Responder { head: Mutex::new(Some(head)) }
    }

    fn can_stream(&self) -> bool {
        self.head.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// Sends the head; false if the client is gone (or it was sent).
    fn send(&self, head: Response<Body>) -> bool {
        match self.head.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(tx) => tx.send(head).is_ok(),
            None => false,
        }
    }
}

/// The body of a streamed response: chunks from the handler's thread.
/// Dropped before its end (the client went away, or was disconnected),
/// it sets the request's cancellation flag, so that work between two
/// writes stops too.
pub struct Produced {
    rx: mpsc::Receiver<Chunk>,
    cancelled: Arc<AtomicBool>,
}

impl Produced {
    pub fn poll_chunk(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Chunk>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for Produced {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }
}

/// A response body written as it is produced (see the module comment).
pub struct BodyWriter<'r> {
    req: &'r Request,
    head: Option<Response<Body>>,
    buf: Vec<u8>,
    tx: Option<mpsc::Sender<Chunk>>,
    /// The body's length is known and in the head: it is kept there when
    /// streaming (else the body is chunked).
    length_known: bool,
}

impl<'r> BodyWriter<'r> {
    /// A body for `head` (whose own body is replaced).
    pub fn new(req: &'r Request, head: Response<Body>) -> BodyWriter<'r> {
        BodyWriter { req, head: Some(head), buf: Vec::with_capacity(CHUNK_BYTES), tx: None, length_known: false }
    }

    /// A body of exactly `length` bytes, sent with that `Content-Length`
    /// (a body cut short then ends its connection).
    pub fn with_length(req: &'r Request, mut head: Response<Body>, length: u64) -> BodyWriter<'r> {
        crate::http::set_header(&mut head, "content-length", &length.to_string());
        BodyWriter { length_known: true, ..BodyWriter::new(req, head) }
    }

    fn gone() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away")
    }

    /// Sends what is gathered, sending the head first if it is not yet.
    fn send_chunk(&mut self) -> std::io::Result<()> {
        if self.tx.is_none() {
            let (tx, rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
            let mut head = self.head.take().expect("the head is kept until it is sent");
            if !self.length_known {
                head.headers_mut().remove("content-length");
            }
            *head.body_mut() = Body::Produced(Produced { rx, cancelled: self.req.cancelled.clone() });
            if !self.req.responder.send(head) {
                return Err(Self::gone());
            }
            self.tx = Some(tx);
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES)));
        let tx = self.tx.as_ref().expect("set above");
        tx.blocking_send(Ok(chunk)).map_err(|_| Self::gone())
    }

    /// The response: whole if the body fit in one chunk, else the rest
    /// of the body is sent and the head already went out
    /// ([`Body::Sent`]).
    pub fn finish(mut self) -> Result<Response<Body>, HttpError> {
        match self.tx.take() {
            None => {
                let mut head = self.head.take().expect("the head is kept until it is sent");
                *head.body_mut() = Body::Full(Some(Bytes::from(std::mem::take(&mut self.buf))));
                Ok(head)
            }
            Some(tx) => {
                if !self.buf.is_empty() {
                    let chunk = Bytes::from(std::mem::take(&mut self.buf));
                    // The client may have gone: nothing more to do then.
                    let _ = tx.blocking_send(Ok(chunk));
                }
                Ok(Response::new(Body::Sent))
            }
        }
    }

    /// Ends with `error`: its status if the head is not sent yet, else the
    /// body is cut (and the error logged).
    pub fn fail(mut self, error: HttpError) -> Result<Response<Body>, HttpError> {
        match self.tx.take() {
            None => Err(error),
            Some(tx) => {
                if error.status != 499 {
                    eprintln!("rhizome: a streamed answer to {} was cut: {}", self.req.segments.join("/"), error.reason);
                }
                let _ = tx.blocking_send(Err(std::io::Error::other(error.reason)));
                Ok(Response::new(Body::Sent))
            }
        }
    }

    /// Whether writing may send the head before the end (false: the whole
    /// body is kept, as for a request handled on an async thread).
    pub fn can_stream(&self) -> bool {
        self.tx.is_some() || self.req.responder.can_stream()
    }
}

impl std::io::Write for BodyWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= CHUNK_BYTES && self.can_stream() {
            self.send_chunk()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
