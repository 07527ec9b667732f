//! Open connections: who gets one (a cap in total and per client address),
//! how long a connection may wait for a request (a header timeout once a
//! request has begun, an idle timeout between requests), and one log line
//! per limit, rate-limited.
//!
//! A connection is *busy* from the moment hyper hands us a request until
//! its response body has been written (a `_changes` feed stays busy while
//! it streams, so no idle timeout ends it), and *waiting* otherwise. Only
//! waiting connections time out or are evicted, except for the write
//! timeout: a busy connection whose client has taken none of the response
//! for that long (the socket stays full) is closed, so that a client that
//! asks for a large answer and does not read it cannot hold the memory
//! and the thread that produce it.
//!
//! Admission: at a cap, the new connection is not refused outright; the
//! waiting connection (of the same address, for the per-address cap) that
//! has gone longest without completing a request header is closed to make
//! room. Thousands of stalled sockets from one address therefore cannot
//! lock out an honest client from that address (or from behind the same
//! proxy): its request arrives on the newest connection, and the stalled
//! ones are the oldest. Only when every connection is busy is the new one
//! refused.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// The limits on connections (`rhizome serve --help` names their flags).
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// A request head begun must be complete within this time.
    pub header_timeout: Duration,
    /// A request body may pause this long between bytes (408 past it).
    pub body_timeout: Duration,
    /// A kept-alive connection may wait this long for its next request.
    pub idle_timeout: Duration,
    /// A response may wait this long for the client to take any of it.
    pub write_timeout: Duration,
    /// Open connections in total.
    pub max_connections: usize,
    /// Open connections from one client address.
    pub max_connections_per_address: usize,
}

pub const DEFAULT_HEADER_TIMEOUT_SECS: u64 = 10;
pub const DEFAULT_BODY_TIMEOUT_SECS: u64 = 30;
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 60;
pub const DEFAULT_WRITE_TIMEOUT_SECS: u64 = 30;
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 2_000;

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            header_timeout: Duration::from_secs(DEFAULT_HEADER_TIMEOUT_SECS),
            body_timeout: Duration::from_secs(DEFAULT_BODY_TIMEOUT_SECS),
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
            write_timeout: Duration::from_secs(DEFAULT_WRITE_TIMEOUT_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_address: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
        }
    }
}

/// One open connection's state, shared by its task, its I/O and the
/// registry. Times are milliseconds since the registry's epoch.
pub struct Conn {
    id: u64,
    addr: IpAddr,
    busy: AtomicUsize,
    /// When the connection last became waiting (opened, or a response ended).
    waiting_since_ms: AtomicU64,
    /// When the first byte of the next request head arrived; 0 if none yet.
    head_since_ms: AtomicU64,
    /// Since when a write to the socket has waited (the client takes
    /// nothing); 0 when the last write went through.
    write_blocked_since_ms: AtomicU64,
    /// Set when the registry closed it to make room.
    evicted: AtomicBool,
    /// Removed from the registry's counts already (by eviction).
    removed: AtomicBool,
    changed: Notify,
}

impl Conn {
    /// Since when it has waited without a complete request head.
    fn stalled_since_ms(&self) -> u64 {
        match self.head_since_ms.load(Ordering::Acquire) {
            0 => self.waiting_since_ms.load(Ordering::Acquire),
            head => head,
        }
    }
}

pub struct Connections {
    pub limits: ConnectionLimits,
    epoch: Instant,
    next_id: AtomicU64,
    open: Mutex<Open>,
    pub log: LimitLog,
}

#[derive(Default)]
struct Open {
    conns: HashMap<u64, Arc<Conn>>,
    per_address: HashMap<IpAddr, usize>,
}

impl Open {
    fn remove(&mut self, conn: &Conn) {
        if self.conns.remove(&conn.id).is_some() {
            if let Some(n) = self.per_address.get_mut(&conn.addr) {
                *n -= 1;
                if *n == 0 {
                    self.per_address.remove(&conn.addr);
                }
            }
        }
    }

