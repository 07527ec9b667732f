//! What a running server holds, read from /proc and the file system:
//! resident memory, open file descriptors, disk blocks.

use std::path::Path;

/// Resident memory of process `pid`, in bytes (`VmRSS`).
pub fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process's status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("a VmRSS line");
    kib * 1024
}

/// Open file descriptors of process `pid`.
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).expect("the process's fds").count()
}

/// Disk blocks held by every file under `path`, in bytes: allocated
/// blocks, not apparent sizes (space preallocated with
/// `FALLOC_FL_KEEP_SIZE` counts).
pub fn allocated_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(path) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => allocated_bytes(&e.path()),
            Ok(m) => m.blocks() * 512,
            // Removed while we looked.
            Err(_) => 0,
        })
        .sum()
}

/// The highest resident memory of `pid` seen while `work` runs, sampled
/// every few milliseconds by a second thread; fails the test as soon as
/// it passes `cap_bytes` (so a server that grows without bound is stopped
/// early rather than run out the machine's memory).
pub fn peak_rss_while<T>(pid: u32, cap_bytes: u64, work: impl FnOnce() -> T) -> (T, u64) {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let over = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (done, peak, over) = (done.clone(), peak.clone(), over.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return };
                let rss = status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                    .unwrap_or(0)
                    * 1024;
                peak.fetch_max(rss, Ordering::Relaxed);
                if rss > cap_bytes {
                    over.store(true, Ordering::Relaxed);
                    // Stop the server before it takes the machine's memory.
                    kill_now(pid);
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    // A server killed for its memory fails the work too: say why first.
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
    done.store(true, Ordering::Relaxed);
    sampler.join().expect("the sampler");
    let peak = peak.load(Ordering::Relaxed);
    assert!(!over.load(Ordering::Relaxed), "the server's resident memory passed {cap_bytes} bytes (seen {peak}); it was killed");
    match out {
        Ok(out) => (out, peak),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

fn kill_now(pid: u32) {
    let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
}
