//! A real `rhizome serve` on a free port, and a tiny blocking HTTP client,
//! for the server's black-box tests.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const ADMIN: &str = "admin:s3cret";

/// The base of document IRIs the tests name graphs under, unless a test
/// says otherwise: a server's data folder named itself so before a first
/// start defaulted to the server's own address (`start_naming_itself`).
pub const LEGACY_BASE: &str = "http://localhost:5984";

pub struct ServerProcess {
    pub child: Child,
    pub port: u16,
    pub data: PathBuf,
    /// The environment it was started with, for `restart`.
    env: Vec<(String, String)>,
}

/// A free port below the kernel's ephemeral range. A port the kernel hands
/// out for `:0` or for an outgoing connection can be taken by any socket
/// while a test's server is down for a restart, and the restarted server
/// then fails to bind (as CI once saw); ports under the range are never
/// handed out that way. Each port is given once per test process, so
/// concurrent tests never pick the same one.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    let (low, high) = (10_000u32, ephemeral_low.max(10_001));
    let span = high - low;
    // Test processes run one after another; the pid spreads them apart.
    let start = std::process::id() * 7919 % span;
    for _ in 0..span {
        let port = (low + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("an address").port()
}

impl ServerProcess {
    /// Starts `rhizome serve` on `data` and waits until it answers.
    pub fn start(data: &Path) -> ServerProcess {
        Self::start_with_env(data, &[])
    }

    /// `start`, with these environment variables set for the server.
    pub fn start_with_env(data: &Path, env: &[(&str, &str)]) -> ServerProcess {
        let port = free_port();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut server = ServerProcess { child: Self::spawn(data, port, &pairs(&env)), port, data: data.to_owned(), env };
        server.wait_ready();
        server
    }

    /// `start`, with the data folder's base IRI the server's own address,
    /// so that the IRIs it names documents and LDP resources with are URLs
    /// a client can follow.
    pub fn start_at_own_address(data: &Path) -> ServerProcess {
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let env = vec![("RHIZOME_BASE_IRI".to_owned(), base)];
        let mut server = ServerProcess { child: Self::spawn(data, port, &pairs(&env)), port, data: data.to_owned(), env };
        server.wait_ready();
        server
    }

    /// `start`, without `RHIZOME_BASE_IRI`: a data folder's first start
    /// names its documents under the address the server listens on.
    pub fn start_naming_itself(data: &Path) -> ServerProcess {
        Self::start_with_env(data, &[("RHIZOME_BASE_IRI", "")])
    }

    /// `start`, with the server's stderr written to `log`.
    pub fn start_logged(data: &Path, log: &Path) -> ServerProcess {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_rhizome"))
            .arg("--data")
            .arg(data)
            .args(["serve", "--quiet", "--bind", &format!("127.0.0.1:{port}"), "--admin", ADMIN])
            .env("RHIZOME_BASE_IRI", LEGACY_BASE)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("a log file"))
            .spawn()
            .expect("rhizome serve starts");
        let mut server = ServerProcess { child, port, data: data.to_owned(), env: Vec::new() };
        server.wait_ready();
        server
    }

    /// `start_logged`, with these environment variables set for the server.
    pub fn start_logged_with_env(data: &Path, log: &Path, env: &[(&str, &str)]) -> ServerProcess {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_rhizome"))
            .arg("--data")
            .arg(data)
            .args(["serve", "--quiet", "--bind", &format!("127.0.0.1:{port}"), "--admin", ADMIN])
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("a log file"))
            .spawn()
            .expect("rhizome serve starts");
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut server = ServerProcess { child, port, data: data.to_owned(), env };
        server.wait_ready();
        server
    }

    /// Stops the server (SIGKILL) and starts it again on the same port and data.
    pub fn restart(&mut self) {
        self.kill();
        self.child = Self::spawn(&self.data, self.port, &pairs(&self.env));
        self.wait_ready();
    }

    /// Without `RHIZOME_BASE_IRI` in `env`, the server names documents
    /// under [`LEGACY_BASE`], as the tests' IRIs expect; `""` unsets it.
    fn spawn(data: &Path, port: u16, env: &[(&str, &str)]) -> Child {
        let mut command = Command::new(env!("CARGO_BIN_EXE_rhizome"));
        command.arg("--data").arg(data).args(["serve", "--quiet", "--bind", &format!("127.0.0.1:{port}"), "--admin", ADMIN]);
        match env.iter().find(|(k, _)| *k == "RHIZOME_BASE_IRI") {
            None => {
                command.env("RHIZOME_BASE_IRI", LEGACY_BASE);
            }
            Some((_, "")) => {
                command.env_remove("RHIZOME_BASE_IRI");
            }
            Some(_) => {}
        }
        command
            .envs(env.iter().copied().filter(|(k, v)| !(*k == "RHIZOME_BASE_IRI" && v.is_empty())))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("rhizome serve starts")
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("rhizome serve exited early: {status}");
            }
            if let Ok((200, _)) = try_request(self.port, "GET", "/_up", None, None, &[]) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("rhizome serve did not answer /_up within 30 s");
    }

    pub fn url(&self, auth: &str) -> String {
        format!("http://{auth}@127.0.0.1:{}", self.port)
    }

    pub fn request(&self, method: &str, path: &str, auth: Option<&str>, body: Option<&str>) -> (u16, String) {
        try_request(self.port, method, path, auth, body, &[]).expect("the server answers")
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// Standard base64 with padding (for Basic credentials).
pub fn base64(input: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// One request on a fresh connection; the status and the body.
pub fn try_request(port: u16, method: &str, path: &str, auth: Option<&str>, body: Option<&str>, headers: &[(&str, &str)]) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    if let Some(a) = auth {
        head.push_str(&format!("Authorization: Basic {}\r\n", base64(a.as_bytes())));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    if !body.is_empty() || matches!(method, "POST" | "PUT") {
        head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").map_or(raw.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    let body = if chunked { dechunk(&raw[split..]) } else { raw[split..].to_vec() };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// One request on a fresh connection: status, lowercased header lines and
/// body.
pub fn exchange(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, Vec<(String, String)>, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("the server accepts");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").map_or(raw.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers = lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned())).collect();
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    let body = if chunked { dechunk(&raw[split..]) } else { raw[split..].to_vec() };
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

/// A `Transfer-Encoding: chunked` body, joined (the test clients' one decoder).
pub fn dechunk(mut s: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = s.windows(2).position(|w| w == b"\r\n") {
        let n = std::str::from_utf8(&s[..i]).ok().and_then(|h| usize::from_str_radix(h.trim(), 16).ok()).unwrap_or(0);
        let rest = &s[i + 2..];
        if n == 0 || rest.len() < n {
            break;
        }
        out.extend_from_slice(&rest[..n]);
        s = rest[n..].strip_prefix(b"\r\n").unwrap_or(&rest[n..]);
    }
    out
}