    /// The waiting connection (of `addr`, if given) stalled longest.
    fn longest_stalled(&self, addr: Option<IpAddr>) -> Option<Arc<Conn>> {
        self.conns
            .values()
            .filter(|c| addr.is_none_or(|a| c.addr == a) && c.busy.load(Ordering::Acquire) == 0)
            // Ids grow with admission: within one millisecond the older
            // connection goes first, whatever the map's order.
            .min_by_key(|c| (c.stalled_since_ms(), c.id))
            .cloned()
    }
}

/// A connection's place in the registry; dropping it gives the place back.
pub struct Admitted {
    pub conn: Arc<Conn>,
    registry: Arc<Connections>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.registry.open.lock().unwrap_or_else(|p| p.into_inner());
        if !self.conn.removed.swap(true, Ordering::AcqRel) {
            open.remove(&self.conn);
        }
    }
}

impl Connections {
    pub fn new(limits: ConnectionLimits) -> Arc<Connections> {
        Arc::new(Connections { limits, epoch: Instant::now(), next_id: AtomicU64::new(1), open: Mutex::default(), log: LimitLog::default() })
    }

    fn now_ms(&self) -> u64 {
        // +1 so that 0 can mean "not yet".
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    /// Registers a new connection from `addr`, closing the longest stalled
    /// one if a cap is reached; `None` when every connection is busy.
    pub fn admit(self: &Arc<Self>, addr: IpAddr) -> Option<Admitted> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let from_addr = open.per_address.get(&addr).copied().unwrap_or(0);
        if from_addr >= self.limits.max_connections_per_address {
            let Some(victim) = open.longest_stalled(Some(addr)) else {
                self.log.note("max-connections-per-address", || {
                    format!("refused a connection from {addr}: its {from_addr} connections (--max-connections-per-address) are all busy")
                });
                return None;
            };
            self.log.note("max-connections-per-address", || {
                format!("{addr} reached --max-connections-per-address ({from_addr}); closing its connection stalled longest to admit a new one")
            });
            self.evict(&mut open, &victim);
        }
        if open.conns.len() >= self.limits.max_connections {
            let total = open.conns.len();
            let Some(victim) = open.longest_stalled(None) else {
                self.log.note("max-connections", || format!("refused a connection from {addr}: all {total} connections (--max-connections) are busy"));
                return None;
            };
            self.log.note("max-connections", || format!("reached --max-connections ({total}); closing the connection stalled longest to admit a new one"));
            self.evict(&mut open, &victim);
        }
        let now = self.now_ms();
        let conn = Arc::new(Conn {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            addr,
            busy: AtomicUsize::new(0),
            waiting_since_ms: AtomicU64::new(now),
            head_since_ms: AtomicU64::new(0),
            write_blocked_since_ms: AtomicU64::new(0),
            evicted: AtomicBool::new(false),
            removed: AtomicBool::new(false),
            changed: Notify::new(),
        });
        open.conns.insert(conn.id, conn.clone());
        *open.per_address.entry(addr).or_default() += 1;
        Some(Admitted { conn, registry: self.clone() })
    }

    fn evict(&self, open: &mut Open, victim: &Arc<Conn>) {
        victim.removed.store(true, Ordering::Release);
        victim.evicted.store(true, Ordering::Release);
        open.remove(victim);
        victim.changed.notify_one();
    }

    /// After an accept error: when out of file descriptors, frees one by
    /// closing the connection stalled longest.
    pub fn on_accept_error(&self, e: &std::io::Error) {
        let out_of_files = matches!(e.raw_os_error(), Some(code) if code == EMFILE || code == ENFILE);
        if out_of_files {
            let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(victim) = open.longest_stalled(None) {
                self.evict(&mut open, &victim);
            }
        }
        self.log.note("accept", || format!("accepting a connection failed ({e}); backing off"));
    }

    /// Marks the connection busy with a request until the guard is dropped
    /// (with the response body).
    pub fn busy(self: &Arc<Self>, conn: &Arc<Conn>) -> BusyGuard {
        conn.busy.fetch_add(1, Ordering::AcqRel);
        conn.head_since_ms.store(0, Ordering::Release);
        BusyGuard { conn: conn.clone(), registry: self.clone() }
    }

