//! Connections that stall: half-sent request headers, idle keep-alive
//! connections, and more of them than the caps allow. An honest request
//! must still be answered, and stalled connections must be closed.

mod common;

use common::server::{try_request, ServerProcess};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Raises this process's soft open-file limit to its hard limit; the
/// limit now in force.
// `rlim_t` is u64 on 64-bit Linux and macOS, not everywhere.
#[allow(clippy::unnecessary_cast)]
fn raise_file_limit() -> u64 {
    // SAFETY: getrlimit/setrlimit only read and write the struct given.
    unsafe {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit { rlim_cur: lim.rlim_max.min(1 << 20), rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return raised.rlim_cur as u64;
            }
        }
        lim.rlim_cur as u64
    }
}

/// Opens a connection that sends half a request header and stops.
fn stalled(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n").expect("sends half a header");
    s
}

/// Whether the server closed `s` (EOF or reset); waits up to `wait`.
fn closed_by_server(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 256];
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe),
    }
}

fn welcome(port: u16) -> (u16, String) {
    try_request(port, "GET", "/", None, None, &[]).expect("GET / is answered")
}

#[test]
fn thousands_of_stalled_connections_leave_get_root_answered_and_are_closed_after_the_header_timeout() {
    let files = raise_file_limit();
    // The server and this process share the machine's limit (the server
    // raises its own soft limit to the same hard limit): leave room.
    let count = 3000.min(files.saturating_sub(300) as usize);
    assert!(count >= 500, "only {files} open files allowed: too few to test stalled connections");
    eprintln!("opening {count} stalled connections (open-file limit {files})");
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with_env(data.path(), &[("RHIZOME_HEADER_TIMEOUT_SECS", "2")]);
    let mut socks: Vec<TcpStream> = (0..count).map(|_| stalled(server.port)).collect();
    let (status, body) = welcome(server.port);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"couchdb\":\"Welcome\""), "{body}");
    // Every stalled connection is closed by the server once its header is
    // 2 s late (the read would wait 30 s for a server that never closes).
    let open = socks.iter_mut().map(|s| closed_by_server(s, Duration::from_secs(30))).filter(|closed| !closed).count();
    assert_eq!(open, 0, "stalled connections the server left open");
    assert_eq!(welcome(server.port).0, 200);
}

#[test]
fn at_the_per_address_cap_the_longest_stalled_connection_makes_room_for_an_honest_request() {
    raise_file_limit();
    let data = tempfile::tempdir().unwrap();
    // Timeouts far away: only the cap closes connections here.
    let env = [("RHIZOME_MAX_CONNECTIONS_PER_ADDRESS", "50"), ("RHIZOME_HEADER_TIMEOUT_SECS", "600"), ("RHIZOME_IDLE_TIMEOUT_SECS", "600")];
    let server = ServerProcess::start_with_env(data.path(), &env);
    let mut socks: Vec<TcpStream> = (0..150).map(|_| stalled(server.port)).collect();
    let (status, body) = welcome(server.port);
    assert_eq!(status, 200, "the honest request from the same address: {body}");
    // 150 stalled + 1 honest through a cap of 50: 101 were closed to make
    // room, and the 49 newest stalled ones are still open.
    for s in &socks {
        s.set_nonblocking(true).unwrap();
    }
    let mut closed = vec![false; socks.len()];
    let deadline = Instant::now() + Duration::from_secs(30);
    while closed.iter().filter(|c| **c).count() < 101 && Instant::now() < deadline {
        for (s, c) in socks.iter_mut().zip(closed.iter_mut()) {
            let mut buf = [0u8; 16];
            if !*c {
                match s.read(&mut buf) {
                    Ok(0) => *c = true,
                    Err(e) if e.kind() != ErrorKind::WouldBlock => *c = true,
                    _ => {}
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(closed.iter().filter(|c| **c).count(), 101, "connections closed for the cap");
    assert!(closed[140..].iter().all(|c| !c), "the newest stalled connections stay open: {:?}", &closed[140..]);
}

#[test]
fn idle_keep_alive_connections_close_but_a_waiting_longpoll_feed_does_not() {
    let data = tempfile::tempdir().unwrap();
    let env = [("RHIZOME_IDLE_TIMEOUT_SECS", "1"), ("RHIZOME_HEADER_TIMEOUT_SECS", "1")];
    let server = ServerProcess::start_with_env(data.path(), &env);
    assert_eq!(server.request("PUT", "/db", Some(common::server::ADMIN), None).0, 201);
    // A longpoll feed waits 3 s for a change, longer than the idle
    // timeout: it is answered, not cut.
    let (status, body) = try_request(server.port, "GET", "/db/_changes?feed=longpoll&timeout=3000&since=now", Some(common::server::ADMIN), None, &[]).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"last_seq\""), "the feed ended normally: {body}");
    // A kept-alive connection that sends nothing more is closed.
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.write_all(b"GET /_up HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the response came before the close");
        got.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"));
    // Read the rest of the body, then the server's close.
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) => assert!(matches!(e.kind(), ErrorKind::ConnectionReset), "the idle connection is closed, not left open: {e}"),
    }
}

#[test]
fn a_request_body_that_stops_coming_gets_408_and_the_connection_is_closed() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with_env(data.path(), &[("RHIZOME_BODY_TIMEOUT_SECS", "1")]);
    assert_eq!(server.request("PUT", "/db", Some(common::server::ADMIN), None).0, 201);
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    // Promises 100 bytes of body, sends 10, then nothing.
    let auth = "Authorization: Basic YWRtaW46czNjcmV0\r\n"; // admin:s3cret
    write!(s, "PUT /db/doc HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"a\":\"123").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("the server closes the connection after the 408");
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("request_timeout"), "{text}");
    // Nothing was written and the server still answers.
    assert_eq!(server.request("GET", "/db/doc", Some(common::server::ADMIN), None).0, 404);
}
