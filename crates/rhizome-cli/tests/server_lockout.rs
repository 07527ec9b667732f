//! Logins under attack (issue 44, point 6), on a real `rhizome serve`, from
//! several loopback addresses: failed logins slow the attacker's own
//! (account, address) pair and never lock the owner out; names that do not
//! exist lock out nobody behind the same address; credentials the server
//! verified already always pass; users cannot write their own password hash
//! (and so cannot lower its PBKDF2 iterations).

mod common;

use common::server::{base64, ServerProcess, ADMIN};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::os::fd::FromRawFd;

/// A connection to the server from the loopback address `from` (any of
/// 127.0.0.0/8 is this machine).
fn connect_from(from: Ipv4Addr, port: u16) -> TcpStream {
    let addr = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a fresh socket, bound and connected with valid addresses of
    // the length given; it is owned by the TcpStream from then on.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let local = addr(from, 0);
        assert_eq!(libc::bind(fd, &local as *const _ as *const libc::sockaddr, len), 0, "bind {from}: {}", std::io::Error::last_os_error());
        let remote = addr(Ipv4Addr::LOCALHOST, port);
        assert_eq!(libc::connect(fd, &remote as *const _ as *const libc::sockaddr, len), 0, "connect: {}", std::io::Error::last_os_error());
        TcpStream::from_raw_fd(fd)
    }
}

/// `GET /_session` with Basic credentials from `from`: the status and body.
fn session(port: u16, from: Ipv4Addr, credentials: &str) -> (u16, Value) {
    let mut s = connect_from(from, port);
    write!(s, "GET /_session HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Basic {}\r\n\r\n", base64(credentials.as_bytes())).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, last)
}

fn put_user(server: &ServerProcess, name: &str, password: &str) {
    let body = format!(r#"{{"name":"{name}","type":"user","roles":[],"password":"{password}"}}"#);
    let (status, text) = server.request("PUT", &format!("/_users/org.couchdb.user:{name}"), Some(ADMIN), Some(&body));
    assert_eq!(status, 201, "{text}");
}

fn locked(answer: &(u16, Value)) -> bool {
    answer.0 == 401 && answer.1["reason"].as_str().is_some_and(|r| r.contains("temporarily locked"))
}

/// The attack of issue 44: five wrong logins from each of 11 loopback
/// addresses locked the account, the server admin's included, from every
/// address, even with the right password verified already.
#[test]
fn failures_from_other_addresses_never_lock_the_owner_out() {
    let dir = tempfile::tempdir().unwrap();
    // Cheap hashes, so the attack runs fast; a long wait, so no lock it
    // makes runs out before it is looked at.
    let server = ServerProcess::start_with_env(dir.path(), &[("RHIZOME_PBKDF2_ITERATIONS", "1000"), ("RHIZOME_LOGIN_DELAY_SECS", "600")]);
    put_user(&server, "bob", "pw-bob");
    // The admin has signed in before the attack (a running client).
    assert_eq!(session(server.port, ip(1), ADMIN).0, 200);
    for attacker in 2..=12 {
        for _ in 0..5 {
            assert_eq!(session(server.port, ip(attacker), "admin:guess").0, 401);
            assert_eq!(session(server.port, ip(attacker), "bob:guess").0, 401);
        }
    }
    // Each attacking address is locked for those accounts...
    assert!(locked(&session(server.port, ip(2), "bob:pw-bob")), "a password not verified yet waits at a locked address");
    assert!(locked(&session(server.port, ip(12), "admin:guess")));
    // ...and nothing else: the owners from their own addresses,
    let (status, body) = session(server.port, ip(1), "bob:pw-bob");
    assert_eq!((status, body["userCtx"]["name"].as_str()), (200, Some("bob")), "{body}");
    assert_eq!(session(server.port, ip(13), ADMIN).0, 200);
    // and credentials verified already, even from a locked address.
    let (status, body) = session(server.port, ip(2), ADMIN);
    assert_eq!((status, body["userCtx"]["name"].as_str()), (200, Some("admin")), "{body}");
}

/// Fifty failures with names that do not exist, from one address (a proxy
/// many users share), locked everyone behind it.
#[test]
fn unknown_names_lock_out_nobody_behind_the_same_address() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with_env(dir.path(), &[("RHIZOME_PBKDF2_ITERATIONS", "1000"), ("RHIZOME_LOGIN_DELAY_SECS", "600")]);
    put_user(&server, "carol", "pw-carol");
    for n in 0..50 {
        let answer = session(server.port, ip(20), &format!("nobody{n}:guess"));
        assert_eq!(answer.0, 401, "{answer:?}");
    }
    let (status, body) = session(server.port, ip(20), "carol:pw-carol");
    assert_eq!((status, body["userCtx"]["name"].as_str()), (200, Some("carol")), "{body}");
    // A name with no account is throttled as one with an account (the
    // lockout tells nobody which names exist).
    for _ in 0..5 {
        session(server.port, ip(21), "nobody:guess");
    }
    assert!(locked(&session(server.port, ip(21), "nobody:guess")));
}

/// A user could write their own `iterations` (and a matching hash), making
/// their stored password cheap to guess from a leaked copy. Only the server
/// makes a hash, from `password`; server admins may still write one (moving
/// users from another server).
#[test]
fn users_cannot_write_their_own_password_hash() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    put_user(&server, "dave", "pw-dave");
    let (status, text) = server.request("GET", "/_users/org.couchdb.user:dave", Some("dave:pw-dave"), None);
    assert_eq!(status, 200, "{text}");
    let stored: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(stored["iterations"], 600_000);
    // Weakened by its owner: refused, and nothing changes.
    let mut weak = stored.clone();
    weak["iterations"] = 1.into();
    weak["derived_key"] = "00".repeat(32).into();
    let (status, text) = server.request("PUT", "/_users/org.couchdb.user:dave", Some("dave:pw-dave"), Some(&weak.to_string()));
    assert_eq!(status, 403, "{text}");
    let (_, now) = server.request("GET", "/_users/org.couchdb.user:dave", Some(ADMIN), None);
    assert_eq!(serde_json::from_str::<Value>(&now).unwrap()["_rev"], stored["_rev"]);
    // The document as read, written back with a change, keeps its hash.
    let mut edited = stored.clone();
    edited["fullname"] = "Dave".into();
    let (status, text) = server.request("PUT", "/_users/org.couchdb.user:dave", Some("dave:pw-dave"), Some(&edited.to_string()));
    assert_eq!(status, 201, "{text}");
    assert_eq!(session(server.port, ip(1), "dave:pw-dave").0, 200);
    // A new password goes through `password`, hashed by the server.
    let rev: Value = serde_json::from_str(&text).unwrap();
    let mut changed = edited.clone();
    changed["_rev"] = rev["rev"].clone();
    changed["password"] = "pw-new".into();
    let (status, text) = server.request("PUT", "/_users/org.couchdb.user:dave", Some("dave:pw-dave"), Some(&changed.to_string()));
    assert_eq!(status, 201, "{text}");
    let (_, now) = server.request("GET", "/_users/org.couchdb.user:dave", Some(ADMIN), None);
    assert_eq!(serde_json::from_str::<Value>(&now).unwrap()["iterations"], 600_000);
    assert_eq!(session(server.port, ip(1), "dave:pw-new").0, 200);
}