    /// Returns when the connection should be closed: evicted, or waiting
    /// past its header or idle timeout.
    pub async fn watch(&self, conn: &Conn) {
        loop {
            let changed = conn.changed.notified();
            if conn.evicted.load(Ordering::Acquire) {
                return;
            }
            let deadline_ms = if conn.busy.load(Ordering::Acquire) > 0 {
                match conn.write_blocked_since_ms.load(Ordering::Acquire) {
                    0 => None,
                    since => Some((since + self.limits.write_timeout.as_millis() as u64, Timeout::Write)),
                }
            } else {
                match conn.head_since_ms.load(Ordering::Acquire) {
                    0 => Some((conn.waiting_since_ms.load(Ordering::Acquire) + self.limits.idle_timeout.as_millis() as u64, Timeout::Idle)),
                    head => Some((head + self.limits.header_timeout.as_millis() as u64, Timeout::Header)),
                }
            };
            match deadline_ms {
                None => changed.await,
                Some((deadline, kind)) => {
                    let now = self.now_ms();
                    if now >= deadline {
                        let addr = conn.addr;
                        match kind {
                            Timeout::Header => {
                                let secs = self.limits.header_timeout.as_secs_f64();
                                self.log.note("header-timeout", || format!("closed a connection from {addr} that sent no complete request header within {secs} s (--header-timeout-secs)"));
                            }
                            Timeout::Write => {
                                let secs = self.limits.write_timeout.as_secs_f64();
                                self.log.note("write-timeout", || format!("closed a connection from {addr} that took none of its response for {secs} s (--write-timeout-secs)"));
                            }
                            Timeout::Idle => {}
                        }
                        return;
                    }
                    tokio::select! {
                        _ = changed => {}
                        _ = tokio::time::sleep(Duration::from_millis(deadline - now)) => {}
                    }
                }
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Timeout {
    Header,
    Idle,
    Write,
}

#[cfg(unix)]
const EMFILE: i32 = libc::EMFILE;
#[cfg(unix)]
const ENFILE: i32 = libc::ENFILE;
#[cfg(not(unix))]
const EMFILE: i32 = 24;
#[cfg(not(unix))]
const ENFILE: i32 = 23;

/// Held while a request is handled and its response written.
pub struct BusyGuard {
    conn: Arc<Conn>,
    registry: Arc<Connections>,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.conn.waiting_since_ms.store(self.registry.now_ms(), Ordering::Release);
        self.conn.busy.fetch_sub(1, Ordering::AcqRel);
        self.conn.changed.notify_one();
    }
}

/// A response body that keeps its connection busy until it is written.
pub struct TrackedBody {
    inner: crate::http::Body,
    _busy: BusyGuard,
}

impl TrackedBody {
    pub fn new(inner: crate::http::Body, busy: BusyGuard) -> TrackedBody {
        TrackedBody { inner, _busy: busy }
    }
}

impl http_body::Body for TrackedBody {
    type Data = bytes::Bytes;
    type Error = std::io::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }
    fn is_end_stream(&self) -> bool {
        http_body::Body::is_end_stream(&self.inner)
    }
    fn size_hint(&self) -> http_body::SizeHint {
        http_body::Body::size_hint(&self.inner)
    }
}

/// The connection's socket, noting when a waiting connection receives the
/// first byte of a request head (which starts the header timeout).
pub struct TrackedIo {
    stream: TcpStream,
    conn: Arc<Conn>,
    registry: Arc<Connections>,
}

impl TrackedIo {
    pub fn new(stream: TcpStream, admitted: &Admitted) -> TrackedIo {
        TrackedIo { stream, conn: admitted.conn.clone(), registry: admitted.registry.clone() }
    }
}

impl AsyncRead for TrackedIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before && this.conn.busy.load(Ordering::Acquire) == 0 && this.conn.head_since_ms.load(Ordering::Acquire) == 0 {
            this.conn.head_since_ms.store(this.registry.now_ms(), Ordering::Release);
            this.conn.changed.notify_one();
        }
        r
    }
}

impl TrackedIo {
    /// Notes whether a write waited (`Pending`: the socket is full), which
    /// starts the write timeout, or went through, which ends it.
    fn note_write<T>(&self, r: Poll<T>) -> Poll<T> {
        let blocked = &self.conn.write_blocked_since_ms;
        match r {
            Poll::Pending => {
                if blocked.load(Ordering::Acquire) == 0 {
                    blocked.store(self.registry.now_ms(), Ordering::Release);
                    self.conn.changed.notify_one();
                }
            }
            Poll::Ready(_) => {
                if blocked.load(Ordering::Acquire) != 0 {
                    blocked.store(0, Ordering::Release);
                    self.conn.changed.notify_one();
                }
            }
        }
        r
    }
}

impl AsyncWrite for TrackedIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.note_write(r)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.stream).poll_flush(cx);
        this.note_write(r)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[std::io::IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.note_write(r)
    }
    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// One stderr line per kind of limit at most every 10 s, with the number
/// of occurrences left out, so that an attack does not flood the log.
#[derive(Default)]
pub struct LimitLog {
    last: Mutex<HashMap<&'static str, (Instant, u64)>>,
}

const LOG_EVERY: Duration = Duration::from_secs(10);

impl LimitLog {
    pub fn note(&self, kind: &'static str, line: impl FnOnce() -> String) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        match last.get_mut(kind) {
            Some((at, skipped)) if now.duration_since(*at) < LOG_EVERY => *skipped += 1,
            entry => {
                let skipped = entry.map(|(_, s)| *s).unwrap_or(0);
                let more = if skipped > 0 { format!(" ({skipped} more like it since the last such line)") } else { String::new() };
                eprintln!("rhizome: {}{more}", line());
                last.insert(kind, (now, 0));
            }
        }
    }
}

/// Raises the soft limit on open files to the hard limit (a server's
/// connections are files); returns the limit in force.
// `rlim_t` is u64 on 64-bit Linux and macOS, not everywhere.
#[allow(clippy::unnecessary_cast)]
pub fn raise_file_limit() -> Option<u64> {
    #[cfg(unix)]
    unsafe {
        // SAFETY: getrlimit/setrlimit only read and write the struct given.
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let mut raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                // macOS refuses more than OPEN_MAX for an unlimited hard limit.
                raised.rlim_cur = lim.rlim_max.min(10_240);
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                    return Some(lim.rlim_cur as u64);
                }
            }
            return Some(raised.rlim_cur as u64);
        }
        Some(lim.rlim_cur as u64)
    }
    #[cfg(not(unix))]
    None
}

/// The connection cap that leaves room for the files a server opens
/// itself (each database's store keeps files open) under `file_limit`.
pub fn connections_within(max_connections: usize, file_limit: Option<u64>) -> usize {
    match file_limit {
        Some(files) => {
            let files = usize::try_from(files).unwrap_or(usize::MAX);
            let room = files.saturating_sub(512).max(files / 2).max(1);
            max_connections.min(room)
        }
        None => max_connections,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per_address: usize) -> ConnectionLimits {
        ConnectionLimits { max_connections: total, max_connections_per_address: per_address, ..ConnectionLimits::default() }
    }

    #[test]
    fn at_a_cap_the_longest_stalled_waiting_connection_is_evicted_and_busy_ones_never() {
        let registry = Connections::new(limits(10, 2));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        // Admitted within the same millisecond: the order of admission decides.
        let first = registry.admit(a).unwrap();
        let second = registry.admit(a).unwrap();
        let other = registry.admit(b).unwrap();
        // The per-address cap: the oldest of a's goes, b's stays.
        let third = registry.admit(a).unwrap();
        assert!(first.conn.evicted.load(Ordering::Acquire));
        assert!(!second.conn.evicted.load(Ordering::Acquire) && !other.conn.evicted.load(Ordering::Acquire));
        // Busy connections are not evicted: with both of a's busy, a new
        // one from a is refused.
        let _busy2 = registry.busy(&second.conn);
        let _busy3 = registry.busy(&third.conn);
        assert!(registry.admit(a).is_none());
        drop(first);
        assert_eq!(registry.open.lock().unwrap().per_address.get(&a), Some(&2), "an evicted connection is counted once");
        // The total cap evicts across addresses.
        let registry = Connections::new(limits(2, 10));
        let x = registry.admit(a).unwrap();
        let _y = registry.admit(b).unwrap();
        let _z = registry.admit(b).unwrap();
        assert!(x.conn.evicted.load(Ordering::Acquire));
    }
}
